package zkconsumer

// Kafka-stored offsets (0.8.2's offsets.storage=kafka, KAFKA-1012) and dual commit (dual.commit.enabled,
// the migration setting), as ZookeeperConsumerConnector 0.8.2.2 does them: commitOffsets,
// fetchOffsets, ensureOffsetManagerConnected and ClientUtils.channelToOffsetManager.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// Request versions of 0.8.2.2's offsets channel: ConsumerMetadataRequest (FindCoordinator v0),
// OffsetCommitRequest.CurrentVersion 1, OffsetFetchRequest.CurrentVersion 1.
const (
	consumerMetadataVersion = 0
	offsetCommitVersion     = 1
	offsetFetchVersion      = 1
)

// offsetCommit v1's "no group management" values (OffsetCommitRequest.DEFAULT_GENERATION_ID,
// DEFAULT_CONSUMER_ID, DEFAULT_TIMESTAMP): 0.8.2's connector is unfenced.
const (
	unfencedGeneration = -1
	unfencedMemberID   = ""
	commitTimestampNow = -1 // the broker stamps it
)

// offsetsChannel is 0.8.2's offsetsChannel: one connection to the group's offset manager, found with
// ConsumerMetadata through any live broker, dropped on an I/O error or a NOT_COORDINATOR answer so
// that the next use locates the manager again. The lock guards the field only: requests run outside
// it (wire.Conn is safe for concurrent use; commits are serialised by commitMu, fetches run on the
// rebalance goroutine).
type offsetsChannel struct {
	c    *Connector
	mu   sync.Mutex
	conn *wire.Conn
}

// get returns the connection to the offset manager, locating it first if there is none
// (ensureOffsetManagerConnected). It retries until found or ctx ends; then ctx's error.
func (o *offsetsChannel) get(ctx context.Context) (*wire.Conn, error) {
	o.mu.Lock()
	conn := o.conn
	o.mu.Unlock()
	if conn != nil {
		return conn, nil
	}
	conn, err := o.locate(ctx)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conn != nil { // another caller got there first
		conn.Close()
		return o.conn, nil
	}
	o.conn = conn
	return conn, nil
}

// disconnect drops conn if it is still the channel (offsetsChannel.disconnect).
func (o *offsetsChannel) disconnect(conn *wire.Conn) {
	o.mu.Lock()
	if o.conn == conn {
		o.conn = nil
	}
	o.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

func (o *offsetsChannel) close() {
	o.mu.Lock()
	conn := o.conn
	o.conn = nil
	o.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

// locate is ClientUtils.channelToOffsetManager: ask a random live broker (from /brokers/ids) for the
// group's offset manager (ConsumerMetadata), then connect to it, reusing the query connection when
// it is the same broker. Every failure (no broker, an I/O error, an error code such as
// COORDINATOR_NOT_AVAILABLE while __consumer_offsets is created) waits offsets.channel.backoff.ms and
// starts over; 0.8.2 retried an I/O error at once, which spins while a broker is down. Each request is
// bounded by offsets.channel.socket.timeout.ms.
func (o *offsetsChannel) locate(ctx context.Context) (*wire.Conn, error) {
	c := o.c
	for {
		conn, err := o.tryLocate(ctx)
		if err == nil {
			c.log.WithField("offset_manager", conn.Addr()).Debug("connected to the offset manager")
			return conn, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		c.log.WithError(err).Debugf("locating the offset manager; retrying in %d ms", c.cfg.OffsetsChannelBackoffMs)
		if err := c.offsetsBackoff(ctx); err != nil {
			return nil, err
		}
	}
}

func (o *offsetsChannel) tryLocate(ctx context.Context) (*wire.Conn, error) {
	c := o.c
	brokers, err := c.allBrokers()
	if err != nil {
		return nil, err
	}
	if len(brokers) == 0 {
		return nil, errors.New("no brokers registered in /brokers/ids")
	}
	b := brokers[rand.IntN(len(brokers))]
	rctx, cancel := c.offsetsRequestContext(ctx)
	defer cancel()
	query, err := wire.Dial(rctx, c.cfg.BrokerDialer, b.addr(), c.clientID)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(consumerMetadataVersion)
	req.CoordinatorKey = c.cfg.GroupID
	r, err := query.Request(rctx, req)
	if err != nil {
		query.Close()
		return nil, fmt.Errorf("ConsumerMetadata to %s: %w", b.addr(), err)
	}
	resp := r.(*kmsg.FindCoordinatorResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		query.Close()
		return nil, fmt.Errorf("ConsumerMetadata to %s: %w", b.addr(), err)
	}
	addr := net.JoinHostPort(resp.Host, strconv.Itoa(int(resp.Port)))
	if addr == b.addr() {
		return query, nil
	}
	query.Close()
	mctx, mcancel := c.offsetsRequestContext(ctx)
	defer mcancel()
	conn, err := wire.Dial(mctx, c.cfg.BrokerDialer, addr, c.clientID)
	if err != nil {
		return nil, fmt.Errorf("connecting to the offset manager %s: %w", addr, err)
	}
	return conn, nil
}

// offsetsRequestContext bounds one offsets-channel request by offsets.channel.socket.timeout.ms.
func (c *Connector) offsetsRequestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, time.Duration(c.cfg.OffsetsChannelSocketTimeoutMs)*time.Millisecond)
}

// offsetsBackoff waits offsets.channel.backoff.ms, or until ctx ends (its error).
func (c *Connector) offsetsBackoff(ctx context.Context) error {
	t := time.NewTimer(time.Duration(c.cfg.OffsetsChannelBackoffMs) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// committed is one partition's offset to commit.
type committed struct {
	tp     TopicPartition
	offset int64
}

// commitToKafka is one attempt of commitOffsets' Kafka branch: OffsetCommit v1 of every owned
// partition (generation -1, consumer id "", timestamp -1, no metadata) to the offset manager. Each
// partition is recorded as commit{applied} or commit{rejected, err}; with dual.commit.enabled each
// applied partition is then written to ZooKeeper as well (commitOffsetToZooKeeper: only if changed).
// An answer of NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, or an I/O error, drops the channel so the
// next attempt locates the manager again. done is false when the attempt failed and may succeed if
// retried (any error but OFFSET_METADATA_TOO_LARGE). err joins the partitions' errors.
func (c *Connector) commitToKafka(ctx context.Context, work []committed) (done bool, err error) {
	conn, err := c.offsets.get(ctx)
	if err != nil {
		return false, fmt.Errorf("locating the offset manager for group %s: %w", c.cfg.GroupID, err)
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(offsetCommitVersion)
	req.Group, req.Generation, req.MemberID = c.cfg.GroupID, unfencedGeneration, unfencedMemberID
	byTopic := map[string]int{}
	for _, w := range work {
		i, ok := byTopic[w.tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[w.tp.Topic] = i
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = w.tp.Topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.Timestamp, p.Metadata = w.tp.Partition, w.offset, commitTimestampNow, kmsg.StringPtr("")
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	rctx, cancel := c.offsetsRequestContext(ctx)
	sent := c.rec.NowMs()
	r, rerr := conn.Request(rctx, req)
	cancel()
	if rerr != nil {
		c.offsets.disconnect(conn)
		for _, w := range work {
			c.emit(commitRecord(w, sent, "OffsetCommit", rerr))
		}
		return false, fmt.Errorf("committing offsets to the offset manager %s: %w", conn.Addr(), rerr)
	}
	codes := map[TopicPartition]int16{}
	for _, t := range r.(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range t.Partitions {
			codes[TopicPartition{t.Topic, p.Partition}] = p.ErrorCode
		}
	}
	var errs []error
	retryable, refresh := false, false
	for _, w := range work {
		code, ok := codes[w.tp]
		var perr error
		if !ok {
			perr = errors.New("no answer for the partition")
		} else {
			perr = kerr.ErrorForCode(code)
		}
		c.emit(commitRecord(w, sent, "OffsetCommit", perr))
		if perr != nil {
			errs = append(errs, fmt.Errorf("committing %s-%d=%d to Kafka: %w", w.tp.Topic, w.tp.Partition, w.offset, perr))
			retryable = retryable || code != kerr.OffsetMetadataTooLarge.Code
			refresh = refresh || code == kerr.NotCoordinator.Code || code == kerr.CoordinatorNotAvailable.Code
			continue
		}
		if c.cfg.DualCommitEnabled {
			if zerr := c.commitOffsetToZooKeeper(w); zerr != nil {
				errs = append(errs, fmt.Errorf("committing %s: %w", c.offsetPath(w.tp), zerr))
				retryable = true
			}
		}
	}
	if refresh {
		c.offsets.disconnect(conn)
	}
	return !(len(errs) > 0 && retryable), errors.Join(errs...)
}

// commitRecord is the timeline's commit record of one partition: applied, or rejected with err; sent
// is when its request went out (Unix ms), api the request ("OffsetCommit", or "" for ZooKeeper's setData).
func commitRecord(w committed, sent int64, api string, err error) timeline.Record {
	r := timeline.Record{Kind: timeline.Commit, Topic: w.tp.Topic, Partition: timeline.I32(w.tp.Partition),
		Offset: timeline.I64(w.offset), Result: timeline.CommitApplied, SentMs: sent, API: api}
	if err != nil {
		r.Result, r.Err = timeline.CommitRejected, err.Error()
	}
	return r
}

// commitOffsetToZooKeeper writes one offset to /consumers/<group>/offsets/<t>/<p> unless it is the
// offset last written there (checkpointedZkOffsets), and then remembers it. Errors are ZooKeeper's.
func (c *Connector) commitOffsetToZooKeeper(w committed) error {
	c.mu.Lock()
	last, ok := c.checkpointed[w.tp]
	c.mu.Unlock()
	if ok && last == w.offset {
		return nil
	}
	if err := c.zk.updatePersistent(c.offsetPath(w.tp), []byte(strconv.FormatInt(w.offset, 10))); err != nil {
		return err
	}
	c.mu.Lock()
	c.checkpointed[w.tp] = w.offset
	c.mu.Unlock()
	return nil
}

// fetchOffsetsFromKafka is fetchOffsets' Kafka branch: OffsetFetch v1 of tps from the offset manager,
// retried every offsets.channel.backoff.ms until it answers without NOT_COORDINATOR (the channel is
// dropped and the manager located again) or COORDINATOR_LOAD_IN_PROGRESS, or ctx ends (then
// ErrShutdown: the rebalance attempt stops, as 0.8.2's loop ends when the connector shuts down). Also
// retried, unlike 0.8.2 (whose brokers never sent it here): COORDINATOR_NOT_AVAILABLE, which 0.8.2
// would have read as "no offset" and reset. Other partition errors read as no offset (-1). With
// dual.commit.enabled each offset is the larger of ZooKeeper's and Kafka's.
func (c *Connector) fetchOffsetsFromKafka(ctx context.Context, tps []TopicPartition) (map[TopicPartition]int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(offsetFetchVersion)
	req.Group = c.cfg.GroupID
	for topic, parts := range partitionsByTopic(tps) {
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic, t.Partitions = topic, parts
		req.Topics = append(req.Topics, t)
	}
	for {
		out, retry, err := c.tryFetchOffsets(ctx, req)
		if !retry {
			return out, err
		}
		c.log.WithError(err).Debugf("fetching offsets; retrying in %d ms", c.cfg.OffsetsChannelBackoffMs)
		if c.offsetsBackoff(ctx) != nil {
			return nil, ErrShutdown
		}
	}
}

func (c *Connector) tryFetchOffsets(ctx context.Context, req *kmsg.OffsetFetchRequest) (out map[TopicPartition]int64, retry bool, err error) {
	conn, err := c.offsets.get(ctx)
	if err != nil {
		return nil, false, ErrShutdown // get only fails when ctx ends
	}
	rctx, cancel := c.offsetsRequestContext(ctx)
	r, err := conn.Request(rctx, req)
	cancel()
	if err != nil {
		c.offsets.disconnect(conn)
		if ctx.Err() != nil {
			return nil, false, ErrShutdown
		}
		return nil, true, fmt.Errorf("fetching offsets from %s: %w", conn.Addr(), err)
	}
	out = map[TopicPartition]int64{}
	for _, t := range r.(*kmsg.OffsetFetchResponse).Topics {
		for _, p := range t.Partitions {
			switch p.ErrorCode {
			case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
				c.offsets.disconnect(conn)
				return nil, true, fmt.Errorf("offset manager moved: %w", kerr.ErrorForCode(p.ErrorCode))
			case kerr.CoordinatorLoadInProgress.Code:
				return nil, true, kerr.CoordinatorLoadInProgress
			case 0:
				out[TopicPartition{t.Topic, p.Partition}] = p.Offset
			default:
				out[TopicPartition{t.Topic, p.Partition}] = -1
			}
		}
	}
	for _, rt := range req.Topics { // a partition the answer left out has no offset
		for _, p := range rt.Partitions {
			tp := TopicPartition{rt.Topic, p}
			if _, ok := out[tp]; !ok {
				out[tp] = -1
			}
		}
	}
	if c.cfg.DualCommitEnabled {
		for tp, kafka := range out {
			zkOffset, err := c.fetchOffset(tp)
			if err != nil {
				return nil, false, err
			}
			out[tp] = max(zkOffset, kafka)
		}
	}
	return out, false, nil
}

func (c *Connector) offsetPath(tp TopicPartition) string { return offsetPath(c.cfg.GroupID, tp) }

func (c *Connector) ownerPath(tp TopicPartition) string { return ownerPath(c.cfg.GroupID, tp) }

// fetchOffset is fetchOffsetFromZooKeeper: the committed next offset, or -1 (none: the fetcher
// resets it per auto.offset.reset).
func (c *Connector) fetchOffset(tp TopicPartition) (int64, error) {
	data, err := c.zk.get(c.offsetPath(tp))
	return parseOffset(c.offsetPath(tp), data, err)
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
		sent := c.rec.NowMs()
		err := c.commitOffsetToZooKeeper(w)
		if err != nil {
			errs = append(errs, fmt.Errorf("committing %s: %w", c.offsetPath(w.tp), err))
		}
		c.emit(commitRecord(w, sent, "", err))
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
