package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/replica"
	"github.com/rebalancelab/rebalancelab/broker/storage"
	"github.com/rebalancelab/rebalancelab/internal/zklog"
)

// The ZooKeeper side of the broker (Kafka 0.8.2's KafkaHealthcheck, KafkaController and ZkUtils, with
// KafkaZkClient's later fixes): one goroutine, zkLoop, owns the session, the registration, the
// controller role and the working copy of the cluster view. ZooKeeper callbacks only queue events; the
// loop turns them into tasks (re-read this node and re-arm its watch), runs them, lets the controller
// decide, publishes a snapshot, and opens or releases local logs accordingly. A failed task (ZooKeeper
// unreachable) stays queued and is retried; meanwhile produce and fetch keep being served from the last
// snapshot.

// zkQueue receives go-zookeeper events from its callback (which must not block) for the loop.
type zkQueue struct {
	mu     sync.Mutex
	evs    []zk.Event
	signal chan struct{}
}

func newZKQueue() *zkQueue { return &zkQueue{signal: make(chan struct{}, 1)} }

func (q *zkQueue) push(ev zk.Event) {
	q.mu.Lock()
	q.evs = append(q.evs, ev)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *zkQueue) drain() []zk.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs := q.evs
	q.evs = nil
	return evs
}

// taskKind orders the loop's work: registration and election first, then brokers, then topics, then
// partition states (a topic's partitions are known before their states are read).
type taskKind int

const (
	taskRegister taskKind = iota
	taskElect
	taskBrokers
	taskConfigChanges // /config/changes (dynconfig.go)
	taskBrokerConfig  // /config/brokers/<id> and <default>
	taskTopics
	taskTopic
	taskTopicConfig // /config/topics/<t>
	taskState
)

type zkTask struct {
	kind      taskKind
	topic     string
	partition int32
}

// zkState is owned by zkLoop.
type zkState struct {
	session      int64               // the session the current registration and watches belong to
	pending      map[zkTask]struct{} // tasks to (re)run
	armed        map[string]bool     // data/exists watches set in this session, by path
	work         *clusterView        // working copy of the cluster view
	ctrl         controllerRole      // this broker as controller
	conflictSeen bool                // registration conflict already logged
	registered   bool                // /brokers/ids/<id> created in this session
	failedOpen   map[topicPartition]bool
	// Config change notifications (dynconfig.go): the last one processed, whether the first read
	// has noted it, and whether a config changed since the partitions were last given theirs.
	lastChange    int64
	changesPrimed bool
	configDirty   bool
	// shuttingDown: brokers that asked the controller for a controlled shutdown (by id).
	shuttingDown map[int32]bool
	// chans: the controller's senders to the brokers (controlchannel.go).
	chans *controllerChannel

	// What the controller told this broker (controlrequests.go): the partitions it hosts, the logs to
	// delete, the highest controller epoch seen, this broker's epoch (its registration's czxid), where
	// the UpdateMetadata requests came from and whether one came at all. s.work is the metadata cache.
	hosted          map[topicPartition]*hostedPartition
	deleteLogs      map[topicPartition]bool
	controllerEpoch int32
	brokerEpoch     int64
	umFrom          controlSource
	metaSeen        bool
	// topicConfigs is /config/topics/<t> as last read, for the topics this broker knows (nil entries
	// are not kept: absent means not read yet).
	topicConfigs map[string]map[string]string
}

type controllerRole struct {
	active       bool
	epoch        int32 // /controller_epoch value this controller wrote
	epochVersion int32 // its znode version; every state write checks it (fencing a stale controller)
	// failover: the first reconcile of this controller has not completed (onControllerFailover).
	failover bool
	// view is the controller's context (ControllerContext): live brokers, topics, assignments and
	// partition states read from ZooKeeper while this broker is the controller; brokerEpochs are the
	// live brokers' registration czxids; sent is what each broker was last told (controlchannel.go).
	view         *clusterView
	brokerEpochs map[int32]int64
	sent         map[int32]*brokerSent
}

// resign drops the controller's role: its context, its watches' tasks and its senders.
func (b *Broker) resign(s *zkState) {
	s.chans.closeAll()
	s.ctrl = controllerRole{}
	for t := range s.pending {
		if t.kind.controllerOnly() {
			delete(s.pending, t)
		}
	}
}

// controllerOnly: the task reads the cluster for the controller's context.
func (k taskKind) controllerOnly() bool {
	return k == taskBrokers || k == taskTopics || k == taskTopic || k == taskState
}

var errRegistrationConflict = errors.New("broker id registered by another ZooKeeper session")

func (b *Broker) zp(path string) string { return b.chroot + path }

func (b *Broker) acl() []zk.ACL { return zk.WorldACL(zk.PermAll) }

func (b *Broker) startZK() error {
	servers, chroot, err := zkServers(b.cfg.ZooKeeperConnect)
	if err != nil {
		return err
	}
	b.chroot = chroot
	logger := zklog.New(b.log.WithField("component", "zookeeper"))
	var conn *zk.Conn
	if b.cfg.ZKDialer != nil {
		conn, _, err = zk.Connect(servers, b.cfg.sessionTimeout(), zk.WithEventCallback(b.zkq.push), zk.WithLogger(logger), zk.WithLogInfo(false), zk.WithDialer(b.cfg.ZKDialer))
	} else {
		conn, _, err = zk.Connect(servers, b.cfg.sessionTimeout(), zk.WithEventCallback(b.zkq.push), zk.WithLogger(logger), zk.WithLogInfo(false))
	}
	if err != nil {
		return fmt.Errorf("broker %d: zookeeper.connect %s: %w", b.id, b.cfg.ZooKeeperConnect, err)
	}
	b.zk = conn
	b.wg.Add(1)
	go b.zkLoop()
	return nil
}

func (b *Broker) zkLoop() {
	defer b.wg.Done()
	s := &zkState{
		pending:      map[zkTask]struct{}{},
		armed:        map[string]bool{},
		work:         emptyView(),
		failedOpen:   map[topicPartition]bool{},
		shuttingDown: map[int32]bool{},
		chans:        newControllerChannel(b),
		hosted:       map[topicPartition]*hostedPartition{},
		deleteLogs:   map[topicPartition]bool{},
		topicConfigs: map[string]map[string]string{},
	}
	var retry <-chan time.Time
	for {
		var reqs []ctrlRequest
		select {
		case <-b.ctx.Done():
			return
		case <-b.zkq.signal:
		case <-retry:
			retry = nil
		case cr := <-b.ctrlq:
			reqs = append(reqs, cr)
		}
	more:
		for {
			select {
			case cr := <-b.ctrlq:
				reqs = append(reqs, cr)
			default:
				break more
			}
		}
		for _, ev := range b.zkq.drain() {
			b.onZKEvent(s, ev)
		}
		ok := b.runTasks(s)
		if ok && s.ctrl.active {
			ok = b.reconcile(s)
		}
		// Requests are answered once applied: a LeaderAndIsr after its logs lead or follow, an
		// UpdateMetadata once Metadata answers from it (ReplicaManager answers after makeLeaders).
		replies := make([]kmsg.Response, len(reqs))
		for i, cr := range reqs {
			replies[i] = b.ctrlInLoop(s, cr)
		}
		if ok && s.ctrl.active && len(s.pending) == 0 {
			b.propagate(s) // a complete context only
		}
		if len(s.pending) > 0 {
			ok = false // left for the retry
		}
		// Logs first, then the view: once Metadata names this broker leader, it serves the partition.
		b.applyConfigs(s)
		if !b.applyLeadership(s) {
			ok = false
		}
		b.publish(s)
		for i, cr := range reqs {
			cr.reply <- replies[i]
		}
		if s.registered && s.metaSeen {
			b.readyOnce.Do(func() { close(b.ready) })
		}
		if !ok && retry == nil && b.ctx.Err() == nil {
			retry = time.After(zkRetryBackoff)
		}
	}
}

// zkRetryBackoff spaces retries of failed ZooKeeper tasks (Kafka's zkclient retries connection-loss
// operations until the session is back; this is the loop's equivalent).
const zkRetryBackoff = 200 * time.Millisecond

func (b *Broker) onZKEvent(s *zkState, ev zk.Event) {
	if ev.Type == zk.EventSession {
		switch ev.State {
		case zk.StateHasSession:
			if sid := b.zk.SessionID(); sid != s.session {
				b.log.WithField("session", fmt.Sprintf("0x%x", sid)).Info("ZooKeeper session established; registering")
				s.session = sid
				s.registered = false
				s.armed = map[string]bool{}
				s.conflictSeen = false
				for _, k := range []taskKind{taskRegister, taskElect, taskConfigChanges, taskBrokerConfig} {
					s.pending[zkTask{kind: k}] = struct{}{}
				}
				for t := range s.topicConfigs {
					s.pending[zkTask{kind: taskTopicConfig, topic: t}] = struct{}{}
				}
			}
		case zk.StateExpired:
			// KafkaController.SessionExpirationListener: resign at once; a new session re-registers.
			b.log.Warn("ZooKeeper session expired; resigning as controller and re-registering when connected")
			s.session = 0
			if s.ctrl.active {
				b.resign(s)
			}
		case zk.StateDisconnected:
			b.log.Debug("ZooKeeper disconnected; serving from the last known state")
		}
		return
	}
	if ev.Type == zk.EventNotWatching || ev.Path == "" {
		return
	}
	path := strings.TrimPrefix(ev.Path, b.chroot)
	s.armed[path] = false
	if !s.ctrl.active && (path == brokerIDsPath || path == brokerTopicsPath || strings.HasPrefix(path, brokerTopicsPath+"/")) {
		return // the controller's watches; a broker learns the cluster from the controller
	}
	switch {
	case path == brokerIDsPath:
		s.pending[zkTask{kind: taskBrokers}] = struct{}{}
	case path == brokerPath(b.id):
		if ev.Type == zk.EventNodeDeleted {
			s.pending[zkTask{kind: taskRegister}] = struct{}{}
		}
	case path == brokerTopicsPath:
		s.pending[zkTask{kind: taskTopics}] = struct{}{}
	case path == controllerPath:
		s.pending[zkTask{kind: taskElect}] = struct{}{}
	case path == configChangesPath:
		s.pending[zkTask{kind: taskConfigChanges}] = struct{}{}
	case strings.HasPrefix(path, brokerTopicsPath+"/"):
		rest := strings.Split(strings.TrimPrefix(path, brokerTopicsPath+"/"), "/")
		switch {
		case len(rest) == 1:
			s.pending[zkTask{kind: taskTopic, topic: rest[0]}] = struct{}{}
		case len(rest) == 4 && rest[1] == "partitions" && rest[3] == "state":
			if p, err := strconv.ParseInt(rest[2], 10, 32); err == nil {
				s.pending[zkTask{kind: taskState, topic: rest[0], partition: int32(p)}] = struct{}{}
			}
		}
	}
}

// runTasks runs pending tasks in order until none is left or one fails (kept for the retry). Tasks may
// queue more tasks (a topic queues its partition states).
func (b *Broker) runTasks(s *zkState) bool {
	if s.session == 0 {
		return len(s.pending) == 0
	}
	for round := 0; len(s.pending) > 0; round++ {
		if round > 1000 {
			return false
		}
		tasks := make([]zkTask, 0, len(s.pending))
		for t := range s.pending {
			tasks = append(tasks, t)
		}
		sort.Slice(tasks, func(i, j int) bool {
			a, c := tasks[i], tasks[j]
			if a.kind != c.kind {
				return a.kind < c.kind
			}
			if a.topic != c.topic {
				return a.topic < c.topic
			}
			return a.partition < c.partition
		})
		for _, t := range tasks {
			if b.ctx.Err() != nil {
				return false
			}
			if _, ok := s.pending[t]; !ok {
				continue // dropped by an earlier task of this round (forgetTopic)
			}
			delete(s.pending, t)
			if t.kind.controllerOnly() && !s.ctrl.active {
				continue
			}
			if err := b.runTask(s, t); err != nil {
				s.pending[t] = struct{}{}
				if !errors.Is(err, errRegistrationConflict) {
					b.log.WithError(err).Debugf("ZooKeeper task %v failed; will retry", t)
				}
				return false
			}
		}
	}
	return true
}

func (b *Broker) runTask(s *zkState, t zkTask) error {
	switch t.kind {
	case taskRegister:
		return b.register(s)
	case taskElect:
		return b.elect(s)
	case taskBrokers:
		return b.loadBrokers(s)
	case taskTopics:
		return b.loadTopics(s)
	case taskTopic:
		return b.loadTopic(s, t.topic)
	case taskState:
		return b.loadState(s, t.topic, t.partition)
	case taskConfigChanges:
		return b.loadConfigChanges(s)
	case taskBrokerConfig:
		return b.loadBrokerConfigs(s)
	case taskTopicConfig:
		return b.loadTopicConfig(s, t.topic)
	}
	return nil
}

func (b *Broker) ensurePath(path string) error {
	parts := strings.Split(strings.Trim(b.zp(path), "/"), "/")
	cur := ""
	for _, p := range parts {
		cur += "/" + p
		if _, err := b.zk.Create(cur, nil, 0, b.acl()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", cur, err)
		}
	}
	return nil
}

// register creates /brokers/ids/<id> (ZkUtils.registerBrokerInZk). If the node exists from another
// session (this broker's previous incarnation, not yet expired), it waits for ZooKeeper to delete it, as
// ZkUtils.createEphemeralPathExpectConflictHandleZKBug does.
func (b *Broker) register(s *zkState) error {
	for _, p := range []string{brokerIDsPath, brokerTopicsPath, consumersPath} {
		if err := b.ensurePath(p); err != nil {
			return err
		}
	}
	if err := b.ensureClusterID(); err != nil {
		return err
	}
	if err := b.ensureFeatureZNode(); err != nil {
		return err
	}
	path := b.zp(brokerPath(b.id))
	data := encodeBroker(b.host, b.port, time.Now().UnixMilli())
	_, err := b.zk.Create(path, data, zk.FlagEphemeral, b.acl())
	if errors.Is(err, zk.ErrNodeExists) {
		exists, stat, _, werr := b.zk.ExistsW(path)
		if werr != nil {
			return werr
		}
		switch {
		case !exists:
			return fmt.Errorf("%s vanished; retrying", path)
		case stat.EphemeralOwner == b.zk.SessionID():
			err = nil
			s.brokerEpoch = stat.Czxid
		default:
			b.regConflict.Store(stat.EphemeralOwner)
			if !s.conflictSeen {
				s.conflictSeen = true
				b.log.WithField("owner", fmt.Sprintf("0x%x", stat.EphemeralOwner)).Warnf("%s is held by another session; waiting for ZooKeeper to expire it", path)
			}
			return errRegistrationConflict
		}
	}
	if err != nil {
		return fmt.Errorf("register %s: %w", path, err)
	}
	// The broker epoch is the registration's czxid (KafkaZkClient.registerBroker); control requests
	// from before it are stale.
	if _, stat, err := b.zk.Exists(path); err != nil {
		return fmt.Errorf("register %s: %w", path, err)
	} else if stat.EphemeralOwner == b.zk.SessionID() {
		s.brokerEpoch = stat.Czxid
	}
	b.regConflict.Store(0)
	b.log.WithField("advertised", b.AdvertisedAddr()).Info("registered in ZooKeeper")
	s.registered = true
	return nil
}

// elect reads /controller, and when it is absent creates it (KafkaController's ZookeeperLeaderElector):
// the first broker to create the ephemeral node is the controller and bumps /controller_epoch.
func (b *Broker) elect(s *zkState) error {
	path := b.zp(controllerPath)
	for attempt := 0; attempt < 3; attempt++ {
		data, stat, _, err := b.zk.GetW(path)
		if errors.Is(err, zk.ErrNoNode) {
			_, err = b.zk.Create(path, encodeController(b.id, time.Now().UnixMilli()), zk.FlagEphemeral, b.acl())
			if errors.Is(err, zk.ErrNodeExists) {
				continue // someone else won; read it
			}
			if err != nil {
				return err
			}
			// Watch our own node, so that its deletion (session loss) triggers a new election.
			if _, _, _, err := b.zk.GetW(path); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			s.work.controller = b.id
			return b.becomeController(s)
		}
		if err != nil {
			return err
		}
		id, derr := decodeController(data)
		if derr != nil {
			b.log.WithError(derr).Warn("unreadable /controller")
			id = -1
		}
		s.work.controller = id
		if id == b.id && stat.EphemeralOwner == b.zk.SessionID() {
			if !s.ctrl.active {
				return b.becomeController(s)
			}
			return nil
		}
		if s.ctrl.active {
			b.log.WithField("controller", id).Info("resigning as controller")
			b.resign(s)
		}
		return nil
	}
	return fmt.Errorf("controller election did not settle")
}

// becomeController increments /controller_epoch (KafkaController.incrementControllerEpoch; the first
// epoch is 1) and schedules a fresh read of brokers and topics before the first reconcile.
func (b *Broker) becomeController(s *zkState) error {
	path := b.zp(controllerEpochPath)
	for attempt := 0; attempt < 5; attempt++ {
		data, stat, err := b.zk.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			_, err = b.zk.Create(path, []byte("1"), 0, b.acl())
			if errors.Is(err, zk.ErrNodeExists) {
				continue
			}
			if err != nil {
				return err
			}
			s.ctrl = controllerRole{active: true, epoch: 1, epochVersion: 0, view: emptyView(), brokerEpochs: map[int32]int64{}, sent: map[int32]*brokerSent{}}
			break
		}
		if err != nil {
			return err
		}
		cur, perr := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
		if perr != nil {
			return fmt.Errorf("%s holds %q: %w", controllerEpochPath, data, perr)
		}
		st, err := b.zk.Set(path, []byte(strconv.FormatInt(cur+1, 10)), stat.Version)
		if errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		if err != nil {
			return err
		}
		s.ctrl = controllerRole{active: true, epoch: int32(cur + 1), epochVersion: st.Version, view: emptyView(), brokerEpochs: map[int32]int64{}, sent: map[int32]*brokerSent{}}
		break
	}
	if !s.ctrl.active {
		return fmt.Errorf("could not increment %s", controllerEpochPath)
	}
	s.ctrl.failover = true
	// Watches of an earlier tenure may have fired while this broker was not the controller: read all.
	for path := range s.armed {
		if strings.HasPrefix(path, "/brokers/") {
			delete(s.armed, path)
		}
	}
	b.log.WithField("controller_epoch", s.ctrl.epoch).Info("elected controller")
	s.pending[zkTask{kind: taskBrokers}] = struct{}{}
	s.pending[zkTask{kind: taskTopics}] = struct{}{}
	return nil
}

// loadBrokers reads /brokers/ids and every registration (ZkUtils.getAllBrokersInCluster); a node that
// vanishes between the listing and the read is a broker that is gone.
func (b *Broker) loadBrokers(s *zkState) error {
	ids, _, _, err := b.zk.ChildrenW(b.zp(brokerIDsPath))
	if errors.Is(err, zk.ErrNoNode) {
		ids, err = nil, b.ensurePath(brokerIDsPath)
		if err == nil {
			_, _, _, err = b.zk.ChildrenW(b.zp(brokerIDsPath))
		}
	}
	if err != nil {
		return err
	}
	live := make(map[int32]Node, len(ids))
	epochs := make(map[int32]int64, len(ids))
	for _, c := range ids {
		id, err := strconv.ParseInt(c, 10, 32)
		if err != nil {
			continue
		}
		data, stat, err := b.zk.Get(b.zp(brokerPath(int32(id))))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		n, err := decodeBroker(data)
		if err != nil {
			b.log.WithError(err).Warnf("ignoring broker %d", id)
			continue
		}
		live[int32(id)] = Node{ID: int32(id), Host: n.Host, Port: int32(n.Port)}
		epochs[int32(id)] = stat.Czxid
	}
	cc := s.ctrl.view
	if !sameBrokers(cc.brokers, live) {
		b.log.WithField("live", sortedIDs(live)).Info("controller: live brokers changed")
	}
	for id := range s.shuttingDown {
		if _, ok := live[id]; !ok || epochs[id] != s.ctrl.brokerEpochs[id] {
			delete(s.shuttingDown, id) // it stopped; a new registration (new broker epoch) starts afresh
		}
	}
	cc.brokers = live
	s.ctrl.brokerEpochs = epochs
	return nil
}

func sameBrokers(a, c map[int32]Node) bool {
	if len(a) != len(c) {
		return false
	}
	for id, n := range a {
		if c[id] != n {
			return false
		}
	}
	return true
}

func sortedIDs(m map[int32]Node) []int32 {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// loadTopics reads /brokers/topics (children watch) and queues the topics it did not know.
func (b *Broker) loadTopics(s *zkState) error {
	names, _, _, err := b.zk.ChildrenW(b.zp(brokerTopicsPath))
	if errors.Is(err, zk.ErrNoNode) {
		if err = b.ensurePath(brokerTopicsPath); err == nil {
			names, _, _, err = b.zk.ChildrenW(b.zp(brokerTopicsPath))
		}
	}
	if err != nil {
		return err
	}
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
		if _, ok := s.ctrl.view.topics[n]; !ok || !s.armed[topicPath(n)] {
			s.pending[zkTask{kind: taskTopic, topic: n}] = struct{}{}
		}
	}
	for t := range s.ctrl.view.topics {
		if !present[t] {
			b.log.WithField("topic", t).Info("topic deleted")
			b.forgetTopic(s, t)
		}
	}
	return nil
}

// forgetTopic drops everything the loop keeps about topic and the znodes below /brokers/topics/<topic>:
// its view, the watches counted as armed on those paths, the partition-state reads queued for it, and
// the partition logs it failed to open.
// It runs when the topic znode is gone, or was created again (another incarnation, see topicView.czxid):
// none of that state describes what is there now. (An exists watch left counted as armed on a deleted
// state path kept the re-created partition from ever being read: no state written, no leader, until
// the session changed.) The watches themselves may still fire later; their events just cause a re-read.
func (b *Broker) forgetTopic(s *zkState, topic string) {
	delete(s.ctrl.view.topics, topic)
	prefix := topicPath(topic)
	for path := range s.armed {
		if path == prefix || strings.HasPrefix(path, prefix+"/") {
			delete(s.armed, path)
		}
	}
	for t := range s.pending {
		if (t.kind == taskState || t.kind == taskTopicConfig) && t.topic == topic {
			delete(s.pending, t)
		}
	}
	for tp := range s.failedOpen {
		if tp.Topic == topic {
			delete(s.failedOpen, tp)
		}
	}
}

// loadTopic reads /brokers/topics/<t> (data watch: partitions added) and queues its partition states.
func (b *Broker) loadTopic(s *zkState, topic string) error {
	path := topicPath(topic)
	data, stat, _, err := b.zk.GetW(b.zp(path))
	if errors.Is(err, zk.ErrNoNode) {
		if _, ok := s.ctrl.view.topics[topic]; ok {
			b.log.WithField("topic", topic).Info("topic deleted")
		}
		b.forgetTopic(s, topic)
		return nil
	}
	if err != nil {
		return err
	}
	if tv, ok := s.ctrl.view.topics[topic]; ok && tv.czxid != stat.Czxid {
		// Deleted and created again between two reads: the old incarnation is gone.
		b.log.WithField("topic", topic).Info("topic deleted and created again")
		b.forgetTopic(s, topic)
	}
	s.armed[path] = true
	assignment, err := decodeAssignment(data)
	if err != nil {
		b.log.WithError(err).WithField("topic", topic).Warn("ignoring unreadable topic znode")
		return nil
	}
	tv, ok := s.ctrl.view.topics[topic]
	if !ok {
		tv = &topicView{states: map[int32]partitionView{}, czxid: stat.Czxid}
		s.ctrl.view.topics[topic] = tv
		b.log.WithFields(logrus.Fields{"topic": topic, "partitions": len(assignment)}).Info("topic known")
	} else if len(assignment) != len(tv.replicas) {
		b.log.WithFields(logrus.Fields{"topic": topic, "partitions": len(assignment)}).Info("topic partitions changed")
	}
	tv.replicas = assignment
	s.pending[zkTask{kind: taskTopicConfig, topic: topic}] = struct{}{}
	for p := range tv.states {
		if _, ok := assignment[p]; !ok {
			delete(tv.states, p)
		}
	}
	for p := range assignment {
		if !s.armed[statePath(topic, p)] {
			s.pending[zkTask{kind: taskState, topic: topic, partition: p}] = struct{}{}
		}
	}
	return nil
}

// loadState reads a partition's state znode (data watch), or sets an exists watch while the controller
// has not written it yet.
func (b *Broker) loadState(s *zkState, topic string, p int32) error {
	tv, ok := s.ctrl.view.topics[topic]
	if !ok {
		return nil
	}
	if _, ok := tv.replicas[p]; !ok {
		return nil
	}
	path := statePath(topic, p)
	for attempt := 0; attempt < 3; attempt++ {
		data, stat, _, err := b.zk.GetW(b.zp(path))
		if errors.Is(err, zk.ErrNoNode) {
			exists, _, _, err := b.zk.ExistsW(b.zp(path))
			if err != nil {
				return err
			}
			if exists {
				continue
			}
			s.armed[path] = true
			tv.states[p] = partitionView{}
			return nil
		}
		if err != nil {
			return err
		}
		s.armed[path] = true
		st, err := decodeState(data)
		if err != nil {
			b.log.WithError(err).WithFields(logrus.Fields{"topic": topic, "partition": p}).Warn("ignoring unreadable state znode")
			return nil
		}
		old := tv.states[p]
		if !old.exists || old.Leader != st.Leader || old.LeaderEpoch != st.LeaderEpoch {
			b.log.WithFields(logrus.Fields{"topic": topic, "partition": p, "leader": st.Leader, "leader_epoch": st.LeaderEpoch}).Debug("partition state")
		}
		tv.states[p] = partitionView{leaderAndISR: st, exists: true, version: stat.Version}
		return nil
	}
	return fmt.Errorf("%s: state keeps changing", path)
}

var errFenced = errors.New("controller epoch changed: another controller took over")

// reconcile is the controller's work after every change (KafkaController.onBrokerStartup/Failure,
// onNewPartitionCreation): it writes the state of every new partition and moves leaders off dead brokers
// and back, each write conditional on the state's version and on /controller_epoch's version.
func (b *Broker) reconcile(s *zkState) bool {
	if len(s.pending) > 0 {
		return false // decide only on a complete picture
	}
	live := s.ctrl.view.liveSet()
	for _, topic := range s.ctrl.view.sortedTopics() {
		tv := s.ctrl.view.topics[topic]
		for _, p := range sortedPartitions(tv.replicas) {
			cur, known := tv.states[p]
			if !known {
				continue
			}
			var (
				next  leaderAndISR
				err   error
				ver   int32
				write bool
			)
			if cur.exists && s.ctrl.failover {
				// A new controller first moves the replicas on dead brokers to OfflineReplica
				// (ReplicaStateMachine.startup in onControllerFailover): each leaves the ISR, a
				// dead leader becoming -1, epoch + 1 each; the election below comes after.
				if off, changed := offlineReplicas(cur.leaderAndISR, live, s.ctrl.epoch); changed {
					if ver, err = b.writeState(s, topic, p, off, cur.version); err == nil {
						cur = partitionView{leaderAndISR: off, exists: true, version: ver}
						tv.states[p] = cur
						b.log.WithFields(logrus.Fields{"topic": topic, "partition": p, "leader": off.Leader, "isr": off.ISR, "leader_epoch": off.LeaderEpoch}).Info("controller: offline replicas left the ISR")
					} else {
						next, write = off, true // handled below
					}
				}
			}
			switch {
			case write:
			case !cur.exists:
				next, write = newPartitionState(tv.replicas[p], live, s.ctrl.epoch), true
				ver, err = b.createState(s, topic, p, next)
			default:
				c := onBrokerChange(cur.leaderAndISR, tv.replicas[p], live, b.logConfigFor(topic, tv.configs).uncleanLeaderElection, s.ctrl.epoch)
				if c.Changed {
					next, write = c.Next, true
					ver, err = b.writeState(s, topic, p, next, cur.version)
					if err == nil && c.Unclean {
						b.log.WithFields(logrus.Fields{"topic": topic, "partition": p, "leader": next.Leader}).Warn("controller: unclean leader election: a replica outside the ISR leads; records only the old ISR had are lost")
					}
				}
			}
			if !write {
				continue
			}
			switch {
			case err == nil:
				tv.states[p] = partitionView{leaderAndISR: next, exists: true, version: ver}
				b.log.WithFields(logrus.Fields{"topic": topic, "partition": p, "leader": next.Leader, "leader_epoch": next.LeaderEpoch}).Info("controller: partition leader set")
			case errors.Is(err, errFenced):
				b.log.Warn("controller: fenced by a newer controller epoch; resigning")
				b.resign(s)
				s.pending[zkTask{kind: taskElect}] = struct{}{}
				return false
			case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists):
				s.pending[zkTask{kind: taskState, topic: topic, partition: p}] = struct{}{}
				s.armed[statePath(topic, p)] = false
			case errors.Is(err, zk.ErrNoNode):
				s.pending[zkTask{kind: taskTopic, topic: topic}] = struct{}{} // topic deleted meanwhile
			default:
				b.log.WithError(err).WithFields(logrus.Fields{"topic": topic, "partition": p}).Debug("controller: state write failed; will retry")
				return false
			}
		}
	}
	s.ctrl.failover = false
	return true
}

func (b *Broker) epochCheck(s *zkState) *zk.CheckVersionRequest {
	return &zk.CheckVersionRequest{Path: b.zp(controllerEpochPath), Version: s.ctrl.epochVersion}
}

// multiErr maps a failed multi to the error of its failing op; op 0 is always the epoch check.
func multiErr(res []zk.MultiResponse, err error) error {
	if err == nil {
		return nil
	}
	for i, r := range res {
		if r.Error == nil || errors.Is(r.Error, zk.ErrAPIError) || errors.Is(r.Error, zk.ErrUnknown) {
			continue
		}
		if i == 0 && (errors.Is(r.Error, zk.ErrBadVersion) || errors.Is(r.Error, zk.ErrNoNode)) {
			return errFenced
		}
		return r.Error
	}
	return err
}

func (b *Broker) createState(s *zkState, topic string, p int32, st leaderAndISR) (int32, error) {
	for _, parent := range []string{topicPartitionsPath(topic), partitionPath(topic, p)} {
		// Create (not ensurePath): if the topic was deleted, NoNode must stop us, not resurrect it.
		if _, err := b.zk.Create(b.zp(parent), nil, 0, b.acl()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return 0, err
		}
	}
	res, err := b.zk.Multi(b.epochCheck(s), &zk.CreateRequest{Path: b.zp(statePath(topic, p)), Data: encodeState(st), Acl: b.acl()})
	return 0, multiErr(res, err)
}

func (b *Broker) writeState(s *zkState, topic string, p int32, st leaderAndISR, version int32) (int32, error) {
	res, err := b.zk.Multi(b.epochCheck(s), &zk.SetDataRequest{Path: b.zp(statePath(topic, p)), Data: encodeState(st), Version: version})
	if err := multiErr(res, err); err != nil {
		return 0, err
	}
	if len(res) == 2 && res[1].Stat != nil {
		return res[1].Stat.Version, nil
	}
	return version + 1, nil
}

// publish makes the working view the one request handlers see.
func (b *Broker) publish(s *zkState) {
	next := s.work.clone()
	old := b.view.Swap(next)
	close(old.next)
}

// applyLeadership makes the logs what the controller's LeaderAndIsr and StopReplica requests said
// (ReplicaManager.makeLeaders / makeFollowers / stopPartitions): it deletes the logs StopReplica
// deleted (and those of a topic incarnation replaced by another), opens the logs of partitions now
// hosted (<log.dirs>/<topic>-<partition>), makes each the leader or a follower as its state says,
// and hands the followed ones to the replica fetchers (not those StopReplica stopped). A partition no
// longer hosted but not deleted stops leading and is kept. It reports false if a log could not be
// opened (retried on the next round).
func (b *Broker) applyLeadership(s *zkState) bool {
	v := s.work
	type change struct {
		p       *partition
		leading bool
		epoch   int32
	}
	var changes []change
	var deleted []*partition
	var demoted []*partition

	b.partsMu.Lock()
	for tp, p := range b.parts {
		h, hosted := s.hosted[tp]
		gone := s.deleteLogs[tp] || (hosted && h.czxid != 0 && h.czxid != p.czxid)
		if hosted && !gone {
			continue
		}
		if p.leading.Load() {
			changes = append(changes, change{p, false, p.epoch.Load()})
			demoted = append(demoted, p)
		}
		if gone {
			delete(b.parts, tp)
			deleted = append(deleted, p)
		}
	}
	var toOpen []topicPartition
	for tp := range s.hosted {
		if _, ok := b.parts[tp]; !ok {
			toOpen = append(toOpen, tp)
		}
	}
	b.partsMu.Unlock()
	for _, p := range demoted {
		p.becomeFollower(-1, p.epoch.Load())
	}

	// Deleted logs go first: a topic created again under the same name opens a new, empty log in the
	// same directory. A StopReplica(delete) for a log not open removes its directory all the same
	// (a topic deleted while this broker was away).
	for _, p := range deleted {
		if err := p.close(); err != nil {
			b.log.WithError(err).Warn("closing deleted partition")
		}
	}
	for tp := range s.deleteLogs {
		if err := os.RemoveAll(b.cfg.partitionDir(tp.Topic, tp.Partition)); err != nil {
			b.log.WithFields(logFields(tp.Topic, tp.Partition)).WithError(err).Warn("removing deleted partition")
			continue
		}
		b.log.WithFields(logFields(tp.Topic, tp.Partition)).Info("deleted partition log")
	}
	for _, p := range deleted {
		if !s.deleteLogs[topicPartition{p.topic, p.id}] {
			if err := os.RemoveAll(b.cfg.partitionDir(p.topic, p.id)); err != nil {
				b.log.WithError(err).Warn("removing the partition log of a replaced topic incarnation")
			}
		}
	}
	clear(s.deleteLogs)
	ok := true
	for _, tp := range toOpen {
		h := s.hosted[tp]
		dir := b.cfg.partitionDir(tp.Topic, tp.Partition)
		fields := logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}
		stale, err := claimLogDir(dir, h.czxid)
		if stale != 0 {
			b.log.WithFields(fields).WithField("old_czxid", stale).Warn("partition log belongs to a deleted incarnation of the topic; deleted")
		}
		if _, read := s.topicConfigs[tp.Topic]; !read && err == nil {
			err = b.loadTopicConfig(s, tp.Topic) // KafkaZkClient.getEntityConfigs when a log is created
		}
		var lg *storage.Log
		lc := b.logConfigFor(tp.Topic, s.topicConfigs[tp.Topic])
		if err == nil {
			lg, err = storage.Open(dir, lc.storageConfig(b.cfg.storageConfig(tp.Topic, h.st.LeaderEpoch)))
		}
		if err != nil {
			if !s.failedOpen[tp] {
				b.log.WithFields(fields).WithError(err).Error("cannot open partition log")
			}
			s.failedOpen[tp] = true
			ok = false
			continue
		}
		delete(s.failedOpen, tp)
		p := newPartition(tp.Topic, h.czxid, tp.Partition, lg)
		p.cfg.Store(lc)
		b.partsMu.Lock()
		b.parts[tp] = p
		b.partsMu.Unlock()
		logRecovery(b.log.WithFields(fields), lg.Recovery(), lg.HighWatermark())
	}

	follow := map[topicPartition]followTarget{}
	live := v.liveSet()
	b.partsMu.RLock()
	parts := make(map[topicPartition]*partition, len(s.hosted))
	for tp := range s.hosted {
		if p := b.parts[tp]; p != nil {
			parts[tp] = p
		}
	}
	b.partsMu.RUnlock()
	for tp, p := range parts {
		h := s.hosted[tp]
		st := h.st
		fields := logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "leader_epoch": st.LeaderEpoch}
		if st.Leader == b.id {
			rst := replica.State{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: st.ISR, PartitionEpoch: h.version}
			if !p.leading.Load() || p.epoch.Load() != st.LeaderEpoch {
				p.becomeLeader(b.id, h.replicas, rst, b.cfg.ReplicaLagTimeMaxMs)
				b.log.WithFields(fields).WithFields(logrus.Fields{"isr": st.ISR, "high_watermark": p.log.HighWatermark(), "log_end_offset": p.log.LogEndOffset()}).Info("leading partition")
				changes = append(changes, change{p, true, st.LeaderEpoch})
			} else {
				p.updateLeader(rst)
			}
			p.brokersAlive(live)
			continue
		}
		if p.leading.Load() {
			changes = append(changes, change{p, false, p.epoch.Load()})
		}
		if p.leading.Load() || p.leaderID.Load() != st.Leader || p.epoch.Load() != st.LeaderEpoch {
			p.becomeFollower(st.Leader, st.LeaderEpoch)
			b.log.WithFields(fields).WithFields(logrus.Fields{"leader": st.Leader, "log_end_offset": p.log.LogEndOffset()}).Info("following partition")
		}
		if st.Leader >= 0 && !h.stopped {
			follow[tp] = followTarget{part: p, leader: st.Leader, epoch: st.LeaderEpoch}
		}
	}
	b.fetchers.update(follow)
	if fn := b.onLeader.Load(); fn != nil {
		for _, c := range changes {
			b.callLeadership(*fn, c.p.topic, c.p.id, c.leading, c.epoch)
		}
	}
	return ok
}

// topicCzxidFile, in a partition log directory, holds the creation zxid of the topic znode the log
// belongs to (topicView.czxid, decimal), as Kafka's partition.metadata holds the topic id (KIP-516): a
// directory left by a topic that was deleted and created again under the same name while this broker
// was away is not taken for the new topic's.
const topicCzxidFile = "topic-czxid"

// claimLogDir makes dir the log directory of the topic incarnation czxid: a directory recording another
// incarnation is removed (its czxid is returned), then the file records czxid. A directory without the
// file (written before the file existed) is kept as it is.
func claimLogDir(dir string, czxid int64) (stale int64, err error) {
	path := filepath.Join(dir, topicCzxidFile)
	want := strconv.FormatInt(czxid, 10) + "\n"
	data, err := os.ReadFile(path)
	switch {
	case err == nil && string(data) == want:
		return 0, nil
	case err == nil:
		stale, _ = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if stale == 0 {
			stale = -1 // unreadable: not ours to trust
		}
		if err := os.RemoveAll(dir); err != nil {
			return stale, fmt.Errorf("removing %s: %w", dir, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return 0, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return stale, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(want), 0o644); err != nil {
		return stale, err
	}
	return stale, os.Rename(tmp, path)
}

// logRecovery reports what storage.Open found and repaired in a partition log: WARN when it repaired
// anything (Kafka's LogSegment.recover / LogLoader: "Found invalid messages in log segment ...",
// truncation, deletion of later segments, rebuilt indexes), DEBUG when the log was intact.
func logRecovery(log *logrus.Entry, r storage.RecoveryStats, highWatermark int64) {
	f := logrus.Fields{
		"segments":         r.Segments,
		"truncated_bytes":  r.TruncatedBytes,
		"deleted_segments": r.DeletedSegments,
		"rebuilt_indexes":  r.RebuiltIndexes,
		"epoch_checkpoint": r.EpochCheckpoint,
		"high_watermark":   highWatermark,
	}
	if r.Problem == "" && r.TruncatedBytes == 0 && r.DeletedSegments == 0 && r.RebuiltIndexes == 0 && r.EpochCheckpoint != "rebuilt" {
		log.WithFields(f).Debug("log recovery: nothing to repair")
		return
	}
	f["problem"] = r.Problem
	problem := r.Problem
	if problem == "" {
		problem = "no invalid batch"
	}
	log.WithFields(f).Warnf("log recovery repaired the partition log (%s): truncated %d bytes, deleted %d later segments, rebuilt %d indexes, leader-epoch-checkpoint %s; high watermark %d",
		problem, r.TruncatedBytes, r.DeletedSegments, r.RebuiltIndexes, r.EpochCheckpoint, highWatermark)
}

// callLeadership runs the listener; a panic in it is logged, not allowed to stop the ZooKeeper loop.
func (b *Broker) callLeadership(fn LeadershipFunc, topic string, p int32, leading bool, epoch int32) {
	defer func() {
		if r := recover(); r != nil {
			b.log.WithFields(logFields(topic, p)).Errorf("leadership listener panic: %v", r)
		}
	}()
	fn(topic, p, leading, epoch)
}

// setLeaderEpoch tells the log the new leader epoch, stamped into appended batches (KIP-101). An
// older epoch is refused by the log and ignored here: the log keeps the newer one.
func setLeaderEpoch(lg *storage.Log, epoch int32) {
	_ = lg.SetLeaderEpoch(epoch)
}
