package storage

import "github.com/rebalancelab/rebalancelab/internal/recordbatch"

// EachRecord calls fn with every record of the v2 batch rb in order, decompressing the records
// section first (recordbatch.Decompress: gzip, snappy, lz4, zstd). fn's error stops the walk and is
// returned. Errors: ErrCorruptRecord (wrapped) for a payload that does not decompress; a wrapped
// recordbatch.ErrCorrupt for records that do not decode.
func EachRecord(rb recordbatch.Batch, fn func(recordbatch.Record) error) error {
	return eachRecord(rb, fn)
}

// LogStartEpoch is the leader epoch ListOffsets answers with the log start offset (UnifiedLog.
// fetchOffsetByTimestamp for EARLIEST_TIMESTAMP: the leader-epoch cache's earliest entry, which
// Kafka truncates to start at the log start offset): the epoch of the cache entry covering the log
// start offset; false when no entry does (the cache is empty or starts later).
func (l *Log) LogStartEpoch() (int32, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return epochFor(l.epochs, l.logStartLocked())
}
