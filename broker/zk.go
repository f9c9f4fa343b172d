package broker

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/zklog"
)

// The ZooKeeper side of the broker (Kafka 0.8.2's KafkaHealthcheck, KafkaController and ZkUtils, with
// KafkaZkClient's later fixes): one goroutine, zkLoop, owns the session, the registration, the
// controller role and the working copy of the cluster view. ZooKeeper callbacks only queue events; the
// loop turns them into tasks (re-read this node and re-arm its watch: zk_register.go, zk_reads.go),
// runs them, lets the controller decide (the controller core, controller_core.go, driven by
// controller_driver.go), publishes a snapshot, and opens or releases local logs accordingly
// (leadership.go). A failed task (ZooKeeper unreachable) stays queued and is retried; meanwhile produce
// and fetch keep being served from the last snapshot.

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
	ctrl         controllerCore      // this broker as controller (controller_core.go)
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

// resign drops the controller's role: its context, its watches' tasks and its senders.
func (b *Broker) resign(s *zkState) {
	s.chans.closeAll()
	s.ctrl.step(ctrlResigned{})
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
	s.ctrl = newControllerCore(b.id, s.shuttingDown, b.uncleanFor)
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

// publish makes the working view the one request handlers see.
func (b *Broker) publish(s *zkState) {
	next := s.work.clone()
	old := b.view.Swap(next)
	close(old.next)
}
