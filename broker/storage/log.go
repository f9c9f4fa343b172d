// Package storage is the broker's partition log: an append-only directory of
// segments named like Kafka's (<20-digit base offset>.log and .index), holding
// Kafka v2 RecordBatches exactly as received except for the two header fields
// the log owns (baseOffset and partitionLeaderEpoch, outside the CRC).
//
// It follows kafka.log.Log / UnifiedLog (append, roll, retention, recovery),
// kafka.log.LogSegment, kafka.log.OffsetIndex, kafka.server.epoch.LeaderEpochFileCache,
// ProducerStateManager / ProducerAppendInfo (idempotent producers: ProducerState)
// and kafka.log.LogConfig's defaults; Cleaner (cleaner.go) compacts logs with
// cleanup.policy=compact as kafka.log.LogCleaner does. All file access goes through FS, so tests
// can simulate a crash that drops everything not fsynced.
//
// Differences from Kafka, on purpose: every Open checks every batch of every
// segment (Kafka trusts segments below its recovery-point checkpoint); there is
// no time index (time retention and roll use timestamps kept in memory); reads
// return whole batches from one segment; retention never deletes the active
// segment (Kafka rolls and deletes it); a batch is indexed by its own position
// (the rule Kafka's recovery uses) even when one Append carries several; no
// producer snapshot files are written: Open rebuilds the producer state from
// every remaining batch, so a producer whose batches retention deleted is
// forgotten by a reopen (Kafka's snapshots remember it until it expires); the
// log start offset a DeleteRecords sets is checkpointed in the partition's own
// directory (Kafka keeps one log-start-offset-checkpoint per log dir) before
// DeleteRecordsBefore returns; likewise the high watermark of a replicated log
// (Config.ReplicatedHighWatermark) is checkpointed per partition in
// high-watermark-checkpoint (Kafka: one replication-offset-checkpoint per log dir).
//
// Replication (replication.go): a follower appends the leader's batches as they
// are with AppendAsFollower, truncates with TruncateTo / TruncateFullyAndStartAt
// and finds the divergence point with EndOffsetForEpoch (UnifiedLog and
// LeaderEpochFileCache of Kafka 3.9); consumers read below the high watermark
// with ReadUpTo, followers up to the log end offset with Read.
package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// RecoveryStats says what Open found and repaired.
type RecoveryStats struct {
	Segments        int    // segment files found
	TruncatedBytes  int64  // bytes cut from the segment where the first torn or corrupt batch was
	DeletedSegments int    // whole segments removed because they came after that batch
	RebuiltIndexes  int    // .index files rewritten because they were missing or inconsistent
	EpochCheckpoint string // leader-epoch-checkpoint: "ok", "missing" or "rebuilt" (unreadable); both latter are rebuilt from the batches
	Producers       int    // idempotent producers whose batches the remaining log holds (before expiry)
	Problem         string // the first torn or corrupt batch, "" when none
}

// Log is one partition's log (kafka.log.UnifiedLog). Safe for concurrent use:
// appends and retention take a write lock, reads a read lock.
type Log struct {
	dir string
	cfg Config

	mu            sync.RWMutex
	segs          []*segment   // by base offset; the last one is active
	epochs        []epochEntry // LeaderEpochFileCache, as in the checkpoint
	epoch         int32        // stamped into appended batches
	recoveryPoint int64        // offsets below are fsynced (Log.recoveryPoint)
	logStart      int64        // log start offset DeleteRecords set (checkpointed); see logStartLocked
	hw            int64        // high watermark with Config.ReplicatedHighWatermark; see hwLocked
	closed        bool
	failed        error // a failed write/fsync that could not be undone: the log refuses further use
	recovery      RecoveryStats

	// cleanMu is held by a cleaning pass and by EnforceRetention (before mu), so
	// that retention never removes a segment the Cleaner is rewriting.
	cleanMu sync.Mutex
	// firstDirty is the cleaner checkpoint (LogCleanerManager's
	// cleaner-offset-checkpoint entry): offsets below it were cleaned. Under mu.
	firstDirty int64
	producers  *ProducerState // idempotent producers' last batches (ProducerStateManager)
}

// Open opens (creating if needed) the log in dir and recovers it: every
// segment's batches are validated (length, magic 2, CRC-32C, record framing,
// contiguous offsets, leader epochs as checkpointed); the first torn or corrupt
// batch and everything after it (the rest of its segment and all later segments)
// is removed; index files that are missing or differ from the batches are
// rebuilt. The log end offset is then the offset after the last good batch; the
// high watermark is that too, or with Config.ReplicatedHighWatermark the value in
// high-watermark-checkpoint clamped to [log start, log end] (the log start when
// there is none).
// The producer state is rebuilt from the batches that remain (Kafka's
// UnifiedLog.rebuildProducerState from the log start, there being no producer
// snapshot files here), then producers idle past producer.id.expiration.ms go.
// Errors: an invalid Config, or an I/O error from the FS.
func Open(dir string, cfg Config) (*Log, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Log{dir: dir, cfg: cfg, producers: NewProducerState(cfg.ProducerIDExpirationMs)}
	if err := l.recover(); err != nil {
		l.closeFiles()
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	return l, nil
}

func (l *Log) recover() error {
	fs, dir := l.cfg.FS, l.dir
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names, err := fs.ReadDir(dir)
	if err != nil {
		return err
	}
	// A cleaning pass killed part-way (LogLoader.removeTempFilesAndCollectSwapFiles):
	// .cleaned files were never swapped in and go; a .swap file was complete and
	// replaces the segments it covers.
	swapped, err := l.completeSwaps(names)
	if err != nil {
		return err
	}
	if swapped {
		if names, err = fs.ReadDir(dir); err != nil {
			return err
		}
	}
	var bases []int64
	logs := map[string]bool{}
	for _, name := range names {
		if base, ok := parseSegmentName(name); ok {
			bases = append(bases, base)
			logs[strings.TrimSuffix(name, logSuffix)] = true
		}
	}
	slices.Sort(bases)
	dirty := false // directory entries changed
	for _, name := range names {
		stem, isIndex := strings.CutSuffix(name, indexSuffix)
		// An index without its log is left by an interrupted deletion; a .tmp
		// checkpoint by an interrupted write.
		if (isIndex && !logs[stem]) || name == epochCheckpointName+".tmp" || name == cleanerCheckpointName+".tmp" || name == hwCheckpointName+".tmp" {
			if err := fs.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
			dirty = true
		}
	}
	l.recovery.Segments = len(bases)

	cp, cpFound, cpErr := readEpochCheckpoint(fs, dir)
	ev := &epochValidator{cp: cp, trusted: cpFound && cpErr == nil}
	switch {
	case ev.trusted:
		l.recovery.EpochCheckpoint = "ok"
	case cpFound:
		l.recovery.EpochCheckpoint = "rebuilt"
	default:
		l.recovery.EpochCheckpoint = "missing"
	}

	now := l.cfg.Now()
	// Gaps between offsets are expected below the active segment of a log that
	// is or was compacted; elsewhere they mean a corrupt base offset (outside
	// the CRC).
	compacted := l.cfg.Compact() || readCleanerCheckpoint(fs, dir) >= 0
	cut := len(bases) // bases[cut:] are deleted
	for i, base := range bases {
		// Compaction leaves gaps between segments, never overlaps; a log that was
		// never compacted has none.
		if i > 0 && (base < l.segs[i-1].next || !compacted && base != l.segs[i-1].next) {
			l.recovery.Problem = fmt.Sprintf("segment %d: expected base offset %d", base, l.segs[i-1].next)
			cut = i
			break
		}
		s, err := openSegmentFiles(fs, dir, base, false)
		if err != nil {
			return err
		}
		s.created, s.modified = now, now
		l.segs = append(l.segs, s)
		problem, err := l.recoverSegment(s, ev, compacted && i < len(bases)-1)
		if err != nil {
			return err
		}
		if problem != nil {
			l.recovery.Problem = fmt.Sprintf("segment %d: %v", base, problem)
			cut = i + 1
			break
		}
	}
	for _, base := range bases[cut:] {
		for _, suffix := range []string{logSuffix, indexSuffix} {
			if err := fs.Remove(segmentPath(dir, base, suffix)); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
		l.recovery.DeletedSegments++
		dirty = true
	}
	if len(l.segs) == 0 {
		// No segment: a new log, or a TruncateFullyAndStartAt interrupted between deleting the
		// segments and creating the new one, whose base it checkpointed as the log start.
		base := int64(0)
		if ls, err := readLogStartCheckpoint(fs, dir); err == nil && ls > 0 {
			base = ls
		}
		s, err := openSegmentFiles(fs, dir, base, true)
		if err != nil {
			return err
		}
		s.created, s.modified = now, now
		l.segs = append(l.segs, s)
		dirty = true
	}
	if dirty {
		if err := syncDir(fs, dir); err != nil {
			return err
		}
	}

	leo := l.leo()
	if ev.trusted {
		// Entries for epochs whose first batch did not survive go (truncateFromEnd).
		l.epochs = slices.DeleteFunc(slices.Clone(cp), func(e epochEntry) bool { return e.startOffset >= leo })
	} else {
		l.epochs = ev.rebuilt
	}
	if !ev.trusted && (cpFound || len(l.epochs) > 0) || ev.trusted && len(l.epochs) != len(cp) {
		if err := writeEpochCheckpoint(fs, dir, l.epochs); err != nil {
			return err
		}
	}
	l.epoch = l.cfg.LeaderEpoch
	if n := len(l.epochs); n > 0 && l.epochs[n-1].epoch > l.epoch {
		l.epoch = l.epochs[n-1].epoch
	}
	l.recoveryPoint = leo
	l.firstDirty = readCleanerCheckpoint(fs, dir)
	// The log start offset a DeleteRecords checkpointed; never above the log end (a log cut by
	// recovery), never below the first segment (UnifiedLog's loading: max(checkpoint, first base)).
	if ls, err := readLogStartCheckpoint(fs, dir); err == nil && ls > 0 {
		l.logStart = min(ls, leo)
	}
	// The high watermark checkpointed, within [log start, log end] (UnifiedLog's loading of the
	// replication-offset-checkpoint); absent or unreadable: the log start.
	l.hw = l.logStartLocked()
	if hw, err := readHWCheckpoint(fs, dir); err == nil && hw >= 0 {
		l.hw = min(max(hw, l.logStartLocked()), leo)
	}
	l.recovery.Producers = l.producers.Len()
	l.producers.RemoveExpired(now.UnixMilli())
	return nil
}

// recoverSegment validates every batch of s (LogSegment.recover), cuts the file
// at the first torn or invalid one (problem says why) and fixes the index.
//
// With gaps, batches may start past the previous batch's end (compaction
// removed what lay between); without, offsets must be contiguous.
func (l *Log) recoverSegment(s *segment, ev *epochValidator, gaps bool) (problem, err error) {
	size, err := s.log.Size()
	if err != nil {
		return nil, err
	}
	check := func(pos int64, info batchInfo) error {
		if info.baseOffset < s.next || !gaps && info.baseOffset != s.next {
			return fmt.Errorf("base offset %d, expected %d", info.baseOffset, s.next)
		}
		last := info.baseOffset + int64(info.lastOffsetDelta)
		if !s.canHold(last) {
			return fmt.Errorf("offset %d too far from the segment's base", last)
		}
		if err := ev.check(info); err != nil {
			return err
		}
		if pos == 0 {
			s.rollTs = info.maxTimestamp // LogSegment.loadFirstBatchTimestamp
		}
		s.noteBatch(pos, info, last, l.cfg.IndexIntervalBytes)
		l.producers.Load(info.producerBatch()) // UnifiedLog.loadProducersFromRecords
		return nil
	}
	valid, problem, err := s.scan(size, check)
	if err != nil {
		return nil, err
	}
	s.size = valid
	if problem != nil {
		l.recovery.TruncatedBytes = size - valid
		if err := s.log.Truncate(valid); err != nil {
			return nil, err
		}
		if err := s.log.Sync(); err != nil {
			return nil, err
		}
	}
	return problem, l.checkIndex(s)
}

// epochValidator checks the leader epochs of recovered batches: against the
// checkpoint when it was readable, else only for being non-negative and
// non-decreasing. Either way it rebuilds the entries from the batches
// (LeaderEpochFileCache.assign during LogSegment.recover).
type epochValidator struct {
	cp      []epochEntry
	trusted bool
	rebuilt []epochEntry
}

func (v *epochValidator) check(info batchInfo) error {
	n := len(v.rebuilt)
	if v.trusted {
		if e, ok := epochFor(v.cp, info.baseOffset); !ok || e != info.epoch {
			return fmt.Errorf("leader epoch %d, the checkpoint says %d", info.epoch, e)
		}
	} else if info.epoch < 0 || (n > 0 && info.epoch < v.rebuilt[n-1].epoch) {
		return fmt.Errorf("leader epoch %d out of order", info.epoch)
	}
	if n == 0 || info.epoch > v.rebuilt[n-1].epoch {
		v.rebuilt = append(v.rebuilt, epochEntry{info.epoch, info.baseOffset})
	}
	return nil
}

// checkIndex rewrites s's index file unless it already holds exactly the
// entries the batches call for.
func (l *Log) checkIndex(s *segment) error {
	want := s.encodeEntries(s.entries)
	size, err := s.index.Size()
	if err != nil {
		return err
	}
	if size == int64(len(want)) {
		have := make([]byte, size)
		if err := readFull(s.index, have, 0); err != nil {
			return err
		}
		if bytes.Equal(have, want) {
			return nil
		}
	}
	l.recovery.RebuiltIndexes++
	if err := s.index.Truncate(0); err != nil {
		return err
	}
	if _, err := s.index.Write(want); err != nil {
		return err
	}
	return s.index.Sync()
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }
func (l *Log) leo() int64       { return l.active().next }

func (l *Log) usable() error {
	if l.closed {
		return ErrClosed
	}
	if l.failed != nil {
		return fmt.Errorf("storage: log %s failed earlier: %w", l.dir, l.failed)
	}
	return nil
}

// Append is AppendRecords returning only the base offset: that of the first
// record written, or for a duplicate the original batch's.
func (l *Log) Append(records []byte) (baseOffset int64, err error) {
	r, err := l.AppendRecords(records)
	return r.BaseOffset, err
}

// AppendResult says where an append's records are (Kafka's LogAppendInfo).
type AppendResult struct {
	BaseOffset int64 // offset of the first record
	LastOffset int64 // offset of the last record
	// Duplicate: the batches' producer had already appended this batch (a retry); nothing was
	// written, and the offsets are the original batch's.
	Duplicate bool
	// LogAppendTime is -1, except for a duplicate: the original batch's max timestamp (ms), which
	// UnifiedLog.append sets as the duplicate's logAppendTime.
	LogAppendTime int64
}

// AppendRecords validates records — one or more v2 RecordBatches back to back,
// as a Produce request carries them — assigns them the next offsets by rewriting
// each batch's baseOffset, stamps the current leader epoch, checks the batches of
// idempotent producers against the producer state, and appends them
// (UnifiedLog.appendAsLeader). records is not modified.
//
// A batch whose producer, epoch and sequence range match one of that producer's
// last BatchesToRetain batches is a retry already appended: nothing of this
// append is written and the result is that batch's offsets, Duplicate set
// (UnifiedLog.analyzeAndValidateProducerState).
//
// Errors: ErrCorruptRecord (wrapped; nothing of this Append is written) for an
// empty slice or any batch that fails validation; ErrRecordBatchTooLarge when
// records exceed log.segment.bytes; ErrOutOfOrderSequence, ErrInvalidProducerEpoch,
// ErrInvalidTxnState, ErrInvalidRecord from the producer checks (ProducerState.Prepare;
// nothing is written); a wrapped kerr.FencedLeaderEpoch when follower appends
// (AppendAsFollower) put an epoch newer than LeaderEpoch in the cache and no
// SetLeaderEpoch followed; ErrClosed; an I/O error (the write is undone;
// if a write or fsync cannot be undone the log refuses all later calls).
// With log.flush.interval.messages reached, the log is fsynced before returning.
func (l *Log) AppendRecords(records []byte) (AppendResult, error) {
	fail := AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1}
	infos, err := splitBatches(records)
	if err != nil {
		return fail, fmt.Errorf("storage: append: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return fail, err
	}
	if int64(len(records)) > l.cfg.SegmentBytes {
		return fail, fmt.Errorf("storage: append: %d bytes exceed log.segment.bytes %d: %w", len(records), l.cfg.SegmentBytes, ErrRecordBatchTooLarge)
	}
	if n := len(l.epochs); n > 0 && l.epochs[n-1].epoch > l.epoch {
		// Follower appends brought a newer epoch: stamping the older one would rewrite the cache.
		return fail, fmt.Errorf("storage: append: leader epoch %d is below the latest cached epoch %d (SetLeaderEpoch first): %w", l.epoch, l.epochs[n-1].epoch, kerr.FencedLeaderEpoch)
	}

	buf := slices.Clone(records)
	baseOffset := l.leo()
	next, maxTs := baseOffset, int64(noTimestamp)
	var pbs []ProducerBatch
	for i, pos := 0, 0; i < len(infos); pos, i = pos+infos[i].size, i+1 {
		binary.BigEndian.PutUint64(buf[pos:], uint64(next))
		binary.BigEndian.PutUint32(buf[pos+offPartitionLeaderEpoch:], uint32(l.epoch))
		infos[i].baseOffset, infos[i].epoch = next, l.epoch
		next += int64(infos[i].lastOffsetDelta) + 1
		maxTs = max(maxTs, infos[i].maxTimestamp)
		if infos[i].producerID >= 0 {
			pbs = append(pbs, infos[i].producerBatch())
		}
	}
	var update ProducerUpdate
	if len(pbs) > 0 {
		u, dup, isDup, err := l.producers.Prepare(pbs)
		if err != nil {
			return fail, fmt.Errorf("storage: append: %w", err)
		}
		if isDup {
			return AppendResult{BaseOffset: dup.FirstOffset(), LastOffset: dup.LastOffset, Duplicate: true, LogAppendTime: dup.Timestamp}, nil
		}
		update = u
	}
	res := AppendResult{BaseOffset: baseOffset, LastOffset: next - 1, LogAppendTime: -1}

	s := l.active()
	if l.shouldRoll(s, len(buf), maxTs, next-1) {
		if err := l.roll(); err != nil {
			return fail, err
		}
		s = l.active()
	}
	if !s.canHold(next - 1) {
		return fail, fmt.Errorf("storage: append: %d offsets in one append exceed what a segment indexes: %w", next-baseOffset, ErrRecordBatchTooLarge)
	}
	if n := len(l.epochs); n == 0 || l.epochs[n-1].epoch != l.epoch {
		// The checkpoint is durable before any batch of the new epoch is written.
		epochs := assignEpoch(slices.Clone(l.epochs), l.epoch, baseOffset)
		if err := writeEpochCheckpoint(l.cfg.FS, l.dir, epochs); err != nil {
			return fail, err
		}
		l.epochs = epochs
	}
	if err := l.write(s, buf, infos, maxTs); err != nil {
		return fail, err
	}
	l.producers.Apply(update)
	if l.leo()-l.recoveryPoint >= l.cfg.FlushIntervalMessages {
		if err := s.log.Sync(); err != nil {
			l.failed = err
			return fail, fmt.Errorf("storage: fsync %s: %w", segmentPath(l.dir, s.base, logSuffix), err)
		}
		// The index is not fsynced here: recovery rebuilds it from the log.
		l.recoveryPoint = l.leo()
	}
	return res, nil
}

// write appends buf (the batches infos describes) to s and its index entries to
// s's index; on failure the segment is put back as it was.
func (l *Log) write(s *segment, buf []byte, infos []batchInfo, maxTs int64) error {
	saved := *s
	undo := func(err error) error {
		terr := s.log.Truncate(saved.size)
		if terr == nil {
			terr = s.index.Truncate(int64(len(saved.entries)) * indexEntrySize)
		}
		*s = saved
		if terr != nil {
			l.failed = terr
		}
		return fmt.Errorf("storage: append to segment %d: %w", s.base, err)
	}
	n, err := s.log.Write(buf)
	if err == nil && n != len(buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return undo(err)
	}
	pos := s.size
	for _, info := range infos {
		s.noteBatch(pos, info, info.baseOffset+int64(info.lastOffsetDelta), l.cfg.IndexIntervalBytes)
		pos += int64(info.size)
	}
	if added := s.entries[len(saved.entries):]; len(added) > 0 {
		b := s.encodeEntries(added)
		n, err := s.index.Write(b)
		if err == nil && n != len(b) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return undo(err)
		}
	}
	if s.size == 0 {
		s.rollTs = maxTs // LogSegment.append: rollingBasedTimestamp of the first append
	}
	s.size = pos
	s.modified = l.cfg.Now()
	return nil
}

// shouldRoll is LogSegment.shouldRoll: the append would overflow
// log.segment.bytes, or log.roll.ms has passed (measured in record timestamps
// when the segment has them, else since the segment was created), or the
// offsets would not fit the index.
func (l *Log) shouldRoll(s *segment, n int, maxTs, lastOffset int64) bool {
	if s.size == 0 {
		return false
	}
	var waited int64
	if s.rollTs >= 0 {
		waited = maxTs - s.rollTs
	} else {
		waited = l.cfg.Now().Sub(s.created).Milliseconds()
	}
	return s.size > l.cfg.SegmentBytes-int64(n) || waited > l.cfg.SegmentMs || !s.canHold(lastOffset)
}

// roll starts a new active segment at the log end offset (Log.roll). The old
// one is fsynced first, as Kafka flushes a rolled segment.
func (l *Log) roll() error { return l.rollTo(l.leo()) }

// rollTo is roll with the new segment's base offset: the log end offset, or above it for a
// follower append past a gap.
func (l *Log) rollTo(base int64) error {
	old := l.active()
	for _, f := range []File{old.log, old.index} {
		if err := f.Sync(); err != nil {
			l.failed = err
			return fmt.Errorf("storage: roll: fsync segment %d: %w", old.base, err)
		}
	}
	l.recoveryPoint = max(l.recoveryPoint, old.next)
	s, err := openSegmentFiles(l.cfg.FS, l.dir, base, true)
	if err != nil {
		return fmt.Errorf("storage: roll: %w", err)
	}
	if err := syncDir(l.cfg.FS, l.dir); err != nil {
		s.log.Close()
		s.index.Close()
		l.failed = err
		return fmt.Errorf("storage: roll: %w", err)
	}
	s.created = l.cfg.Now()
	s.modified = s.created
	l.segs = append(l.segs, s)
	return nil
}

// Read returns whole batches, starting with the one that contains offset: that
// batch even if it is larger than maxBytes (KIP-74), then as many following
// batches of the same segment as fit in maxBytes (bytes). The bytes are a copy.
// It reads up to the log end offset, whatever the high watermark (what a
// follower's fetch reads; consumers read with ReadUpTo). offset == LogEndOffset
// returns no bytes and no error. Errors: ErrOffsetOutOfRange (wrapped) below
// LogStartOffset or above LogEndOffset, ErrClosed, an I/O error, or the earlier
// failure of a log that refuses use.
func (l *Log) Read(offset int64, maxBytes int32) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.readLocked(offset, maxBytes)
}

func (l *Log) readLocked(offset int64, maxBytes int32) ([]byte, error) {
	s, pos, size, err := l.locateLocked(offset)
	if err != nil || s == nil {
		return nil, err
	}
	return s.read(pos, size, maxBytes)
}

// locateLocked finds the segment, position and size of the batch holding offset, or a nil segment
// when there is nothing to read at offset yet (offset is the log end offset, or in a gap compaction
// left before an empty active segment). Errors as Read.
func (l *Log) locateLocked(offset int64) (*segment, int64, int, error) {
	if err := l.usable(); err != nil {
		return nil, 0, 0, err
	}
	lso, leo := l.logStartLocked(), l.leo()
	if offset < lso || offset > leo {
		return nil, 0, 0, fmt.Errorf("storage: read offset %d outside [%d, %d]: %w", offset, lso, leo, ErrOffsetOutOfRange)
	}
	if offset == leo {
		return nil, 0, 0, nil
	}
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset }) - 1
	// Skip segments with no batch at or after offset: empty ones, and those
	// compaction left ending before it.
	for i < len(l.segs) && (l.segs[i].size == 0 || l.segs[i].next <= offset) {
		i++
	}
	if i == len(l.segs) {
		return nil, 0, 0, nil
	}
	s := l.segs[i]
	pos, size, err := s.find(offset)
	if err != nil {
		return nil, 0, 0, err
	}
	return s, pos, size, nil
}

// HighWatermark is the offset below which records are committed
// (UnifiedLog.highWatermark). Without Config.ReplicatedHighWatermark it is the
// log end offset: with one replica every appended record is committed. With it,
// it is the value SetHighWatermark, ForceHighWatermark, truncation and Open set,
// always within [LogStartOffset, LogEndOffset].
func (l *Log) HighWatermark() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.hwLocked()
}

// LogEndOffset is the offset after the last appended record (UnifiedLog.logEndOffset):
// the offset the next leader append gets.
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.leo()
}

// hwLocked is the high watermark, clamped to [log start, log end] (retention may
// have moved the log start past the stored value).
func (l *Log) hwLocked() int64 {
	if !l.cfg.ReplicatedHighWatermark {
		return l.leo()
	}
	return min(max(l.hw, l.logStartLocked()), l.leo())
}

// LogStartOffset is the first offset still in the log: the base offset of the
// oldest segment, or the larger offset a DeleteRecords moved it to
// (DeleteRecordsBefore; UnifiedLog.logStartOffset).
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logStartLocked()
}

// Compacted reports whether the log's cleanup.policy includes compact: the
// Cleaner compacts it, and records without a key are refused by the broker.
func (l *Log) Compacted() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cfg.Compact()
}

// config is a copy of the log's settings now (SetConfig replaces them under the lock), for the
// cleaner, which works without holding it.
func (l *Log) config() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cfg
}

// LeaderEpoch is the epoch stamped into appended batches.
func (l *Log) LeaderEpoch() int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epoch
}

// SetLeaderEpoch sets the epoch stamped into batches appended from now on
// (the broker calls it when it becomes leader with a new epoch). When epoch is
// newer than the latest epoch of the leader-epoch cache (or the cache is empty),
// it also assigns (epoch, LogEndOffset) there and writes the checkpoint before
// returning (Partition.makeLeader → UnifiedLog.maybeAssignEpochStartOffset), so
// that EndOffsetForEpoch of an older epoch answers the new epoch's start before
// the new leader appends anything. Like Kafka's, an entry that no batch follows
// is dropped by the next Open (truncateFromEnd at the log end offset).
// Errors: a wrapped kerr.FencedLeaderEpoch when epoch is below the current one;
// ErrClosed; the checkpoint's I/O error (the epoch is then not changed).
func (l *Log) SetLeaderEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if epoch < l.epoch {
		return fmt.Errorf("storage: leader epoch %d is below the current %d: %w", epoch, l.epoch, kerr.FencedLeaderEpoch)
	}
	if n := len(l.epochs); n == 0 || l.epochs[n-1].epoch < epoch {
		if err := l.usable(); err != nil {
			return err
		}
		epochs := assignEpoch(slices.Clone(l.epochs), epoch, l.leo())
		if err := writeEpochCheckpoint(l.cfg.FS, l.dir, epochs); err != nil {
			return fmt.Errorf("storage: set leader epoch %d: %w", epoch, err)
		}
		l.epochs = epochs
	}
	l.epoch = epoch
	return nil
}

// ProducerEntry returns a copy of an idempotent producer's state on this
// partition (ProducerStateManager.lastEntry); false when it is unknown.
func (l *Log) ProducerEntry(producerID int64) (ProducerEntry, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.producers.Entry(producerID)
}

// Recovery reports what Open found and repaired.
func (l *Log) Recovery() RecoveryStats {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.recovery
}

// Sync fsyncs the active segment's log and index (Log.flush); older segments
// were fsynced when they were rolled. Errors: ErrClosed, the fsync error (after
// which the log refuses further use).
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	return l.syncActive()
}

func (l *Log) syncActive() error {
	s := l.active()
	for _, f := range []File{s.log, s.index} {
		if err := f.Sync(); err != nil {
			l.failed = err
			return fmt.Errorf("storage: fsync segment %d: %w", s.base, err)
		}
	}
	l.recoveryPoint = l.leo()
	return nil
}

// EnforceRetention deletes whole segments from the oldest on, never the active
// one (Log.deleteOldSegments): first those whose largest record timestamp (or,
// without timestamps, last append) is more than log.retention.ms before Now,
// then, while the log is larger than log.retention.bytes, those whose removal
// keeps it at least that large. LogStartOffset moves to the oldest remaining
// segment. With Config.ReplicatedHighWatermark only segments wholly below the
// high watermark are deleted (the next segment's base offset at or below it, as
// UnifiedLog.deletableSegments bounds them). The producer state keeps the producers of deleted segments, as
// Kafka's does (ProducerStateManager.onLogStartOffsetIncremented); producers
// idle past producer.id.expiration.ms are forgotten here (Kafka checks every
// producer.id.expiration.check.interval.ms). Errors: ErrClosed, an I/O error
// from Remove (segments before the failing one are gone).
//
// With a cleanup.policy without delete (compact alone) it deletes nothing
// (UnifiedLog.deleteOldSegments). It waits for a cleaning pass of this log to end.
func (l *Log) EnforceRetention() error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	l.producers.RemoveExpired(l.cfg.Now().UnixMilli())
	if !l.cfg.Delete() {
		return nil
	}
	// n: segments to delete, from the oldest. As UnifiedLog.deletableSegments, the active segment may
	// go too when it is not empty, its retention is breached and the high watermark has reached the log
	// end; a new, empty active segment is rolled first (deleteSegments: a log always has one).
	n := 0
	last := len(l.segs) - 1
	deletable := func(i int) bool { return i < last || l.segs[i].size > 0 }
	// Segments wholly below the log start offset a DeleteRecords set go whatever the retention
	// settings (deleteLogStartOffsetBreachedSegments).
	for n < last && l.segs[n+1].base <= l.logStart {
		n++
	}
	if ms := l.cfg.RetentionMs; ms >= 0 {
		now := l.cfg.Now().UnixMilli()
		for n <= last && deletable(n) {
			s := l.segs[n]
			largest := s.maxTs
			if largest < 0 {
				largest = s.modified.UnixMilli()
			}
			if now-largest <= ms {
				break
			}
			n++
		}
	}
	if limit := l.cfg.RetentionBytes; limit >= 0 {
		var total int64
		for _, s := range l.segs[n:] {
			total += s.size
		}
		for diff := total - limit; n <= last && deletable(n) && diff-l.segs[n].size >= 0; n++ {
			diff -= l.segs[n].size
		}
	}
	// Only segments wholly below the high watermark go (UnifiedLog.deletableSegments' upper bound:
	// the next segment's base, the log end offset for the active one); without
	// ReplicatedHighWatermark it is the log end offset and bounds nothing.
	upper := func(i int) int64 {
		if i < last {
			return l.segs[i+1].base
		}
		return l.leo()
	}
	for hw := l.hwLocked(); n > 0 && upper(n-1) > hw; {
		n--
	}
	if n == 0 {
		return nil
	}
	if n == len(l.segs) {
		if err := l.roll(); err != nil {
			return fmt.Errorf("storage: retention: %w", err)
		}
	}
	var err error
	deleted := 0
	for _, s := range l.segs[:n] {
		if err = l.cfg.FS.Remove(segmentPath(l.dir, s.base, logSuffix)); err != nil {
			break
		}
		s.close()
		deleted++
		// An index left behind is removed by the next Open.
		if rerr := l.cfg.FS.Remove(segmentPath(l.dir, s.base, indexSuffix)); rerr != nil && !os.IsNotExist(rerr) {
			err = rerr
			break
		}
	}
	l.segs = slices.Delete(l.segs, 0, deleted)
	if serr := syncDir(l.cfg.FS, l.dir); err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("storage: retention: %w", err)
	}
	return nil
}

// Close fsyncs the active segment, writes the high watermark checkpoint (with
// Config.ReplicatedHighWatermark) and closes every file. Later calls return
// ErrClosed; a second Close returns nil.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	var err error
	if l.failed == nil {
		err = l.syncActive()
	}
	if err == nil && l.failed == nil && l.cfg.ReplicatedHighWatermark {
		err = writeHWCheckpoint(l.cfg.FS, l.dir, l.hwLocked())
	}
	if cerr := l.closeFiles(); err == nil {
		err = cerr
	}
	l.closed = true
	return err
}

func (l *Log) closeFiles() error {
	var errs []error
	for _, s := range l.segs {
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}
