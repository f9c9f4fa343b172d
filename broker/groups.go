package broker

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/coordinator"
)

// groups runs the broker's classic group coordinator (Kafka 3.9 GroupCoordinator) and keeps it in
// step with this broker's leadership of __consumer_offsets partitions, as KafkaApis and
// ReplicaManager do through onElection/onResignation.
type groups struct {
	b  *Broker
	co *coordinator.Coordinator

	serving  atomic.Bool // set once Start has returned: lookups from then on are FindCoordinators
	creating atomic.Bool // __consumer_offsets creation under way (first FindCoordinator)

	mu      sync.Mutex
	pending []int32 // __consumer_offsets partitions marked loading, for run to read
	wake    chan struct{}
	stop    chan struct{} // closed by close
	done    chan struct{} // closed when run returns
}

// startGroupCoordinator builds the coordinator from the broker's group.* / offsets.* settings, routes
// the group APIs to it and subscribes it to leadership changes. It loads nothing yet: partitions of
// __consumer_offsets are loaded as this broker is told it leads them.
func (b *Broker) startGroupCoordinator() error {
	cfg := coordinator.DefaultConfig()
	cfg.Node = coordinator.Node{ID: b.id, Host: b.host, Port: int32(b.port)}
	cfg.GroupMinSessionTimeoutMs = b.cfg.GroupMinSessionTimeoutMs
	cfg.GroupMaxSessionTimeoutMs = b.cfg.GroupMaxSessionTimeoutMs
	cfg.GroupInitialRebalanceDelayMs = b.cfg.GroupInitialRebalanceDelayMs
	cfg.GroupMaxSize = b.cfg.GroupMaxSize
	cfg.OffsetsTopicNumPartitions = b.cfg.OffsetsTopicNumPartitions
	cfg.OffsetsRetentionMinutes = b.cfg.OffsetsRetentionMinutes
	cfg.OffsetsRetentionCheckIntervalMs = b.cfg.OffsetsRetentionCheckIntervalMs
	cfg.OffsetsTopicSegmentBytes = int32(min(b.cfg.OffsetsTopicSegmentBytes, math.MaxInt32))
	cfg.OnGroupChange = b.opts.onGroupChange
	cfg.ClientInfo = func(ctx context.Context) (string, string) {
		ri, _ := RequestInfoFrom(ctx)
		return ri.ClientID, "/" + ri.ClientHost // Kafka records the host as "/ip"
	}
	cfg.PartitionExists = func(topic string, p int32) bool {
		n, ok := b.Partitions(topic)
		return ok && p >= 0 && p < n
	}
	g := &groups{b: b, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	cfg.CoordinatorFor = g.coordinatorFor

	co, err := coordinator.Start(b.ctx, cfg, offsetsLog{b}, b.log.WithField("component", "group-coordinator"))
	if err != nil {
		return err
	}
	g.co = co
	b.metrics.coord.Store(co)
	g.serving.Store(true)
	b.coord = g
	go g.run()
	b.SetLeadershipListener(g.onLeadership)
	b.SetGroupHandler(co)
	return nil
}

// coordinatorFor answers FindCoordinator: the live leader of the group's __consumer_offsets
// partition. Like Kafka, the first lookup creates the topic, and until it has a leader the answer is
// COORDINATOR_NOT_AVAILABLE (ok=false), which clients retry. During coordinator.Start (which asks
// for every partition, before ZooKeeper is connected) it creates nothing.
func (g *groups) coordinatorFor(p int32) (coordinator.Node, bool) {
	n, err := g.b.Leader(OffsetsTopic, p)
	if errors.Is(err, kerr.UnknownTopicOrPartition) && g.serving.Load() && g.creating.CompareAndSwap(false, true) {
		started := g.b.spawn(func() {
			defer g.creating.Store(false)
			if err := g.b.EnsureOffsetsTopic(g.b.ctx); err != nil && g.b.ctx.Err() == nil {
				g.b.log.WithError(err).Warn("creating " + OffsetsTopic)
			}
		})
		if !started {
			g.creating.Store(false) // the broker is closing
		}
	}
	if err != nil {
		return coordinator.Node{}, false
	}
	return coordinator.Node{ID: n.ID, Host: n.Host, Port: n.Port}, true
}

// onLeadership is the broker's LeadershipFunc; it must not block. Both transitions take effect at
// once, in the order ZooKeeper reported them: a partition this broker now leads is marked loading —
// so a JoinGroup arriving right after FindCoordinator named this broker gets
// COORDINATOR_LOAD_IN_PROGRESS, as in Kafka, not NOT_COORDINATOR — and its read is queued for run; a
// partition it no longer leads is unloaded (in memory only: parked requests get NOT_COORDINATOR).
func (g *groups) onLeadership(topic string, p int32, leading bool, _ int32) {
	if topic != OffsetsTopic {
		return
	}
	if !leading {
		g.co.OnResignation(p)
		return
	}
	if began, _ := g.co.BeginElection(p); !began {
		return // already loading or loaded
	}
	g.mu.Lock()
	g.pending = append(g.pending, p)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// run reads the partitions marked loading, one at a time: reading a whole log must not hold up the
// ZooKeeper loop. A partition resigned before its read is dropped by LoadPartition.
func (g *groups) run() {
	defer close(g.done)
	for {
		select {
		case <-g.stop:
			return
		case <-g.wake:
		}
		for {
			g.mu.Lock()
			if len(g.pending) == 0 {
				g.mu.Unlock()
				break
			}
			p := g.pending[0]
			g.pending = g.pending[1:]
			g.mu.Unlock()
			if err := g.co.LoadPartition(g.b.ctx, p); err != nil && g.b.ctx.Err() == nil {
				g.b.log.WithError(err).WithField("partition", p).Error("loading group metadata")
			}
		}
	}
}

// close stops the coordinator before the logs it writes to are closed.
func (g *groups) close() {
	close(g.stop)
	g.co.Close() // a load in progress ends with ErrClosed
	<-g.done
}

// offsetsLog gives the coordinator this broker's __consumer_offsets partition logs.
type offsetsLog struct{ b *Broker }

// Append writes the coordinator's batches with one storage append (one write; one fsync when
// log.flush.interval.messages is 1). A batch longer than the log's maximum message size
// (message.max.bytes) is refused alone with MESSAGE_TOO_LARGE, as UnifiedLog refuses any such append
// (RecordTooLargeException): the coordinator maps it as GroupMetadataManager does (a group record
// too large fails the SyncGroup round with UNKNOWN_SERVER_ERROR; an offset commit gets
// INVALID_COMMIT_OFFSET_SIZE). A storage error is every written batch's error.
func (l offsetsLog) Append(p int32, batches [][]byte) []error {
	errs := make([]error, len(batches))
	var records []byte
	for i, batch := range batches {
		if len(batch) > int(l.b.cfg.MessageMaxBytes) {
			errs[i] = kerr.MessageTooLarge
			continue
		}
		records = append(records, batch...)
	}
	if len(records) == 0 {
		return errs
	}
	if err := l.appendAcksAll(p, records); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	return errs
}

// appendAcksAll appends as GroupMetadataManager does (acks=-1, timeout offsets.commit.timeout.ms):
// the error is the log's or the replication's (NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
// REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER), which the coordinator maps to its own codes.
func (l offsetsLog) appendAcksAll(p int32, records []byte) error {
	part, err := l.b.leaderPartition(OffsetsTopic, p)
	if err != nil {
		return err
	}
	rp := kmsg.NewProduceResponseTopicPartition()
	code, _, w := l.b.appendToLeader(part, -1, records, &rp, false)
	if w != nil {
		w.rp = &rp
		l.b.awaitAcks(l.b.ctx, []ackWait{*w}, time.Duration(l.b.cfg.OffsetsCommitTimeoutMs)*time.Millisecond)
		code = rp.ErrorCode
	}
	if code != 0 {
		return kerr.ErrorForCode(code)
	}
	return nil
}

func (l offsetsLog) ReadAll(p int32, fn func(key, value []byte) error) error {
	lg, err := l.b.PartitionLog(OffsetsTopic, p)
	if err != nil {
		return err
	}
	return coordinator.ReadPartition(lg, fn)
}
