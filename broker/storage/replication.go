package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Replication primitives: a high watermark apart from the log end offset, reads
// bounded by it, appends of a leader's batches on a follower, truncation on
// leader change and the leader-epoch lookups a follower's OffsetsForLeaderEpoch
// needs (kafka.log.UnifiedLog and LeaderEpochFileCache of Kafka 3.9).

// Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET (org.apache.kafka.common.record.RecordBatch,
// EpochEndOffset): what EndOffsetForEpoch answers for an epoch the cache cannot place.
const (
	UndefinedEpoch       = -1
	UndefinedEpochOffset = -1
)

// hwCheckpointName is the file, in the partition's directory, that holds the high watermark
// CheckpointHighWatermark wrote (Kafka's replication-offset-checkpoint, which Kafka keeps per log
// dir for all its partitions: "0\n<count>\n<topic> <partition> <offset>\n..."). Here it is per
// partition and holds "0\n1\n<offset>\n", like log-start-offset-checkpoint.
const hwCheckpointName = "high-watermark-checkpoint"

// readOffsetCheckpoint reads a per-partition "0\n1\n<offset>\n" checkpoint: -1 when the file does not
// exist, an error when it is unreadable.
func readOffsetCheckpoint(fs FS, dir, name string) (int64, error) {
	f, err := fs.OpenFile(filepath.Join(dir, name), os.O_RDONLY, 0)
	if err != nil {
		if os.IsNotExist(err) {
			return -1, nil
		}
		return -1, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return -1, err
	}
	if size > 4096 {
		return -1, fmt.Errorf("%s: %d bytes, too large", name, size)
	}
	b := make([]byte, size)
	if err := readFull(f, b, 0); err != nil {
		return -1, err
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) != 3 || lines[0] != "0" || lines[1] != "1" {
		return -1, fmt.Errorf("%s: unexpected content %q", name, b)
	}
	off, err := strconv.ParseInt(lines[2], 10, 64)
	if err != nil || off < 0 {
		return -1, fmt.Errorf("%s: bad offset %q", name, lines[2])
	}
	return off, nil
}

// readHWCheckpoint returns the checkpointed high watermark, -1 when there is none.
func readHWCheckpoint(fs FS, dir string) (int64, error) {
	return readOffsetCheckpoint(fs, dir, hwCheckpointName)
}

// writeHWCheckpoint replaces the high watermark checkpoint atomically and durably.
func writeHWCheckpoint(fs FS, dir string, hw int64) error {
	return writeCheckpoint(fs, dir, hwCheckpointName, []byte("0\n1\n"+strconv.FormatInt(hw, 10)+"\n"))
}

// SetHighWatermark moves the high watermark forward to hw, clamped to [LogStartOffset,
// LogEndOffset] (UnifiedLog.maybeIncrementHighWatermark; the leader calls it when the ISR's
// replicas have fetched past it); a value at or below the current one changes nothing. It returns
// the high watermark after the call. Without Config.ReplicatedHighWatermark it changes nothing and
// returns the log end offset.
func (l *Log) SetHighWatermark(hw int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.ReplicatedHighWatermark {
		if c := l.clampToLog(hw); c > l.hwLocked() {
			l.hw = c
		}
	}
	return l.hwLocked()
}

// ForceHighWatermark sets the high watermark to hw clamped to [LogStartOffset, LogEndOffset],
// backward too (UnifiedLog.updateHighWatermark: a follower takes min(leader's high watermark, its
// own log end offset), which after a truncation may be below its own). It returns the high
// watermark after the call. Without Config.ReplicatedHighWatermark it changes nothing and returns
// the log end offset.
func (l *Log) ForceHighWatermark(hw int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.ReplicatedHighWatermark {
		l.hw = l.clampToLog(hw)
	}
	return l.hwLocked()
}

func (l *Log) clampToLog(off int64) int64 { return min(max(off, l.logStartLocked()), l.leo()) }

// CheckpointHighWatermark writes the high watermark to the partition's high-watermark-checkpoint
// (tmp file, fsync, rename, fsync of the directory), which Open reads back clamped to [log start,
// log end] (ReplicaManager.checkpointHighWatermarks, which Kafka runs every
// replica.high.watermark.checkpoint.interval.ms for a whole log dir; here the broker calls it per
// partition, and Close calls it). Without Config.ReplicatedHighWatermark it writes nothing.
// Errors: ErrClosed, the file's I/O error.
func (l *Log) CheckpointHighWatermark() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if !l.cfg.ReplicatedHighWatermark {
		return nil
	}
	return writeHWCheckpoint(l.cfg.FS, l.dir, l.hwLocked())
}

// ReadUpTo is Read (offset in [LogStartOffset, LogEndOffset], whole batches, the first even if
// larger than maxBytes bytes) keeping only the batches whose last offset is below limit: a batch
// holding limit or a later offset is not returned, nor anything after it, so when the batch at
// offset already crosses limit the result is no bytes (UnifiedLog.read with
// FetchIsolation.HIGH_WATERMARK: the broker passes HighWatermark for consumers). offset >= limit
// returns no bytes and no error. Errors as Read.
func (l *Log) ReadUpTo(offset int64, maxBytes int32, limit int64) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	b, err := l.readLocked(offset, maxBytes)
	if err != nil || offset >= limit {
		return nil, err
	}
	end := 0
	for end+batchOverhead <= len(b) {
		last := int64(binary.BigEndian.Uint64(b[end:])) + int64(int32(binary.BigEndian.Uint32(b[end+offLastOffsetDelta:])))
		if last >= limit {
			break
		}
		end += logOverhead + int(int32(binary.BigEndian.Uint32(b[end+offLength:])))
	}
	if end == 0 {
		return nil, nil
	}
	return b[:end:end], nil
}

// splitStoredBatches validates records the way Open validates a segment's batches (parseBatch
// with stored=true: a compacted batch may hold fewer records than its offset range) and returns
// their infos. Any invalid batch fails the whole slice.
func splitStoredBatches(records []byte) ([]batchInfo, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("%w: no record batch", ErrCorruptRecord)
	}
	var out []batchInfo
	for pos := 0; pos < len(records); {
		info, err := parseBatch(records[pos:], true)
		if err != nil {
			return nil, fmt.Errorf("batch %d at byte %d: %w", len(out), pos, err)
		}
		out = append(out, info)
		pos += info.size
	}
	return out, nil
}

// AppendAsFollower appends batches a follower fetched from the leader (UnifiedLog.appendAsFollower):
// v2 RecordBatches back to back, as the leader's Read returned them, written byte for byte — their
// base offsets and partition leader epochs are kept, not assigned. They are validated as Open
// validates stored batches (length, magic, CRC-32C, record framing; a batch compaction rewrote may
// hold fewer records than its offset range). The first batch's base offset must be at or above
// LogEndOffset, each batch must start after the previous one's last offset, and leader epochs must
// be non-negative and not decrease (nor be below LatestEpoch). A batch starting past the log end
// offset (a gap the leader's compaction left) is accepted only when cleanup.policy includes
// compact, and it starts a new segment at its base offset (Open allows gaps only between the
// segments of a compacted log). Each batch whose epoch is newer than LatestEpoch adds
// (epoch, base offset) to the leader-epoch cache, checkpointed before the batch is written (as
// AppendRecords does). The producer state takes each batch as its producer's latest without any
// sequence or epoch check and no batch is a duplicate (ProducerAppendInfo with
// AppendOrigin.REPLICATION). Segments roll, the index grows and log.flush.interval.messages
// applies as in AppendRecords. LeaderEpoch (the epoch leader appends stamp) is not changed.
//
// The result holds the first batch's base offset and the last batch's last offset (LogAppendTime
// -1, Duplicate false). Errors: ErrCorruptRecord (wrapped; nothing written) for an empty slice, a
// batch that fails validation, offsets that do not increase or epochs that are negative or
// decrease; ErrOffsetOutOfRange (wrapped; nothing written) when the first base offset is below
// LogEndOffset, or for a gap in a log that is not compacted; ErrRecordBatchTooLarge (nothing
// written) when records exceed log.segment.bytes; ErrClosed; an I/O error. Batches are written one
// by one: after an I/O error the batches before the failing one stay appended (LogEndOffset says
// how far; the follower fetches again from there), the failing one is undone as in AppendRecords.
func (l *Log) AppendAsFollower(records []byte) (AppendResult, error) {
	fail := AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1}
	infos, err := splitStoredBatches(records)
	if err != nil {
		return fail, fmt.Errorf("storage: append as follower: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return fail, err
	}
	if int64(len(records)) > l.cfg.SegmentBytes {
		return fail, fmt.Errorf("storage: append as follower: %d bytes exceed log.segment.bytes %d: %w", len(records), l.cfg.SegmentBytes, ErrRecordBatchTooLarge)
	}
	leo := l.leo()
	if infos[0].baseOffset < leo {
		return fail, fmt.Errorf("storage: append as follower: first offset %d is below the log end offset %d: %w", infos[0].baseOffset, leo, ErrOffsetOutOfRange)
	}
	prevLast, lastEpoch := leo-1, int32(UndefinedEpoch)
	if n := len(l.epochs); n > 0 {
		lastEpoch = l.epochs[n-1].epoch
	}
	for i, info := range infos {
		switch {
		case info.baseOffset <= prevLast:
			return fail, fmt.Errorf("storage: append as follower: batch %d: base offset %d does not follow offset %d: %w", i, info.baseOffset, prevLast, ErrCorruptRecord)
		case info.baseOffset > prevLast+1 && !l.cfg.Compact():
			return fail, fmt.Errorf("storage: append as follower: batch %d: base offset %d leaves a gap after offset %d in a log that is not compacted: %w", i, info.baseOffset, prevLast, ErrOffsetOutOfRange)
		case info.epoch < 0 || info.epoch < lastEpoch:
			return fail, fmt.Errorf("storage: append as follower: batch %d: leader epoch %d after epoch %d: %w", i, info.epoch, lastEpoch, ErrCorruptRecord)
		}
		prevLast, lastEpoch = info.baseOffset+int64(info.lastOffsetDelta), info.epoch
	}
	res := AppendResult{BaseOffset: infos[0].baseOffset, LastOffset: prevLast, LogAppendTime: -1}

	for pos, i := 0, 0; i < len(infos); pos, i = pos+infos[i].size, i+1 {
		info := infos[i]
		last := info.baseOffset + int64(info.lastOffsetDelta)
		if info.baseOffset != l.leo() {
			if err := l.rollAt(info.baseOffset); err != nil {
				return fail, err
			}
		} else if l.shouldRoll(l.active(), info.size, info.maxTimestamp, last) {
			if err := l.roll(); err != nil {
				return fail, err
			}
		}
		s := l.active()
		if n := len(l.epochs); n == 0 || l.epochs[n-1].epoch < info.epoch {
			epochs := append(slices.Clone(l.epochs), epochEntry{info.epoch, info.baseOffset})
			if err := writeEpochCheckpoint(l.cfg.FS, l.dir, epochs); err != nil {
				return fail, err
			}
			l.epochs = epochs
		}
		if err := l.write(s, slices.Clone(records[pos:pos+info.size]), []batchInfo{info}, info.maxTimestamp); err != nil {
			return fail, err
		}
		l.producers.Load(info.producerBatch())
	}
	if l.leo()-l.recoveryPoint >= l.cfg.FlushIntervalMessages {
		s := l.active()
		if err := s.log.Sync(); err != nil {
			l.failed = err
			return fail, fmt.Errorf("storage: fsync %s: %w", segmentPath(l.dir, s.base, logSuffix), err)
		}
		l.recoveryPoint = l.leo()
	}
	return res, nil
}

// rollAt makes base, above the log end offset, the active segment's base offset: an empty active
// segment is replaced by one at base, a non-empty one is rolled (fsynced) and a segment at base
// created (UnifiedLog.roll(expectedNextOffset) for a follower append past a gap).
func (l *Log) rollAt(base int64) error {
	old := l.active()
	if old.size > 0 {
		return l.rollTo(base)
	}
	s, err := openSegmentFiles(l.cfg.FS, l.dir, base, true)
	if err != nil {
		return fmt.Errorf("storage: roll: %w", err)
	}
	l.segs[len(l.segs)-1] = s
	s.created = l.cfg.Now()
	s.modified = s.created
	old.close()
	for _, suffix := range []string{logSuffix, indexSuffix} {
		if err := l.cfg.FS.Remove(segmentPath(l.dir, old.base, suffix)); err != nil && !os.IsNotExist(err) {
			l.failed = err
			return fmt.Errorf("storage: roll: %w", err)
		}
	}
	if err := syncDir(l.cfg.FS, l.dir); err != nil {
		l.failed = err
		return fmt.Errorf("storage: roll: %w", err)
	}
	return nil
}

// EndOffsetForEpoch answers OffsetsForLeaderEpoch for epoch exactly as Kafka 3.9's
// LeaderEpochFileCache.endOffsetFor(epoch, LogEndOffset) does: epoch UndefinedEpoch, an empty
// cache, or an epoch above every cached one → (UndefinedEpoch, UndefinedEpochOffset); the latest
// cached epoch → (it, LogEndOffset); an epoch below the first entry → (epoch itself, the first
// entry's start offset) — the data before it is gone and the follower truncates to where the
// leader's log starts; otherwise (the largest cached epoch <= epoch, the start offset of the first
// entry whose epoch is above epoch).
func (l *Log) EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return endOffsetFor(l.epochs, epoch, l.leo())
}

func endOffsetFor(entries []epochEntry, epoch int32, leo int64) (int32, int64) {
	n := len(entries)
	switch {
	case epoch == UndefinedEpoch || n == 0:
		return UndefinedEpoch, UndefinedEpochOffset
	case entries[n-1].epoch == epoch:
		return epoch, leo
	}
	// higher: the first entry with epoch > requested (NavigableMap.higherEntry).
	h := sort.Search(n, func(i int) bool { return entries[i].epoch > epoch })
	if h == n {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if h == 0 { // no floor entry
		return epoch, entries[0].startOffset
	}
	return entries[h-1].epoch, entries[h].startOffset
}

// LatestEpoch is the epoch of the leader-epoch cache's last entry (LeaderEpochFileCache.latestEpoch:
// a follower's lastFetchedEpoch); (UndefinedEpoch, false) when the cache is empty.
func (l *Log) LatestEpoch() (int32, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if n := len(l.epochs); n > 0 {
		return l.epochs[n-1].epoch, true
	}
	return UndefinedEpoch, false
}

// truncateEpochsFromEnd drops the cache entries starting at or after end and rewrites the
// checkpoint when that changed anything (LeaderEpochFileCache.truncateFromEnd).
func (l *Log) truncateEpochsFromEnd(end int64) error {
	kept := slices.DeleteFunc(slices.Clone(l.epochs), func(e epochEntry) bool { return e.startOffset >= end })
	if len(kept) == len(l.epochs) {
		return nil
	}
	if err := writeEpochCheckpoint(l.cfg.FS, l.dir, kept); err != nil {
		return err
	}
	l.epochs = kept
	return nil
}

// TruncateTo removes every batch at or after offset (UnifiedLog.truncateTo, a follower's truncation
// to the divergence point after a leader change). When offset falls inside a batch the whole batch
// goes: the log end offset becomes that batch's base offset (or, in a gap compaction left, the end
// of the last batch before offset). Segments whose base offset is at or above offset are deleted
// (the first segment is kept, emptied if need be), the one holding offset is cut and its index
// rewritten, then the leader-epoch cache drops the entries starting at or after the new log end
// offset (LeaderEpochFileCache.truncateFromEnd; checkpoint rewritten), the producer state is rebuilt
// from the remaining batches (as Open does: a producer whose batches retention deleted is
// forgotten), and the high watermark and recovery point become at most the new log end offset.
// offset at or above LogEndOffset removes no batch but still drops cache entries starting at or
// after the log end offset (an entry SetLeaderEpoch added that no batch followed, as Kafka does).
// offset below LogStartOffset is TruncateFullyAndStartAt(offset), as in Kafka. A log start offset
// a DeleteRecords left above the new log end offset comes down to it (checkpointed).
//
// Crash safety: segments go newest first, the cut segment is fsynced, the checkpoints are written
// last; Open after a crash anywhere finds a log whose batches are a prefix of the old ones (the
// epoch entries past its end dropped as Open always does). It waits for a cleaning pass of this
// log to end. Errors: ErrClosed, a negative offset (ErrOffsetOutOfRange wrapped), an I/O error (the
// log then refuses further use; reopening it recovers).
func (l *Log) TruncateTo(offset int64) error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("storage: truncate to %d: %w", offset, ErrOffsetOutOfRange)
	}
	if offset < l.logStartLocked() {
		return l.truncateFullyLocked(offset)
	}
	if leo := l.leo(); offset >= leo {
		if err := l.truncateEpochsFromEnd(leo); err != nil {
			return fmt.Errorf("storage: truncate to %d: %w", offset, err)
		}
		return nil
	}
	if err := l.truncateLocked(offset); err != nil {
		if l.failed == nil {
			l.failed = err
		}
		return fmt.Errorf("storage: truncate to %d: %w", offset, err)
	}
	return nil
}

func (l *Log) truncateLocked(offset int64) error {
	fs := l.cfg.FS
	keep := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base >= offset })
	keep = max(keep, 1)
	for len(l.segs) > keep {
		s := l.segs[len(l.segs)-1]
		if err := fs.Remove(segmentPath(l.dir, s.base, logSuffix)); err != nil {
			return err
		}
		s.close()
		l.segs = l.segs[:len(l.segs)-1]
		// An index left behind is removed by the next Open.
		if err := fs.Remove(segmentPath(l.dir, s.base, indexSuffix)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := syncDir(fs, l.dir); err != nil {
		return err
	}
	s := l.active()
	if offset < s.next {
		pos, _, err := s.find(offset)
		if err != nil {
			return err
		}
		if err := s.truncate(pos); err != nil {
			return err
		}
		if err := s.log.Sync(); err != nil {
			return err
		}
	}
	// Rebuild the segments' state and the producer state from the remaining batches.
	l.producers = NewProducerState(l.cfg.ProducerIDExpirationMs)
	for _, seg := range l.segs {
		if err := l.rescanSegment(seg); err != nil {
			return err
		}
	}
	if err := s.index.Truncate(0); err != nil {
		return err
	}
	if _, err := s.index.Write(s.encodeEntries(s.entries)); err != nil {
		return err
	}
	if err := s.index.Sync(); err != nil {
		return err
	}
	leo := l.leo()
	if err := l.truncateEpochsFromEnd(leo); err != nil {
		return err
	}
	if l.logStart > leo {
		if err := writeLogStartCheckpoint(fs, l.dir, leo); err != nil {
			return err
		}
		l.logStart = leo
	}
	l.hw = min(l.hw, leo)
	l.recoveryPoint = min(l.recoveryPoint, leo)
	l.producers.RemoveExpired(l.cfg.Now().UnixMilli())
	return nil
}

// rescanSegment recomputes s's in-memory state (size, next offset, index entries, timestamps)
// from its file and loads its batches into the producer state, as recoverSegment does.
func (l *Log) rescanSegment(s *segment) error {
	size, err := s.log.Size()
	if err != nil {
		return err
	}
	s.size, s.next, s.entries, s.sinceIndex, s.rollTs, s.maxTs = size, s.base, nil, 0, noTimestamp, noTimestamp
	_, problem, err := s.scan(size, func(pos int64, info batchInfo) error {
		if pos == 0 {
			s.rollTs = info.maxTimestamp
		}
		s.noteBatch(pos, info, info.baseOffset+int64(info.lastOffsetDelta), l.cfg.IndexIntervalBytes)
		l.producers.Load(info.producerBatch())
		return nil
	})
	if err == nil && problem != nil {
		err = fmt.Errorf("segment %d changed on disk: %v", s.base, problem)
	}
	return err
}

// TruncateFullyAndStartAt empties the log and restarts it at offset (UnifiedLog.truncateFullyAndStartAt:
// a follower whose log end offset is below the leader's log start offset, or a truncation below the
// log start): the log start offset is checkpointed as offset (as DeleteRecordsBefore does), the
// leader-epoch checkpoint is rewritten empty, every segment is deleted (newest first) and an empty
// active segment with base offset offset created; the producer state is cleared and the high
// watermark, recovery point and log end offset become offset. LeaderEpoch is kept.
//
// Crash safety: the log start checkpoint is written first, then the empty epoch checkpoint, then
// the new segment created (or the one at offset emptied), then the old ones deleted newest first.
// Open after a crash between the two checkpoints finds the old log with its start moved to
// min(offset, its end), as after a DeleteRecords; after the epoch checkpoint, old segments left
// have their batches refused against the empty checkpoint (cut), so the log comes back empty
// (possibly at an old segment's base offset); with no segment at all Open creates one at the
// checkpointed log start offset. The caller truncates again. It
// waits for a cleaning pass of this log to end. Errors: ErrClosed, a negative offset
// (ErrOffsetOutOfRange wrapped), an I/O error (the log then refuses further use; reopening it
// recovers).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("storage: truncate fully and start at %d: %w", offset, ErrOffsetOutOfRange)
	}
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	fail := func(err error) error {
		if l.failed == nil {
			l.failed = err
		}
		return fmt.Errorf("storage: truncate fully and start at %d: %w", offset, err)
	}
	fs := l.cfg.FS
	if err := writeLogStartCheckpoint(fs, l.dir, offset); err != nil {
		return fail(err)
	}
	if err := writeEpochCheckpoint(fs, l.dir, nil); err != nil {
		return fail(err)
	}
	l.epochs = nil
	// The new active segment exists before the old ones go: a segment already at offset is
	// emptied, else one is created.
	var fresh *segment
	old := make([]*segment, 0, len(l.segs))
	for _, s := range l.segs {
		if s.base == offset {
			fresh = s
		} else {
			old = append(old, s)
		}
	}
	if fresh != nil {
		if err := fresh.truncate(0); err != nil {
			return fail(err)
		}
		if err := fresh.index.Truncate(0); err != nil {
			return fail(err)
		}
		for _, f := range []File{fresh.log, fresh.index} {
			if err := f.Sync(); err != nil {
				return fail(err)
			}
		}
		fresh.size, fresh.next, fresh.entries, fresh.sinceIndex, fresh.rollTs, fresh.maxTs = 0, offset, nil, 0, noTimestamp, noTimestamp
	} else {
		s, err := openSegmentFiles(fs, l.dir, offset, true)
		if err != nil {
			return fail(err)
		}
		fresh = s
	}
	fresh.created = l.cfg.Now()
	fresh.modified = fresh.created
	l.segs = append(old, fresh)
	for len(old) > 0 {
		s := old[len(old)-1]
		if err := fs.Remove(segmentPath(l.dir, s.base, logSuffix)); err != nil {
			return fail(err)
		}
		s.close()
		old = old[:len(old)-1]
		l.segs = append(old, fresh)
		if err := fs.Remove(segmentPath(l.dir, s.base, indexSuffix)); err != nil && !os.IsNotExist(err) {
			return fail(err)
		}
	}
	if err := syncDir(fs, l.dir); err != nil {
		return fail(err)
	}
	l.logStart = offset
	l.producers = NewProducerState(l.cfg.ProducerIDExpirationMs)
	l.hw, l.recoveryPoint = offset, offset
	return nil
}
