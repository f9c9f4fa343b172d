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
// Layers, as the broker's group coordinator: the rebalance (syncedRebalance) is a pure state
// machine, rebalanceCore.Step(event, now) → effects (rebalance_core.go: ZooKeeper reads, creates and
// deletes to make, fetchers to stop and start, commits, timeline records, the back-off timer to
// arm), tested with scripted results and a fake clock; its driver (rebalance_driver.go) carries
// the effects out on the one rebalance goroutine and steps their results back in, and collapses
// watch events into one rebalance. Files: connector.go (Connector, streams, shutdown), session.go
// (registration, session events), zk.go (ZooKeeper requests as ZkClient makes them), fetcher.go,
// stream.go, offsetmanager.go (commits and offset fetches, both storages), assign.go (assignors).
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
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/internal/kconfig"
	"github.com/rebalancelab/rebalancelab/internal/zklog"
	"github.com/rebalancelab/rebalancelab/timeline"
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
	core    *rebalanceCore  // the rebalance state machine; rebalance goroutine only (set with the streams)

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

	rebalances rebalanceTimer // from the records emitted, for Collector
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
		zk.WithLogger(zklog.New(c.log)), zk.WithEventCallback(c.onZKEvent), zk.WithDialer(dialer))
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
	c.rebalances.note(r)
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
	c.core = c.newCore()
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
