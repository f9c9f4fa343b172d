package replica

// The follower's decisions (AbstractFetcherThread and ReplicaFetcherThread in Kafka 3.9): where to
// truncate when the leader's Fetch answer names a diverging epoch, and what to do when the fetch
// offset is out of the leader's range. The fetcher loop (broker/replication.go) does the I/O.

// Undefined epoch and offset, as OffsetsForLeaderEpoch and the diverging epoch carry them
// (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// EpochEnd is a leader's (or the follower's own) answer to "where does epoch end": the largest epoch
// at or below the one asked for and the offset where the next epoch starts (LeaderEpochFileCache
// .endOffsetFor).
type EpochEnd struct {
	Epoch     int32
	EndOffset int64
}

// Truncation is where the follower cuts its log, and whether that settles the divergence (Kafka's
// OffsetTruncationState): when not, the follower fetches again with its new last epoch and the
// leader may name an older diverging epoch.
type Truncation struct {
	Offset    int64
	Completed bool
}

// DivergingTruncation is AbstractFetcherThread.getOffsetTruncationState for the diverging epoch a
// Fetch answer carried (KIP-595's DivergingEpoch, used by ZooKeeper-mode brokers since 2.7):
//   - the leader knows no such epoch (end offset undefined): Kafka truncates to the partition's
//     current fetch offset (partitionStates.stateValue(tp).fetchOffset), which in the Truncating
//     state is the high watermark it was initialised with: pass that offset as localHW;
//   - the follower has no epoch at or below the leader's: truncate to the leader's end offset;
//   - the follower's largest epoch at or below it is another epoch: truncate to that epoch's end
//     and ask again (not completed);
//   - the same epoch: truncate to the smaller of the two end offsets (completed).
//
// localEnd is the follower's own LeaderEpochFileCache.endOffsetFor(leader.Epoch) (UndefinedEpoch
// when it has none); every result is at most localLEO.
func DivergingTruncation(leader EpochEnd, localEnd EpochEnd, localLEO, localHW int64) Truncation {
	switch {
	case leader.EndOffset == UndefinedEpochOffset:
		return Truncation{Offset: min(localHW, localLEO), Completed: true}
	case leader.Epoch == UndefinedEpoch || localEnd.Epoch == UndefinedEpoch || localEnd.EndOffset == UndefinedEpochOffset:
		return Truncation{Offset: min(leader.EndOffset, localLEO), Completed: true}
	case localEnd.Epoch != leader.Epoch:
		return Truncation{Offset: min(localEnd.EndOffset, localLEO), Completed: false}
	default:
		return Truncation{Offset: min(localEnd.EndOffset, leader.EndOffset, localLEO), Completed: true}
	}
}

// OutOfRange is AbstractFetcherThread.fetchOffsetAndTruncate for OFFSET_OUT_OF_RANGE: a follower
// ahead of the leader's log end (possible only after an unclean election) truncates to it; one
// behind the leader's log start starts over there (TruncateFullyAndStartAt: fully=true); otherwise
// it fetches on from its own end (the leader's range moved between two fetches).
func OutOfRange(localLEO, leaderLogStart, leaderLEO int64) (offset int64, fully bool) {
	switch {
	case leaderLEO >= 0 && localLEO > leaderLEO:
		return leaderLEO, false
	case localLEO < leaderLogStart:
		return leaderLogStart, true
	}
	return localLEO, false
}

// FollowerHighWatermark is ReplicaFetcherThread.processPartitionData's update: the follower's high
// watermark is the leader's, but never above its own log end offset. It does not apply the lower
// bound UnifiedLog.updateHighWatermark also applies (never below the log start offset); use
// ClampHighWatermark when the log start offset is at hand.
func FollowerHighWatermark(leaderHW, localLEO int64) int64 { return min(leaderHW, localLEO) }

// ClampHighWatermark is UnifiedLog.updateHighWatermark's clamp: below the log start offset it is the
// log start offset, at or above the log end offset it is the log end offset.
func ClampHighWatermark(hw, logStart, leo int64) int64 {
	switch {
	case hw < logStart:
		return logStart
	case hw >= leo:
		return leo
	}
	return hw
}

// DivergingEpoch is the leader's check in Partition.fetchRecords (Kafka >= 2.7) of a follower's
// lastFetchedEpoch (-1: not sent, no check), given the leader's end of that epoch (leaderEnd) and log
// start offset: outOfRange when the leader cannot place the epoch or the fetch offset is below its log
// start (OFFSET_OUT_OF_RANGE); diverged when that epoch ends, in the leader's log, before the fetch
// offset or the leader knows it only as an older epoch — the follower is then answered the leader's
// end of that epoch instead of records.
func DivergingEpoch(lastFetchedEpoch int32, fetchOffset, logStart int64, leaderEnd EpochEnd) (div EpochEnd, diverged, outOfRange bool) {
	if lastFetchedEpoch < 0 {
		return EpochEnd{}, false, false
	}
	if leaderEnd.EndOffset == UndefinedEpochOffset || leaderEnd.Epoch == UndefinedEpoch || fetchOffset < logStart {
		return EpochEnd{}, false, true
	}
	if leaderEnd.Epoch < lastFetchedEpoch || leaderEnd.EndOffset < fetchOffset {
		return leaderEnd, true, false
	}
	return EpochEnd{}, false, false
}
