// Package broker is a Kafka broker on the real wire protocol (requests decoded and responses encoded by
// franz-go's kmsg): a listener with one goroutine per connection (kafka.network.SocketServer), request
// dispatch (kafka.server.KafkaApis), partition logs (broker/storage), and ZooKeeper registration and a
// controller laid out as Kafka 0.8.2's ZkUtils (docs/design.md "ZooKeeper layout").
//
// Replication is Kafka 3.9's in ZooKeeper mode (replication.go, alterpartition.go, shutdown.go,
// broker/replica): followers fetch from the leader, the leader's high watermark over the ISR bounds
// consumers and acks=all, ISR changes go to the controller as AlterPartition, and Close makes a
// controlled shutdown first. The controller alone watches the cluster in ZooKeeper and tells the
// brokers with LeaderAndIsr, UpdateMetadata and StopReplica (controlchannel.go, controlrequests.go).
//
// Differences from Kafka, on purpose: idempotent producers (InitProducerId, api_producer.go; the log checks their sequences)
// but no transactions; no fetch sessions (KIP-227: the broker answers
// session id 0, which every client handles with full fetches); the log holds v2 record batches only
// (Produce v0–v2 and Fetch v0–v3, message formats 0 and 1, are converted as Kafka 3.9 converts them:
// oldformats.go). Group APIs are served by a GroupHandler (SetGroupHandler).
package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/coordinator"
	"github.com/rebalancelab/rebalancelab/broker/storage"
)

// GroupHandler serves the group APIs (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete): the broker decodes the request,
// passes it here, and encodes the response it returns at the request's version. The context carries the
// request's client id and host (RequestInfoFrom) and ends when the connection or the broker closes. An
// error closes the client's connection (logged).
type GroupHandler interface {
	Handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
}

// GroupAPIVersioner may be implemented by a GroupHandler to say which versions of each group API it
// implements; the broker advertises exactly those in ApiVersions (keys it lists that are not group APIs
// are ignored). Without it the broker advertises Kafka 3.9's ranges (DefaultGroupAPIVersions).
type GroupAPIVersioner interface {
	GroupAPIVersions() []kmsg.ApiVersionsResponseApiKey
}

// RequestInfo describes the request a GroupHandler is handling (Kafka's RequestContext).
type RequestInfo struct {
	ClientID   string // request header client.id ("" when null)
	ClientHost string // the peer's IP, as Kafka's member metadata records it ("/127.0.0.1" in Kafka; here without the slash)
	BrokerID   int32  // the broker the request arrived at
}

type requestInfoKey struct{}

// RequestInfoFrom returns the RequestInfo of the request whose handling ctx belongs to.
func RequestInfoFrom(ctx context.Context) (RequestInfo, bool) {
	ri, ok := ctx.Value(requestInfoKey{}).(RequestInfo)
	return ri, ok
}

// Node is a live broker as registered in /brokers/ids/<id>.
type Node struct {
	ID   int32
	Host string
	Port int32
}

// Broker is one Kafka broker. Create it with Start; stop it with Close.
type Broker struct {
	cfg  Config
	opts options
	id   int32
	log  *logrus.Entry

	ln   net.Listener
	addr string // the bound listener address

	clusterID    atomic.Pointer[string] // /cluster/id, once read or created (clusterid.go)
	featureEpoch atomic.Int64           // /feature's znode version + 1; 0 until read (clusterid.go)
	host         string                 // advertised host and port (registered in ZooKeeper)
	port         int

	ctx    context.Context // the broker's lifetime; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	connsMu sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool

	zk     *zk.Conn
	chroot string
	zkq    *zkQueue
	// ctrlq hands requests to and from the controller to the ZooKeeper loop, which owns their state.
	ctrlq chan ctrlRequest
	// fetchers replicate the partitions this broker follows; alters sends its leaders' ISR changes.
	fetchers *replicaFetchers
	alters   *alterPartitions
	// ready is closed once the broker is registered in /brokers/ids and has its first UpdateMetadata
	// from the controller (live brokers, topics, partition states).
	ready     chan struct{}
	readyOnce sync.Once
	// regConflict is the ZooKeeper session holding /brokers/ids/<id> when the last registration attempt
	// found the node owned by another session (0: no conflict).
	regConflict atomic.Int64

	view atomic.Pointer[clusterView]          // ZooKeeper's picture, as the zk loop last published it
	dyn  atomic.Pointer[dynamicBrokerConfigs] // /config/brokers, as the zk loop last read it (dynconfig.go)

	partsMu sync.RWMutex
	parts   map[topicPartition]*partition // local logs, opened when this broker leads them

	groups   atomic.Pointer[groupRoute]
	onLeader atomic.Pointer[LeadershipFunc]
	coord    *groups // the group coordinator; nil only in tests built with newBroker
	metrics  *metrics
	cleaner  *storage.Cleaner // log compaction; nil with log.cleaner.enable=false
	pids     producerIDs      // InitProducerId's ids (api_producer.go)

	closeOnce sync.Once
	closeErr  error
}

type topicPartition struct {
	Topic     string
	Partition int32
}

type groupRoute struct {
	h        GroupHandler
	versions map[int16]apiRange
}

// LeadershipFunc is told when this broker becomes (leading=true) or stops being the leader of a partition,
// with the leader epoch of the change (Kafka: GroupCoordinator.onElection / onResignation for
// __consumer_offsets). It is called from the ZooKeeper loop and must not block.
type LeadershipFunc func(topic string, partition int32, leading bool, leaderEpoch int32)

// Start opens the listener, connects to ZooKeeper (zookeeper.connect) and registers /brokers/ids/<id>.
// It returns once the listener accepts connections, the broker is registered and the controller's
// first UpdateMetadata told it the cluster (live brokers, topics, partition states). ctx bounds only the start
// itself; the broker runs until Close. Once registered, a broker that loses ZooKeeper keeps serving
// produce and fetch and registers again when a new session is established.
//
// Errors (everything started is stopped first):
//   - invalid config, the listener cannot bind, log.dirs cannot be created;
//   - no ZooKeeper session within zookeeper.connection.timeout.ms (KafkaZkClient's
//     ZooKeeperClientTimeoutException "Timed out waiting for connection while in state: CONNECTING");
//     also when a session established during the start is lost for that long;
//   - /brokers/ids/<id> held by another session (ErrBrokerIDRegistered, KafkaZkClient.registerBroker's
//     NodeExistsException), still after waiting zookeeper.session.timeout.ms (+1 s) for ZooKeeper to
//     expire it in case it is this broker's previous incarnation (ZkUtils.createEphemeralPathExpectConflictHandleZKBug);
//   - ctx ended.
func Start(ctx context.Context, cfg Config, log *logrus.Entry, opts ...Option) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	b := newBroker(cfg, log)
	for _, o := range opts {
		o(&b.opts)
	}
	l, _ := parseListener(cfg.Listeners)
	ln, err := net.Listen("tcp", net.JoinHostPort(l.Host, strconv.Itoa(l.Port)))
	if err != nil {
		b.cancel()
		return nil, fmt.Errorf("broker %d: listen %s: %w", cfg.BrokerID, cfg.Listeners, err)
	}
	b.ln = ln
	b.addr = ln.Addr().String()
	b.host, b.port = cfg.advertised(ln.Addr().(*net.TCPAddr).Port)
	if err := os.MkdirAll(cfg.LogDirs, 0o755); err != nil {
		ln.Close()
		b.cancel()
		return nil, fmt.Errorf("broker %d: log.dirs %s: %w", cfg.BrokerID, cfg.LogDirs, err)
	}
	// The coordinator is routed before the first connection is accepted, so ApiVersions advertises
	// the group APIs from the start; it loads __consumer_offsets partitions as leadership arrives.
	if err := b.startGroupCoordinator(); err != nil {
		ln.Close()
		b.cancel()
		return nil, fmt.Errorf("broker %d: group coordinator: %w", cfg.BrokerID, err)
	}
	if err := b.startZK(); err != nil {
		ln.Close()
		b.coord.close()
		b.cancel()
		return nil, err
	}
	b.wg.Add(4)
	go b.acceptLoop()
	go b.retentionLoop()
	go func() { defer b.wg.Done(); b.alters.run() }()
	go b.replicaLoop()
	if cfg.LogCleanerEnable {
		b.startCleaner()
	}
	b.log.WithFields(logrus.Fields{"listen": b.addr, "advertised": fmt.Sprintf("%s:%d", b.host, b.port), "zookeeper": cfg.ZooKeeperConnect}).Info("listening; connecting to ZooKeeper")

	if err := b.waitRegistered(ctx); err != nil {
		b.Close()
		return nil, err
	}
	b.log.WithFields(logrus.Fields{"listen": b.addr, "advertised": b.AdvertisedAddr(), "zookeeper": cfg.ZooKeeperConnect}).Info("broker started")
	return b, nil
}

// Option is a setting of Start that is not a server.properties key.
type Option func(*options)

type options struct {
	onGroupChange   func(coordinator.GroupChanged)
	produceResponse func(*kmsg.ProduceResponse) bool
}

// WithGroupObserver has the group coordinator call fn with every state transition of every group it
// coordinates, in order, from a goroutine of its own (coordinator.Config.OnGroupChange): the
// coordinator's view of each generation, which groupview decodes by protocol.
func WithGroupObserver(fn func(coordinator.GroupChanged)) Option {
	return func(o *options) { o.onGroupChange = fn }
}

// WithProduceResponseHook has the broker call fn with every Produce response (acks 1 and -1) after its
// partitions were appended and before the response is written; when fn returns true the broker closes
// the connection instead of answering, so that the client never reads an answer to records the log
// holds. A test's way to cut a connection at exactly that moment (the idempotent producer's retry
// must then be answered as a duplicate). fn runs on the connection's goroutine and must not block.
func WithProduceResponseHook(fn func(*kmsg.ProduceResponse) (cut bool)) Option {
	return func(o *options) { o.produceResponse = fn }
}

// ErrBrokerIDRegistered is wrapped by Start's error when /brokers/ids/<broker.id> belongs to another
// live ZooKeeper session (Kafka: NodeExistsException from KafkaZkClient.registerBroker).
var ErrBrokerIDRegistered = errors.New("broker.id already registered (NodeExists)")

// startPoll is how often waitRegistered looks at the session state.
const startPoll = 20 * time.Millisecond

// waitRegistered waits for b.ready; it fails when ZooKeeper has given no session for
// zookeeper.connection.timeout.ms, or when another session still holds /brokers/ids/<id> one session
// timeout (+1 s: ZooKeeper expires sessions on tick boundaries) after the conflict was first seen.
func (b *Broker) waitRegistered(ctx context.Context) error {
	connTimeout, conflictWait := b.cfg.connectionTimeout(), b.cfg.sessionTimeout()+time.Second
	tick := time.NewTicker(startPoll)
	defer tick.Stop()
	noSession := time.Now() // since when there has been no session (zero: there is one)
	var conflictSince time.Time
	for {
		select {
		case <-b.ready:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("broker %d: start: %w", b.id, ctx.Err())
		case <-tick.C:
		}
		now := time.Now()
		if st := b.zk.State(); st == zk.StateHasSession {
			noSession = time.Time{}
		} else if noSession.IsZero() {
			noSession = now
		} else if now.Sub(noSession) >= connTimeout {
			return fmt.Errorf("broker %d: zookeeper.connect %s: Timed out waiting for connection while in state: %s (zookeeper.connection.timeout.ms=%d); is ZooKeeper running at %s? start one with `rebalancelab lab up` or pass --zk HOST:PORT of a running one",
				b.id, b.cfg.ZooKeeperConnect, kafkaZKState(st), connTimeout.Milliseconds(), b.cfg.ZooKeeperConnect)
		}
		owner := b.regConflict.Load()
		switch {
		case owner == 0:
			conflictSince = time.Time{}
		case conflictSince.IsZero():
			conflictSince = now
		case now.Sub(conflictSince) >= conflictWait:
			return fmt.Errorf("broker %d: %w: %s is held by ZooKeeper session 0x%x, not this broker's (0x%x), still after waiting zookeeper.session.timeout.ms=%d +1s for a previous incarnation's session to expire: another live broker uses broker.id %d (zookeeper.connect %s); stop it or start this one with another --id",
				b.id, ErrBrokerIDRegistered, b.zp(brokerPath(b.id)), owner, b.zk.SessionID(), b.cfg.sessionTimeout().Milliseconds(), b.id, b.cfg.ZooKeeperConnect)
		}
	}
}

// kafkaZKState names a go-zookeeper state as Kafka's ZooKeeper client does in its timeout message
// (ZooKeeper.States): every state short of a session is CONNECTING.
func kafkaZKState(s zk.State) string {
	switch s {
	case zk.StateAuthFailed:
		return "AUTH_FAILED"
	case zk.StateExpired:
		return "CLOSED"
	default:
		return "CONNECTING"
	}
}

// newBroker builds the broker's state without any I/O (the fuzz target uses it without ZooKeeper).
func newBroker(cfg Config, log *logrus.Entry) *Broker {
	ctx, cancel := context.WithCancel(context.Background())
	b := &Broker{
		cfg:     cfg,
		id:      cfg.BrokerID,
		log:     log.WithField("broker", cfg.BrokerID),
		ctx:     ctx,
		cancel:  cancel,
		conns:   make(map[net.Conn]struct{}),
		zkq:     newZKQueue(),
		ctrlq:   make(chan ctrlRequest),
		ready:   make(chan struct{}),
		parts:   make(map[topicPartition]*partition),
		metrics: newMetrics(cfg.BrokerID),
	}
	b.view.Store(emptyView())
	b.fetchers = newReplicaFetchers(b)
	b.alters = newAlterPartitions(b)
	return b
}

// Addr is the listener's bound address, host:port.
func (b *Broker) Addr() string { return b.addr }

// AdvertisedAddr is the host:port registered in ZooKeeper and answered in Metadata.
func (b *Broker) AdvertisedAddr() string { return net.JoinHostPort(b.host, strconv.Itoa(b.port)) }

// ID is broker.id.
func (b *Broker) ID() int32 { return b.id }

// Config returns the broker's configuration.
func (b *Broker) Config() Config { return b.cfg }

// Registered reports whether /brokers/ids/<id> was created at least once.
func (b *Broker) Registered() bool {
	select {
	case <-b.ready:
		return true
	default:
		return false
	}
}

// Metrics is the broker's private Prometheus registry (requests by api and error, bytes in/out,
// connections closed by reason, requests parked now by delayed operation); serve it with
// promhttp.HandlerFor.
func (b *Broker) Metrics() *prometheus.Registry { return b.metrics.reg }

// SetGroupHandler routes the group APIs to h and advertises them in ApiVersions (the versions of
// GroupAPIVersioner if h implements it, else DefaultGroupAPIVersions). nil removes the route.
func (b *Broker) SetGroupHandler(h GroupHandler) {
	if h == nil {
		b.groups.Store(nil)
		return
	}
	vs := DefaultGroupAPIVersions()
	if v, ok := h.(GroupAPIVersioner); ok {
		vs = v.GroupAPIVersions()
	}
	r := &groupRoute{h: h, versions: make(map[int16]apiRange)}
	for _, k := range vs {
		if coordinator.IsGroupAPI(k.ApiKey) && k.MinVersion <= k.MaxVersion {
			r.versions[k.ApiKey] = apiRange{k.MinVersion, k.MaxVersion}
		}
	}
	b.groups.Store(r)
}

// SetLeadershipListener installs fn (nil removes it). It is called for the partitions this broker leads
// at the time of the call, then on every change.
func (b *Broker) SetLeadershipListener(fn LeadershipFunc) {
	if fn == nil {
		b.onLeader.Store(nil)
		return
	}
	b.onLeader.Store(&fn)
	b.partsMu.RLock()
	var led []*partition
	for _, p := range b.parts {
		if p.leading.Load() {
			led = append(led, p)
		}
	}
	b.partsMu.RUnlock()
	for _, p := range led {
		b.callLeadership(fn, p.topic, p.id, true, p.epoch.Load())
	}
}

// ErrNotLeader and ErrUnknownTopicOrPartition are the kerr errors PartitionLog and Append return.
var (
	ErrNotLeader               = kerr.NotLeaderForPartition
	ErrUnknownTopicOrPartition = kerr.UnknownTopicOrPartition
)

// PartitionLog returns the log of a partition this broker leads (the coordinator reads
// __consumer_offsets through it). Write through Append, so that fetchers waiting on the partition wake.
// Errors: kerr.UnknownTopicOrPartition (no such partition), kerr.NotLeaderForPartition (another broker
// leads it, or none does).
func (b *Broker) PartitionLog(topic string, p int32) (*storage.Log, error) {
	part, err := b.leaderPartition(topic, p)
	if err != nil {
		return nil, err
	}
	return part.log, nil
}

// Append appends records (one or more v2 record batches) to a partition this broker leads, as a Produce
// with acks=1 would, and returns the base offset. Errors: as PartitionLog, plus storage.ErrCorruptRecord.
func (b *Broker) Append(topic string, p int32, records []byte) (int64, error) {
	part, err := b.leaderPartition(topic, p)
	if err != nil {
		return -1, err
	}
	return part.append(records)
}

// Leader returns the live broker leading topic/partition per ZooKeeper, or kerr.LeaderNotAvailable
// (leader -1 or its broker is not registered), or kerr.UnknownTopicOrPartition.
func (b *Broker) Leader(topic string, p int32) (Node, error) {
	v := b.view.Load()
	t, ok := v.topics[topic]
	if !ok {
		return Node{}, kerr.UnknownTopicOrPartition
	}
	st, ok := t.states[p]
	if _, assigned := t.replicas[p]; !assigned {
		return Node{}, kerr.UnknownTopicOrPartition
	}
	if !ok || !st.exists || st.Leader < 0 {
		return Node{}, kerr.LeaderNotAvailable
	}
	n, ok := v.brokers[st.Leader]
	if !ok {
		return Node{}, kerr.LeaderNotAvailable
	}
	return n, nil
}

// Partitions returns a topic's partition count per ZooKeeper, false if the topic does not exist.
func (b *Broker) Partitions(topic string) (int32, bool) {
	t, ok := b.view.Load().topics[topic]
	if !ok {
		return 0, false
	}
	return int32(len(t.replicas)), true
}

// Brokers returns the live brokers registered in ZooKeeper, by id.
func (b *Broker) Brokers() []Node { return b.view.Load().sortedBrokers() }

// EnsureOffsetsTopic creates __consumer_offsets (offsets.topic.num.partitions partitions, replication
// factor offsets.topic.replication.factor) if it does not exist, and waits until every partition has a
// state in ZooKeeper, as Kafka does on the first FindCoordinator. Errors: kerr.InvalidReplicationFactor
// (fewer live brokers than offsets.topic.replication.factor, or a factor above 1), ZooKeeper errors, ctx.
func (b *Broker) EnsureOffsetsTopic(ctx context.Context) error {
	if _, ok := b.Partitions(OffsetsTopic); ok {
		return nil
	}
	code, msg := b.createTopic(ctx, OffsetsTopic, b.cfg.OffsetsTopicNumPartitions, b.cfg.OffsetsTopicReplicationFactor, nil, b.cfg.offsetsTopicConfigs())
	switch code {
	case 0, kerr.TopicAlreadyExists.Code:
	default:
		return fmt.Errorf("%s: %w: %s", OffsetsTopic, kerr.ErrorForCode(code), msg)
	}
	return b.waitTopic(ctx, OffsetsTopic, b.cfg.OffsetsTopicNumPartitions)
}

// localPartition is this broker's replica of topic/partition, leader or follower; errors as
// leaderPartition (NOT_LEADER_OR_FOLLOWER when it holds no replica).
func (b *Broker) localPartition(topic string, p int32) (*partition, error) {
	b.partsMu.RLock()
	part := b.parts[topicPartition{topic, p}]
	b.partsMu.RUnlock()
	if part != nil {
		return part, nil
	}
	if _, err := b.Leader(topic, p); errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil, err
	}
	return nil, kerr.NotLeaderForPartition
}

func (b *Broker) leaderPartition(topic string, p int32) (*partition, error) {
	b.partsMu.RLock()
	part := b.parts[topicPartition{topic, p}]
	b.partsMu.RUnlock()
	if part != nil && part.leading.Load() {
		return part, nil
	}
	if _, err := b.Leader(topic, p); errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil, err
	}
	return nil, kerr.NotLeaderForPartition
}

// controlledShutdownTimeout bounds Close's controlled shutdown.
const controlledShutdownTimeout = 15 * time.Second

// Close stops the broker gracefully: with controlled.shutdown.enable (the default) and other brokers
// alive, it first asks the controller to move its leaderships away (shutdown.go); then the listener and every connection close (in-flight long polls end),
// the ZooKeeper session is closed (its ephemeral znodes vanish at once, so the controller moves this
// broker's partitions to leader -1), and every log is flushed and closed. Safe to call twice.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		if b.cfg.ControlledShutdownEnable && b.zk != nil && b.Registered() && len(b.view.Load().brokers) > 1 {
			ctx, cancel := context.WithTimeout(b.ctx, controlledShutdownTimeout)
			if err := b.controlledShutdown(ctx); err != nil {
				b.log.WithError(err).Warn("controlled shutdown did not complete; stopping anyway")
			} else {
				b.log.Info("controlled shutdown completed")
			}
			cancel()
		}
		b.connsMu.Lock()
		b.closed = true
		for c := range b.conns {
			c.Close()
		}
		b.connsMu.Unlock()
		if b.ln != nil {
			b.ln.Close()
		}
		if b.coord != nil {
			b.coord.close() // before the logs it appends to are closed
		}
		b.cancel()
		if b.zk != nil {
			b.zk.Close()
		}
		b.wg.Wait()
		var errs []error
		b.partsMu.Lock()
		for tp, p := range b.parts {
			if err := p.close(); err != nil {
				errs = append(errs, fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, err))
			}
		}
		b.parts = map[topicPartition]*partition{}
		b.partsMu.Unlock()
		b.closeErr = errors.Join(errs...)
		b.log.Info("broker closed")
	})
	return b.closeErr
}

// spawn runs f on a goroutine that Close waits for, unless Close has begun (then f does not run and
// spawn returns false). f must return once b.ctx is cancelled.
func (b *Broker) spawn(f func()) bool {
	b.connsMu.Lock()
	defer b.connsMu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
	return true
}

// retentionLoop runs EnforceRetention on every open log each log.retention.check.interval.ms
// (LogManager's kafka-log-retention task).
func (b *Broker) retentionLoop() {
	defer b.wg.Done()
	t := time.NewTicker(time.Duration(b.cfg.LogRetentionCheckIntervalMs) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		b.partsMu.RLock()
		parts := make([]*partition, 0, len(b.parts))
		for _, p := range b.parts {
			parts = append(parts, p)
		}
		b.partsMu.RUnlock()
		for _, p := range parts {
			if p.log.Compacted() {
				continue // the cleaner's passes apply compact,delete retention (LogManager.cleanupLogs)
			}
			if err := p.enforceRetention(); err != nil {
				b.log.WithFields(logrus.Fields{"topic": p.topic, "partition": p.id}).WithError(err).Warn("retention failed")
			}
		}
	}
}

// startCleaner starts the log cleaner (kafka.log.LogCleaner, one thread) on a goroutine that Close
// stops (b.ctx) and waits for; a pass in progress is aborted and leaves its log as it was.
func (b *Broker) startCleaner() {
	b.cleaner = storage.NewCleaner(storage.CleanerConfig{
		BackoffMs:        b.cfg.LogCleanerBackoffMs,
		DedupeBufferSize: b.cfg.LogCleanerDedupeBufferSize,
		Logs: func() []*storage.Log {
			b.partsMu.RLock()
			defer b.partsMu.RUnlock()
			logs := make([]*storage.Log, 0, len(b.parts))
			for _, p := range b.parts {
				if p.log.Compacted() {
					logs = append(logs, p.log)
				}
			}
			return logs
		},
		OnError: func(l *storage.Log, err error) {
			b.log.WithError(err).Warn("log cleaning failed; the log is not cleaned again until the broker restarts")
		},
	})
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.cleaner.Run(b.ctx)
	}()
}
