package broker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/rebalancelab/rebalancelab/broker/replica"
	"github.com/rebalancelab/rebalancelab/broker/storage"
)

// partition is a local replica's log (kafka.cluster.Partition) — as leader or as follower — plus the
// requests parked on it: every append and every high-watermark move wakes them (DelayedFetch and
// DelayedProduce completion in Kafka's purgatory), so long polls and acks=all never loop on a timer.
// While it leads, rep holds the replication state (followers' offsets, ISR, high watermark).
type partition struct {
	topic string
	id    int32
	log   *storage.Log
	czxid int64 // the incarnation of the topic it belongs to (topicView.czxid)

	cfg atomic.Pointer[logConfig] // the topic's effective config (logconfig.go), replaced live

	leading  atomic.Bool  // this broker leads it per ZooKeeper (as last seen)
	epoch    atomic.Int32 // leader epoch of that state (leading or following)
	leaderID atomic.Int32 // the leader of that state: this broker, the one it follows, or -1

	// appendMu: one append or truncation at a time, so base offsets follow request order; role
	// changes (becomeLeader, becomeFollower) take it too, so a leader append never lands in a
	// follower's log and a follower's fetched batches never in a leader's.
	appendMu sync.Mutex

	repMu sync.Mutex
	rep   *replica.Leader // while leading; nil as follower

	waitMu  sync.Mutex
	waiters map[chan struct{}]struct{}
}

func newPartition(topic string, czxid int64, id int32, log *storage.Log) *partition {
	p := &partition{topic: topic, czxid: czxid, id: id, log: log, waiters: make(map[chan struct{}]struct{})}
	p.leaderID.Store(-1)
	return p
}

func nowMs() int64 { return time.Now().UnixMilli() }

// config is the partition's topic config now.
func (p *partition) config() *logConfig { return p.cfg.Load() }

// append stores records (v2 batches) and wakes the fetchers waiting on this partition.
func (p *partition) append(records []byte) (int64, error) {
	r, err := p.appendRecords(records)
	return r.BaseOffset, err
}

// appendRecords is append with the log's whole answer (a duplicate writes nothing and wakes no one).
// Errors: NOT_LEADER_OR_FOLLOWER when the partition stopped leading, the log's errors.
func (p *partition) appendRecords(records []byte) (storage.AppendResult, error) {
	p.appendMu.Lock()
	if !p.leading.Load() {
		p.appendMu.Unlock()
		return storage.AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1}, kerr.NotLeaderForPartition
	}
	r, err := p.log.AppendRecords(records)
	p.appendMu.Unlock()
	if err == nil && !r.Duplicate {
		p.leaderAppended()
		p.notify()
	}
	return r, err
}

// leaderAppended tells the replication state the log's new end; with no follower to wait for (the
// ISR is the leader alone) the high watermark follows at once.
func (p *partition) leaderAppended() {
	p.repMu.Lock()
	moved, hw := false, int64(0)
	if p.rep != nil {
		moved, hw = p.rep.Appended(p.log.LogEndOffset(), nowMs()), p.rep.HighWatermark()
	}
	p.repMu.Unlock()
	if moved {
		p.log.SetHighWatermark(hw)
	}
}

// becomeLeader is Partition.makeLeader: from now on this replica leads with st (its partition
// epoch is the state znode's version) over replicas. The log stamps st.LeaderEpoch into new
// batches and records where the epoch starts; the high watermark starts from the log's own.
func (p *partition) becomeLeader(self int32, replicas []int32, st replica.State, lagTimeMaxMs int64) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	setLeaderEpoch(p.log, st.LeaderEpoch)
	p.repMu.Lock()
	p.rep = replica.NewLeader(self, replicas, st, p.log.LogEndOffset(), p.log.HighWatermark(), lagTimeMaxMs, nowMs())
	if lc := p.config(); lc != nil {
		p.rep.SetMinISR(int(lc.minInsyncReplicas))
	}
	hw := p.rep.HighWatermark()
	p.repMu.Unlock()
	p.log.SetHighWatermark(hw)
	p.epoch.Store(st.LeaderEpoch)
	p.leaderID.Store(self)
	p.leading.Store(true)
	p.notify()
}

// updateLeader installs a newer committed state of the same leader epoch (an ISR change).
func (p *partition) updateLeader(st replica.State) {
	p.repMu.Lock()
	moved, hw := false, int64(0)
	if p.rep != nil {
		moved, hw = p.rep.Update(st, nowMs()), p.rep.HighWatermark()
	}
	p.repMu.Unlock()
	if moved {
		p.log.SetHighWatermark(hw)
		p.notify()
	}
}

// brokersAlive tells the leader state which brokers are registered (replica.Leader.Alive); parked
// acks=all produces re-check when the high watermark moved.
func (p *partition) brokersAlive(live map[int32]bool) {
	p.repMu.Lock()
	moved, hw := false, int64(0)
	if p.rep != nil {
		moved, hw = p.rep.Alive(live, nowMs()), p.rep.HighWatermark()
	}
	p.repMu.Unlock()
	if moved {
		p.log.SetHighWatermark(hw)
		p.notify()
	}
}

// becomeFollower is Partition.makeFollower: this replica follows leader (-1: none yet) in epoch;
// requests parked on it wake and find it no longer leads.
func (p *partition) becomeFollower(leader, epoch int32) {
	p.appendMu.Lock()
	p.repMu.Lock()
	p.rep = nil
	p.repMu.Unlock()
	p.leading.Store(false)
	p.epoch.Store(epoch)
	p.leaderID.Store(leader)
	p.appendMu.Unlock()
	p.notify()
}

// leaderState is the committed state this replica leads with; ok=false when it does not lead.
func (p *partition) leaderState() (replica.State, bool) {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if p.rep == nil {
		return replica.State{}, false
	}
	return p.rep.State(), true
}

// followerFetched records follower r's fetch from fetchOffset (Partition.updateFollowerFetchState);
// it returns the ISR change to send the controller, nil if none.
func (p *partition) followerFetched(r int32, fetchOffset int64) *replica.AlterPartition {
	p.repMu.Lock()
	var alter *replica.AlterPartition
	moved, hw := false, int64(0)
	if p.rep != nil {
		alter, moved = p.rep.FollowerFetch(r, fetchOffset, p.log.LogEndOffset(), nowMs())
		hw = p.rep.HighWatermark()
	}
	p.repMu.Unlock()
	if moved {
		p.log.SetHighWatermark(hw)
		p.notify()
	}
	return alter
}

// tick is the ISR shrink check (Partition.maybeShrinkIsr).
func (p *partition) tick() *replica.AlterPartition {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if p.rep == nil {
		return nil
	}
	return p.rep.Tick(nowMs())
}

// alterDone applies the controller's answer to the AlterPartition sent for leader epoch epoch; it
// returns the change to send again when the error is one Kafka retries (replica.RetryAlterPartition).
func (p *partition) alterDone(epoch int32, code int16, st replica.State) (retry *replica.AlterPartition) {
	p.repMu.Lock()
	moved, hw := false, int64(0)
	if p.rep != nil && p.rep.State().LeaderEpoch == epoch {
		moved, hw = p.rep.AlterPartitionDone(code, st, nowMs()), p.rep.HighWatermark()
		if in := p.rep.Inflight(); in != nil && code != 0 && replica.RetryAlterPartition(code) {
			c := *in
			retry = &c
		}
	}
	p.repMu.Unlock()
	if moved {
		p.log.SetHighWatermark(hw)
	}
	p.notify()
	return retry
}

// isrSize is the committed ISR's size (0 when not leading).
func (p *partition) isrSize() int {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if p.rep == nil {
		return 0
	}
	return p.rep.ISRSize()
}

// acksAll is Partition.checkEnoughReplicasReachOffset for an acks=all produce whose last record is
// requiredOffset-1: done with code 0 or NOT_ENOUGH_REPLICAS_AFTER_APPEND once the high watermark
// passed it; NOT_LEADER_OR_FOLLOWER when this replica stopped leading (or leads another epoch).
func (p *partition) acksAll(epoch int32, requiredOffset int64, minISR int) (done bool, code int16) {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if p.rep == nil || p.rep.State().LeaderEpoch != epoch {
		return true, kerr.NotLeaderForPartition.Code
	}
	return p.rep.AcksAllCode(requiredOffset, minISR)
}

// watch registers ch (buffered, capacity 1) to be signalled on the next append; unwatch removes it.
func (p *partition) watch(ch chan struct{}) {
	p.waitMu.Lock()
	p.waiters[ch] = struct{}{}
	p.waitMu.Unlock()
}

func (p *partition) unwatch(ch chan struct{}) {
	p.waitMu.Lock()
	delete(p.waiters, ch)
	p.waitMu.Unlock()
}

func (p *partition) notify() {
	p.waitMu.Lock()
	for ch := range p.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	p.waitMu.Unlock()
}

func (p *partition) enforceRetention() error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.log.EnforceRetention()
}

func (p *partition) close() error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.leading.Store(false)
	p.repMu.Lock()
	p.rep = nil
	p.repMu.Unlock()
	p.notify()           // parked fetchers re-check and see they are no longer served here
	return p.log.Close() // fsyncs the active segment (and, replicated, checkpoints the high watermark)
}

// errNotFollowing: the partition stopped following the leader and epoch a fetch was made for; the
// fetched data is dropped.
var errNotFollowing = kerr.NotLeaderForPartition

// following reports, under appendMu, whether the partition still follows leader in epoch.
func (p *partition) following(leader, epoch int32) bool {
	return !p.leading.Load() && p.leaderID.Load() == leader && p.epoch.Load() == epoch
}

// appendAsFollower is ReplicaFetcherThread.processPartitionData: records fetched from leader in
// epoch are appended with their offsets and epochs (UnifiedLog.appendAsFollower), then the high
// watermark becomes the leader's, capped by this log's end. Errors: errNotFollowing, the log's.
func (p *partition) appendAsFollower(leader, epoch int32, records []byte, leaderHW int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if !p.following(leader, epoch) {
		return errNotFollowing
	}
	if len(records) > 0 {
		if _, err := p.log.AppendAsFollower(records); err != nil {
			return err
		}
	}
	p.log.ForceHighWatermark(replica.FollowerHighWatermark(leaderHW, p.log.LogEndOffset()))
	return nil
}

// truncateAsFollower cuts the log at offset (fully: empties it and starts it at offset), if the
// partition still follows leader in epoch. Errors: errNotFollowing, the log's.
func (p *partition) truncateAsFollower(leader, epoch int32, offset int64, fully bool) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if !p.following(leader, epoch) {
		return errNotFollowing
	}
	if fully {
		return p.log.TruncateFullyAndStartAt(offset)
	}
	return p.log.TruncateTo(offset)
}
