package storage

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"testing"
)

// TestSliceMatchesRead: over several segments and every offset, SliceUpTo's bytes are exactly what
// ReadUpTo returns for the same offset, maxBytes and limit, and what Read returns with no limit.
func TestSliceMatchesRead(t *testing.T) {
	for _, fs := range []struct {
		name string
		fs   FS
	}{{"os", OS}, {"mem", newMemFS()}} {
		t.Run(fs.name, func(t *testing.T) {
			l := mustOpen(t, t.TempDir(), Config{FS: fs.fs, SegmentBytes: 12000})
			defer mustClose(t, l)
			for i := 0; i < 40; i++ {
				n, size := 1+i%4, 50+i*37%900
				if i%7 == 3 { // large batches too: extent reads one header after them, a window after small ones
					n, size = 3, 1800
				}
				mustAppend(t, l, newBatch(int64(i), values(i, n, size)...))
			}
			leo := l.LogEndOffset()
			if n := len(l.segs); n < 4 {
				t.Fatalf("%d segments, want at least 4 for the test to cross segments", n)
			}
			for off := int64(0); off <= leo; off++ {
				for _, maxBytes := range []int32{-1, 0, 1, 200, 1500, 5000, math.MaxInt32} {
					for _, limit := range []int64{0, off, off + 1, off + 5, leo, math.MaxInt64} {
						want, err := l.ReadUpTo(off, maxBytes, limit)
						if limit == math.MaxInt64 {
							want, err = l.Read(off, maxBytes)
						}
						if err != nil {
							t.Fatal(err)
						}
						s, err := l.SliceUpTo(off, maxBytes, limit)
						if err != nil {
							t.Fatal(err)
						}
						got, err := s.AppendTo(nil)
						s.Release()
						if err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(got, want) || s.Size != int64(len(want)) {
							t.Fatalf("SliceUpTo(%d, %d, %d): %d bytes (Size %d), ReadUpTo: %d", off, maxBytes, limit, len(got), s.Size, len(want))
						}
					}
				}
			}
			if _, err := l.SliceUpTo(leo+1, 100, math.MaxInt64); !errors.Is(err, ErrOffsetOutOfRange) {
				t.Fatalf("SliceUpTo above the log end offset: %v, want ErrOffsetOutOfRange", err)
			}
		})
	}
}

// TestSliceOutlivesItsSegment: a Slice keeps its segment's file open and readable while retention
// deletes the segment and while the log closes; the file closes at the Release. A truncation that
// cuts into a held Slice makes its read come back short, and once appends have written other batches
// where its bytes were, its read and Check fail with ErrSliceTruncated.
func TestSliceOutlivesItsSegment(t *testing.T) {
	l := mustOpen(t, t.TempDir(), Config{SegmentBytes: 4096, RetentionBytes: 1, RetentionMs: -1}) // the batches are stamped in 1970
	for i := 0; i < 12; i++ {
		mustAppend(t, l, newBatch(int64(i), values(i, 2, 700)...))
	}
	want, err := l.Read(0, math.MaxInt32)
	if err != nil || len(want) == 0 {
		t.Fatalf("Read(0) = %d bytes, %v", len(want), err)
	}
	first, err := l.SliceUpTo(0, math.MaxInt32, math.MaxInt64)
	if err != nil || first.Size != int64(len(want)) {
		t.Fatalf("SliceUpTo(0) = Size %d, %v; want %d", first.Size, err, len(want))
	}
	if err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if lso := l.LogStartOffset(); lso == 0 {
		t.Fatal("retention deleted no segment: the test needs the first one gone")
	}
	got, err := first.AppendTo(nil)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("after retention the held slice read %d bytes, %v; want the %d bytes taken", len(got), err, len(want))
	}

	// The active segment's tail: a truncation into it cuts the held bytes.
	leo := l.LogEndOffset()
	tail, err := l.SliceUpTo(leo-2, math.MaxInt32, math.MaxInt64)
	if err != nil || tail.Size == 0 {
		t.Fatalf("SliceUpTo(%d) = Size %d, %v", leo-2, tail.Size, err)
	}
	if err := l.TruncateTo(leo - 2); err != nil {
		t.Fatal(err)
	}
	if _, err := tail.AppendTo(nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("reading a slice the log truncated: %v, want io.ErrUnexpectedEOF", err)
	}
	tail.Release()

	// Truncated and appended to again: the held bytes are other batches now, and Check says so.
	leo = l.LogEndOffset()
	again, err := l.SliceUpTo(leo-2, math.MaxInt32, math.MaxInt64)
	if err != nil || again.Size == 0 || again.Check() != nil {
		t.Fatalf("SliceUpTo(%d) = Size %d, %v, Check %v", leo-2, again.Size, err, again.Check())
	}
	if err := l.TruncateTo(leo - 2); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		mustAppend(t, l, newBatch(int64(100+i), values(100+i, 3, 900)...))
	}
	if _, err := again.AppendTo(nil); !errors.Is(err, ErrSliceTruncated) {
		t.Fatalf("reading a slice whose bytes were truncated and written again: %v, want ErrSliceTruncated", err)
	}
	if err := again.Check(); !errors.Is(err, ErrSliceTruncated) {
		t.Fatalf("Check after the truncation: %v", err)
	}
	again.Release()

	mustClose(t, l)
	if got, err := first.AppendTo(nil); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("after Close the held slice read %d bytes, %v", len(got), err)
	}
	f := first.File().(osFile).File
	first.Release()
	if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("the deleted segment's file after the last Release: read error %v, want os.ErrClosed", err)
	}
}
