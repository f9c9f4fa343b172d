package zkconsumer

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// fetcherManager is Kafka's ConsumerFetcherManager (0.8.2.2): startConnections hands it the owned
// partitions, all of them first "without leader"; the leader finder reads the broker list from
// ZooKeeper, asks a broker for Metadata, and gives each partition whose leader is known to that
// broker's fetcher (one goroutine per broker, AbstractFetcherThread). A partition without a leader
// (its broker is down) stays with the leader finder, which retries every refresh.leader.backoff.ms,
// so it starts fetching once a leader appears (KAFKA-693, ZK-LEADERLESS). A fetch error sends the
// partition back to the leader finder.
type fetcherManager struct {
	c *Connector

	mu       sync.Mutex
	running  bool
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	infos    map[TopicPartition]*partitionInfo // partitionMap
	noLeader map[TopicPartition]bool           // noLeaderPartitionSet
	wake     chan struct{}
	fetchers map[int32]*brokerFetcher
}

func newFetcherManager(c *Connector) *fetcherManager {
	return &fetcherManager{c: c}
}

// start is startConnections: every partition goes to the leader finder.
func (m *fetcherManager) start(infos []*partitionInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running = true
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.infos = map[TopicPartition]*partitionInfo{}
	m.noLeader = map[TopicPartition]bool{}
	m.wake = make(chan struct{}, 1)
	m.fetchers = map[int32]*brokerFetcher{}
	for _, pi := range infos {
		m.infos[pi.tp] = pi
		m.noLeader[pi.tp] = true
	}
	m.wg.Add(1)
	go m.leaderFinder(m.ctx)
}

// stop is stopConnections: leader finder first (else it could add fetchers), then every fetcher;
// returns when none of them runs. Safe when not started.
func (m *fetcherManager) stop() {
	m.mu.Lock()
	if !m.running {
		m.mu.Unlock()
		return
	}
	m.running = false
	m.cancel()
	for _, f := range m.fetchers { // a fetcher blocked on a full queue waits on its own stop
		f.shutdown()
	}
	m.mu.Unlock()
	m.wg.Wait()
	m.mu.Lock()
	m.infos, m.noLeader, m.fetchers = nil, nil, nil
	m.mu.Unlock()
}

// addPartitionsWithError hands partitions back to the leader finder.
func (m *fetcherManager) addPartitionsWithError(tps []TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.running {
		return
	}
	for _, tp := range tps {
		if m.infos[tp] != nil {
			m.noLeader[tp] = true
		}
	}
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

type leader struct {
	id   int32
	addr string
}

func (m *fetcherManager) leaderFinder(ctx context.Context) {
	defer m.wg.Done()
	log := m.c.log.WithField("thread", "leader-finder")
	for {
		m.mu.Lock()
		var topics []string
		seen := map[string]bool{}
		for tp := range m.noLeader {
			if !seen[tp.Topic] {
				seen[tp.Topic] = true
				topics = append(topics, tp.Topic)
			}
		}
		wake := m.wake
		m.mu.Unlock()
		if len(topics) == 0 {
			select {
			case <-wake:
				continue
			case <-ctx.Done():
				return
			}
		}

		leaders, err := m.findLeaders(ctx, topics)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log.WithError(err).Warn("failed to find leaders; will retry")
		}
		m.mu.Lock()
		if !m.running {
			m.mu.Unlock()
			return
		}
		for tp, l := range leaders {
			if !m.noLeader[tp] {
				continue
			}
			delete(m.noLeader, tp)
			f := m.fetchers[l.id]
			if f != nil && f.addr != l.addr { // the broker moved: a new connection
				f.shutdown()
				f = nil
			}
			if f == nil {
				f = newBrokerFetcher(m, l)
				m.fetchers[l.id] = f
				m.wg.Add(1)
				go f.run(ctx)
			}
			f.add(m.infos[tp])
		}
		for id, f := range m.fetchers { // shutdownIdleFetcherThreads
			if f.idle() {
				f.shutdown()
				delete(m.fetchers, id)
			}
		}
		m.mu.Unlock()

		select {
		case <-time.After(time.Duration(m.c.cfg.RefreshLeaderBackoffMs) * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
}

// findLeaders reads the live brokers from ZooKeeper (ZkUtils.getAllBrokersInCluster) and asks
// them, in random order until one answers, for the topics' Metadata (ClientUtils.fetchTopicMetadata).
// Partitions with leader -1 (LEADER_NOT_AVAILABLE) are left out.
func (m *fetcherManager) findLeaders(ctx context.Context, topics []string) (map[TopicPartition]leader, error) {
	brokers, err := m.c.allBrokers()
	if err != nil {
		return nil, err
	}
	if len(brokers) == 0 {
		return nil, fmt.Errorf("no brokers registered in /brokers/ids")
	}
	rand.Shuffle(len(brokers), func(i, j int) { brokers[i], brokers[j] = brokers[j], brokers[i] })
	var lastErr error
	for _, b := range brokers {
		resp, err := m.metadata(ctx, b.addr(), topics)
		if err != nil {
			lastErr = err
			continue
		}
		addrs := map[int32]string{}
		for _, br := range resp.Brokers {
			addrs[br.NodeID] = net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port)))
		}
		out := map[TopicPartition]leader{}
		for _, t := range resp.Topics {
			if t.Topic == nil || t.ErrorCode != 0 {
				continue
			}
			for _, p := range t.Partitions {
				if addr, ok := addrs[p.Leader]; ok && p.Leader >= 0 {
					out[TopicPartition{*t.Topic, p.Partition}] = leader{p.Leader, addr}
				}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("fetching topic metadata for topics %v from brokers failed: %w", topics, lastErr)
}

func (m *fetcherManager) metadata(ctx context.Context, addr string, topics []string) (*kmsg.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(m.c.cfg.SocketTimeoutMs)*time.Millisecond)
	defer cancel()
	conn, v, err := m.c.dialBroker(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(v.metadata)
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	req.AllowAutoTopicCreation = false
	resp, err := conn.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// apiVersions are the request versions used on one broker connection: the highest both sides
// know, capped where the request shape changes (Fetch v13+ and ListOffsets v8+ identify topics
// differently; Metadata is capped alike).
type apiVersions struct {
	metadata, fetch, listOffsets int16
}

var versionRange = map[int16][2]int16{ // key → [min, max] this client speaks
	kmsg.Metadata.Int16():    {1, 12},
	kmsg.Fetch.Int16():       {4, 12}, // v4: record batches
	kmsg.ListOffsets.Int16(): {1, 7},  // v1: a single offset per partition
}

// dialBroker connects through the broker dialer and negotiates versions with ApiVersions v0.
func (c *Connector) dialBroker(ctx context.Context, addr string) (*wire.Conn, apiVersions, error) {
	conn, err := wire.Dial(ctx, c.cfg.BrokerDialer, addr, c.clientID)
	if err != nil {
		return nil, apiVersions{}, err
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	r, err := conn.Request(ctx, req)
	if err != nil {
		conn.Close()
		return nil, apiVersions{}, err
	}
	resp := r.(*kmsg.ApiVersionsResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		conn.Close()
		return nil, apiVersions{}, fmt.Errorf("ApiVersions from %s: %w", addr, err)
	}
	picked := map[int16]int16{}
	for _, k := range resp.ApiKeys {
		if r, ok := versionRange[k.ApiKey]; ok && k.MaxVersion >= r[0] && k.MinVersion <= r[1] {
			picked[k.ApiKey] = min(k.MaxVersion, r[1])
		}
	}
	for key, r := range versionRange {
		if _, ok := picked[key]; !ok {
			conn.Close()
			return nil, apiVersions{}, fmt.Errorf("broker %s does not support %s v%d-v%d", addr, kmsg.NameForKey(key), r[0], r[1])
		}
	}
	return conn, apiVersions{picked[kmsg.Metadata.Int16()], picked[kmsg.Fetch.Int16()], picked[kmsg.ListOffsets.Int16()]}, nil
}

// brokerFetcher is ConsumerFetcherThread/AbstractFetcherThread for one broker: it fetches its
// partitions from their fetch offsets, turns each partition's records into one chunk for the
// owning thread's queue, resets an out-of-range (or never committed, -1) offset per
// auto.offset.reset, and hands partitions with errors back to the leader finder.
type brokerFetcher struct {
	m    *fetcherManager
	id   int32
	addr string
	log  *logrus.Entry

	mu      sync.Mutex
	offsets map[TopicPartition]*fetchState
	wake    chan struct{}
	stop    chan struct{}
	once    sync.Once
}

type fetchState struct {
	pi     *partitionInfo
	offset int64
}

func newBrokerFetcher(m *fetcherManager, l leader) *brokerFetcher {
	return &brokerFetcher{
		m: m, id: l.id, addr: l.addr,
		log:     m.c.log.WithFields(logrus.Fields{"broker": l.id, "thread": "fetcher"}),
		offsets: map[TopicPartition]*fetchState{},
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
	}
}

// add is addPartitions: a partition already fetched keeps its offset.
func (f *brokerFetcher) add(pi *partitionInfo) {
	f.mu.Lock()
	if f.offsets[pi.tp] == nil {
		f.offsets[pi.tp] = &fetchState{pi: pi, offset: pi.fetched.Load()}
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *brokerFetcher) idle() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.offsets) == 0
}

func (f *brokerFetcher) shutdown() { f.once.Do(func() { close(f.stop) }) }

// fail removes partitions and gives them back to the leader finder (handlePartitionsWithErrors).
func (f *brokerFetcher) fail(tps []TopicPartition, err error) {
	if len(tps) == 0 {
		return
	}
	f.mu.Lock()
	for _, tp := range tps {
		delete(f.offsets, tp)
	}
	f.mu.Unlock()
	f.log.WithError(err).WithField("partitions", tps).Warn("fetch error; partitions go back to the leader finder")
	f.m.addPartitionsWithError(tps)
}

func (f *brokerFetcher) run(parent context.Context) {
	defer f.m.wg.Done()
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	go func() {
		select {
		case <-f.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var conn *wire.Conn
	var v apiVersions
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	cfg := f.m.c.cfg
	timeout := time.Duration(cfg.SocketTimeoutMs+int(cfg.FetchWaitMaxMs)) * time.Millisecond
	for ctx.Err() == nil {
		f.mu.Lock()
		var todo []TopicPartition
		for tp := range f.offsets {
			todo = append(todo, tp)
		}
		f.mu.Unlock()
		if len(todo) == 0 {
			select { // partitionMapCond.await(200 ms)
			case <-f.wake:
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
			}
			continue
		}
		if conn == nil {
			dctx, dcancel := context.WithTimeout(ctx, timeout)
			var err error
			conn, v, err = f.m.c.dialBroker(dctx, f.addr)
			dcancel()
			if err != nil {
				conn = nil
				if ctx.Err() == nil {
					f.fail(todo, err)
				}
				continue
			}
		}
		rctx, rcancel := context.WithTimeout(ctx, timeout)
		err := f.fetchOnce(rctx, conn, v)
		rcancel()
		if err != nil {
			conn.Close()
			conn = nil
			if ctx.Err() != nil {
				return
			}
			f.mu.Lock()
			todo = todo[:0]
			for tp := range f.offsets {
				todo = append(todo, tp)
			}
			f.mu.Unlock()
			f.fail(todo, err)
		}
	}
}

// fetchOnce resets invalid offsets, sends one Fetch for every partition and processes the answer.
// An error means the connection is unusable.
func (f *brokerFetcher) fetchOnce(ctx context.Context, conn *wire.Conn, v apiVersions) error {
	cfg := f.m.c.cfg
	f.mu.Lock()
	var reset []*fetchState
	for _, s := range f.offsets {
		if s.offset < 0 {
			reset = append(reset, s)
		}
	}
	f.mu.Unlock()
	for _, s := range reset {
		off, err := f.resetOffset(ctx, conn, v, s.pi.tp)
		if err != nil {
			if _, isKafka := err.(*kerr.Error); isKafka {
				f.fail([]TopicPartition{s.pi.tp}, err)
				continue
			}
			return err
		}
		f.setOffset(s, off)
	}

	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v.fetch)
	req.MaxWaitMillis = cfg.FetchWaitMaxMs
	req.MinBytes = cfg.FetchMinBytes
	req.MaxBytes = 52428800 // fetch.max.bytes default; 0.8.2's request has no total limit
	topicIdx := map[string]int{}
	sent := map[TopicPartition]int64{}
	f.mu.Lock()
	for tp, s := range f.offsets {
		if s.offset < 0 {
			continue
		}
		i, ok := topicIdx[tp.Topic]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = tp.Topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			topicIdx[tp.Topic] = i
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = tp.Partition
		p.FetchOffset = s.offset
		p.PartitionMaxBytes = cfg.FetchMessageMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
		sent[tp] = s.offset
	}
	f.mu.Unlock()
	if len(sent) == 0 {
		return nil
	}
	r, err := conn.Request(ctx, req)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("fetch from broker %d: %w", f.id, err)
	}
	var failed []TopicPartition
	var failure error
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			rp := &t.Partitions[j]
			tp := TopicPartition{t.Topic, rp.Partition}
			reqOffset, ok := sent[tp]
			if !ok {
				continue
			}
			f.mu.Lock()
			s := f.offsets[tp]
			f.mu.Unlock()
			if s == nil || s.offset != reqOffset { // removed or reset meanwhile
				continue
			}
			switch perr := kerr.ErrorForCode(rp.ErrorCode); perr {
			case nil:
				s.pi.hw.Store(rp.HighWatermark)
				fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
					Offset: reqOffset, Topic: tp.Topic, Partition: tp.Partition, IsolationLevel: kgo.ReadUncommitted(),
				}, rp, batchDecompressor{}, nil)
				if fp.Err != nil && len(fp.Records) == 0 {
					// InvalidMessageException: logged, the partition stays (Kafka retries it next round)
					f.log.WithError(fp.Err).WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Error("invalid records in fetch response")
					continue
				}
				if len(fp.Records) == 0 {
					continue
				}
				c := &chunk{pi: s.pi, msgs: make([]Message, len(fp.Records))}
				for k, rec := range fp.Records {
					c.msgs[k] = Message{Topic: tp.Topic, Partition: tp.Partition, Offset: rec.Offset, Key: rec.Key, Value: rec.Value}
				}
				f.mu.Lock()
				s.offset = next
				f.mu.Unlock()
				if !s.pi.queue.enqueue(c, f.stop) {
					return nil
				}
				s.pi.fetched.Store(next)
			case kerr.OffsetOutOfRange:
				off, err := f.resetOffset(ctx, conn, v, tp)
				if err != nil {
					if _, isKafka := err.(*kerr.Error); !isKafka {
						return err
					}
					failed, failure = append(failed, tp), err
					continue
				}
				f.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Warnf("offset %d out of range; reset to %d", reqOffset, off)
				f.setOffset(s, off)
			default:
				failed, failure = append(failed, tp), perr
			}
		}
	}
	f.fail(failed, fmt.Errorf("fetch from broker %d: %w", f.id, failure))
	return nil
}

// batchDecompressor hands kgo.ProcessFetchPartition (franz-go's parsing of a fetched partition:
// batches, control records, the offsets to skip) the project's one compression path,
// recordbatch.Decompress. Fetch v4+ carries v2 record batches only (magic 2).
type batchDecompressor struct{}

// Decompress is kgo.Decompressor's; the output is bounded as a Java buffer is (2 GiB).
func (batchDecompressor) Decompress(src []byte, codec kgo.CompressionCodecType) ([]byte, error) {
	return recordbatch.Decompress(recordbatch.Codec(codec), recordbatch.Magic, src, math.MaxInt32)
}

func (f *brokerFetcher) setOffset(s *fetchState, off int64) {
	f.mu.Lock()
	s.offset = off
	f.mu.Unlock()
	s.pi.fetched.Store(off)
	s.pi.consumed.Store(off)
}

// resetOffset is handleOffsetOutOfRange: ListOffsets for the earliest (auto.offset.reset=smallest)
// or latest (largest) offset. A *kerr.Error is a partition error; any other error a broken connection.
func (f *brokerFetcher) resetOffset(ctx context.Context, conn *wire.Conn, v apiVersions, tp TopicPartition) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(v.listOffsets)
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = tp.Topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition = tp.Partition
	p.Timestamp = -1 // latest
	if f.m.c.cfg.AutoOffsetReset == OffsetResetSmallest {
		p.Timestamp = -2 // earliest
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	r, err := conn.Request(ctx, req)
	if err != nil {
		return 0, err
	}
	for _, rt := range r.(*kmsg.ListOffsetsResponse).Topics {
		for _, rp := range rt.Partitions {
			if rt.Topic == tp.Topic && rp.Partition == tp.Partition {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return 0, err
				}
				return rp.Offset, nil
			}
		}
	}
	return 0, kerr.UnknownTopicOrPartition
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
		data, readErr := c.zk.get(brokerIdsPath + "/" + id)
		b, ok, err := decodeBrokerNode(id, data, readErr)
		if err != nil {
			return nil, err
		}
		if !ok {
			if readErr == nil {
				c.log.WithField("broker", b.id).Debug("broker has no PLAINTEXT endpoint; left out")
			}
			continue
		}
		out = append(out, b)
	}
	return out, nil
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
