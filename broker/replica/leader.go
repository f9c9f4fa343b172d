// Package replica is the replication protocol of one partition as pure state machines (events and
// time in, effects out; no I/O, no clock, no locks), as Kafka 3.9's kafka.cluster.Partition and
// kafka.cluster.Replica hold it for the leader and AbstractFetcherThread for the follower. The broker
// feeds them its log end offsets, follower fetches and the controller's answers, and carries out what
// they return: set the log's high watermark, send an AlterPartition to the controller, truncate.
//
// Offsets are Kafka offsets (int64); times are milliseconds since the Unix epoch (int64), given by
// the caller; broker ids and epochs are int32.
package replica

import (
	"slices"
)

// DefaultReplicaLagTimeMaxMs is replica.lag.time.max.ms: a follower that has not caught up to the
// leader's log end offset for this long leaves the ISR.
const DefaultReplicaLagTimeMaxMs = 30000

// State is a partition's leadership as the controller last committed it (the state znode: leader,
// leader_epoch, isr; its znode version is the partition epoch of KIP-497's AlterPartition).
type State struct {
	Leader         int32
	LeaderEpoch    int32
	ISR            []int32
	PartitionEpoch int32
}

// AlterPartition is the request the leader sends to the controller to change the ISR
// (AlterPartitionRequest v1: topic name, partition, leader epoch, new ISR, partition epoch).
type AlterPartition struct {
	LeaderEpoch    int32
	NewISR         []int32
	PartitionEpoch int32
}

// follower is the leader's view of one follower (kafka.cluster.Replica's ReplicaState).
type follower struct {
	logEndOffset       int64 // the follower's last fetch offset; -1 until it fetched
	lastCaughtUpTimeMs int64 // the last time its fetch reached the leader's log end offset then
	lastFetchLeaderLEO int64 // the leader's log end offset at its previous fetch
	lastFetchTimeMs    int64
}

// Leader is the leader's side of one partition (kafka.cluster.Partition while it leads). Create it
// with NewLeader when the broker becomes leader; feed it Appended, FollowerFetch, Tick and the
// controller's answers; read HighWatermark and take the AlterPartition requests it emits.
// Not safe for concurrent use: the broker holds one lock per partition around it.
type Leader struct {
	self         int32
	replicas     []int32
	state        State
	lagTimeMaxMs int64

	leo int64 // the leader's own log end offset
	hw  int64
	// epochStartOffset is the leader's log end offset when it became leader of this epoch
	// (Partition.leaderEpochStartOffsetOpt): a follower joins the ISR only past it.
	epochStartOffset int64

	// minISR is min.insync.replicas (1 unless SetMinISR): Kafka 3.9's maybeIncrementLeaderHW does
	// not move the high watermark while the committed ISR is smaller than min(minISR, replicas).
	minISR int

	followers map[int32]*follower
	// inflight is the ISR change sent to the controller and not answered yet (Kafka's
	// PendingExpandIsr / PendingShrinkIsr): at most one at a time.
	inflight *AlterPartition
	// down are the followers whose broker is not registered (Alive): not ISR-eligible.
	down map[int32]bool
}

// NewLeader is Partition.makeLeader: the leader self of replicas with the committed state st, whose
// log ends at leo with high watermark hw (its own, from the checkpoint or from its time as a
// follower). As Replica.resetReplicaState does for a new leader, every follower's log end offset is
// unknown (-1) until it fetches, and its lastCaughtUpTime is nowMs if it is in the ISR (so it has
// replica.lag.time.max.ms to fetch before it is removed), 0 otherwise.
func NewLeader(self int32, replicas []int32, st State, leo, hw int64, lagTimeMaxMs, nowMs int64) *Leader {
	if lagTimeMaxMs <= 0 {
		lagTimeMaxMs = DefaultReplicaLagTimeMaxMs
	}
	l := &Leader{self: self, replicas: slices.Clone(replicas), state: cloneState(st), lagTimeMaxMs: lagTimeMaxMs,
		leo: leo, hw: min(hw, leo), epochStartOffset: leo, minISR: 1, followers: map[int32]*follower{}, down: map[int32]bool{}}
	for _, r := range replicas {
		if r != self {
			f := &follower{logEndOffset: -1, lastFetchLeaderLEO: -1}
			if slices.Contains(st.ISR, r) {
				f.lastCaughtUpTimeMs = nowMs
			}
			l.followers[r] = f
		}
	}
	l.advanceHW(nowMs)
	return l
}

// Alive tells the leader which brokers are registered now (/brokers/ids: the metadata cache's alive
// brokers); until the first call every follower counts as alive. In ZooKeeper mode a replica is
// ISR-eligible only while its broker is alive (Partition.isReplicaIsrEligible: hasAliveBroker): a
// follower whose broker is gone is not proposed for the ISR, and outside the ISR it no longer holds
// the high watermark back as a caught-up replica about to join. It reports whether the high watermark
// moved (recomputed only when a follower's liveness changed).
func (l *Leader) Alive(live map[int32]bool, nowMs int64) bool {
	changed := false
	for r := range l.followers {
		if down := !live[r]; down != l.down[r] {
			changed = true
			if down {
				l.down[r] = true
			} else {
				delete(l.down, r)
			}
		}
	}
	return changed && l.advanceHW(nowMs)
}

// SetMinISR sets min.insync.replicas for the high watermark rule (Partition.isUnderMinIsr /
// effectiveMinIsr: min(minISR, number of replicas)); values below 1 mean 1.
func (l *Leader) SetMinISR(n int) { l.minISR = max(n, 1) }

func (l *Leader) underMinISR() bool {
	return len(l.state.ISR) < l.EffectiveMinISR(l.minISR)
}

func cloneState(st State) State { st.ISR = slices.Clone(st.ISR); return st }

// State is the committed state the leader works with.
func (l *Leader) State() State { return cloneState(l.state) }

// HighWatermark is the offset below which every record is on every replica of the maximal ISR.
func (l *Leader) HighWatermark() int64 { return l.hw }

// LogEndOffset is the leader's own log end offset as last reported.
func (l *Leader) LogEndOffset() int64 { return l.leo }

// Inflight is the ISR change waiting for the controller's answer, nil when none.
func (l *Leader) Inflight() *AlterPartition { return l.inflight }

// FollowerLogEndOffset is a follower's log end offset as its last fetch showed it (-1: none yet).
func (l *Leader) FollowerLogEndOffset(r int32) int64 {
	if f := l.followers[r]; f != nil {
		return f.logEndOffset
	}
	return -1
}

// MaximalISR is the ISR the leader must count for the high watermark and for acks=all:
// the committed ISR, plus a replica being added while the expansion is in flight (Kafka's
// PartitionState.maximalIsr; a shrink in flight keeps the committed, larger ISR).
func (l *Leader) MaximalISR() []int32 {
	isr := slices.Clone(l.state.ISR)
	if l.inflight != nil {
		for _, r := range l.inflight.NewISR {
			if !slices.Contains(isr, r) {
				isr = append(isr, r)
			}
		}
	}
	return isr
}

// Appended reports that the leader's log now ends at leo (after an append as leader). It returns
// whether the high watermark moved.
func (l *Leader) Appended(leo, nowMs int64) bool {
	l.leo = leo
	return l.advanceHW(nowMs)
}

// FollowerFetch is Partition.updateFollowerFetchState: follower r fetched from fetchOffset (its log
// end offset) at nowMs, while the leader's log ended at leaderLEO. It updates r's caught-up time as
// Replica.updateFetchStateOrThrow does, may propose adding r to the ISR (the returned
// AlterPartition, nil if none), and reports whether the high watermark moved.
// A fetch from a broker that is not a replica is ignored (the caller answers it NOT_LEADER_OR_FOLLOWER
// or UNKNOWN_LEADER_EPOCH before).
func (l *Leader) FollowerFetch(r int32, fetchOffset, leaderLEO, nowMs int64) (alter *AlterPartition, hwMoved bool) {
	f := l.followers[r]
	if f == nil {
		return nil, false
	}
	switch {
	case fetchOffset >= leaderLEO:
		f.lastCaughtUpTimeMs = max(f.lastCaughtUpTimeMs, nowMs)
	case fetchOffset >= f.lastFetchLeaderLEO:
		// It reached what the leader had at its previous fetch: caught up as of then.
		f.lastCaughtUpTimeMs = max(f.lastCaughtUpTimeMs, f.lastFetchTimeMs)
	}
	prev := f.logEndOffset
	f.logEndOffset = fetchOffset
	// lastFetchLeaderLogEndOffset = math.max(leaderEndOffset, currentReplicaState.lastFetchLeaderLogEndOffset)
	f.lastFetchLeaderLEO = max(f.lastFetchLeaderLEO, leaderLEO)
	f.lastFetchTimeMs = nowMs
	l.leo = max(l.leo, leaderLEO)
	alter = l.maybeExpand(r, nowMs)
	// Partition.updateFollowerFetchState recomputes the high watermark only when the follower's log
	// end offset changed (prevFollowerEndOffset != replica.stateSnapshot.logEndOffset).
	if prev == fetchOffset {
		return alter, false
	}
	return alter, l.advanceHW(nowMs)
}

// caughtUp is Replica.isCaughtUp.
func (l *Leader) caughtUp(f *follower, nowMs int64) bool {
	return f.logEndOffset == l.leo || nowMs-f.lastCaughtUpTimeMs <= l.lagTimeMaxMs
}

// maybeExpand is Partition.maybeExpandIsr: a follower outside the ISR whose log end offset reached
// the high watermark and the start of the leader's epoch rejoins it (appended at the end, as
// Kafka's isr + replica).
func (l *Leader) maybeExpand(r int32, nowMs int64) *AlterPartition {
	if l.inflight != nil || slices.Contains(l.state.ISR, r) || l.down[r] {
		return nil
	}
	f := l.followers[r]
	if f.logEndOffset < l.hw || f.logEndOffset < l.epochStartOffset {
		return nil
	}
	return l.propose(append(slices.Clone(l.state.ISR), r))
}

// Tick is Partition.maybeShrinkIsr, run every replica.lag.time.max.ms / 2: the followers of the ISR
// that are out of sync (not caught up for longer than replica.lag.time.max.ms) are proposed for
// removal. It returns the AlterPartition to send, nil if none (or one is already in flight).
func (l *Leader) Tick(nowMs int64) *AlterPartition {
	out := l.OutOfSync(nowMs)
	if len(out) == 0 {
		return nil
	}
	var keep []int32
	for _, r := range l.state.ISR {
		if !slices.Contains(out, r) {
			keep = append(keep, r)
		}
	}
	a := l.propose(keep)
	// maybeShrinkIsr calls maybeIncrementLeaderHW after prepareIsrShrink (the maximal ISR is still
	// the committed one, but a follower outside it may no longer be caught up): read HighWatermark.
	l.advanceHW(nowMs)
	return a
}

// OutOfSync lists the ISR followers that are out of sync at nowMs (Partition.getOutOfSyncReplicas):
// none while an AlterPartition is in flight; an ISR member that is not a replica is out of sync
// (isFollowerOutOfSync: getReplica(replicaId).fold(true)).
func (l *Leader) OutOfSync(nowMs int64) []int32 {
	if l.inflight != nil {
		return nil
	}
	var out []int32
	for _, r := range l.state.ISR {
		if r == l.self {
			continue
		}
		if f := l.followers[r]; f == nil || !l.caughtUp(f, nowMs) {
			out = append(out, r)
		}
	}
	return out
}

func (l *Leader) propose(isr []int32) *AlterPartition {
	a := &AlterPartition{LeaderEpoch: l.state.LeaderEpoch, NewISR: isr, PartitionEpoch: l.state.PartitionEpoch}
	l.inflight = a
	out := *a
	out.NewISR = slices.Clone(isr)
	return &out
}

// AlterPartition error codes that Partition.handleAlterPartitionError tells apart.
const (
	ErrUnknownTopicOrPartition int16 = 3
	ErrFencedLeaderEpoch       int16 = 74
	ErrOperationNotAttempted   int16 = 55
	ErrInvalidUpdateVersion    int16 = 95
	ErrIneligibleReplica       int16 = 107
	ErrInvalidRequest          int16 = 42
	ErrUnknownTopicID          int16 = 100
	ErrNewLeaderElected        int16 = 106
)

// RetryAlterPartition is handleAlterPartitionError's answer to "send it again?": false for 0, for
// OPERATION_NOT_ATTEMPTED / INELIGIBLE_REPLICA (reset to committed) and for the errors after which
// the partition waits, pending, for new metadata (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID,
// FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, INVALID_REQUEST, NEW_LEADER_ELECTED); true for any
// other error ("unexpected error. Retrying."): the caller resends Inflight().
func RetryAlterPartition(code int16) bool {
	switch code {
	case 0, ErrOperationNotAttempted, ErrIneligibleReplica, ErrUnknownTopicOrPartition, ErrUnknownTopicID,
		ErrFencedLeaderEpoch, ErrInvalidUpdateVersion, ErrInvalidRequest, ErrNewLeaderElected:
		return false
	}
	return true
}

// AlterPartitionDone is the controller's answer to the request in flight (Partition.submitAlterPartition's
// callback, handleAlterPartitionUpdate / handleAlterPartitionError). It reports whether the high
// watermark moved. As Kafka 3.9:
//   - no request in flight (a newer state replaced it): the answer is ignored;
//   - code 0 with a state of another leader epoch, or an older partition epoch: ignored, the request
//     stays in flight (pending) until Update installs a state;
//   - code 0 otherwise (partition epoch newer or equal): the state's ISR and partition epoch become
//     the committed state, nothing is in flight, the high watermark is recomputed;
//   - OPERATION_NOT_ATTEMPTED (55), INELIGIBLE_REPLICA (107): back to the last committed state,
//     nothing in flight (the high watermark is not recomputed here, as in Kafka);
//   - UNKNOWN_TOPIC_OR_PARTITION (3), UNKNOWN_TOPIC_ID (100), FENCED_LEADER_EPOCH (74),
//     INVALID_UPDATE_VERSION (95), INVALID_REQUEST (42), NEW_LEADER_ELECTED (106): the request stays
//     in flight, not resent, until Update installs a newer state;
//   - any other error: Kafka retries: the request stays in flight and the caller sends Inflight()
//     again (RetryAlterPartition(code) tells the two apart).
func (l *Leader) AlterPartitionDone(code int16, st State, nowMs int64) bool {
	if l.inflight == nil {
		return false
	}
	switch code {
	case 0:
		if st.LeaderEpoch != l.state.LeaderEpoch || st.PartitionEpoch < l.state.PartitionEpoch {
			return false
		}
		l.state.ISR = slices.Clone(st.ISR)
		l.state.PartitionEpoch = st.PartitionEpoch
		l.inflight = nil
		return l.advanceHW(nowMs)
	case ErrOperationNotAttempted, ErrIneligibleReplica:
		l.inflight = nil
	}
	return false
}

// Update installs a committed state from the controller (Partition.makeLeader on a LeaderAndIsr
// while leading). A state with an older partition epoch or an older leader epoch is ignored. One
// with an equal or newer partition epoch replaces the committed state and drops any request in
// flight (updateAssignmentAndIsr sets a CommittedPartitionState). A newer leader epoch also restarts
// the epoch as makeLeader does: the epoch start offset becomes the leader's log end offset and every
// follower's state is reset (resetReplicaState with isNewLeader=false: it keeps its log end offset,
// lastFetchLeaderLogEndOffset = the log end offset, lastFetchTime = now, lastCaughtUpTime = now if
// in the new ISR, else 0). It reports whether the high watermark moved.
func (l *Leader) Update(st State, nowMs int64) bool {
	if st.LeaderEpoch < l.state.LeaderEpoch || st.PartitionEpoch < l.state.PartitionEpoch {
		return false
	}
	if st.LeaderEpoch > l.state.LeaderEpoch {
		l.epochStartOffset = l.leo
		for r, f := range l.followers {
			f.lastFetchLeaderLEO = l.leo
			f.lastFetchTimeMs = nowMs
			f.lastCaughtUpTimeMs = 0
			if slices.Contains(st.ISR, r) {
				f.lastCaughtUpTimeMs = nowMs
			}
		}
	}
	l.inflight = nil
	l.state = cloneState(st)
	return l.advanceHW(nowMs)
}

// advanceHW is Partition.maybeIncrementLeaderHW: the high watermark is the smallest log end offset
// among the leader and the followers of the maximal ISR, and of the followers outside it that are
// caught up and about to join (so that joining never moves it back); it never moves backward.
//
// As Kafka, a follower that has not fetched yet (log end offset -1) holds it where it is, and
// nothing moves while the committed ISR is under min.insync.replicas (Kafka 3.9, KIP-966).
func (l *Leader) advanceHW(nowMs int64) bool {
	if l.underMinISR() {
		return false
	}
	hw := l.leo
	isr := l.MaximalISR()
	for r, f := range l.followers {
		// Kafka's maximal ISR, or shouldWaitForReplicaToJoinIsr: caught up and ISR-eligible.
		if slices.Contains(isr, r) || !l.down[r] && l.caughtUp(f, nowMs) {
			hw = min(hw, f.logEndOffset)
		}
	}
	if hw > l.hw {
		l.hw = hw
		return true
	}
	return false
}

// AcksAllCode is Partition.checkEnoughReplicasReachOffset for a produce with acks=all whose last
// record is requiredOffset-1: done=false while the high watermark is below requiredOffset; then code
// 0, or NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) when the maximal ISR is smaller than the effective
// min ISR (effectiveMinIsr: min(minISR, number of replicas)).
func (l *Leader) AcksAllCode(requiredOffset int64, minISR int) (done bool, code int16) {
	if l.hw < requiredOffset {
		return false, 0
	}
	if len(l.MaximalISR()) < l.EffectiveMinISR(minISR) {
		return true, 20
	}
	return true, 0
}

// EffectiveMinISR is Partition.effectiveMinIsr: min.insync.replicas capped at the number of replicas.
func (l *Leader) EffectiveMinISR(minISR int) int { return min(minISR, len(l.followers)+1) }

// ISRSize is the committed ISR's size, which Partition.appendRecordsToLeader compares with
// EffectiveMinISR(min.insync.replicas) before an acks=all append (NOT_ENOUGH_REPLICAS when smaller).
func (l *Leader) ISRSize() int { return len(l.state.ISR) }
