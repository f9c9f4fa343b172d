package storage

// Log compaction, as Kafka 3.9's kafka.log.LogCleaner (one cleaner thread),
// LogCleanerManager (which log to clean next, the cleaner checkpoint) and
// Cleaner.doClean (offset map, segment groups, cleaned segments swapped in with
// .cleaned and .swap suffixes, completed by recovery as LogLoader does).

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

const (
	// DefaultCleanerBackoffMs [log.cleaner.backoff.ms]: the pause after a pass
	// that found no log to clean. 15 s.
	DefaultCleanerBackoffMs = 15000
	// DefaultDedupeBufferSize [log.cleaner.dedupe.buffer.size]: 128 MiB.
	DefaultDedupeBufferSize = 128 << 20

	cleanedSuffix = ".cleaned" // a cleaned segment being written (UnifiedLog.CleanedFileSuffix)
	swapSuffix    = ".swap"    // a complete cleaned segment being swapped in (SwapFileSuffix)
	deletedSuffix = ".deleted" // Kafka's suffix of a segment awaiting deletion; removed on Open

	// cleanerCheckpointName holds the first dirty offset (Kafka keeps one
	// cleaner-offset-checkpoint per log dir; here each partition has its own):
	// "0\n1\n<offset>\n", written to a .tmp file, fsynced, renamed.
	cleanerCheckpointName = "cleaner-offset-checkpoint"

	// deleteHorizonBit is DefaultRecordBatch.DELETE_HORIZON_FLAG_MASK (KIP-534):
	// the batch's base timestamp is the time after which its tombstones go.
	deleteHorizonBit = 0x40
	// offsetMapSlotBytes and offsetMapLoadFactor size the offset map as
	// SkimpyOffsetMap (16-byte MD5 + 8-byte offset per slot) and
	// log.cleaner.io.buffer.load.factor (0.9) do.
	offsetMapSlotBytes  = 24
	offsetMapLoadFactor = 0.9
)

// ErrCleaningAborted: a cleaning pass stopped because the log was closed or
// changed under it, or the Cleaner was stopped (LogCleaningAbortedException).
// The log is unchanged.
var ErrCleaningAborted = errors.New("storage: log cleaning aborted")

// CleanerConfig configures a Cleaner. A zero field means Kafka's default.
type CleanerConfig struct {
	// BackoffMs [log.cleaner.backoff.ms]: Run sleeps this long after a pass that
	// cleaned nothing. Default 15000.
	BackoffMs int64
	// DedupeBufferSize [log.cleaner.dedupe.buffer.size]: bytes the offset map may
	// take, counted as Kafka counts them (24 bytes a key, filled to 90%); a
	// larger dirty section is cleaned over several passes. Default 128 MiB.
	DedupeBufferSize int64
	// Logs returns the logs to consider; the Cleaner cleans those whose
	// cleanup.policy includes compact. Required.
	Logs func() []*Log
	// OnError, when set, is told of a pass that failed; the log is then skipped
	// until the Cleaner is recreated (LogCleanerManager.markPartitionUncleanable).
	OnError func(l *Log, err error)
}

// Cleaner compacts logs (kafka.log.LogCleaner with log.cleaner.threads=1): each
// pass picks the compacted log with the highest dirty ratio above its
// min.cleanable.dirty.ratio (or one past max.compaction.lag.ms), builds the map
// key → last offset over its dirty section (never the active segment, nor
// segments younger than min.compaction.lag.ms), and rewrites every segment
// below the end of the map keeping, per key, only the record at the mapped
// offset or later. Offsets never change: kept batches keep their base and last
// offsets even when records inside them go. Tombstones (null values) get a
// delete horizon of now + delete.retention.ms the first time they are cleaned
// (KIP-534) and are dropped by the first clean after it. After each pass,
// logs with cleanup.policy=compact,delete have retention applied
// (CleanerThread.cleanFilthiestLog's deletableLogs).
//
// Run owns the cleaning goroutine; CleanOnce is one pass, for tests.
type Cleaner struct {
	cfg    CleanerConfig
	mapCap int

	mu          sync.Mutex
	uncleanable map[*Log]error
}

// NewCleaner returns a Cleaner; it cleans only when Run or CleanOnce is called.
func NewCleaner(cfg CleanerConfig) *Cleaner {
	if cfg.BackoffMs <= 0 {
		cfg.BackoffMs = DefaultCleanerBackoffMs
	}
	if cfg.DedupeBufferSize <= 0 {
		cfg.DedupeBufferSize = DefaultDedupeBufferSize
	}
	return &Cleaner{
		cfg:         cfg,
		mapCap:      max(1, int(float64(cfg.DedupeBufferSize/offsetMapSlotBytes)*offsetMapLoadFactor)),
		uncleanable: map[*Log]error{},
	}
}

// Run cleans until ctx ends (CleanerThread.doWork): a pass, then, when it
// cleaned nothing, log.cleaner.backoff.ms of pause. A pass in progress when ctx
// ends is aborted at its next batch and leaves the log unchanged.
func (c *Cleaner) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		cleaned, _ := c.CleanOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if cleaned {
			continue
		}
		t.Reset(time.Duration(c.cfg.BackoffMs) * time.Millisecond)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// CleanOnce is one pass (CleanerThread.tryCleanFilthiestLog): it cleans the
// filthiest cleanable log, if any, then applies retention to the logs whose
// policy is compact,delete. cleaned says whether a log was cleaned. Errors: the
// cleaning error (also given to OnError; the log is skipped from then on),
// ErrCleaningAborted (not an error of the log), or the first retention error.
func (c *Cleaner) CleanOnce(ctx context.Context) (cleaned bool, err error) {
	var logs []*Log
	for _, l := range c.cfg.Logs() {
		c.mu.Lock()
		_, bad := c.uncleanable[l]
		c.mu.Unlock()
		if !bad && l.config().Compact() {
			logs = append(logs, l)
		}
	}
	var best *toClean
	for _, l := range logs {
		t, ok := l.cleanable()
		if ok && (best == nil || t.ratio() > best.ratio()) {
			best = &t
		}
	}
	if best != nil {
		err = c.clean(ctx, best)
		if err != nil && !errors.Is(err, ErrCleaningAborted) {
			best.log.mu.RLock()
			if uerr := best.log.usable(); uerr != nil && best.log.failed == nil {
				err = fmt.Errorf("%w: %v (%v)", ErrCleaningAborted, uerr, err) // closed under the pass
			}
			best.log.mu.RUnlock()
		}
		switch {
		case err == nil:
			cleaned = true
		case errors.Is(err, ErrCleaningAborted):
		default:
			c.mu.Lock()
			c.uncleanable[best.log] = err
			c.mu.Unlock()
			if c.cfg.OnError != nil {
				c.cfg.OnError(best.log, err)
			}
		}
	}
	for _, l := range logs {
		if l.config().Delete() {
			if rerr := l.EnforceRetention(); rerr != nil && !errors.Is(rerr, ErrClosed) && err == nil {
				err = rerr
			}
		}
	}
	return cleaned, err
}

// toClean is LogToClean: one log's cleanable range, from a snapshot of its
// segments.
type toClean struct {
	log              *Log
	segs             []*segment
	firstDirty       int64 // the cleaner checkpoint
	firstUncleanable int64 // the base offset of the first segment not to clean
	cleanBytes       int64 // bytes below firstDirty
	cleanableBytes   int64 // bytes in [firstDirty, firstUncleanable)
	needNow          bool  // max.compaction.lag.ms passed
}

func (t toClean) ratio() float64 {
	return float64(t.cleanableBytes) / float64(t.cleanBytes+t.cleanableBytes)
}

// cleanable computes the log's cleanable range (LogCleanerManager.cleanableOffsets,
// calculateCleanableBytes, maxCompactionDelay) and whether it qualifies: some
// bytes, and a dirty ratio above min.cleanable.dirty.ratio or a dirty segment
// older than max.compaction.lag.ms.
func (l *Log) cleanable() (toClean, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.usable() != nil {
		return toClean{}, false
	}
	now := l.cfg.Now().UnixMilli()
	t := toClean{log: l, segs: slices.Clone(l.segs), firstDirty: l.firstDirty}
	// The active segment grows under mu: the snapshot holds a copy of it.
	active := *l.active()
	t.segs[len(t.segs)-1] = &active
	lso, leo := l.segs[0].base, l.leo()
	if t.firstDirty < lso || t.firstDirty > leo {
		t.firstDirty = lso // truncated or deleted below the checkpoint: all dirty
	}
	inactive := t.segs[:len(t.segs)-1]
	limit := active.base
	// Nothing at or above the high watermark is cleaned (LogCleanerManager.cleanableOffsets stops
	// at the last stable offset, at most the high watermark): the first segment reaching it is
	// uncleanable. Without ReplicatedHighWatermark it is the log end offset and bounds nothing.
	hw := l.hwLocked()
	for _, s := range inactive {
		if s.next > hw {
			limit = min(limit, s.base)
			break
		}
	}
	if lag := l.cfg.MinCompactionLagMs; lag > 0 {
		for _, s := range inactive {
			if s.next > t.firstDirty && s.maxTs > now-lag {
				limit = min(limit, s.base)
				break
			}
		}
	}
	limit = max(limit, t.firstDirty)
	t.firstUncleanable = active.base
	for _, s := range inactive {
		if s.base >= limit {
			t.firstUncleanable = s.base
			break
		}
	}
	earliest := int64(-1)
	for _, s := range t.segs {
		if s.base < t.firstDirty {
			t.cleanBytes += s.size
		}
		if s.base < t.firstUncleanable && s.next > min(t.firstDirty, t.firstUncleanable) {
			t.cleanableBytes += s.size
		}
	}
	for _, s := range inactive {
		if s.next > t.firstDirty && s.rollTs > 0 && (earliest < 0 || s.rollTs < earliest) {
			earliest = s.rollTs
		}
	}
	t.needNow = earliest >= 0 && earliest < now-l.cfg.MaxCompactionLagMs
	if t.cleanBytes+t.cleanableBytes == 0 || t.cleanableBytes == 0 {
		return t, false
	}
	return t, t.needNow || t.ratio() > l.cfg.MinCleanableDirtyRatio
}

// offsetMap is the cleaner's key → last offset map (OffsetMap; Kafka keys it
// by the key's MD5, this one by the key itself, so two keys never collide).
// end is the offset after the last batch the map covers (latestOffset + 1).
type offsetMap struct {
	offsets map[string]int64
	end     int64
}

// get returns the key's offset, -1 when the map does not hold it.
func (m *offsetMap) get(key []byte) int64 {
	if off, ok := m.offsets[string(key)]; ok {
		return off
	}
	return -1
}

// clean is Cleaner.doClean for one log, under its cleanMu: the offset map, the
// groups, each group cleaned into one segment and swapped in, then the
// checkpoint.
func (c *Cleaner) clean(ctx context.Context, t *toClean) error {
	l := t.log
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	// The segments may have changed since t was computed (retention): take a
	// fresh snapshot under cleanMu.
	fresh, ok := l.cleanable()
	if !ok {
		return ErrCleaningAborted
	}
	t = &fresh
	cfg := l.config() // SetConfig may replace the settings meanwhile: this pass keeps the ones it began with
	now := cfg.Now().UnixMilli()

	m := &offsetMap{offsets: map[string]int64{}, end: t.firstDirty}
	for _, s := range t.segs {
		if s.base >= t.firstUncleanable {
			break
		}
		if s.next <= t.firstDirty {
			continue
		}
		full := false
		err := eachStoredBatch(ctx, s, func(_ int64, _ []byte, rb recordbatch.Batch) error {
			if rb.LastOffset() < t.firstDirty {
				return nil
			}
			if len(m.offsets)+int(rb.NumRecords) > c.mapCap {
				full = true
				return errStop
			}
			if !rb.IsControl() {
				err := eachRecord(rb, func(r recordbatch.Record) error {
					if r.Key != nil {
						m.offsets[string(r.Key)] = rb.BaseOffset + int64(r.OffsetDelta)
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			m.end = rb.LastOffset() + 1
			return nil
		})
		if err != nil {
			return err
		}
		if full {
			break
		}
		m.end = max(m.end, min(s.next, t.firstUncleanable))
	}
	if m.end <= t.firstDirty {
		return fmt.Errorf("storage: clean %s: the offset map (log.cleaner.dedupe.buffer.size %d) holds not even one batch", l.dir, c.cfg.DedupeBufferSize)
	}

	// The last batch of every producer is kept, even empty, so that its
	// sequence survives (Cleaner.cleanInto's lastRecordsOfActiveProducers;
	// every producer id in the log counts as active here).
	lastOfProducer := map[int64]int64{}
	for _, s := range t.segs {
		err := eachStoredBatch(ctx, s, func(_ int64, _ []byte, rb recordbatch.Batch) error {
			if rb.ProducerID >= 0 && !rb.IsControl() {
				lastOfProducer[rb.ProducerID] = rb.LastOffset()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}

	var cleanable []*segment
	for _, s := range t.segs[:len(t.segs)-1] {
		if s.base >= m.end || s.base >= t.firstUncleanable {
			break
		}
		cleanable = append(cleanable, s)
	}
	f := &recordFilter{m: m, now: now, retentionMs: cfg.DeleteRetentionMs, lastOfProducer: lastOfProducer}
	for _, group := range groupBySize(cleanable, cfg.SegmentBytes) {
		if err := c.cleanGroup(ctx, l, cfg, group, f); err != nil {
			return err
		}
	}

	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return fmt.Errorf("%w: %v", ErrCleaningAborted, err)
	}
	l.firstDirty = m.end
	l.mu.Unlock()
	return writeCleanerCheckpoint(cfg.FS, l.dir, m.end)
}

// groupBySize is Cleaner.groupSegmentsBySize: consecutive segments whose
// total size stays within log.segment.bytes and whose offsets fit one index
// (int32 relative offsets) are cleaned into one segment.
func groupBySize(segs []*segment, maxSize int64) [][]*segment {
	var groups [][]*segment
	for len(segs) > 0 {
		group, size := []*segment{segs[0]}, segs[0].size
		segs = segs[1:]
		for len(segs) > 0 && size+segs[0].size <= maxSize && (segs[0].size == 0 || segs[0].next-1-group[0].base <= 1<<31-1) {
			group = append(group, segs[0])
			size += segs[0].size
			segs = segs[1:]
		}
		groups = append(groups, group)
	}
	return groups
}

// cleanGroup is Cleaner.cleanSegments: the group's batches, filtered, go to a
// new segment named after the group's first base offset with the .cleaned
// suffix, fsynced, then swapped in for the group.
func (c *Cleaner) cleanGroup(ctx context.Context, l *Log, cfg Config, group []*segment, f *recordFilter) (err error) {
	fs, base := cfg.FS, group[0].base
	logName := segmentPath(l.dir, base, logSuffix) + cleanedSuffix
	indexName := segmentPath(l.dir, base, indexSuffix) + cleanedSuffix
	flag := os.O_RDWR | os.O_APPEND | os.O_CREATE | os.O_TRUNC
	ns := &segment{base: base, next: base, rollTs: noTimestamp, maxTs: noTimestamp, refs: &segRefs{}}
	if ns.log, err = fs.OpenFile(logName, flag, 0o644); err != nil {
		return fmt.Errorf("storage: clean: %w", err)
	}
	if ns.index, err = fs.OpenFile(indexName, flag, 0o644); err != nil {
		ns.log.Close()
		fs.Remove(logName)
		return fmt.Errorf("storage: clean: %w", err)
	}
	swapped := false
	defer func() {
		if !swapped { // LogCleaningAbortedException: cleaned.deleteIfExists()
			ns.log.Close()
			ns.index.Close()
			fs.Remove(logName)
			fs.Remove(indexName)
		}
	}()

	w := bufio.NewWriterSize(ns.log, 1<<16)
	for _, s := range group {
		err := eachStoredBatch(ctx, s, func(_ int64, raw []byte, rb recordbatch.Batch) error {
			out, err := f.filter(raw, rb)
			if err != nil || out == nil {
				return err
			}
			info, err := parseBatch(out, true)
			if err != nil {
				return fmt.Errorf("storage: clean: rewritten batch %d: %w", rb.BaseOffset, err)
			}
			if _, err := w.Write(out); err != nil {
				return err
			}
			if ns.size == 0 {
				ns.rollTs = info.maxTimestamp
			}
			ns.noteBatch(ns.size, info, rb.LastOffset(), cfg.IndexIntervalBytes)
			ns.size += int64(len(out))
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("storage: clean: write %s: %w", logName, err)
	}
	if len(ns.entries) > 0 {
		if _, err := ns.index.Write(ns.encodeEntries(ns.entries)); err != nil {
			return fmt.Errorf("storage: clean: write %s: %w", indexName, err)
		}
	}
	for _, file := range []File{ns.log, ns.index} {
		if err := file.Sync(); err != nil {
			return fmt.Errorf("storage: clean: fsync: %w", err)
		}
	}
	ns.created = cfg.Now()
	ns.modified = group[len(group)-1].modified // cleaned.setLastModified(segments.last.lastModified)
	swapped, err = l.replaceSegments(ns, group, logName, indexName)
	return err
}

// replaceSegments swaps ns in for old (LocalLog.replaceSegments): the cleaned
// files are renamed to .swap and the directory is synced — from then on the
// swap is decided, and Open completes it after a crash — then the old
// segments' files are removed and the .swap files take their final names. It
// aborts, leaving the log as it was, when the log was closed or old is no
// longer part of it. swapped says whether ns's files now belong to the log.
func (l *Log) replaceSegments(ns *segment, old []*segment, logName, indexName string) (swapped bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return false, fmt.Errorf("%w: %v", ErrCleaningAborted, err)
	}
	i := slices.Index(l.segs, old[0])
	if i < 0 || i+len(old) >= len(l.segs) || !slices.Equal(l.segs[i:i+len(old)], old) {
		return false, fmt.Errorf("%w: segments changed while cleaning", ErrCleaningAborted)
	}
	fs, dir := l.cfg.FS, l.dir
	logSwap := segmentPath(dir, ns.base, logSuffix) + swapSuffix
	indexSwap := segmentPath(dir, ns.base, indexSuffix) + swapSuffix
	if err := fs.Rename(logName, logSwap); err != nil {
		return false, fmt.Errorf("storage: clean: %w", err)
	}
	if err := fs.Rename(indexName, indexSwap); err != nil {
		fs.Rename(logSwap, logName) // undone: Open removes a lone index .cleaned file
		return false, fmt.Errorf("storage: clean: %w", err)
	}
	if err := syncDir(fs, dir); err != nil {
		// Whether the swap is durable is unknown: the log refuses use until
		// reopened, and Open completes or drops it.
		l.failed = err
		return true, fmt.Errorf("storage: clean: %w", err)
	}
	// Decided. A failure from here on leaves the swap for Open to complete.
	fail := func(err error) (bool, error) {
		l.failed = err
		return true, fmt.Errorf("storage: clean: swap in segment %d: %w", ns.base, err)
	}
	for _, s := range old {
		for _, suffix := range []string{logSuffix, indexSuffix} {
			if err := fs.Remove(segmentPath(dir, s.base, suffix)); err != nil && !os.IsNotExist(err) {
				return fail(err)
			}
		}
	}
	if err := fs.Rename(logSwap, segmentPath(dir, ns.base, logSuffix)); err != nil {
		return fail(err)
	}
	if err := fs.Rename(indexSwap, segmentPath(dir, ns.base, indexSuffix)); err != nil {
		return fail(err)
	}
	if err := syncDir(fs, dir); err != nil {
		return fail(err)
	}
	for _, s := range old {
		s.close()
	}
	l.segs = slices.Replace(l.segs, i, i+len(old), ns)
	return true, nil
}

// completeSwaps is the part of LogLoader.load that finishes an interrupted
// clean: files with the .cleaned or .deleted suffix and index .swap files are
// removed, and each "<base>.log.swap" replaces the segments whose base offsets
// lie in the offsets it covers, [base, its next offset), then takes its final
// name (its index is rebuilt by recovery). changed says whether it touched the
// directory.
func (l *Log) completeSwaps(names []string) (changed bool, err error) {
	fs, dir := l.cfg.FS, l.dir
	var swaps []int64
	for _, name := range names {
		switch {
		case strings.HasSuffix(name, cleanedSuffix), strings.HasSuffix(name, deletedSuffix),
			strings.HasSuffix(name, indexSuffix+swapSuffix):
			if err := fs.Remove(filepath.Join(dir, name)); err != nil {
				return changed, err
			}
			changed = true
		case strings.HasSuffix(name, logSuffix+swapSuffix):
			if base, ok := parseSegmentName(strings.TrimSuffix(name, swapSuffix)); ok {
				swaps = append(swaps, base)
			}
		}
	}
	for _, base := range swaps {
		swap := segmentPath(dir, base, logSuffix) + swapSuffix
		next, err := nextOffsetOf(fs, swap, base)
		if err != nil {
			return changed, err
		}
		for _, name := range names {
			if b, ok := parseSegmentName(name); ok && b >= base && b < max(next, base+1) {
				for _, suffix := range []string{logSuffix, indexSuffix} {
					if err := fs.Remove(segmentPath(dir, b, suffix)); err != nil && !os.IsNotExist(err) {
						return changed, err
					}
				}
			}
		}
		if err := fs.Rename(swap, segmentPath(dir, base, logSuffix)); err != nil {
			return changed, err
		}
		changed = true
	}
	if changed {
		err = syncDir(fs, dir)
	}
	return changed, err
}

// nextOffsetOf returns the offset after the last valid batch of the segment
// file name (base when it holds none).
func nextOffsetOf(fs FS, name string, base int64) (int64, error) {
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, err
	}
	s := &segment{base: base, log: f, next: base, refs: &segRefs{}}
	_, _, err = s.scan(size, func(_ int64, info batchInfo) error {
		s.next = info.baseOffset + int64(info.lastOffsetDelta) + 1
		return nil
	})
	return s.next, err
}

// recordFilter is the cleaner's RecordFilter (Cleaner.cleanInto with
// MemoryRecords.filterTo) for one pass.
type recordFilter struct {
	m              *offsetMap
	now            int64 // ms, the pass's currentTime
	retentionMs    int64 // delete.retention.ms
	lastOfProducer map[int64]int64
}

// filter returns what of the stored batch raw (decoded as rb) to keep: raw
// itself when every record stays and no delete horizon is to be set, a
// rewritten batch with the kept records (same base offset, last offset
// delta, producer fields, leader epoch and codec), an empty batch when none
// stays but it is its producer's last, or nil.
func (f *recordFilter) filter(raw []byte, rb recordbatch.Batch) ([]byte, error) {
	if rb.IsControl() {
		return raw, nil // no transactions here: markers are kept
	}
	horizonSet := rb.Attributes&deleteHorizonBit != 0
	var kept []recordbatch.Record
	all, tombstones := true, false
	err := eachRecord(rb, func(r recordbatch.Record) error {
		off := rb.BaseOffset + int64(r.OffsetDelta)
		// Cleaner.shouldRetainRecord: past the map, or the key's latest and not
		// a tombstone past its horizon; records without a key go.
		retain := off >= f.m.end || (r.Key != nil && off >= f.m.get(r.Key) &&
			(r.Value != nil || !horizonSet || f.now < rb.BaseTimestamp))
		if !retain {
			all = false
			return nil
		}
		kept = append(kept, r)
		tombstones = tombstones || r.Value == nil
		return nil
	})
	if err != nil {
		return nil, err
	}
	h := rb.Header
	if len(kept) == 0 {
		if rb.ProducerID < 0 || f.lastOfProducer[rb.ProducerID] != rb.LastOffset() {
			return nil, nil
		}
		// BatchRetention.RETAIN_EMPTY: DefaultRecordBatch.writeEmptyHeader.
		h.Attributes &^= recordbatch.CompressionMask | deleteHorizonBit
		h.BaseTimestamp, h.NumRecords = h.MaxTimestamp, 0
		return recordbatch.AppendBatch(nil, h, nil), nil
	}
	needHorizon := tombstones && !horizonSet
	if all && !needHorizon {
		return raw, nil
	}
	// MemoryRecords.buildRetainedRecordsInto: the base timestamp is the delete
	// horizon when there is one, else the first kept record's; timestamp
	// deltas are recomputed against it, offset deltas stay.
	ts := func(r recordbatch.Record) int64 { return rb.BaseTimestamp + r.TimestampDelta }
	newBase := ts(kept[0])
	switch {
	case needHorizon:
		h.Attributes |= deleteHorizonBit
		newBase = f.now + f.retentionMs
	case horizonSet:
		newBase = rb.BaseTimestamp
	}
	maxTs := int64(noTimestamp)
	var recs []byte
	for _, r := range kept {
		maxTs = max(maxTs, ts(r))
		r.TimestampDelta = ts(r) - newBase
		recs = recordbatch.AppendRecord(recs, r)
	}
	if rb.LogAppendTime() {
		maxTs = rb.MaxTimestamp
	}
	if codec := rb.Compression(); codec != 0 {
		var err error
		if recs, err = compress(recs, codec); err != nil {
			return nil, fmt.Errorf("storage: clean: batch %d: %w", rb.BaseOffset, err)
		}
	}
	h.BaseTimestamp, h.MaxTimestamp, h.NumRecords = newBase, maxTs, int32(len(kept))
	return recordbatch.AppendBatch(nil, h, recs), nil
}

// errStop ends a walk early without an error.
var errStop = errors.New("stop")

// eachStoredBatch calls fn with every batch of s in order (position, raw
// bytes valid until fn returns, decoded header); errStop from fn ends the walk
// with no error. It aborts when ctx ends.
func eachStoredBatch(ctx context.Context, s *segment, fn func(pos int64, raw []byte, rb recordbatch.Batch) error) error {
	r := bufio.NewReaderSize(io.NewSectionReader(s.log, 0, s.size), 1<<16)
	buf := make([]byte, 0, 1<<12)
	for pos, n := int64(0), 0; pos < s.size; n++ {
		if n%64 == 0 && ctx.Err() != nil {
			return fmt.Errorf("%w: %v", ErrCleaningAborted, ctx.Err())
		}
		buf = buf[:batchOverhead]
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("storage: clean: segment %d at %d: %w", s.base, pos, err)
		}
		length := int32(binary.BigEndian.Uint32(buf[offLength:]))
		size := logOverhead + int(length)
		if length < batchOverhead-logOverhead || pos+int64(size) > s.size {
			return fmt.Errorf("storage: clean: segment %d at %d: %w: bad batch length %d", s.base, pos, ErrCorruptRecord, length)
		}
		if cap(buf) < size {
			buf = append(buf[:cap(buf)], make([]byte, size-cap(buf))...)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf[batchOverhead:]); err != nil {
			return fmt.Errorf("storage: clean: segment %d at %d: %w", s.base, pos, err)
		}
		rb, err := recordbatch.Read(buf)
		if err != nil {
			return fmt.Errorf("storage: clean: segment %d at %d: %w", s.base, pos, err)
		}
		if err := fn(pos, buf, rb); err != nil {
			if err == errStop {
				return nil
			}
			return err
		}
		pos += int64(size)
	}
	return nil
}

// eachRecord calls fn with every record of rb, decompressing it first.
func eachRecord(rb recordbatch.Batch, fn func(recordbatch.Record) error) error {
	recs, err := recordbatch.Decompress(recordbatch.Codec(rb.Compression()), recordbatch.Magic, rb.Records, math.MaxInt32)
	if err != nil {
		return fmt.Errorf("%w: batch %d: %v", ErrCorruptRecord, rb.BaseOffset, err)
	}
	return recordbatch.ReadRecords(recs, rb.NumRecords, fn)
}

// compress compresses records with codec (1 gzip, 2 snappy, 3 lz4, 4 zstd) at its default level, as
// MemoryRecords.filterTo rebuilds a batch with its original codec.
func compress(records []byte, codec int8) ([]byte, error) {
	return recordbatch.Compress(recordbatch.Codec(codec), recordbatch.Magic, records)
}

// readCleanerCheckpoint returns the checkpointed first dirty offset, -1 when
// there is none or it cannot be read (then the whole log counts as dirty).
func readCleanerCheckpoint(fs FS, dir string) int64 {
	f, err := fs.OpenFile(filepath.Join(dir, cleanerCheckpointName), os.O_RDONLY, 0)
	if err != nil {
		return -1
	}
	defer f.Close()
	b := make([]byte, 64)
	n, _ := f.ReadAt(b, 0)
	lines := strings.Split(string(b[:n]), "\n")
	if len(lines) != 4 || lines[0] != "0" || lines[1] != "1" || lines[3] != "" {
		return -1
	}
	off, err := strconv.ParseInt(lines[2], 10, 64)
	if err != nil || off < 0 {
		return -1
	}
	return off
}

// writeCleanerCheckpoint replaces the cleaner checkpoint atomically and durably.
func writeCleanerCheckpoint(fs FS, dir string, firstDirty int64) error {
	return writeCheckpoint(fs, dir, cleanerCheckpointName, fmt.Appendf(nil, "0\n1\n%d\n", firstDirty))
}
