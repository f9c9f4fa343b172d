package storage

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// oneBatch appends a single-record batch of a fixed size (value 20 bytes) with
// timestamp ts and returns it as stored.
func oneBatch(t *testing.T, l *Log, i int, ts int64) written {
	t.Helper()
	b := newBatch(ts, values(i, 1, 20)...)
	base := mustAppend(t, l, b)
	return written{base: base, last: base, stored: stamped(b, base, l.LeaderEpoch())}
}

var batchSize = int64(len(newBatch(0, values(0, 1, 20)...)))

func TestRollBySize(t *testing.T) {
	l := mustOpen(t, "/d", Config{FS: newMemFS(), SegmentBytes: 3 * batchSize})
	defer mustClose(t, l)
	var ws []written
	for i := 0; i < 10; i++ {
		ws = append(ws, oneBatch(t, l, i, 1000))
	}
	if got := segBases(l); !slices.Equal(got, []int64{0, 3, 6, 9}) {
		t.Fatalf("segments %v, want [0 3 6 9] (3 batches of %d bytes each at log.segment.bytes %d)", got, batchSize, 3*batchSize)
	}
	if !bytes.Equal(readAll(t, l), concat(ws)) {
		t.Fatal("content differs")
	}
}

func TestRollByTime(t *testing.T) {
	t.Run("record timestamps", func(t *testing.T) {
		fs := newMemFS()
		cfg := Config{FS: fs, SegmentMs: 1000}
		l := mustOpen(t, "/d", cfg)
		// Kafka measures log.roll.ms from the segment's first timestamp to the
		// incoming records' largest one.
		for i, ts := range []int64{10_000, 10_900, 11_000, 11_001, 11_500, 9_000} {
			oneBatch(t, l, i, ts)
		}
		if got := segBases(l); !slices.Equal(got, []int64{0, 3}) {
			t.Fatalf("segments %v, want [0 3]", got)
		}
		mustClose(t, l)
		l = mustOpen(t, "/d", cfg) // the first timestamp of a segment is recovered from its first batch
		defer mustClose(t, l)
		oneBatch(t, l, 6, 12_001)
		oneBatch(t, l, 7, 12_002)
		if got := segBases(l); !slices.Equal(got, []int64{0, 3, 7}) {
			t.Fatalf("segments %v, want [0 3 7]", got)
		}
	})
	t.Run("no timestamps", func(t *testing.T) {
		clock := newClock(1000)
		l := mustOpen(t, "/d", Config{FS: newMemFS(), SegmentMs: 1000, Now: clock.now})
		defer mustClose(t, l)
		oneBatch(t, l, 0, -1)
		clock.advance(1000)
		oneBatch(t, l, 1, -1) // 1000 ms old: not more than log.roll.ms
		clock.advance(1)
		oneBatch(t, l, 2, -1) // 1001 ms: roll
		clock.advance(1000)
		oneBatch(t, l, 3, -1)
		if got := segBases(l); !slices.Equal(got, []int64{0, 2}) {
			t.Fatalf("segments %v, want [0 2]", got)
		}
	})
	t.Run("empty segment never rolls", func(t *testing.T) {
		clock := newClock(0)
		l := mustOpen(t, "/d", Config{FS: newMemFS(), SegmentMs: 10, Now: clock.now})
		defer mustClose(t, l)
		clock.advance(1_000_000)
		oneBatch(t, l, 0, -1)
		if got := segBases(l); !slices.Equal(got, []int64{0}) {
			t.Fatalf("segments %v, want [0]", got)
		}
	})
}

func TestRetentionBySize(t *testing.T) {
	fs := newMemFS()
	cfg := Config{FS: fs, SegmentBytes: 2 * batchSize, RetentionBytes: 5 * batchSize, RetentionMs: -1} // timestamps are from 1970
	l := mustOpen(t, "/d", cfg)
	var ws []written
	for i := 0; i < 10; i++ {
		ws = append(ws, oneBatch(t, l, i, 1000))
	}
	if got := segBases(l); !slices.Equal(got, []int64{0, 2, 4, 6, 8}) {
		t.Fatalf("segments %v, want [0 2 4 6 8]", got)
	}
	if err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	// 10 batches, limit 5: deleting segments 0 and 2 leaves 6 >= 5; deleting 4 too would leave 4 < 5.
	if got := segBases(l); !slices.Equal(got, []int64{4, 6, 8}) || l.LogStartOffset() != 4 || l.HighWatermark() != 10 {
		t.Fatalf("segments %v, log start %d, high watermark %d; want [4 6 8], 4, 10", got, l.LogStartOffset(), l.HighWatermark())
	}
	checkFiles(t, fs, 4, 6, 8)
	_, err := l.Read(3, 100)
	wantErr(t, err, ErrOffsetOutOfRange)
	if !bytes.Equal(readAll(t, l), concat(ws[4:])) {
		t.Fatal("content differs")
	}
	mustClose(t, l)

	// log.retention.bytes 1: everything but the active segment goes.
	cfg.RetentionBytes = 1
	l = mustOpen(t, "/d", cfg)
	defer mustClose(t, l)
	if l.LogStartOffset() != 4 {
		t.Fatalf("log start offset %d after reopen, want 4", l.LogStartOffset())
	}
	if err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if got := segBases(l); !slices.Equal(got, []int64{8}) || l.LogStartOffset() != 8 {
		t.Fatalf("segments %v, want [8]: the active segment is never deleted", got)
	}
	checkFiles(t, fs, 8)
	if w := oneBatch(t, l, 10, 1000); w.base != 10 {
		t.Fatalf("append after retention at %d, want 10", w.base)
	}
}

func TestRetentionByTime(t *testing.T) {
	t.Run("record timestamps", func(t *testing.T) {
		fs := newMemFS()
		clock := newClock(0)
		l := mustOpen(t, "/d", Config{FS: fs, SegmentBytes: 2 * batchSize, RetentionMs: 500, Now: clock.now})
		defer mustClose(t, l)
		for i, ts := range []int64{1000, 1100, 2000, 2100, 3000} {
			oneBatch(t, l, i, ts)
		}
		clock.set(2500) // segment 0's largest timestamp 1100 is 1400 ms old; segment 2's 2100 only 400
		if err := l.EnforceRetention(); err != nil {
			t.Fatal(err)
		}
		if got := segBases(l); !slices.Equal(got, []int64{2, 4}) || l.LogStartOffset() != 2 {
			t.Fatalf("segments %v, want [2 4]", got)
		}
		checkFiles(t, fs, 2, 4)
		clock.set(100_000)
		if err := l.EnforceRetention(); err != nil {
			t.Fatal(err)
		}
		// Every record is past retention, the active segment's too: as Kafka's deletableSegments, it
		// goes, after a new, empty active segment was rolled at the log end.
		if got := segBases(l); !slices.Equal(got, []int64{5}) || l.LogStartOffset() != 5 || l.LogEndOffset() != 5 || l.HighWatermark() != 5 {
			t.Fatalf("segments %v, log [%d, %d), HW %d; want [5], [5, 5), 5", got, l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark())
		}
		checkFiles(t, fs, 5)
		if w := oneBatch(t, l, 5, 100_000); w.base != 5 {
			t.Fatalf("append after retention at %d, want 5", w.base)
		}
		// An empty active segment is never deleted: a log always has one.
		clock.set(1 << 40)
		if err := l.EnforceRetention(); err != nil {
			t.Fatal(err)
		}
		if got := segBases(l); !slices.Equal(got, []int64{6}) {
			t.Fatalf("segments %v after a second expiry, want [6]", got)
		}
		if err := l.EnforceRetention(); err != nil {
			t.Fatal(err)
		}
		if got := segBases(l); !slices.Equal(got, []int64{6}) {
			t.Fatalf("segments %v with only an empty active segment, want [6]", got)
		}
	})
	t.Run("no timestamps", func(t *testing.T) {
		clock := newClock(1000)
		l := mustOpen(t, "/d", Config{FS: newMemFS(), SegmentBytes: 2 * batchSize, RetentionMs: 1500, Now: clock.now})
		defer mustClose(t, l)
		oneBatch(t, l, 0, -1)
		oneBatch(t, l, 1, -1) // segment 0 last appended at 1000
		clock.set(2000)
		oneBatch(t, l, 2, -1)
		oneBatch(t, l, 3, -1) // segment 2 last appended at 2000
		clock.set(3000)
		oneBatch(t, l, 4, -1)
		if err := l.EnforceRetention(); err != nil {
			t.Fatal(err)
		}
		if got := segBases(l); !slices.Equal(got, []int64{2, 4}) {
			t.Fatalf("segments %v, want [2 4]", got)
		}
	})
	t.Run("unlimited", func(t *testing.T) {
		clock := newClock(0)
		l := mustOpen(t, "/d", Config{FS: newMemFS(), SegmentBytes: batchSize, RetentionMs: -1, Now: clock.now})
		defer mustClose(t, l)
		for i := 0; i < 4; i++ {
			oneBatch(t, l, i, 1)
		}
		clock.set(1 << 50)
		if err := l.EnforceRetention(); err != nil {
			t.Fatal(err)
		}
		if got := segBases(l); len(got) != 4 {
			t.Fatalf("segments %v, want all 4 with retention -1", got)
		}
	})
}

// checkFiles asserts the directory holds exactly the given segments and the
// epoch checkpoint.
func checkFiles(t *testing.T, fs FS, bases ...int64) {
	t.Helper()
	want := []string{epochCheckpointName}
	for _, b := range bases {
		want = append(want, fmt.Sprintf("%020d.index", b), fmt.Sprintf("%020d.log", b))
	}
	slices.Sort(want)
	got, err := fs.ReadDir("/d")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v, want %v", got, want)
	}
}
