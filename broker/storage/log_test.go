package storage

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// written is one batch as the test expects the log to hold it.
type written struct {
	base, last int64
	stored     []byte
}

// fill appends count appends of 1–2 batches with 1–4 records of 1–40 bytes
// (deterministic) and returns every batch as stored.
func fill(t *testing.T, l *Log, seed int64, count int) []written {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	var out []written
	for i := 0; i < count; i++ {
		var recs []byte
		var batches [][]byte
		for j := 0; j < 1+rng.Intn(2); j++ {
			b := newBatch(1_000+int64(i), values(i*10+j, 1+rng.Intn(4), 1+rng.Intn(40))...)
			batches = append(batches, b)
			recs = append(recs, b...)
		}
		want := l.HighWatermark()
		orig := bytes.Clone(recs)
		base := mustAppend(t, l, recs)
		if base != want {
			t.Fatalf("append %d: base offset %d, want %d", i, base, want)
		}
		if !bytes.Equal(recs, orig) {
			t.Fatalf("Append modified its input")
		}
		for _, b := range batches {
			n := int64(binary.BigEndian.Uint32(b[offLastOffsetDelta:])) + 1
			out = append(out, written{base: base, last: base + n - 1, stored: stamped(b, base, l.LeaderEpoch())})
			base += n
		}
	}
	return out
}

func concat(ws []written) []byte {
	var b []byte
	for _, w := range ws {
		b = append(b, w.stored...)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	for _, fsName := range []string{"os", "mem"} {
		t.Run(fsName, func(t *testing.T) {
			cfg := Config{SegmentBytes: 1500, IndexIntervalBytes: 200}
			dir := t.TempDir()
			if fsName == "mem" {
				cfg.FS = newMemFS()
				dir = "/data/topic-0"
			}
			l := mustOpen(t, dir, cfg)
			ws := fill(t, l, 1, 200)
			hw := ws[len(ws)-1].last + 1
			if got := l.HighWatermark(); got != hw {
				t.Fatalf("high watermark %d, want %d", got, hw)
			}
			checkContent(t, l, ws)

			// Segments: rolled by size, named by base offset, never over SegmentBytes.
			bases := segBases(l)
			if len(bases) < 5 {
				t.Fatalf("only %d segments for %d bytes at log.segment.bytes 1500", len(bases), len(concat(ws)))
			}
			var wantNames []string
			for _, s := range l.segs {
				if s.size > cfg.SegmentBytes {
					t.Fatalf("segment %d holds %d bytes > %d", s.base, s.size, cfg.SegmentBytes)
				}
				wantNames = append(wantNames, filepath.Base(segmentPath(dir, s.base, indexSuffix)), filepath.Base(segmentPath(dir, s.base, logSuffix)))
			}
			names, err := l.cfg.FS.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			wantNames = append(wantNames, epochCheckpointName)
			if got, want := slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(wantNames)); !slices.Equal(got, want) {
				t.Fatalf("files %v, want %v", got, want)
			}
			mustClose(t, l)

			// A clean reopen finds nothing to repair and serves the same bytes.
			l = mustOpen(t, dir, cfg)
			defer mustClose(t, l)
			if r := l.Recovery(); r.TruncatedBytes != 0 || r.DeletedSegments != 0 || r.RebuiltIndexes != 0 || r.Problem != "" || r.EpochCheckpoint != "ok" || r.Segments != len(bases) {
				t.Fatalf("clean reopen recovery %+v", r)
			}
			if got := segBases(l); !slices.Equal(got, bases) {
				t.Fatalf("segments after reopen %v, want %v", got, bases)
			}
			checkContent(t, l, ws)
			more := fill(t, l, 2, 20)
			if more[0].base != hw {
				t.Fatalf("after reopen appends start at %d, want %d", more[0].base, hw)
			}
			checkContent(t, l, append(ws, more...))
		})
	}
}

// checkContent reads at every offset: maxBytes 1 gives exactly the batch holding
// the offset (KIP-74), maxBytes max gives the batches from it to its segment's end.
func checkContent(t *testing.T, l *Log, ws []written) {
	t.Helper()
	if got := readAll(t, l); !bytes.Equal(got, concat(ws)) {
		t.Fatalf("whole log differs from what was appended (%d vs %d bytes)", len(got), len(concat(ws)))
	}
	segEnd := map[int64]int64{} // batch base → next segment base
	bases := segBases(l)
	for _, w := range ws {
		i := 0
		for i+1 < len(bases) && bases[i+1] <= w.base {
			i++
		}
		segEnd[w.base] = math.MaxInt64
		if i+1 < len(bases) {
			segEnd[w.base] = bases[i+1]
		}
	}
	for i, w := range ws {
		for off := w.base; off <= w.last; off++ {
			b, err := l.Read(off, 1)
			if err != nil {
				t.Fatalf("Read(%d, 1): %v", off, err)
			}
			if !bytes.Equal(b, w.stored) {
				t.Fatalf("Read(%d, 1) is not batch [%d, %d]", off, w.base, w.last)
			}
			b, err = l.Read(off, math.MaxInt32)
			if err != nil {
				t.Fatalf("Read(%d): %v", off, err)
			}
			var want []byte
			for _, x := range ws[i:] {
				if x.base >= segEnd[w.base] {
					break
				}
				want = append(want, x.stored...)
			}
			if !bytes.Equal(b, want) {
				t.Fatalf("Read(%d, max) = %d bytes, want the %d bytes up to the segment end", off, len(b), len(want))
			}
		}
	}
	hw := l.HighWatermark()
	for _, off := range []int64{-1, l.LogStartOffset() - 1, hw + 1, hw + 100} {
		if off >= l.LogStartOffset() && off <= hw {
			continue
		}
		_, err := l.Read(off, 100)
		wantErr(t, err, ErrOffsetOutOfRange)
	}
}

// TestIndex checks the sparse index against Kafka's rule, on disk and in
// memory, and an index lookup for every offset.
func TestIndex(t *testing.T) {
	fs := newMemFS()
	cfg := Config{FS: fs, SegmentBytes: 4000, IndexIntervalBytes: 300}
	l := mustOpen(t, "/d", cfg)
	defer mustClose(t, l)
	ws := fill(t, l, 3, 150)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, s := range l.segs {
		// Expected entries: a batch is indexed when more than the interval lies
		// between the last indexed batch's position and its own.
		var want []indexEntry
		var pos, lastEntry int64
		var segWs []written
		for _, w := range ws {
			if w.base >= s.base && w.base < s.next {
				segWs = append(segWs, w)
			}
		}
		positions := map[int64]int64{} // batch base → position
		for _, w := range segWs {
			if pos-lastEntry > int64(cfg.IndexIntervalBytes) {
				want = append(want, indexEntry{offset: w.last, pos: int32(pos)})
				lastEntry = pos
			}
			positions[w.base] = pos
			pos += int64(len(w.stored))
		}
		if len(want) != len(s.entries) {
			t.Fatalf("segment %d: %d index entries, want %d", s.base, len(s.entries), len(want))
		}
		for i := range want {
			if want[i] != s.entries[i] {
				t.Fatalf("segment %d entry %d: %+v, want %+v", s.base, i, s.entries[i], want[i])
			}
		}
		var disk []byte
		for _, e := range want {
			disk = binary.BigEndian.AppendUint32(disk, uint32(e.offset-s.base))
			disk = binary.BigEndian.AppendUint32(disk, uint32(e.pos))
		}
		if got := fs.content(segmentPath("/d", s.base, indexSuffix)); !bytes.Equal(got, disk) {
			t.Fatalf("segment %d: index file %x, want %x", s.base, got, disk)
		}
		total += len(want)
		// Lookup for every offset: a batch start at or before the batch holding it.
		for _, w := range segWs {
			for off := w.base; off <= w.last; off++ {
				p := s.lookup(off)
				if p > positions[w.base] {
					t.Fatalf("lookup(%d) = %d, past the batch's position %d", off, p, positions[w.base])
				}
				found := false
				for _, x := range segWs {
					found = found || positions[x.base] == p
				}
				if !found {
					t.Fatalf("lookup(%d) = %d, not a batch boundary", off, p)
				}
				if pos, _, err := s.find(off); err != nil || pos != positions[w.base] {
					t.Fatalf("find(%d) = %d, %v; want %d", off, pos, err, positions[w.base])
				}
			}
		}
	}
	if total < 10 {
		t.Fatalf("only %d index entries; the test needs more", total)
	}
}

// TestIndexRebuilt: a missing index and a garbled one are rebuilt on Open to
// exactly what they were.
func TestIndexRebuilt(t *testing.T) {
	fs := newMemFS()
	cfg := Config{FS: fs, SegmentBytes: 3000, IndexIntervalBytes: 100}
	l := mustOpen(t, "/d", cfg)
	ws := fill(t, l, 4, 60)
	bases := segBases(l)
	mustClose(t, l)
	idx0, idx1 := segmentPath("/d", bases[0], indexSuffix), segmentPath("/d", bases[1], indexSuffix)
	want0, want1 := fs.content(idx0), fs.content(idx1)
	if len(want0) == 0 || len(want1) == 0 {
		t.Fatal("test needs non-empty indexes")
	}
	if err := fs.Remove(idx0); err != nil {
		t.Fatal(err)
	}
	fs.mutate(idx1, func(b []byte) []byte { b[5] ^= 0x40; return b[:len(b)-3] })

	l = mustOpen(t, "/d", cfg)
	defer mustClose(t, l)
	if r := l.Recovery(); r.RebuiltIndexes != 2 || r.TruncatedBytes != 0 || r.Problem != "" {
		t.Fatalf("recovery %+v, want 2 rebuilt indexes and nothing else", r)
	}
	if !bytes.Equal(fs.content(idx0), want0) || !bytes.Equal(fs.content(idx1), want1) {
		t.Fatal("rebuilt indexes differ from the originals")
	}
	checkContent(t, l, ws)
}

// TestReadMaxBytes: KIP-74 — the first batch always, then only whole batches
// that fit.
func TestReadMaxBytes(t *testing.T) {
	l := mustOpen(t, "/d", Config{FS: newMemFS()})
	defer mustClose(t, l)
	big := newBatch(1, values(0, 1, 5000)...)
	small1 := newBatch(2, values(1, 2, 10)...)
	small2 := newBatch(3, values(2, 1, 10)...)
	mustAppend(t, l, big)
	mustAppend(t, l, append(bytes.Clone(small1), small2...))
	s0, s1, s2 := stamped(big, 0, 0), stamped(small1, 1, 0), stamped(small2, 3, 0)
	for _, tc := range []struct {
		off  int64
		max  int32
		want []byte
	}{
		{0, 0, s0},
		{0, -5, s0},
		{0, 100, s0},
		{0, int32(len(s0) + len(s1) - 1), s0},
		{0, int32(len(s0) + len(s1)), concatBytes(s0, s1)},
		{0, math.MaxInt32, concatBytes(s0, s1, s2)},
		{2, 1, s1},
		{2, int32(len(s1) + len(s2)), concatBytes(s1, s2)},
		{3, 1, s2},
		{4, 1, nil},
	} {
		got, err := l.Read(tc.off, tc.max)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Fatalf("Read(%d, %d) = %d bytes, %v; want %d bytes", tc.off, tc.max, len(got), err, len(tc.want))
		}
	}
}

// TestConcurrentAppendRead: readers running alongside an appender only ever see
// whole, valid batches holding the offset they asked for.
func TestConcurrentAppendRead(t *testing.T) {
	l := mustOpen(t, "/d", Config{FS: newMemFS(), SegmentBytes: 2000, IndexIntervalBytes: 150})
	defer mustClose(t, l)
	const appends = 400
	done := make(chan struct{})
	var wg sync.WaitGroup
	var firstReads sync.WaitGroup // every reader has read once: appends then overlap reads by construction
	firstReads.Add(3)
	errs := make(chan string, 8)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			reads := 0
			defer func() {
				if reads == 0 {
					firstReads.Done() // failed before reading: do not hold the appender up
				}
			}()
			for {
				select {
				case <-done:
					if reads == 0 {
						errs <- "a reader never read"
					}
					return
				default:
				}
				hw := l.HighWatermark()
				if hw == 0 {
					continue
				}
				off := rng.Int63n(hw)
				b, err := l.Read(off, int32(rng.Intn(3000)))
				if err != nil {
					errs <- err.Error()
					return
				}
				bs, err := tryDecodeBatches(b)
				if err != nil {
					errs <- err.Error()
					return
				}
				if len(bs) == 0 || bs[0].base > off || bs[0].last < off {
					errs <- "read did not start with the batch holding the offset"
					return
				}
				if reads++; reads == 1 {
					firstReads.Done()
				}
			}
		}(int64(r))
	}
	for i := 0; i < appends; i++ {
		if _, err := l.Append(newBatch(int64(i), values(i, 1+i%4, 30)...)); err != nil {
			t.Error(err)
			break
		}
		if i == 0 {
			read := make(chan struct{})
			go func() { firstReads.Wait(); close(read) }()
			select {
			case <-read:
			case <-time.After(10 * time.Second):
				close(done)
				wg.Wait()
				t.Fatal("the readers did not read within 10 s of the first append")
			}
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if hw := l.HighWatermark(); hw != sumRecords(appends) {
		t.Fatalf("high watermark %d, want %d", hw, sumRecords(appends))
	}
}

func sumRecords(appends int) (n int64) {
	for i := 0; i < appends; i++ {
		n += int64(1 + i%4)
	}
	return n
}

func concatBytes(bs ...[]byte) (out []byte) {
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}
