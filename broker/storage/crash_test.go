package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestCrashFlushEveryMessage: with log.flush.interval.messages=1 every
// acknowledged batch survives a power loss, across rolls, with unsynced index
// bytes torn at random.
func TestCrashFlushEveryMessage(t *testing.T) {
	fs := newMemFS()
	cfg := Config{FS: fs, FlushIntervalMessages: 1, SegmentBytes: 1500, IndexIntervalBytes: 100}
	rng := rand.New(rand.NewSource(7))
	var acked []written
	for round := 0; round < 6; round++ {
		l := mustOpen(t, "/d", cfg)
		if r := l.Recovery(); round > 0 && (r.TruncatedBytes != 0 || r.DeletedSegments != 0) {
			t.Fatalf("round %d: recovery cut acknowledged data: %+v", round, r)
		}
		if hw, want := l.HighWatermark(), nextOffset(acked); hw != want {
			t.Fatalf("round %d: high watermark %d after crash, want %d (every acknowledged record)", round, hw, want)
		}
		if got := readAll(t, l); !bytes.Equal(got, concat(acked)) {
			t.Fatalf("round %d: content after crash differs from what was acknowledged", round)
		}
		acked = append(acked, fill(t, l, int64(round), 10+rng.Intn(30))...)
		// kill -9 plus power loss: no Close; unsynced bytes are dropped, except a
		// random prefix of each file's unsynced tail.
		fs.crash(func(name string, unsynced []byte) int { return rng.Intn(len(unsynced) + 1) })
	}
	if n := len(segBases(mustOpenClose(t, "/d", cfg))); n < 3 {
		t.Fatalf("only %d segments; the test needs rolls", n)
	}
}

func mustOpenClose(t *testing.T, dir string, cfg Config) *Log {
	l := mustOpen(t, dir, cfg)
	mustClose(t, l)
	return l
}

func nextOffset(ws []written) int64 {
	if len(ws) == 0 {
		return 0
	}
	return ws[len(ws)-1].last + 1
}

// TestCrashWithoutFlush is the control: with Kafka's default (no flush) a power
// loss drops what was appended but not synced; Sync makes it durable.
func TestCrashWithoutFlush(t *testing.T) {
	fs := newMemFS()
	cfg := Config{FS: fs}
	l := mustOpen(t, "/d", cfg)
	fill(t, l, 1, 20)
	if n := fs.syncs["/d/00000000000000000000.log"]; n != 0 {
		t.Fatalf("%d fsyncs of the segment with log.flush.interval.messages at its default; want 0", n)
	}
	fs.crash(nil)
	l = mustOpen(t, "/d", cfg)
	if hw := l.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d after a crash with nothing synced, want 0", hw)
	}
	ws := fill(t, l, 2, 20)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	fs.crash(nil)
	l = mustOpen(t, "/d", cfg)
	defer mustClose(t, l)
	if hw := l.HighWatermark(); hw != nextOffset(ws) {
		t.Fatalf("high watermark %d after Sync and crash, want %d", hw, nextOffset(ws))
	}
	if !bytes.Equal(readAll(t, l), concat(ws)) {
		t.Fatal("synced content lost")
	}
}

// tailFixture builds a log whose earlier batches are synced and whose last
// batch is not, optionally in a segment of its own.
func tailFixture(t *testing.T, ownSegment bool) (fs *memFS, cfg Config, prefix []written, last written, lastPos int64, lastLog string) {
	fs = newMemFS()
	cfg = Config{FS: fs, IndexIntervalBytes: 100}
	if ownSegment {
		cfg.SegmentBytes = 1000
	}
	l := mustOpen(t, "/d", cfg)
	next := newBatch(9, values(99, 3, 20)...)
	for i := 0; l.HighWatermark() < 40 || (ownSegment && l.active().size+int64(len(next)) <= cfg.SegmentBytes); i++ {
		b := newBatch(int64(i), values(i, 1+i%3, 15)...)
		base := mustAppend(t, l, b)
		prefix = append(prefix, written{base: base, last: base + int64(i%3), stored: stamped(b, base, 0)})
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	b := next
	base := mustAppend(t, l, b)
	last = written{base: base, last: base + 2, stored: stamped(b, base, 0)}
	s := l.active()
	lastPos, lastLog = s.size-int64(len(b)), segmentPath("/d", s.base, logSuffix)
	if ownSegment != (lastPos == 0) || (ownSegment && len(l.segs) < 2) {
		t.Fatalf("fixture: last batch at position %d of %d segments", lastPos, len(l.segs))
	}
	return fs, cfg, prefix, last, lastPos, lastLog
}

// TestTornTailEveryByte: a power loss that keeps k bytes of the last batch, for
// every k: recovery keeps exactly the batches before it, never serves the torn
// one, and appending continues at its offset.
func TestTornTailEveryByte(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("own-segment=%v", own), func(t *testing.T) {
			fs, cfg, prefix, last, _, lastLog := tailFixture(t, own)
			for k := 0; k <= len(last.stored); k++ {
				c := fs.clone()
				cfg.FS = c
				c.crash(func(name string, unsynced []byte) int {
					if name == lastLog {
						return k
					}
					return len(unsynced) / 2 // the index is torn too
				})
				want := prefix
				if k == len(last.stored) {
					want = append(append([]written(nil), prefix...), last)
				}
				r := checkRecovered(t, cfg, want)
				if k < len(last.stored) && (r.TruncatedBytes != int64(k) || (k > 0) != (r.Problem != "")) {
					t.Fatalf("k=%d: recovery %+v, want %d bytes truncated", k, r, k)
				}
			}
		})
	}
}

// TestCorruptTailEveryByte: the last batch with one byte changed, for every
// byte (all bits flipped, then only the lowest): recovery drops exactly that
// batch, whichever header field or record byte it hit.
func TestCorruptTailEveryByte(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("own-segment=%v", own), func(t *testing.T) {
			fs, cfg, prefix, last, lastPos, lastLog := tailFixture(t, own)
			fs.crash(func(_ string, unsynced []byte) int { return len(unsynced) }) // everything reached the disk
			for _, mask := range []byte{0xff, 0x01} {
				for i := 0; i < len(last.stored); i++ {
					c := fs.clone()
					cfg.FS = c
					c.mutate(lastLog, func(b []byte) []byte { b[lastPos+int64(i)] ^= mask; return b })
					r := checkRecovered(t, cfg, prefix)
					if r.TruncatedBytes != int64(len(last.stored)) || r.Problem == "" {
						t.Fatalf("byte %d ^ %#x: recovery %+v, want the %d-byte batch cut", i, mask, r, len(last.stored))
					}
				}
			}
		})
	}
}

// checkRecovered opens the log and checks it holds exactly want, reads only
// valid batches, and appends at the right offset afterwards (and durably).
func checkRecovered(t *testing.T, cfg Config, want []written) RecoveryStats {
	t.Helper()
	l := mustOpen(t, "/d", cfg)
	r := l.Recovery()
	hw := nextOffset(want)
	if got := l.HighWatermark(); got != hw {
		t.Fatalf("high watermark %d after recovery (%+v), want %d", got, r, hw)
	}
	if got := readAll(t, l); !bytes.Equal(got, concat(want)) {
		t.Fatalf("content after recovery differs (%d vs %d bytes; %+v)", len(got), len(concat(want)), r)
	}
	b := newBatch(5, values(7, 2, 9)...)
	if off := mustAppend(t, l, b); off != hw {
		t.Fatalf("append after recovery at %d, want %d", off, hw)
	}
	if got, err := l.Read(hw, 1); err != nil || !bytes.Equal(got, stamped(b, hw, l.LeaderEpoch())) {
		t.Fatalf("Read(%d) after recovery = %v; want the new batch", hw, err)
	}
	mustClose(t, l)
	l = mustOpen(t, "/d", cfg)
	defer mustClose(t, l)
	if rr := l.Recovery(); rr.Problem != "" || l.HighWatermark() != hw+2 {
		t.Fatalf("second open: recovery %+v, high watermark %d; want clean, %d", rr, l.HighWatermark(), hw+2)
	}
	return r
}

// TestCorruptMiddleBatch: corruption in an older segment removes that batch and
// everything after it, later segments included.
func TestCorruptMiddleBatch(t *testing.T) {
	fs := newMemFS()
	cfg := Config{FS: fs, SegmentBytes: 800}
	l := mustOpen(t, "/d", cfg)
	ws := fill(t, l, 5, 60)
	bases := segBases(l)
	mustClose(t, l)
	if len(bases) < 5 {
		t.Fatalf("fixture: %d segments", len(bases))
	}
	// Corrupt the last batch of the second segment (a CRC-covered timestamp byte).
	target, pos := -1, 0
	for i, w := range ws {
		if w.base >= bases[1] && w.base < bases[2] {
			if target >= 0 {
				pos += len(ws[target].stored)
			}
			target = i
		}
	}
	fs.mutate(segmentPath("/d", bases[1], logSuffix), func(b []byte) []byte { b[pos+30] ^= 0x10; return b })
	l = mustOpen(t, "/d", cfg)
	defer mustClose(t, l)
	r := l.Recovery()
	if r.DeletedSegments != len(bases)-2 || !strings.Contains(r.Problem, "CRC") {
		t.Fatalf("recovery %+v, want %d later segments deleted for a CRC mismatch", r, len(bases)-2)
	}
	if hw := l.HighWatermark(); hw != ws[target].base {
		t.Fatalf("high watermark %d, want %d", hw, ws[target].base)
	}
	if !bytes.Equal(readAll(t, l), concat(ws[:target])) {
		t.Fatal("content differs from the batches before the corrupt one")
	}
	names, _ := fs.ReadDir("/d")
	want := []string{"00000000000000000000.index", "00000000000000000000.log",
		fmt.Sprintf("%020d.index", bases[1]), fmt.Sprintf("%020d.log", bases[1]), epochCheckpointName}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v, want %v", names, want)
	}
}

// TestLeaderEpoch: batches carry the leader epoch, the checkpoint records where
// each epoch starts, a lost checkpoint is rebuilt from the batches.
func TestLeaderEpoch(t *testing.T) {
	fs := newMemFS()
	cfg := Config{FS: fs}
	l := mustOpen(t, "/d", cfg)
	a := fill(t, l, 1, 3)
	if err := l.SetLeaderEpoch(3); err != nil {
		t.Fatal(err)
	}
	wantErr(t, l.SetLeaderEpoch(2), errFenced)
	b := fill(t, l, 2, 3)
	for _, w := range append(a, b...) {
		got, _ := l.Read(w.base, 1)
		if !bytes.Equal(got, w.stored) {
			t.Fatalf("batch %d not stored with its epoch", w.base)
		}
	}
	wantCP := fmt.Sprintf("0\n2\n0 0\n3 %d\n", b[0].base)
	if got := string(fs.content("/d/" + epochCheckpointName)); got != wantCP {
		t.Fatalf("checkpoint %q, want %q", got, wantCP)
	}
	mustClose(t, l)

	if err := fs.Remove("/d/" + epochCheckpointName); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/d", cfg)
	if r := l.Recovery(); r.EpochCheckpoint != "missing" || r.Problem != "" || l.LeaderEpoch() != 3 {
		t.Fatalf("recovery %+v, epoch %d; want a rebuilt checkpoint, epoch 3", r, l.LeaderEpoch())
	}
	if got := string(fs.content("/d/" + epochCheckpointName)); got != wantCP {
		t.Fatalf("rebuilt checkpoint %q, want %q", got, wantCP)
	}
	mustClose(t, l)
	fs.mutate("/d/"+epochCheckpointName, func([]byte) []byte { return []byte("garbage") })
	l = mustOpen(t, "/d", Config{FS: fs, LeaderEpoch: 5})
	defer mustClose(t, l)
	if r := l.Recovery(); r.EpochCheckpoint != "rebuilt" || r.Problem != "" || l.LeaderEpoch() != 5 {
		t.Fatalf("recovery %+v, epoch %d; want a rebuilt checkpoint, epoch 5 from Config", r, l.LeaderEpoch())
	}
	c := fill(t, l, 3, 1)
	if got, _ := l.Read(c[0].base, 1); !bytes.Equal(got, c[0].stored) || l.LeaderEpoch() != 5 {
		t.Fatal("epoch 5 not stamped")
	}
}

// TestWriteFailureUndone: a short write (disk full) fails the Append and leaves
// the log as it was; the log keeps working.
func TestWriteFailureUndone(t *testing.T) {
	fs := newMemFS()
	l := mustOpen(t, "/d", Config{FS: fs})
	defer mustClose(t, l)
	ws := fill(t, l, 1, 5)
	before := fs.files()
	fs.writeHook = func(name string, p []byte) (int, error) { return len(p) / 2, errDiskFull }
	_, err := l.Append(newBatch(1, values(1, 2, 10)...))
	wantErr(t, err, errDiskFull)
	fs.writeHook = nil
	if after := fs.files(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatal("files changed by a failed append")
	}
	ws = append(ws, fill(t, l, 2, 2)...)
	if !bytes.Equal(readAll(t, l), concat(ws)) {
		t.Fatal("content wrong after a failed append")
	}
}

// TestFsyncFailureIsFatal: after a failed fsync the log refuses further use
// (Kafka takes the log directory offline) instead of acknowledging.
func TestFsyncFailureIsFatal(t *testing.T) {
	fs := newMemFS()
	l := mustOpen(t, "/d", Config{FS: fs, FlushIntervalMessages: 1})
	fill(t, l, 1, 2)
	fs.syncHook = func(string) error { return errDiskFull }
	_, err := l.Append(newBatch(1, values(1, 1, 10)...))
	wantErr(t, err, errDiskFull)
	fs.syncHook = nil
	_, err = l.Append(newBatch(1, values(1, 1, 10)...))
	wantErr(t, err, errDiskFull)
	_, err = l.Read(0, 1)
	wantErr(t, err, errDiskFull)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = l.Read(0, 1)
	wantErr(t, err, ErrClosed)
}

var (
	errDiskFull = errors.New("no space left on device")
	errFenced   = kerr.FencedLeaderEpoch
)
