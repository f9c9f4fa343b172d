package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// kv is one record to write: a nil value is a tombstone, a nil key none.
type kv struct{ key, value []byte }

// keyedBatch is a v2 batch of recs (uncompressed; ts, ts+1, ... as timestamps).
func keyedBatch(ts int64, recs ...kv) []byte {
	var raw []byte
	for i, r := range recs {
		raw = recordbatch.AppendRecord(raw, recordbatch.Record{TimestampDelta: int64(i), OffsetDelta: int32(i), Key: r.key, Value: r.value})
	}
	n := int32(len(recs))
	return withCRC(kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: n - 1, FirstTimestamp: ts, MaxTimestamp: ts + int64(n) - 1,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: n, Records: raw,
		Length: int32(batchOverhead - logOverhead + len(raw)),
	})
}

// consumed is one record as a consumer reads it.
type consumed struct {
	offset     int64
	key, value string
	tombstone  bool
}

// consume reads the log from LogStartOffset to the high watermark as a
// consumer does (each Read from the offset after the last batch returned) and
// checks that every Read starts with the first batch ending at or after the
// offset asked for.
func consume(t testing.TB, l *Log) []consumed {
	t.Helper()
	var out []consumed
	hw := l.HighWatermark()
	for off := l.LogStartOffset(); off < hw; {
		b, err := l.Read(off, 1<<16)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if len(b) == 0 {
			t.Fatalf("Read(%d) below the high watermark %d returned nothing", off, hw)
		}
		first := true
		for len(b) > 0 {
			rb, err := recordbatch.Read(b)
			if err != nil {
				t.Fatalf("Read(%d): %v", off, err)
			}
			if first && rb.LastOffset() < off {
				t.Fatalf("Read(%d) starts with batch [%d, %d]", off, rb.BaseOffset, rb.LastOffset())
			}
			first = false
			err = eachRecord(rb, func(r recordbatch.Record) error {
				out = append(out, consumed{rb.BaseOffset + int64(r.OffsetDelta), string(r.Key), string(r.Value), r.Value == nil})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			b = b[rb.Size():]
			off = rb.LastOffset() + 1
		}
	}
	return out
}

// fold is what a consumer of a compacted topic holds after reading recs:
// the latest value of every key, tombstoned keys removed.
func fold(recs []consumed) map[string]consumed {
	m := map[string]consumed{}
	for _, r := range recs {
		if r.tombstone {
			delete(m, r.key)
		} else {
			m[r.key] = r
		}
	}
	return m
}

// writer appends keyed batches and remembers what it wrote at each offset.
type writer struct {
	t       testing.TB
	l       *Log
	clock   *fakeClock
	written map[int64]kv
	latest  map[string]int64 // key -> offset of its last record
}

func newWriter(t testing.TB, l *Log, clock *fakeClock) *writer {
	return &writer{t: t, l: l, clock: clock, written: map[int64]kv{}, latest: map[string]int64{}}
}

func (w *writer) write(recs ...kv) {
	base := mustAppend(w.t, w.l, keyedBatch(w.clock.now().UnixMilli(), recs...))
	for i, r := range recs {
		w.written[base+int64(i)] = r
		w.latest[string(r.key)] = base + int64(i)
	}
	w.clock.advance(1)
}

// want is what folding the log must give: the last value of every key whose
// last record is not a tombstone, at the offset it was written at.
func (w *writer) want() map[string]consumed {
	m := map[string]consumed{}
	for k, off := range w.latest {
		if r := w.written[off]; r.value != nil {
			m[k] = consumed{off, k, string(r.value), false}
		}
	}
	return m
}

// check asserts that recs hold only records written at their offsets, in
// order, and fold to w.want().
func (w *writer) check(recs []consumed) {
	w.t.Helper()
	last := int64(-1)
	for _, r := range recs {
		orig, ok := w.written[r.offset]
		if !ok || string(orig.key) != r.key || string(orig.value) != r.value || (orig.value == nil) != r.tombstone {
			w.t.Fatalf("offset %d holds %q=%q, was written %q=%q (%v)", r.offset, r.key, r.value, orig.key, orig.value, ok)
		}
		if r.offset <= last {
			w.t.Fatalf("offset %d after %d", r.offset, last)
		}
		last = r.offset
	}
	got, want := fold(recs), w.want()
	if len(got) != len(want) {
		w.t.Fatalf("consumer holds %d keys, want %d", len(got), len(want))
	}
	for k, r := range want {
		if got[k] != r {
			w.t.Fatalf("key %s: consumer holds %+v, want %+v (the last value at its original offset)", k, got[k], r)
		}
	}
}

func cleanUntilIdle(t testing.TB, c *Cleaner) int {
	t.Helper()
	n := 0
	for {
		cleaned, err := c.CleanOnce(context.Background())
		if err != nil {
			t.Fatalf("CleanOnce: %v", err)
		}
		if !cleaned {
			return n
		}
		n++
	}
}

// TestCompaction100kWrites is the must-show at storage level: 100,000 writes
// to 100 keys in 4 KiB segments, the last write of keys k0-k9 a tombstone.
// After cleaning, a consumer reading from the start holds the last value of
// every other key at the offset it was written at, and the cleaned segments
// hold one record per key; after delete.retention.ms (a fake clock) and more
// writes, the next clean removes the tombstones: k0-k9 are absent. The
// cleaned log reopens to the same records.
func TestCompaction100kWrites(t *testing.T) {
	fs, clock := newMemFS(), newClock(1_000_000)
	cfg := Config{FS: fs, Now: clock.now, SegmentBytes: 4096, CleanupPolicy: "compact", DeleteRetentionMs: 60_000}
	l := mustOpen(t, "/d", cfg)
	defer func() { mustClose(t, l) }()
	w := newWriter(t, l, clock)
	rng := rand.New(rand.NewSource(1))
	const writes, keys, perBatch = 100_000, 100, 10
	for i := 0; i < writes; i += perBatch {
		var recs []kv
		for j := i; j < i+perBatch; j++ {
			k := rng.Intn(keys)
			if j >= writes-10_000 { // the last 10,000 writes: tombstones for k0-k9 once, then only k10-k99
				k = 10 + rng.Intn(keys-10)
				if j < writes-10_000+10 {
					k = j - (writes - 10_000)
				}
			}
			var v []byte
			if k >= 10 || j < writes-10_000 {
				v = []byte(fmt.Sprintf("v%d", j))
			}
			recs = append(recs, kv{[]byte(fmt.Sprintf("k%d", k)), v})
		}
		w.write(recs...)
	}
	if n := len(segBases(l)); n < 500 {
		t.Fatalf("%d segments; the test needs small segments", n)
	}
	before := consume(t, l)
	w.check(before)
	if len(before) != writes {
		t.Fatalf("read %d records before cleaning, want %d", len(before), writes)
	}

	c := NewCleaner(CleanerConfig{Logs: func() []*Log { return []*Log{l} }})
	if n := cleanUntilIdle(t, c); n != 1 {
		t.Fatalf("%d cleaning passes, want 1 (then the dirty ratio is 0)", n)
	}
	after := consume(t, l)
	w.check(after)
	activeBase := segBases(l)[len(segBases(l))-1]
	seen, tombstones := map[string]bool{}, 0
	for _, r := range after {
		if r.offset >= activeBase {
			break
		}
		if seen[r.key] {
			t.Fatalf("key %s twice in the cleaned segments", r.key)
		}
		seen[r.key] = true
		if r.tombstone {
			tombstones++
		}
	}
	if len(seen) != keys || tombstones != 10 {
		t.Fatalf("cleaned segments hold %d keys, %d tombstones; want %d keys, the 10 tombstones (delete.retention.ms not passed)", len(seen), tombstones, keys)
	}
	if n := len(after); n > keys+perBatch*20 {
		t.Fatalf("%d records after cleaning", n)
	}
	// A read at an offset that was cleaned away returns the next batch.
	if b, err := l.Read(1, 1); err != nil || len(b) == 0 {
		t.Fatalf("Read(1) after cleaning: %d bytes, %v", len(b), err)
	} else if rb, _ := recordbatch.Read(b); rb.LastOffset() < after[0].offset || rb.BaseOffset > after[0].offset {
		t.Fatalf("Read(1) returned batch [%d, %d]; the first kept record is at %d", rb.BaseOffset, rb.LastOffset(), after[0].offset)
	}

	// delete.retention.ms passes; more writes make the log dirty again.
	clock.advance(cfg.DeleteRetentionMs + 1)
	for i := 0; i < 5_000; i += perBatch {
		var recs []kv
		for j := i; j < i+perBatch; j++ {
			recs = append(recs, kv{[]byte(fmt.Sprintf("k%d", 10+rng.Intn(keys-10))), []byte(fmt.Sprintf("w%d", j))})
		}
		w.write(recs...)
	}
	if n := cleanUntilIdle(t, c); n != 1 {
		t.Fatalf("%d cleaning passes after delete.retention.ms, want 1", n)
	}
	final := consume(t, l)
	w.check(final)
	for _, r := range final {
		if w.written[w.latest[r.key]].value == nil {
			t.Fatalf("tombstoned key %s still read at offset %d after delete.retention.ms", r.key, r.offset)
		}
	}

	// Recovery keeps the cleaned log as it is.
	mustClose(t, l)
	l = mustOpen(t, "/d", cfg)
	if r := l.Recovery(); r.TruncatedBytes != 0 || r.DeletedSegments != 0 || r.Problem != "" || r.RebuiltIndexes != 0 {
		t.Fatalf("reopening the cleaned log: %+v (the cleaned segments' indexes must be the ones recovery builds)", r)
	}
	if got := consume(t, l); fmt.Sprint(got) != fmt.Sprint(final) {
		t.Fatalf("reopened log reads %d records, before %d, or different ones", len(got), len(final))
	}
}

// crashFixture is a synced compacted log of 600 writes to 20 keys (k0-k3
// tombstoned) in 1 KiB segments.
func crashFixture(t *testing.T) (*memFS, Config, *writer) {
	fs, clock := newMemFS(), newClock(1_000_000)
	cfg := Config{FS: fs, Now: clock.now, SegmentBytes: 1024, CleanupPolicy: "compact", IndexIntervalBytes: 200}
	l := mustOpen(t, "/d", cfg)
	w := newWriter(t, l, clock)
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 600; i += 4 {
		var recs []kv
		for j := 0; j < 4; j++ {
			k := rng.Intn(20)
			v := []byte(fmt.Sprintf("v%d", i+j))
			if i >= 500 && k < 4 {
				v = nil
			} else if i >= 500 {
				k = 4 + rng.Intn(16)
			}
			recs = append(recs, kv{[]byte(fmt.Sprintf("k%d", k)), v})
		}
		w.write(recs...)
	}
	mustClose(t, l)
	return fs, cfg, w
}

// TestCleanerCrashAtEveryStep kills a cleaning pass at each of its file system
// operations (every one from the kill on fails: file creation, every write
// and fsync of the .cleaned files, the renames to .swap and to the final
// names, the removal of the old segments, the directory syncs, the
// checkpoint), drops what was not synced (with a random torn tail), and
// reopens: the log recovers with no problem, every record is the one written
// at its offset, a consumer still holds the last value of every key, and a
// second pass cleans it fully.
func TestCleanerCrashAtEveryStep(t *testing.T) {
	base, cfg, w := crashFixture(t)
	// Count the operations of a pass that is not killed.
	ops := 0
	count := func() { ops++ }
	{
		fs := base.clone()
		cfg.FS = fs
		l := mustOpen(t, "/d", cfg)
		fs.opHook = func(string, string) error { count(); return nil }
		fs.writeHook = func(_ string, p []byte) (int, error) { count(); return len(p), nil }
		fs.syncHook = func(string) error { count(); return nil }
		c := NewCleaner(CleanerConfig{Logs: func() []*Log { return []*Log{l} }})
		if cleaned, err := c.CleanOnce(context.Background()); !cleaned || err != nil {
			t.Fatalf("CleanOnce = %v, %v", cleaned, err)
		}
		fs.opHook, fs.writeHook, fs.syncHook = nil, nil, nil
		w.check(consume(t, l))
		mustClose(t, l)
	}
	t.Logf("%d file system operations in a pass", ops)
	if ops < 20 {
		t.Fatalf("only %d file system operations in a pass", ops)
	}
	rng := rand.New(rand.NewSource(9))
	killed := errors.New("killed")
	for k := 0; k <= ops; k++ {
		fs := base.clone()
		cfg.FS = fs
		l := mustOpen(t, "/d", cfg)
		n := 0
		dead := func() bool { n++; return n > k }
		fs.opHook = func(string, string) error {
			if dead() {
				return killed
			}
			return nil
		}
		fs.writeHook = func(_ string, p []byte) (int, error) {
			if dead() {
				return rng.Intn(len(p) + 1), killed
			}
			return len(p), nil
		}
		fs.syncHook = func(string) error {
			if dead() {
				return killed
			}
			return nil
		}
		c := NewCleaner(CleanerConfig{Logs: func() []*Log { return []*Log{l} }})
		cleaned, err := c.CleanOnce(context.Background())
		if k < ops && err == nil {
			t.Fatalf("kill at operation %d of %d: the pass did not fail (cleaned %v)", k, ops, cleaned)
		}
		// kill -9 and power loss: the Log is abandoned, unsynced bytes dropped.
		fs.opHook, fs.writeHook, fs.syncHook = nil, nil, nil
		fs.crash(func(_ string, unsynced []byte) int { return rng.Intn(len(unsynced) + 1) })
		l2 := mustOpen(t, "/d", cfg)
		if r := l2.Recovery(); r.Problem != "" || r.TruncatedBytes != 0 || r.DeletedSegments != 0 {
			t.Fatalf("kill at operation %d: recovery %+v", k, r)
		}
		for name := range fs.files() {
			if strings.HasSuffix(name, cleanedSuffix) || strings.HasSuffix(name, swapSuffix) {
				t.Fatalf("kill at operation %d: %s left after Open", k, name)
			}
		}
		w.check(consume(t, l2))
		c2 := NewCleaner(CleanerConfig{Logs: func() []*Log { return []*Log{l2} }})
		cleanUntilIdle(t, c2)
		recs := consume(t, l2)
		w.check(recs)
		activeBase := segBases(l2)[len(segBases(l2))-1]
		seen := map[string]bool{}
		for _, r := range recs {
			if r.offset < activeBase && seen[r.key] {
				t.Fatalf("kill at operation %d: key %s twice after the second pass", k, r.key)
			}
			seen[r.key] = true
		}
		mustClose(t, l2)
	}
}

// TestCleanerPicksFilthiestAndHonoursRatio: of two compacted logs the one with
// the higher dirty ratio is cleaned first; a log at or below
// min.cleanable.dirty.ratio, a log with cleanup.policy=delete and the active
// segment are never cleaned; min.compaction.lag.ms holds back young segments.
func TestCleanerPicksFilthiestAndHonoursRatio(t *testing.T) {
	clock := newClock(1_000_000)
	open := func(dir, policy string, lag int64) (*Log, *writer) {
		l := mustOpen(t, dir, Config{FS: newMemFS(), Now: clock.now, SegmentBytes: 1024, CleanupPolicy: policy, MinCompactionLagMs: lag})
		t.Cleanup(func() { mustClose(t, l) })
		return l, newWriter(t, l, clock)
	}
	a, wa := open("/a", "compact", 0)
	b, wb := open("/b", "compact", 0)
	d, wd := open("/d", "delete", 0)
	for i := 0; i < 200; i++ {
		wa.write(kv{[]byte("a"), []byte(fmt.Sprint(i))}) // one key: very dirty
		wb.write(kv{[]byte(fmt.Sprintf("b%d", i%50)), []byte(fmt.Sprint(i))})
		wd.write(kv{[]byte("d"), []byte(fmt.Sprint(i))})
	}
	ta, _ := a.cleanable()
	tb, _ := b.cleanable()
	if !(ta.ratio() == 1 && tb.ratio() == 1) {
		t.Fatalf("ratios %v %v before any clean, want 1", ta.ratio(), tb.ratio())
	}
	c := NewCleaner(CleanerConfig{Logs: func() []*Log { return []*Log{d, b, a} }})
	if n := cleanUntilIdle(t, c); n != 2 {
		t.Fatalf("%d passes, want 2 (a and b)", n)
	}
	if got := len(consume(t, d)); got != 200 {
		t.Fatalf("the delete-policy log holds %d records after the cleaner ran, want 200", got)
	}
	wa.check(consume(t, a))
	wb.check(consume(t, b))
	// Below the ratio: a little more dirt is not cleaned.
	wb.write(kv{[]byte("b1"), []byte("x")})
	if n := cleanUntilIdle(t, c); n != 0 {
		t.Fatalf("%d passes with a dirty ratio below 0.5", n)
	}

	// min.compaction.lag.ms: segments whose newest record is younger stay.
	lg, wl := open("/lag", "compact", 10_000)
	for i := 0; i < 200; i++ {
		wl.write(kv{[]byte("k"), []byte(fmt.Sprint(i))})
	}
	c = NewCleaner(CleanerConfig{Logs: func() []*Log { return []*Log{lg} }})
	if n := cleanUntilIdle(t, c); n != 0 {
		t.Fatalf("%d passes within min.compaction.lag.ms", n)
	}
	clock.advance(10_001)
	if n := cleanUntilIdle(t, c); n != 1 {
		t.Fatalf("%d passes after min.compaction.lag.ms, want 1", n)
	}
	wl.check(consume(t, lg))
}

// TestCleanerCompactDeleteRetention: with cleanup.policy=compact,delete the
// cleaner's pass applies retention too, and with compact alone retention
// deletes nothing.
func TestCleanerCompactDeleteRetention(t *testing.T) {
	clock := newClock(1_000_000)
	mk := func(policy string) *Log {
		l := mustOpen(t, "/"+policy, Config{FS: newMemFS(), Now: clock.now, SegmentBytes: 1024, CleanupPolicy: policy, RetentionMs: 1000})
		t.Cleanup(func() { mustClose(t, l) })
		w := newWriter(t, l, clock)
		for i := 0; i < 100; i++ {
			w.write(kv{[]byte(fmt.Sprintf("k%d", i)), []byte("v")}) // distinct keys: nothing to compact
		}
		return l
	}
	both, compact := mk("compact,delete"), mk("compact")
	clock.advance(5000)
	if err := compact.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	c := NewCleaner(CleanerConfig{Logs: func() []*Log { return []*Log{both, compact} }})
	if _, err := c.CleanOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(segBases(both)); n != 1 || both.LogStartOffset() == 0 {
		t.Fatalf("compact,delete: %d segments, log start %d after retention; want only the active one", n, both.LogStartOffset())
	}
	if compact.LogStartOffset() != 0 {
		t.Fatalf("compact: retention moved the log start to %d", compact.LogStartOffset())
	}
}

// TestCleanerKeepsLastBatchOfProducer: a batch of an idempotent producer whose
// records are all superseded is kept empty (header only, same offsets) when it
// is that producer's last batch, and dropped otherwise.
func TestCleanerKeepsLastBatchOfProducer(t *testing.T) {
	clock := newClock(1_000_000)
	l := mustOpen(t, "/p", Config{FS: newMemFS(), Now: clock.now, SegmentBytes: 1024, CleanupPolicy: "compact"})
	defer mustClose(t, l)
	batch := func(pid int64, seq int32, key, val string) []byte {
		raw := recordbatch.AppendRecord(nil, recordbatch.Record{Key: []byte(key), Value: []byte(val)})
		return recordbatch.AppendBatch(nil, recordbatch.Header{PartitionLeaderEpoch: -1, BaseTimestamp: 1, MaxTimestamp: 1,
			ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq, NumRecords: 1}, raw)
	}
	mustAppend(t, l, batch(7, 0, "k", "a")) // 0: superseded, not producer 7's last
	mustAppend(t, l, batch(7, 1, "k", "b")) // 1: superseded, producer 7's last
	for i := 0; i < 60; i++ {
		mustAppend(t, l, batch(-1, -1, "k", fmt.Sprint(i)))
	}
	c := NewCleaner(CleanerConfig{Logs: func() []*Log { return []*Log{l} }})
	cleanUntilIdle(t, c)
	b, err := l.Read(0, math.MaxInt32)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := recordbatch.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	if rb.BaseOffset != 1 || rb.LastOffset() != 1 || rb.NumRecords != 0 || rb.ProducerID != 7 || rb.BaseSequence != 1 {
		t.Fatalf("first batch after cleaning: offsets [%d, %d], %d records, producer %d seq %d; want producer 7's last batch, empty",
			rb.BaseOffset, rb.LastOffset(), rb.NumRecords, rb.ProducerID, rb.BaseSequence)
	}
}

// TestCleanerRunBackoffAndStop: Run cleans a dirty log unasked, passes again at
// once after a pass that cleaned, then waits log.cleaner.backoff.ms (an hour
// here: no third pass) and returns when its context ends, aborting nothing.
func TestCleanerRunBackoffAndStop(t *testing.T) {
	clock := newClock(1_000_000)
	l := mustOpen(t, "/r", Config{FS: newMemFS(), Now: clock.now, SegmentBytes: 1024, CleanupPolicy: "compact"})
	defer mustClose(t, l)
	w := newWriter(t, l, clock)
	for i := 0; i < 100; i++ {
		w.write(kv{[]byte("k"), []byte(fmt.Sprint(i))})
	}
	var mu sync.Mutex
	passes := 0
	c := NewCleaner(CleanerConfig{BackoffMs: 3_600_000, Logs: func() []*Log {
		mu.Lock()
		passes++
		mu.Unlock()
		return []*Log{l}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return passes }
	testutil.WaitFor(t, 10*time.Second, "two passes", func() bool { return count() >= 2 })
	cancel()
	<-done
	if n := count(); n != 2 {
		t.Fatalf("%d passes; want 2 (one that cleaned, one that found nothing, then the back-off)", n)
	}
	if tc, ok := l.cleanable(); ok || tc.cleanableBytes != 0 {
		t.Fatalf("after Run: %d cleanable bytes", tc.cleanableBytes)
	}
	w.check(consume(t, l))
}

// TestSetConfigWhileCleaningAndAppending: a dynamic config change (SetConfig, as a topic's
// /config/topics znode changes) while the cleaner runs passes and the broker asks Compacted() on
// every produce. Under -race this fails if any of them reads the settings without the log's lock (a
// clean-clone CI run caught Compacted racing SetConfig in the broker's TestDynamicConfigs).
func TestSetConfigWhileCleaningAndAppending(t *testing.T) {
	clock := newClock(1_000_000)
	cfg := Config{FS: newMemFS(), Now: clock.now, SegmentBytes: 1024, CleanupPolicy: "compact"}
	l := mustOpen(t, "/cfg", cfg)
	defer func() { mustClose(t, l) }()
	w := newWriter(t, l, clock)
	for i := 0; i < 200; i++ {
		w.write(kv{[]byte(fmt.Sprintf("k%d", i%10)), []byte(fmt.Sprintf("v%d", i))})
	}
	c := NewCleaner(CleanerConfig{Logs: func() []*Log { return []*Log{l} }})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the ZooKeeper loop applying config changes
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			policy := "compact"
			if i%2 == 1 {
				policy = "compact,delete"
			}
			if err := l.SetConfig(Config{SegmentBytes: 1024 + int64(i%3), CleanupPolicy: policy}); err != nil {
				t.Errorf("SetConfig: %v", err)
				return
			}
		}
	}()
	go func() { // produce handlers
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if !l.Compacted() {
				t.Error("Compacted() = false; every policy set includes compact")
				return
			}
		}
	}()
	for i := 0; i < 20; i++ {
		if _, err := c.CleanOnce(context.Background()); err != nil {
			t.Errorf("CleanOnce: %v", err)
		}
	}
	close(done)
	wg.Wait()
}
