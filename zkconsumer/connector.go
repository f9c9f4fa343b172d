// Package zkconsumer is the ZooKeeper-era consumer: Kafka 0.8.2.2's ZookeeperConsumerConnector
// step for step, with the bug fixes the old consumer received through 0.9–0.11 (the ZK-* cases of
// the project's cases/README.md).
//
// Each connector registers in /consumers/<group>/ids, watches the group, the subscribed topics
// and its session, and on any change runs the whole rebalance itself: stop fetchers, commit,
// release its owner znodes, read every member's registration, compute the assignment, read
// offsets, claim owner znodes (all or nothing), restart fetchers. The herd effect (every change
// wakes every member; reads grow with members²) and the split brain (divergent views; after a
// session expiry fetchers run on until the next rebalance) are the architecture's and are kept.
//
// Sources (apache/kafka tag 0.8.2.2, core/src/main/scala/kafka/): consumer/
// ZookeeperConsumerConnector.scala (registration, ZKRebalancerListener.syncedRebalance/rebalance,
// reflectPartitionOwnershipDecision, ZKSessionExpireListener, ZKTopicPartitionChangeListener,
// WildcardStreamsHandler), consumer/PartitionAssignor.scala, consumer/TopicCount.scala,
// consumer/TopicFilter.scala, consumer/ZookeeperTopicEventWatcher.scala,
// consumer/ConsumerFetcherManager.scala, consumer/ConsumerFetcherThread.scala,
// server/AbstractFetcherThread.scala, consumer/ConsumerConfig.scala, utils/ZkUtils.scala; and
// ZkClient 0.3 (com.101tec:zkclient, which 0.8.2 uses) for which reads set watches and what a
// notification costs. Later behaviour kept: 0.9's ConsumerRebalanceListener and global
// assignment; KAFKA-1648 (round-robin with no topics), KAFKA-1010 (a broker znode vanishing
// between list and read), KAFKA-919 (no commit in a rebalance without auto-commit), KAFKA-693
// (leaderless partitions are owned, fetched once a leader appears), KAFKA-1075 (partition count
// changes rebalance), a failed claim attempt deleting everything it claimed, and 0.9's
// ZKCheckedEphemeral for the registration (KAFKA-1387: an ids node owned by the current session is
// ours, where 0.8.2.2 compared bytes and waited forever for its own node).
//
// Sessions: as ZkClient's retryUntilConnected, every ZooKeeper request that fails
// for want of a connection, or because the session expired, is sent again once a session is
// connected (the new one after an expiry), until shutdown; a new-session event for the session the
// registration already belongs to does nothing, however many sessions came and went while the
// rebalance goroutine was busy; and a rebalance attempt during which the session changed fails,
// deleting the claims it made in the new session (releaseStaleClaims).
//
// Offsets live in ZooKeeper by default; offsets.storage=kafka commits them to the group's offset
// manager (OffsetCommit v1, unfenced) and dual.commit.enabled also to ZooKeeper (offsetmanager.go).
// The offset manager is located on first use, not in New (0.8.2's constructor blocks until it finds
// one), and the shutdown commit gives up after its attempts rather than waiting for one forever.
//
// Deliberate differences: streams are Go channels (no consumer.timeout.ms); Fetch uses v4+ record batches, versions
// negotiated with ApiVersions; round-robin breaks equal hash codes by topic then partition (Kafka's
// order there is a hash map's); wildcard thread i always feeds stream i.
package zkconsumer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/kconfig"
	"github.com/rebalancelab/rebalancelab/timeline"
	"github.com/rebalancelab/rebalancelab/zkdata"
)

// RebalanceListener is Kafka 0.9's ConsumerRebalanceListener (kafka.javaapi.consumer), called
// from the rebalance goroutine. A panic in a callback fails the rebalance attempt.
type RebalanceListener interface {
	// BeforeReleasingPartitions runs once the fetchers are stopped, the queues cleared and (with
	// auto-commit) offsets committed, before this consumer's owner znodes are deleted.
	// owned: topic → partitions this consumer held (empty after a session expiry reset).
	BeforeReleasingPartitions(owned map[string][]int32)
	// BeforeStartingFetchers runs once every owner znode of the attempt is claimed, before the
	// fetchers start. assignment is the whole group's decision as this consumer computed it:
	// topic → partition → owner consumer thread id ("<consumerId>-<thread>").
	BeforeStartingFetchers(consumerID string, assignment map[string]map[int32]string)
}

var (
	// ErrRebalanceFailed wraps the error of a syncedRebalance that failed rebalance.max.retries
	// attempts (Kafka's ConsumerRebalanceFailedException).
	ErrRebalanceFailed = errors.New("zkconsumer: rebalance failed")
	// ErrStreamsExist: message streams can be created once per connector (MessageStreamsExistException).
	ErrStreamsExist = errors.New("zkconsumer: message streams can be created at most once per connector")
	// ErrShutdown: the connector is shutting down or shut down.
	ErrShutdown = errors.New("zkconsumer: connector is shut down")
)

// ZooKeeper paths (ZkUtils.scala).
const (
	brokerIdsPath    = "/brokers/ids"
	brokerTopicsPath = "/brokers/topics"
)

// Connector is a ZookeeperConsumerConnector. Create it with New, then call CreateMessageStreams
// or CreateMessageStreamsByFilter once, and Shutdown at the end.
type Connector struct {
	cfg        Config
	log        *logrus.Entry
	rec        *timeline.Recorder
	consumerID string
	clientID   string
	idsPath    string // /consumers/<group>/ids

	zk      *zkConn
	fetcher *fetcherManager
	offsets *offsetsChannel // offsets.storage=kafka: the channel to the offset manager

	ctx      context.Context // ends the background goroutines
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	closing  atomic.Bool
	stopOnce sync.Once
	// lifeMu orders the streams' creation against shutdown: the queues and the rebalance goroutine
	// are created under it only while not closing, and shutdown sets closing under it, so nothing it
	// waits for or closes can appear after it began.
	lifeMu sync.Mutex
	errs   chan error

	connected   chan struct{}
	connectOnce sync.Once
	expired     atomic.Bool // the session expired; the next session triggers re-registration
	session     int64       // the session that owns our registration; 0 before it (rebalance goroutine only)

	// Subscription: set once by CreateMessageStreams*.
	streamsCreated atomic.Bool
	subscription   map[string]int // registration's "subscription"
	pattern        string
	filter         *compiledFilter           // wildcard only
	queues         map[string][]*threadQueue // static: topic → thread index → queue
	wildQueues     []*threadQueue            // wildcard: thread index → queue (shared by all topics)
	allQueues      []*threadQueue
	wildcardTopics []string // rebalance goroutine only
	initial        chan initRequest

	// Events from watcher callbacks: flags plus a wake-up (events collapse).
	flagMu                                 sync.Mutex
	flagRebalance, flagTopics, flagSession bool
	wake                                   chan struct{}

	mu            sync.Mutex // guards what follows
	topicRegistry map[TopicPartition]*partitionInfo
	checkpointed  map[TopicPartition]int64 // checkpointedZkOffsets
	delivering    []TopicPartition         // partitions recorded as assigned, handed to the fetchers

	commitMu sync.Mutex
}

// New validates cfg, derives the consumer id (consumer.id, or "<hostname>-<unix ms>-<8 hex>", as
// "<group>_<that>") and opens a ZooKeeper session, waiting up to zookeeper.connection.timeout.ms.
// With auto.commit.enable it starts committing every auto.commit.interval.ms. Errors: an invalid
// config (naming the key), or no session in time.
func New(cfg Config) (*Connector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	id := cfg.ConsumerID
	if id == "" { // ZookeeperConsumerConnector.consumerIdString
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "localhost"
		}
		var b [4]byte
		_, _ = rand.Read(b[:])
		id = fmt.Sprintf("%s-%d-%s", host, time.Now().UnixMilli(), hex.EncodeToString(b[:]))
	}
	c := &Connector{
		cfg:           cfg,
		rec:           cfg.Recorder,
		consumerID:    cfg.GroupID + "_" + id,
		clientID:      cfg.ClientID,
		idsPath:       "/consumers/" + cfg.GroupID + "/ids",
		errs:          make(chan error, 16),
		connected:     make(chan struct{}),
		initial:       make(chan initRequest),
		wake:          make(chan struct{}, 1),
		topicRegistry: map[TopicPartition]*partitionInfo{},
		checkpointed:  map[TopicPartition]int64{},
	}
	if c.clientID == "" {
		c.clientID = cfg.GroupID
	}
	c.log = cfg.Log.WithFields(logrus.Fields{"group": cfg.GroupID, "member": c.consumerID})
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.fetcher = newFetcherManager(c)
	c.offsets = &offsetsChannel{c: c}

	servers, chroot := splitConnect(cfg.ZooKeeperConnect)
	dialer := cfg.ZKDialer
	if dialer == nil {
		dialer = net.DialTimeout
	}
	c.zk = newZKConn(chroot, c.rec, c.ctx.Done(), c.onChildChange, c.onDataChange)
	conn, _, err := zk.Connect(servers, time.Duration(cfg.ZooKeeperSessionTimeoutMs)*time.Millisecond,
		zk.WithLogger(zkLogger{c.log}), zk.WithEventCallback(c.onZKEvent), zk.WithDialer(dialer))
	if err != nil {
		c.zk.close()
		return nil, fmt.Errorf("zkconsumer: zookeeper.connect=%s: %w", cfg.ZooKeeperConnect, err)
	}
	c.zk.conn = conn
	select {
	case <-c.connected:
	case <-time.After(time.Duration(cfg.ZooKeeperConnectionTimeoutMs) * time.Millisecond):
		c.zk.close()
		return nil, fmt.Errorf("zkconsumer: no ZooKeeper session with %s within zookeeper.connection.timeout.ms=%d", cfg.ZooKeeperConnect, cfg.ZooKeeperConnectionTimeoutMs)
	}
	c.log.Info("connected to ZooKeeper")
	if cfg.AutoCommitEnable {
		c.wg.Add(1)
		go c.autoCommit()
	}
	return c, nil
}

// zkLogger sends go-zookeeper's log lines to logrus at debug level.
type zkLogger struct{ log *logrus.Entry }

func (l zkLogger) Printf(format string, a ...any) { l.log.Debugf("zk: "+format, a...) }

// ConsumerID is "<group>_<consumer.id or generated id>", the name of this connector's registration.
func (c *Connector) ConsumerID() string { return c.consumerID }

// SessionID is the current ZooKeeper session id (as `wchp`/`cons` print it, in hex).
func (c *Connector) SessionID() int64 { return c.zk.conn.SessionID() }

// ZooKeeperOps counts this connector's ZooKeeper requests since New: reads (getData,
// getChildren, exists) and writes (create, setData, delete).
func (c *Connector) ZooKeeperOps() (reads, writes int64) {
	return c.zk.reads.Load(), c.zk.writes.Load()
}

// Owned returns the partitions this connector owns after its last successful rebalance
// (topic → ascending partitions; Kafka's topicRegistry).
func (c *Connector) Owned() map[string][]int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return partitionsByTopic(keys(c.topicRegistry))
}

// Errors reports rebalances triggered by watches that failed every attempt (the connector holds
// no partitions until the next event). Closed by Shutdown. When nobody reads, errors beyond 16
// are dropped (they are logged and recorded either way).
func (c *Connector) Errors() <-chan error { return c.errs }

func keys(m map[TopicPartition]*partitionInfo) []TopicPartition {
	out := make([]TopicPartition, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	sortTopicPartitions(out)
	return out
}

func (c *Connector) emit(r timeline.Record) {
	r.ConsumerID = c.consumerID
	c.rec.Emit(r)
}

// CreateMessageStreams subscribes to topicCount (topic → number of consumer threads), registers
// this consumer and runs the initial rebalance, returning when it is done: topic → one channel
// per thread ("<consumerId>-<i>" owns the partitions delivered on channel i). The channels close
// at Shutdown. Errors: bad input (no topics, illegal topic name, threads < 1), ErrStreamsExist,
// the registration's ZooKeeper error, ErrRebalanceFailed, or ctx's error (the rebalance goes on).
func (c *Connector) CreateMessageStreams(ctx context.Context, topicCount map[string]int) (map[string][]<-chan Message, error) {
	if len(topicCount) == 0 {
		return nil, errors.New("zkconsumer: CreateMessageStreams: no topics")
	}
	for t, n := range topicCount {
		if !legalChars.MatchString(t) || len(t) > 249 {
			return nil, fmt.Errorf("zkconsumer: illegal topic name %q: up to 249 characters of [a-zA-Z0-9._-]", t)
		}
		if n < 1 {
			return nil, fmt.Errorf("zkconsumer: topic %s: %d threads, want >= 1", t, n)
		}
	}
	if c.streamsCreated.Swap(true) {
		return nil, ErrStreamsExist
	}
	out := map[string][]<-chan Message{}
	build := func() {
		c.subscription, c.pattern = map[string]int{}, PatternStatic
		c.queues = map[string][]*threadQueue{}
		for t, n := range topicCount {
			c.subscription[t] = n
			for i := 0; i < n; i++ {
				q := newThreadQueue(c.cfg.QueuedMaxMessageChunks, c.rec)
				c.queues[t] = append(c.queues[t], q)
				c.allQueues = append(c.allQueues, q)
				out[t] = append(out[t], q.out)
			}
		}
	}
	// consume: registerConsumerInZK, then reinitializeConsumer.
	err := c.start(ctx, build, func() error {
		if err := c.register(); err != nil {
			return err
		}
		return c.reinitializeConsumer()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CreateMessageStreamsByFilter subscribes to the topics filter allows (now and later: new topics
// under /brokers/topics trigger a rebalance), with threads streams shared by all those topics.
// Errors as CreateMessageStreams, plus an invalid regex.
func (c *Connector) CreateMessageStreamsByFilter(ctx context.Context, filter TopicFilter, threads int) ([]<-chan Message, error) {
	if filter == nil {
		return nil, errors.New("zkconsumer: CreateMessageStreamsByFilter: nil filter")
	}
	if threads < 1 {
		return nil, fmt.Errorf("zkconsumer: CreateMessageStreamsByFilter: %d threads, want >= 1", threads)
	}
	regex, black := filter.filter()
	f, err := compileFilter(regex, black)
	if err != nil {
		return nil, fmt.Errorf("zkconsumer: %w", err)
	}
	if c.streamsCreated.Swap(true) {
		return nil, ErrStreamsExist
	}
	out := make([]<-chan Message, threads)
	build := func() {
		c.filter = &f
		c.subscription = map[string]int{regex: threads}
		c.pattern = PatternWhiteList
		if black {
			c.pattern = PatternBlackList
		}
		for i := range out {
			q := newThreadQueue(c.cfg.QueuedMaxMessageChunks, c.rec)
			c.wildQueues = append(c.wildQueues, q)
			c.allQueues = append(c.allQueues, q)
			out[i] = q.out
		}
	}
	// WildcardStreamsHandler: bootstrap with the existing topics, register, reinitializeConsumer,
	// then the ZookeeperTopicEventWatcher (not created when the initial rebalance fails).
	err = c.start(ctx, build, func() error {
		all, err := c.zk.childrenMayNotExist(brokerTopicsPath)
		if err != nil {
			return fmt.Errorf("zkconsumer: listing %s: %w", brokerTopicsPath, err)
		}
		c.wildcardTopics = c.allowedTopics(all)
		if err := c.register(); err != nil {
			return err
		}
		if err := c.reinitializeConsumer(); err != nil {
			return err
		}
		if err := c.zk.makeSurePersistentPathExists(brokerTopicsPath); err != nil {
			return fmt.Errorf("zkconsumer: %s: %w", brokerTopicsPath, err)
		}
		if err := c.zk.subscribeChildChanges(brokerTopicsPath); err != nil {
			return fmt.Errorf("zkconsumer: watching %s: %w", brokerTopicsPath, err)
		}
		if c.handleTopicEvent() { // the bootstrap call of ZkTopicEventListener.handleChildChange
			c.watchTriggered(c.reinitializeConsumer)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Connector) allowedTopics(all []string) []string {
	var out []string
	for _, t := range all {
		if c.filter.allowed(t, c.cfg.ExcludeInternalTopics) {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

type initRequest struct {
	fn    func() error
	reply chan error
}

// start builds the streams (build: the subscription and its queues) and starts the rebalance
// goroutine, unless shutdown has begun (ErrShutdown); then runs init (registration, subscriptions,
// initial rebalance) on that goroutine, which goes on to serve watch-triggered rebalances, and
// waits for its result.
func (c *Connector) start(ctx context.Context, build func(), init func() error) error {
	c.lifeMu.Lock()
	if c.closing.Load() {
		c.lifeMu.Unlock()
		return ErrShutdown
	}
	build()
	c.wg.Add(1)
	go c.run()
	c.lifeMu.Unlock()
	req := initRequest{init, make(chan error, 1)}
	select {
	case c.initial <- req:
	case <-c.ctx.Done():
		return ErrShutdown
	}
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return ErrShutdown
	}
}

// reinitializeConsumer subscribes to the group's ids (ZKRebalancerListener) and to the data of
// every consumed topic (ZKTopicPartitionChangeListener), then runs syncedRebalance. A wildcard
// subscription's topics are listed from /brokers/topics (WildcardTopicCount); subscriptions are
// never dropped, as in 0.8.2.
func (c *Connector) reinitializeConsumer() error {
	if err := c.zk.subscribeChildChanges(c.idsPath); err != nil {
		return fmt.Errorf("zkconsumer: watching %s: %w", c.idsPath, err)
	}
	var topics []string
	if c.filter == nil {
		for t := range c.subscription {
			topics = append(topics, t)
		}
		sort.Strings(topics)
	} else {
		all, err := c.zk.childrenMayNotExist(brokerTopicsPath)
		if err != nil {
			return fmt.Errorf("zkconsumer: listing %s: %w", brokerTopicsPath, err)
		}
		topics = c.allowedTopics(all)
	}
	for _, t := range topics {
		if err := c.zk.subscribeDataChanges(brokerTopicsPath + "/" + t); err != nil {
			return fmt.Errorf("zkconsumer: watching topic %s: %w", t, err)
		}
	}
	return c.syncedRebalance()
}

// register is registerConsumerInZK: the ephemeral ids znode with the subscription JSON, created
// as 0.9's ZKCheckedEphemeral does (KAFKA-1387, zkConn.createEphemeralChecked): a node owned by the
// current session is ours — a create that succeeded before a connection loss, or a registration
// already made in this session. (0.8.2.2 compared the node's bytes with its own, whose timestamp is
// always new, and so waited forever for its own node to go.) A node owned by another session may be
// our expired session's, which ZooKeeper has yet to delete (ZOOKEEPER-1740), or another connector's
// with the same consumer.id: as 0.8.2's createEphemeralPathExpectConflictHandleZKBug, back off
// zookeeper.session.timeout.ms — each back-off recorded as an error — and try again until it is
// gone. On success c.session is the session that owns the registration. Errors: ErrShutdown, or the
// server's error for the ids path.
func (c *Connector) register() error {
	data, err := json.Marshal(Registration{Version: 1, Subscription: c.subscription, Pattern: c.pattern, Timestamp: strconv.FormatInt(time.Now().UnixMilli(), 10)})
	if err != nil {
		return err
	}
	path := c.idsPath + "/" + c.consumerID
	for {
		owner, err := c.zk.createEphemeralChecked(path, data)
		switch {
		case err == nil:
			c.session = owner
			c.log.WithField("session", fmt.Sprintf("%#x", owner)).Info("registered consumer in ZooKeeper")
			return nil
		case errors.Is(err, ErrShutdown):
			return ErrShutdown
		case !errors.Is(err, zk.ErrNodeExists):
			return fmt.Errorf("zkconsumer: registering %s: %w", path, err)
		}
		text := fmt.Sprintf("registration node exists: %s is owned by session %#x; backing off %d ms", path, owner, c.cfg.ZooKeeperSessionTimeoutMs)
		c.log.Warn(text)
		c.emit(timeline.Record{Kind: timeline.Error, Text: text})
		select {
		case <-time.After(time.Duration(c.cfg.ZooKeeperSessionTimeoutMs) * time.Millisecond):
		case <-c.ctx.Done():
			return ErrShutdown
		}
	}
}

// onZKEvent is go-zookeeper's event callback: session events set flags (IZkStateListener), watch
// notifications go to ZkClient's event thread. Never blocks.
func (c *Connector) onZKEvent(ev zk.Event) {
	switch {
	case ev.Type == zk.EventSession:
	case ev.Type == zk.EventNotWatching || ev.Path == "":
		return
	default:
		c.zk.notify(ev)
		return
	}
	c.zk.sessionStateChanged()
	switch ev.State {
	case zk.StateExpired:
		// The session's ephemeral znodes (the ids znode, the owner znodes) are gone: out of the group
		// until it registers again and claims (the invariant figures read this record).
		if !c.expired.Swap(true) {
			c.emit(timeline.Record{Kind: timeline.SessionExpired})
		}
	case zk.StateHasSession:
		c.connectOnce.Do(func() { close(c.connected) })
		if c.expired.Swap(false) {
			c.signal(func() { c.flagSession = true })
		}
	}
}

// onChildChange is the child listeners' callback: ZKRebalancerListener (/consumers/<g>/ids and,
// once no broker was found, /brokers/ids) and ZkTopicEventListener (/brokers/topics). Sets a flag.
func (c *Connector) onChildChange(path string) {
	switch path {
	case c.idsPath, brokerIdsPath:
		c.signal(func() { c.flagRebalance = true })
	case brokerTopicsPath:
		c.signal(func() { c.flagTopics = true })
	}
}

// onDataChange is ZKTopicPartitionChangeListener: a topic's partition map changed (or the topic
// appeared). A deleted topic is only logged (handleDataDeleted; 0.8.2 does not handle deletion).
func (c *Connector) onDataChange(path string, deleted bool) {
	if deleted {
		c.log.WithField("topic", strings.TrimPrefix(path, brokerTopicsPath+"/")).Warn("topic path deleted")
		return
	}
	c.signal(func() { c.flagRebalance = true })
}

func (c *Connector) signal(set func()) {
	c.flagMu.Lock()
	set()
	c.flagMu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run is the one rebalance goroutine (the watcher executor thread): it serves the initial
// rebalance, then one syncedRebalance per wake-up however many events came meanwhile.
func (c *Connector) run() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case req := <-c.initial:
			if c.ctx.Err() != nil { // shutdown began as the request came: no ZooKeeper call now
				req.reply <- ErrShutdown
				return
			}
			req.reply <- req.fn()
		case <-c.wake:
			c.flagMu.Lock()
			session, topics, rebalance := c.flagSession, c.flagTopics, c.flagRebalance
			c.flagSession, c.flagTopics, c.flagRebalance = false, false, false
			c.flagMu.Unlock()
			switch {
			case session:
				c.handleNewSession()
			case topics && c.handleTopicEvent():
				c.watchTriggered(c.reinitializeConsumer)
			case rebalance:
				c.watchTriggered(c.syncedRebalance)
			}
		}
	}
}

// handleNewSession follows ZkClient's order after an expiry: ZKSessionExpireListener.
// handleNewSession — forget the partitions (resetState; the session's owner znodes are gone, but
// the fetchers run on until the rebalance stops them: the split-brain window), re-register,
// rebalance — then, with a wildcard, the topic watcher re-subscribes; then fireAllEvents: every
// subscription re-reads its path and calls its listener, which schedules one more rebalance.
//
// It acts on the session connected now (waiting for one if there is none), and an event for a
// session already handled does nothing: when sessions are re-created faster than this goroutine
// gets to their events, a registration waiting for a connection is made in a later session than
// the event it answers, whose own event still follows (ZkClient queued one handleNewSession per
// session: KAFKA-1387). Before the first registration (CreateMessageStreams) there is nothing to
// re-create.
func (c *Connector) handleNewSession() {
	if c.session == 0 {
		return
	}
	sid, ok := c.zk.waitSession()
	if !ok {
		return // shutting down
	}
	if sid == c.session {
		c.log.WithField("session", fmt.Sprintf("%#x", sid)).Info("new-session event for a session already handled; nothing to do")
		return
	}
	c.log.Warn("ZooKeeper session expired; re-registering and rebalancing")
	c.emit(timeline.Record{Kind: timeline.Error, Text: "zookeeper session expired"})
	c.mu.Lock()
	c.topicRegistry = map[TopicPartition]*partitionInfo{}
	c.mu.Unlock()
	c.zk.resetWatches()
	if err := c.register(); err != nil {
		c.reportFailure(err)
	} else {
		c.watchTriggered(c.syncedRebalance)
	}
	if c.filter != nil {
		if err := c.zk.subscribeChildChanges(brokerTopicsPath); err != nil {
			c.log.WithError(err).Warn("re-subscribing to topic changes failed")
		}
	}
	c.zk.fireAll()
}

// handleTopicEvent is ZkTopicEventListener.handleChildChange + WildcardStreamsHandler.
// handleTopicEvent: list /brokers/topics; true when the allowed topics changed.
func (c *Connector) handleTopicEvent() bool {
	if c.filter == nil {
		return false
	}
	all, err := c.zk.childrenMayNotExist(brokerTopicsPath)
	if err != nil {
		c.log.WithError(err).Error("error in handling child changes")
		return false
	}
	now := c.allowedTopics(all)
	if strings.Join(now, ",") == strings.Join(c.wildcardTopics, ",") {
		return false
	}
	c.log.WithFields(logrus.Fields{"before": c.wildcardTopics, "after": now}).Info("topic event")
	c.wildcardTopics = now
	return true
}

// watchTriggered runs a rebalance that no caller waits for: a failure is reported.
func (c *Connector) watchTriggered(rebalance func() error) {
	if err := rebalance(); err != nil && !errors.Is(err, ErrShutdown) {
		c.reportFailure(err)
	}
}

// reportFailure logs, records and reports a watch-triggered failure on the error channel.
func (c *Connector) reportFailure(err error) {
	if c.closing.Load() {
		return
	}
	c.log.WithError(err).Error("rebalance failed")
	c.emit(timeline.Record{Kind: timeline.Error, Text: err.Error()})
	select {
	case c.errs <- err:
	default:
		c.log.Warn("error channel full; dropping the error")
	}
}

// syncedRebalance makes up to rebalance.max.retries attempts; after a failed one it stops the
// fetchers, clears every queue (and commits, with auto-commit) and sleeps rebalance.backoff.ms, as
// 0.8.2 does even after the last attempt. Records rebalance_begin once, then rebalance_end{ok,
// attempt} after every attempt (the rebalance_attempts figure); a rebalance cut short by Shutdown
// records no end for the attempt it did not finish.
func (c *Connector) syncedRebalance() error {
	if c.closing.Load() {
		return ErrShutdown
	}
	c.emit(timeline.Record{Kind: timeline.RebalanceBegin})
	var lastErr error
	attempt := 0
	for attempt < c.cfg.RebalanceMaxRetries {
		attempt++
		if c.closing.Load() {
			lastErr = ErrShutdown
			break
		}
		log := c.log.WithField("attempt", attempt)
		log.Info("begin rebalancing")
		done, err := c.rebalance()
		if done {
			c.emit(timeline.Record{Kind: timeline.RebalanceEnd, OK: timeline.Bool(true), Attempt: attempt})
			log.Info("rebalance done")
			return nil
		}
		if err == nil {
			err = ErrShutdown
		}
		lastErr = err
		if !errors.Is(err, ErrShutdown) {
			c.emit(timeline.Record{Kind: timeline.RebalanceEnd, OK: timeline.Bool(false), Attempt: attempt})
		}
		log.WithError(err).Info("rebalance attempt failed")
		c.closeFetchersForQueues(c.allQueues)
		select {
		case <-time.After(time.Duration(c.cfg.RebalanceBackoffMs) * time.Millisecond):
		case <-c.ctx.Done():
		}
	}
	if errors.Is(lastErr, ErrShutdown) {
		return ErrShutdown
	}
	return fmt.Errorf("%w: %s can't rebalance after %d retries: %w", ErrRebalanceFailed, c.consumerID, c.cfg.RebalanceMaxRetries, lastErr)
}

// rebalance is one attempt (ZKRebalancerListener.rebalance). false with a nil error means the
// connector is shutting down.
func (c *Connector) rebalance() (done bool, err error) {
	session := c.zk.conn.SessionID()
	// syncedRebalance's getCluster: 0.8.2 reads the broker list here and hands it, unused, to the
	// fetcher; the reads are part of every attempt's cost.
	if _, err := c.allBrokers(); err != nil {
		return false, err
	}
	myThreads, err := c.myTopicThreadIDs()
	if err != nil {
		return false, err
	}
	brokers, err := c.allBrokers()
	if err != nil {
		return false, err
	}
	if len(brokers) == 0 {
		// 0.8.2: nothing to do until a broker registers; from now on /brokers/ids changes rebalance.
		c.log.Warn("no brokers found when trying to rebalance")
		if err := c.zk.subscribeChildChanges(brokerIdsPath); err != nil {
			return false, err
		}
		return true, nil
	}

	// Stop fetching first: the partitions released below may be claimed by others at once.
	relevant := map[string]bool{}
	for t := range myThreads {
		relevant[t] = true
	}
	c.closeFetchersForQueues(c.queuesOf(relevant))
	c.mu.Lock()
	owned := partitionsByTopic(keys(c.topicRegistry))
	c.mu.Unlock()
	if err := c.callListener(func(l RebalanceListener) { l.BeforeReleasingPartitions(owned) }); err != nil {
		return false, err
	}
	if err := c.releasePartitionOwnership(); err != nil {
		return false, err
	}

	actx, err := c.assignmentContext()
	if err != nil {
		return false, err
	}
	assign := assignRange
	if c.cfg.PartitionAssignmentStrategy == StrategyRoundRobin {
		assign = assignRoundRobin
	}
	global, err := assign(actx)
	if err != nil {
		return false, err
	}
	mine := global.mine(c.consumerID)
	tps := mine.sortedPartitions()

	offsets, err := c.fetchOffsets(tps)
	if err != nil {
		return false, err
	}
	registry := map[TopicPartition]*partitionInfo{}
	for _, tp := range tps {
		q, err := c.queueFor(tp.Topic, mine[tp])
		if err != nil {
			return false, err
		}
		registry[tp] = newPartitionInfo(tp, q, offsets[tp])
	}
	if c.closing.Load() {
		return false, nil
	}
	if err := c.reflectPartitionOwnershipDecision(mine); err != nil {
		return false, err
	}
	if now := c.zk.conn.SessionID(); now != session {
		return false, c.releaseStaleClaims(tps, session, now)
	}
	// The partitions are this member's from here (its owner znodes exist): recorded as assigned
	// before any commit can include them (commitMu orders this against a concurrent commit's
	// records; a Kafka commit sends every owned partition).
	c.commitMu.Lock()
	c.mu.Lock()
	c.topicRegistry = registry
	c.delivering = keys(registry) // a failed listener call below still ends in a revoked record
	for tp, pi := range registry {
		c.checkpointed[tp] = pi.consumed.Load()
	}
	c.mu.Unlock()
	c.emit(timeline.Record{Kind: timeline.Assigned, Partitions: partitionsByTopic(tps)})
	c.commitMu.Unlock()
	if err := c.callListener(func(l RebalanceListener) { l.BeforeStartingFetchers(c.consumerID, global.byTopic()) }); err != nil {
		return false, err
	}
	c.updateFetcher(registry)
	c.log.WithField("partitions", partitionsByTopic(tps)).Info("selected partitions")
	return true, nil
}

func (c *Connector) callListener(call func(RebalanceListener)) (err error) {
	if c.cfg.Listener == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rebalance listener panicked: %v", r)
		}
	}()
	call(c.cfg.Listener)
	return nil
}

// brokerInfo is one /brokers/ids/<id> registration.
type brokerInfo struct {
	id   int32
	host string
	port int
}

func (b brokerInfo) addr() string { return net.JoinHostPort(b.host, strconv.Itoa(b.port)) }

// allBrokers is ZkUtils.getAllBrokersInCluster: list /brokers/ids, read each node. A node that
// vanishes between the list and the read is a broker that went away (KAFKA-1010,
// ZK-BROKER-VANISHES). Registrations of every version Kafka writes (1–5, zkdata.DecodeBroker) are
// read; a broker without a PLAINTEXT endpoint is left out (this consumer speaks PLAINTEXT only). A
// node that does not parse is an error.
func (c *Connector) allBrokers() ([]brokerInfo, error) {
	ids, err := c.zk.childrenMayNotExist(brokerIdsPath)
	if err != nil {
		return nil, err
	}
	sort.Strings(ids)
	var out []brokerInfo
	for _, id := range ids {
		data, ok, err := c.zk.getMaybeNull(brokerIdsPath + "/" + id)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("broker id %q under %s is not a number", id, brokerIdsPath)
		}
		reg, err := zkdata.DecodeBroker(data)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", brokerIdsPath, id, err)
		}
		host, port, plaintext := reg.Plaintext()
		if !plaintext {
			c.log.WithField("broker", n).Debug("broker has no PLAINTEXT endpoint; left out")
			continue
		}
		out = append(out, brokerInfo{int32(n), host, port})
	}
	return out, nil
}

// myTopicThreadIDs reads this consumer's own registration back (TopicCount.constructTopicCount).
func (c *Connector) myTopicThreadIDs() (map[string][]ThreadID, error) {
	return c.threadsOf(c.consumerID)
}

// threadsOf reads one member's registration; a wildcard subscription lists /brokers/topics.
func (c *Connector) threadsOf(consumer string) (map[string][]ThreadID, error) {
	data, err := c.zk.get(c.idsPath + "/" + consumer)
	if err != nil {
		return nil, fmt.Errorf("reading registration of %s: %w", consumer, err)
	}
	reg, err := parseRegistration(data)
	if err != nil {
		return nil, err
	}
	var topics []string
	if _, _, _, wild := reg.wildcard(); wild {
		if topics, err = c.zk.childrenMayNotExist(brokerTopicsPath); err != nil {
			return nil, err
		}
	}
	return reg.threadsPerTopic(consumer, topics, c.cfg.ExcludeInternalTopics)
}

// assignmentContext reads what the assignors need, in 0.8.2's order: own threads, the partitions
// of own topics (ZkUtils.getPartitionsForTopics), every member's threads
// (getConsumersPerTopic: list /consumers/<g>/ids, read each), the member list (getConsumersInGroup).
func (c *Connector) assignmentContext() (assignmentContext, error) {
	my, err := c.myTopicThreadIDs()
	if err != nil {
		return assignmentContext{}, err
	}
	actx := assignmentContext{consumerID: c.consumerID, myTopicThreadIDs: my,
		consumersForTopic: map[string][]ThreadID{}, partitionsForTopic: map[string][]int32{}}
	topics := make([]string, 0, len(my))
	for t := range my {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		ps, err := c.partitionsOf(t)
		if err != nil {
			return assignmentContext{}, err
		}
		actx.partitionsForTopic[t] = ps
	}
	members, err := c.zk.childrenMayNotExist(c.idsPath)
	if err != nil {
		return assignmentContext{}, err
	}
	for _, m := range members {
		threads, err := c.threadsOf(m)
		if err != nil {
			return assignmentContext{}, err
		}
		for t, ids := range threads {
			actx.consumersForTopic[t] = append(actx.consumersForTopic[t], ids...)
		}
	}
	for _, ids := range actx.consumersForTopic {
		sortThreadIDs(ids)
	}
	if _, err := c.zk.children(c.idsPath); err != nil { // getConsumersInGroup (0.8.2 logs it)
		return assignmentContext{}, err
	}
	return actx, nil
}

// partitionsOf reads /brokers/topics/<t> (versions 1–3, zkdata.DecodeTopicAssignment) and returns its
// partition ids ascending; a missing topic has none.
func (c *Connector) partitionsOf(topic string) ([]int32, error) {
	data, ok, err := c.zk.getMaybeNull(brokerTopicsPath + "/" + topic)
	if err != nil || !ok {
		return nil, err
	}
	assignment, err := zkdata.DecodeTopicAssignment(data)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	out := make([]int32, 0, len(assignment))
	for p := range assignment {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func (c *Connector) offsetPath(tp TopicPartition) string {
	return fmt.Sprintf("/consumers/%s/offsets/%s/%d", c.cfg.GroupID, tp.Topic, tp.Partition)
}

func (c *Connector) ownerPath(tp TopicPartition) string {
	return fmt.Sprintf("/consumers/%s/owners/%s/%d", c.cfg.GroupID, tp.Topic, tp.Partition)
}

// fetchOffsets is fetchOffsets: each partition's committed next offset, or -1 (none), from ZooKeeper
// (offsets.storage=zookeeper: one read per partition) or from the offset manager (kafka; with dual
// commit the larger of both).
func (c *Connector) fetchOffsets(tps []TopicPartition) (map[TopicPartition]int64, error) {
	out := map[TopicPartition]int64{}
	if len(tps) == 0 {
		return out, nil
	}
	if c.cfg.OffsetsStorage == OffsetsStorageKafka {
		return c.fetchOffsetsFromKafka(c.ctx, tps)
	}
	for _, tp := range tps {
		offset, err := c.fetchOffset(tp)
		if err != nil {
			return nil, err
		}
		out[tp] = offset
	}
	return out, nil
}

// fetchOffset is fetchOffsetFromZooKeeper: the committed next offset, or -1 (none: the fetcher
// resets it per auto.offset.reset).
func (c *Connector) fetchOffset(tp TopicPartition) (int64, error) {
	data, ok, err := c.zk.getMaybeNull(c.offsetPath(tp))
	if err != nil || !ok {
		return -1, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return -1, fmt.Errorf("offset znode %s = %q is not a number", c.offsetPath(tp), data)
	}
	return n, nil
}

func (c *Connector) queueFor(topic string, t ThreadID) (*threadQueue, error) {
	qs := c.wildQueues
	if c.filter == nil {
		qs = c.queues[topic]
	}
	if t.Thread < 0 || t.Thread >= len(qs) {
		return nil, fmt.Errorf("no stream for topic %s thread %s", topic, t)
	}
	return qs[t.Thread], nil
}

// queuesOf returns the queues of the given topics (closeFetchers' relevant queues).
func (c *Connector) queuesOf(topics map[string]bool) []*threadQueue {
	if c.filter != nil {
		if len(topics) == 0 {
			return nil
		}
		return c.wildQueues
	}
	var out []*threadQueue
	for t, qs := range c.queues {
		if topics[t] {
			out = append(out, qs...)
		}
	}
	return out
}

// releasePartitionOwnership deletes this consumer's owner znodes and forgets the partitions.
func (c *Connector) releasePartitionOwnership() error {
	c.mu.Lock()
	tps := keys(c.topicRegistry)
	c.mu.Unlock()
	for _, tp := range tps {
		if err := c.zk.delete(c.ownerPath(tp)); err != nil {
			return fmt.Errorf("releasing %s: %w", c.ownerPath(tp), err)
		}
		c.mu.Lock()
		delete(c.topicRegistry, tp)
		c.mu.Unlock()
	}
	return nil
}

// reflectPartitionOwnershipDecision claims an owner znode for every partition of the decision
// (all are tried, as in Kafka); if any is owned by another thread or fails, every znode this
// attempt claimed is deleted before returning (ZK-FAILED-ATTEMPT-RELEASES).
func (c *Connector) reflectPartitionOwnershipDecision(mine assignment) error {
	outcomes := map[TopicPartition]claimOutcome{}
	var errs []error
	for _, tp := range mine.sortedPartitions() {
		o, err := c.zk.claimOwner(c.ownerPath(tp), mine[tp].String())
		outcomes[tp] = o
		if err != nil {
			if o == conflict {
				c.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).WithError(err).Info("waiting for the partition ownership to be deleted")
			}
			errs = append(errs, err)
		}
	}
	ok, release := decideAttempt(outcomes)
	if ok {
		return nil
	}
	for _, tp := range release {
		if err := c.zk.delete(c.ownerPath(tp)); err != nil {
			errs = append(errs, fmt.Errorf("deleting %s: %w", c.ownerPath(tp), err))
		}
	}
	return fmt.Errorf("partition ownership conflict: %w", errors.Join(errs...))
}

// releaseStaleClaims ends an attempt during which the session changed (from, to; 0: none yet). Its
// requests wait for a session and are sent again in the new one (retryUntilConnected), so some of
// its claims may have been made there, from the old session's view and before the new session's
// event is handled — whose resetState would forget them for good. A rebalance attempt is one
// session's: the owner znodes of the decision that the current session owns are deleted (one of the
// old session is gone with it, and one of another session may be another member's claim since),
// and the attempt fails; the new session's handling re-registers and rebalances. (0.8.2, over
// ZkClient, kept such claims.)
func (c *Connector) releaseStaleClaims(tps []TopicPartition, from, to int64) error {
	errs := []error{fmt.Errorf("ZooKeeper session changed from %#x to %#x during the attempt: its claims are released", from, to)}
	for _, tp := range tps {
		path := c.ownerPath(tp)
		_, st, err := c.zk.getStat(path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("reading %s: %w", path, err))
			continue
		case st.EphemeralOwner != c.zk.conn.SessionID():
			continue
		}
		if err := c.zk.delete(path); err != nil {
			errs = append(errs, fmt.Errorf("deleting %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// updateFetcher is updateFetcher: the fetchers start on the owned partitions.
func (c *Connector) updateFetcher(registry map[TopicPartition]*partitionInfo) {
	infos := make([]*partitionInfo, 0, len(registry))
	for _, pi := range registry {
		infos = append(infos, pi)
	}
	c.fetcher.start(infos)
}

// closeFetchersForQueues stops the fetchers, clears the given queues (and the chunk each thread
// is handing over), then commits if auto.commit.enable — never otherwise (KAFKA-919,
// ZK-NO-AUTOCOMMIT). The partitions the fetchers served are recorded as revoked: no message of
// theirs reaches the application after this.
func (c *Connector) closeFetchersForQueues(queues []*threadQueue) {
	c.fetcher.stop()
	for _, q := range queues {
		q.clearQueue()
	}
	// Commit first, then record the revocation: the commit is the owner's last act on these
	// partitions (0.8.2 commits in closeFetchersForQueues before releasing ownership).
	if c.cfg.AutoCommitEnable {
		if err := c.CommitOffsets(); err != nil {
			c.log.WithError(err).Warn("commit before release failed")
		}
	}
	c.emitRevoked()
}

// emitRevoked records the partitions this connector stops delivering (the fetchers are stopped).
func (c *Connector) emitRevoked() {
	c.mu.Lock()
	revoked := c.delivering
	c.delivering = nil
	c.mu.Unlock()
	if len(revoked) > 0 {
		c.emit(timeline.Record{Kind: timeline.Revoked, Partitions: partitionsByTopic(revoked)})
	}
}

// CommitOffsets commits the consumed offset (next offset to read) of the owned partitions
// (commitOffsets), once. offsets.storage=zookeeper: every partition whose offset changed since its
// last commit is written, in decimal, to /consumers/<group>/offsets/<t>/<p> (commitOffsetToZooKeeper,
// ZkUtils.updatePersistentPath); ZooKeeper checks no ownership, so a stale commit lands.
// offsets.storage=kafka: every owned partition goes to the offset manager in one OffsetCommit v1
// (commitToKafka), then, with dual.commit.enabled, each accepted one to ZooKeeper too. Each
// partition is recorded as commit{result: applied|rejected}. Returns the errors, joined.
func (c *Connector) CommitOffsets() error { return c.commitOffsets(c.ctx, 1) }

// commitOffsets makes up to attempts attempts of a Kafka commit (1 + offsets.commit.max.retries at
// shutdown, else 1, as 0.8.2), offsets.channel.backoff.ms apart; a ZooKeeper commit is one attempt.
func (c *Connector) commitOffsets(ctx context.Context, attempts int) error {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	if c.cfg.OffsetsStorage == OffsetsStorageKafka {
		for attempt := 1; ; attempt++ {
			c.mu.Lock()
			var work []committed
			for _, tp := range keys(c.topicRegistry) {
				work = append(work, committed{tp, c.topicRegistry[tp].consumed.Load()})
			}
			c.mu.Unlock()
			if len(work) == 0 {
				return nil
			}
			sort.Slice(work, func(i, j int) bool {
				a, b := work[i].tp, work[j].tp
				return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
			})
			done, err := c.commitToKafka(ctx, work)
			if done || attempt >= attempts || ctx.Err() != nil {
				return err
			}
			c.log.WithError(err).Debugf("retrying the offset commit in %d ms", c.cfg.OffsetsChannelBackoffMs)
			if c.offsetsBackoff(ctx) != nil {
				return err
			}
		}
	}
	var work []committed
	c.mu.Lock()
	for _, tp := range keys(c.topicRegistry) {
		off := c.topicRegistry[tp].consumed.Load()
		if last, ok := c.checkpointed[tp]; !ok || last != off {
			work = append(work, committed{tp, off})
		}
	}
	c.mu.Unlock()
	var errs []error
	for _, w := range work {
		err := c.commitOffsetToZooKeeper(w)
		if err != nil {
			errs = append(errs, fmt.Errorf("committing %s: %w", c.offsetPath(w.tp), err))
		}
		c.emit(commitRecord(w, err))
	}
	return errors.Join(errs...)
}

func (c *Connector) autoCommit() {
	defer c.wg.Done()
	t := time.NewTicker(time.Duration(c.cfg.AutoCommitIntervalMs) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if c.ctx.Err() != nil {
				return // shutting down: a tick that raced with it commits nothing
			}
			if err := c.CommitOffsets(); err != nil {
				c.log.WithError(err).Error("exception during autoCommit")
			}
		case <-c.ctx.Done():
			return
		}
	}
}

// Shutdown stops the connector: the rebalance goroutine (interrupting a backoff), the fetchers,
// the streams (their channels close; undelivered chunks are dropped), commits if auto-commit is
// on, and closes the ZooKeeper session, which deletes the registration and owner znodes.
// Idempotent.
func (c *Connector) Shutdown() { c.stop(true) }

// Crash stops the connector like a killed process: no commit. For the lab's crash scenarios, call
// it after cutting the member's ZooKeeper link so that its closeSession cannot reach the server:
// the registration and owner znodes then stay until the session expires.
func (c *Connector) Crash() { c.stop(false) }

func (c *Connector) stop(graceful bool) {
	c.stopOnce.Do(func() {
		c.lifeMu.Lock()
		c.closing.Store(true)
		c.lifeMu.Unlock()
		c.cancel()
		c.wg.Wait()
		c.fetcher.stop()
		for _, q := range c.allQueues {
			q.shutdown()
		}
		if graceful && c.cfg.AutoCommitEnable {
			// 0.8.2 retries a failed Kafka commit at shutdown offsets.commit.max.retries times (and
			// blocks until it finds the offset manager); here the shutdown commit gives up after
			// its attempts' worth of socket timeouts and backoffs.
			attempts := 1 + c.cfg.OffsetsCommitMaxRetries
			bound := kconfig.Millis(int64(attempts) * int64(c.cfg.OffsetsChannelSocketTimeoutMs+c.cfg.OffsetsChannelBackoffMs))
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			if err := c.commitOffsets(ctx, attempts); err != nil {
				c.log.WithError(err).Warn("commit at shutdown failed")
			}
			cancel()
		}
		c.emitRevoked()
		c.offsets.close()
		c.zk.close()
		close(c.errs)
		c.log.WithField("graceful", graceful).Info("connector shut down")
	})
}
