package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/replica"
	"github.com/rebalancelab/rebalancelab/broker/storage"
	"github.com/rebalancelab/rebalancelab/internal/wire"
)

// The follower's side of replication (Kafka 3.9's ReplicaFetcherManager and ReplicaFetcherThread,
// num.replica.fetchers=1): one fetcher goroutine per leader broker fetches every partition this
// broker follows from it, with Fetch v12 carrying this broker's id as replica id and each partition's
// last fetched epoch, appends what comes back with the leader's offsets and epochs, and truncates
// where the leader names a diverging epoch (replica.DivergingTruncation) or the offset is out of its
// range (replica.OutOfRange). The decisions are broker/replica's; this file is the I/O.

// followTarget is a partition this broker follows: the leader and leader epoch of its state.
type followTarget struct {
	part   *partition
	leader int32
	epoch  int32
}

// replicaFetchers owns the fetchers, by leader id. update is called by the ZooKeeper loop only.
type replicaFetchers struct {
	b        *Broker
	mu       sync.Mutex
	fetchers map[int32]*replicaFetcher
	// stopped: stop ran (the broker's controlled shutdown completed, or it closes); update starts no
	// fetcher after it.
	stopped bool
}

type replicaFetcher struct {
	rf     *replicaFetchers
	leader int32
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}

	mu    sync.Mutex
	parts map[topicPartition]*fetchState
}

type fetchState struct {
	followTarget
	retryAt time.Time // after an error, the partition waits replica.fetch.backoff.ms
}

func newReplicaFetchers(b *Broker) *replicaFetchers {
	return &replicaFetchers{b: b, fetchers: map[int32]*replicaFetcher{}}
}

// update makes the fetchers fetch exactly targets (ReplicaFetcherManager.addFetcherForPartitions /
// removeFetcherForPartitions): partitions move between fetchers when their leader changes, a
// partition keeps its fetch state when its leader and epoch did not change, and a fetcher left with
// no partition stops. A removed partition's in-flight answer is dropped (partition.following).
func (r *replicaFetchers) update(targets map[topicPartition]followTarget) {
	byLeader := map[int32]map[topicPartition]followTarget{}
	for tp, t := range targets {
		if t.leader < 0 || t.leader == r.b.id {
			continue
		}
		if byLeader[t.leader] == nil {
			byLeader[t.leader] = map[topicPartition]followTarget{}
		}
		byLeader[t.leader][tp] = t
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	for id, f := range r.fetchers {
		if _, ok := byLeader[id]; !ok {
			f.cancel()
			delete(r.fetchers, id)
		}
	}
	for id, ts := range byLeader {
		f := r.fetchers[id]
		if f == nil {
			ctx, cancel := context.WithCancel(r.b.ctx)
			f = &replicaFetcher{rf: r, leader: id, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), parts: map[topicPartition]*fetchState{}}
			if !r.b.spawn(f.run) {
				cancel()
				continue
			}
			r.fetchers[id] = f
		}
		f.set(ts)
	}
}

// stop ends every fetcher for good (Close waits for them through the broker's WaitGroup).
func (r *replicaFetchers) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	for id, f := range r.fetchers {
		f.cancel()
		delete(r.fetchers, id)
	}
}

func (f *replicaFetcher) set(ts map[topicPartition]followTarget) {
	f.mu.Lock()
	next := make(map[topicPartition]*fetchState, len(ts))
	for tp, t := range ts {
		if old := f.parts[tp]; old != nil && old.followTarget == t {
			next[tp] = old
			continue
		}
		next[tp] = &fetchState{followTarget: t}
	}
	f.parts = next
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// ready returns the partitions due for a fetch and, when some are delayed, when the next one is due.
func (f *replicaFetcher) ready(now time.Time) (map[topicPartition]followTarget, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[topicPartition]followTarget{}
	var next time.Time
	for tp, s := range f.parts {
		if s.retryAt.After(now) {
			if next.IsZero() || s.retryAt.Before(next) {
				next = s.retryAt
			}
			continue
		}
		out[tp] = s.followTarget
	}
	return out, next
}

// delay parks tp for replica.fetch.backoff.ms (AbstractFetcherThread.delayPartitions).
func (f *replicaFetcher) delay(tp topicPartition, t followTarget) {
	f.mu.Lock()
	if s := f.parts[tp]; s != nil && s.followTarget == t {
		s.retryAt = time.Now().Add(time.Duration(f.rf.b.cfg.ReplicaFetchBackoffMs) * time.Millisecond)
	}
	f.mu.Unlock()
}

func (f *replicaFetcher) log() *logrus.Entry {
	return f.rf.b.log.WithFields(logrus.Fields{"component": "replica-fetcher", "leader": f.leader})
}

// wait blocks until woken, until (when not zero), or ctx ends.
func (f *replicaFetcher) wait(until time.Time) {
	var timer <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-f.ctx.Done():
	case <-f.wake:
	case <-timer:
	}
}

func (f *replicaFetcher) run() {
	b := f.rf.b
	backoff := time.Duration(b.cfg.ReplicaFetchBackoffMs) * time.Millisecond
	var conn *wire.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for f.ctx.Err() == nil {
		batch, next := f.ready(time.Now())
		if len(batch) == 0 {
			f.wait(next)
			continue
		}
		if conn == nil {
			n, ok := b.view.Load().brokers[f.leader]
			if !ok {
				f.wait(time.Now().Add(backoff))
				continue
			}
			c, err := wire.Dial(f.ctx, nil, net.JoinHostPort(n.Host, strconv.Itoa(int(n.Port))), fmt.Sprintf("broker-%d-fetcher-0", b.id))
			if err != nil {
				f.log().WithError(err).Debug("cannot reach the leader; backing off")
				f.wait(time.Now().Add(backoff))
				continue
			}
			conn = c
		}
		req := f.request(batch)
		ctx, cancel := context.WithTimeout(f.ctx, time.Duration(b.cfg.ReplicaSocketTimeoutMs)*time.Millisecond)
		resp, err := conn.Request(ctx, req)
		cancel()
		if err != nil {
			conn.Close()
			conn = nil
			if f.ctx.Err() == nil {
				f.log().WithError(err).Debug("fetch from the leader failed; backing off")
				f.wait(time.Now().Add(backoff))
			}
			continue
		}
		fr := resp.(*kmsg.FetchResponse)
		if fr.ErrorCode != 0 {
			f.log().Warnf("fetch answered %s", errorLabel(fr.ErrorCode))
			f.wait(time.Now().Add(backoff))
			continue
		}
		f.handle(conn, batch, fr)
	}
}

// request is ReplicaFetcherThread.buildFetch: every due partition from its log end offset, with the
// epoch of its last batch and the leader epoch it follows.
func (f *replicaFetcher) request(batch map[topicPartition]followTarget) *kmsg.FetchRequest {
	b := f.rf.b
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = b.id
	req.MaxWaitMillis = b.cfg.ReplicaFetchWaitMaxMs
	req.MinBytes = 1
	req.MaxBytes = b.cfg.ReplicaFetchResponseMaxBytes
	req.SessionID, req.SessionEpoch = 0, -1
	byTopic := map[string]int{}
	for tp, t := range batch {
		i, ok := byTopic[tp.Topic]
		if !ok {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
			byTopic[tp.Topic] = i
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = tp.Partition
		p.CurrentLeaderEpoch = t.epoch
		p.FetchOffset = t.part.log.LogEndOffset()
		p.LastFetchedEpoch = -1
		if e, ok := t.part.log.LatestEpoch(); ok {
			p.LastFetchedEpoch = e
		}
		p.LogStartOffset = t.part.log.LogStartOffset()
		p.PartitionMaxBytes = b.cfg.ReplicaFetchMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	return req
}

// handle applies one Fetch answer (AbstractFetcherThread.processFetchRequest).
func (f *replicaFetcher) handle(conn *wire.Conn, batch map[topicPartition]followTarget, resp *kmsg.FetchResponse) {
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			tp := topicPartition{rt.Topic, rp.Partition}
			t, ok := batch[tp]
			if !ok {
				continue
			}
			if err := f.apply(conn, tp, t, &rp); err != nil {
				if !errors.Is(err, errNotFollowing) {
					f.log().WithFields(logFields(tp.Topic, tp.Partition)).WithError(err).Debug("replica fetch: partition delayed")
				}
				f.delay(tp, t)
			}
		}
	}
}

func (f *replicaFetcher) apply(conn *wire.Conn, tp topicPartition, t followTarget, rp *kmsg.FetchResponseTopicPartition) error {
	lg := t.part.log
	switch rp.ErrorCode {
	case 0:
	case kerr.OffsetOutOfRange.Code:
		return f.outOfRange(conn, tp, t)
	default:
		return kerr.ErrorForCode(rp.ErrorCode)
	}
	if div := rp.DivergingEpoch; div.EndOffset >= 0 || div.Epoch >= 0 {
		leader := replica.EpochEnd{Epoch: div.Epoch, EndOffset: div.EndOffset}
		le, lo := lg.EndOffsetForEpoch(div.Epoch)
		tr := replica.DivergingTruncation(leader, replica.EpochEnd{Epoch: le, EndOffset: lo}, lg.LogEndOffset(), lg.HighWatermark())
		f.log().WithFields(logFields(tp.Topic, tp.Partition)).WithFields(logrus.Fields{
			"diverging_epoch": div.Epoch, "leader_end_offset": div.EndOffset, "truncate_to": tr.Offset, "log_end_offset": lg.LogEndOffset(),
		}).Info("truncating to the leader's end of the diverging epoch")
		return t.part.truncateAsFollower(t.leader, t.epoch, tr.Offset, false)
	}
	return t.part.appendAsFollower(t.leader, t.epoch, rp.RecordBatches, rp.HighWatermark)
}

// outOfRange asks the leader for its log start and end offsets (ListOffsets with this broker's
// replica id: the end is the log end offset, not the high watermark) and truncates as
// replica.OutOfRange says.
func (f *replicaFetcher) outOfRange(conn *wire.Conn, tp topicPartition, t followTarget) error {
	offsets := map[int64]int64{}
	for _, ts := range []int64{-2, -1} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(4)
		req.ReplicaID = f.rf.b.id
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = tp.Topic
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Partition, p.Timestamp, p.CurrentLeaderEpoch = tp.Partition, ts, t.epoch
		rt.Partitions = append(rt.Partitions, p)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(f.ctx, time.Duration(f.rf.b.cfg.ReplicaSocketTimeoutMs)*time.Millisecond)
		resp, err := conn.Request(ctx, req)
		cancel()
		if err != nil {
			return err
		}
		lr := resp.(*kmsg.ListOffsetsResponse)
		if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
			return fmt.Errorf("ListOffsets answered %d topics", len(lr.Topics))
		}
		rp := lr.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			return kerr.ErrorForCode(rp.ErrorCode)
		}
		offsets[ts] = rp.Offset
	}
	lg := t.part.log
	off, fully := replica.OutOfRange(lg.LogEndOffset(), offsets[-2], offsets[-1])
	f.log().WithFields(logFields(tp.Topic, tp.Partition)).WithFields(logrus.Fields{
		"log_end_offset": lg.LogEndOffset(), "leader_log_start": offsets[-2], "leader_log_end": offsets[-1], "truncate_to": off, "fully": fully,
	}).Warn("fetch offset out of the leader's range")
	if off == lg.LogEndOffset() && !fully {
		return nil
	}
	return t.part.truncateAsFollower(t.leader, t.epoch, off, fully)
}

// replicaLoop runs the leaders' ISR shrink check every replica.lag.time.max.ms / 2
// (ReplicaManager's isr-expiration task) and writes every log's high watermark each
// replica.high.watermark.checkpoint.interval.ms (ReplicaManager.checkpointHighWatermarks).
func (b *Broker) replicaLoop() {
	defer b.wg.Done()
	shrink := time.NewTicker(time.Duration(max(b.cfg.ReplicaLagTimeMaxMs/2, 1)) * time.Millisecond)
	defer shrink.Stop()
	checkpoint := time.NewTicker(time.Duration(b.cfg.ReplicaHighWatermarkCheckpointIntervalMs) * time.Millisecond)
	defer checkpoint.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-shrink.C:
			for _, p := range b.localPartitions() {
				if p.leading.Load() {
					b.alters.submit(p, p.tick())
				}
			}
		case <-checkpoint.C:
			for _, p := range b.localPartitions() {
				if err := p.log.CheckpointHighWatermark(); err != nil && !errors.Is(err, storage.ErrClosed) {
					b.log.WithFields(logFields(p.topic, p.id)).WithError(err).Warn("high-watermark checkpoint")
				}
			}
		}
	}
}

// localPartitions is a snapshot of the open partition logs.
func (b *Broker) localPartitions() []*partition {
	b.partsMu.RLock()
	defer b.partsMu.RUnlock()
	out := make([]*partition, 0, len(b.parts))
	for _, p := range b.parts {
		out = append(out, p)
	}
	return out
}
