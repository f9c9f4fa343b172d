package storage

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// idemBatch is newBatch (one record per value, timestamps from ts) as an idempotent producer sends
// it: producer id pid, epoch, base sequence seq.
func idemBatch(pid int64, epoch int16, seq int32, ts int64, vals ...[]byte) []byte {
	var rb kmsg.RecordBatch
	b := newBatch(ts, vals...)
	if err := rb.ReadFrom(b); err != nil {
		panic(err)
	}
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = pid, epoch, seq
	return withCRC(rb)
}

func mustAppendRecords(t *testing.T, l *Log, b []byte) AppendResult {
	t.Helper()
	r, err := l.AppendRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestIdempotentAppendDuplicateAcrossReopen: a producer's retried batch is answered with the
// original offsets and not written, before and after the log is closed and opened again (the
// producer state rebuilt from the segments); a gap and an old epoch are refused and write nothing.
func TestIdempotentAppendDuplicateAcrossReopen(t *testing.T) {
	fs := newMemFS()
	// Record timestamps are from 1970: the clock stays near them, so that no producer expires.
	cfg := Config{FS: fs, SegmentBytes: 3 * batchSize, RetentionMs: -1, Now: newClock(5000).now}
	l := mustOpen(t, "/d", cfg)
	mustAppend(t, l, newBatch(1000, values(0, 2, 20)...)) // offsets 0-1, no producer id
	var batches [][]byte
	for i := int32(0); i < 4; i++ {
		b := idemBatch(11, 0, 2*i, 2000+int64(i), values(int(i), 2, 20)...)
		batches = append(batches, b)
		if r := mustAppendRecords(t, l, b); r.BaseOffset != int64(2+2*i) || r.Duplicate {
			t.Fatalf("batch %d: %+v, want base offset %d, not a duplicate", i, r, 2+2*i)
		}
	}
	check := func(when string) {
		t.Helper()
		hw := l.HighWatermark()
		for i, b := range batches {
			r := mustAppendRecords(t, l, b)
			want := AppendResult{BaseOffset: int64(2 + 2*i), LastOffset: int64(3 + 2*i), Duplicate: true, LogAppendTime: 2001 + int64(i)}
			if r != want {
				t.Fatalf("%s: retry of batch %d: %+v, want %+v", when, i, r, want)
			}
		}
		if l.HighWatermark() != hw {
			t.Fatalf("%s: retries moved the high watermark from %d to %d", when, hw, l.HighWatermark())
		}
		_, err := l.AppendRecords(idemBatch(11, 0, 9, 3000, values(9, 1, 20)...))
		wantErr(t, err, ErrOutOfOrderSequence)
		_, err = l.AppendRecords(idemBatch(11, -1+0, 8, 3000, values(9, 1, 20)...)) // epoch -1 < 0
		wantErr(t, err, ErrInvalidProducerEpoch)
		if l.HighWatermark() != hw {
			t.Fatalf("%s: refused appends moved the high watermark to %d", when, l.HighWatermark())
		}
	}
	check("open")
	mustClose(t, l)
	l = mustOpen(t, "/d", cfg)
	defer func() { mustClose(t, l) }()
	if got := l.Recovery().Producers; got != 1 {
		t.Fatalf("recovery found %d producers, want 1", got)
	}
	check("reopened")
	if r := mustAppendRecords(t, l, idemBatch(11, 0, 8, 3000, values(8, 1, 20)...)); r.BaseOffset != 10 || r.Duplicate {
		t.Fatalf("next batch after reopen: %+v", r)
	}
	if n := len(decodeBatches(t, readAll(t, l))); n != 6 {
		t.Fatalf("%d batches in the log, want 6: retries were written", n)
	}
}

// TestIdempotentStateAfterTruncationAndRetention: recovery that cuts a torn last batch forgets it
// (its retry is appended again, at the same offset); retention that deletes a producer's segments
// keeps its state in memory, as Kafka does, and a reopen rebuilds only from what remains: the
// producer is unknown and its next batch is taken at any sequence.
func TestIdempotentStateAfterTruncationAndRetention(t *testing.T) {
	fs := newMemFS()
	cfg := Config{FS: fs, SegmentBytes: 2 * batchSize, RetentionBytes: 1, RetentionMs: -1, FlushIntervalMessages: 1, Now: newClock(5000).now}
	l := mustOpen(t, "/d", cfg)
	a := idemBatch(21, 0, 0, 1000, values(0, 1, 20)...)
	b := idemBatch(21, 0, 1, 1001, values(1, 1, 20)...)
	mustAppendRecords(t, l, a)
	mustAppendRecords(t, l, b)
	mustClose(t, l)
	// Tear the last batch (offset 1) off segment 0.
	fs.mutate("/d/00000000000000000000.log", func(b []byte) []byte { return b[:len(b)-5] })
	l = mustOpen(t, "/d", cfg)
	if l.HighWatermark() != 1 {
		t.Fatalf("high watermark %d after recovery, want 1", l.HighWatermark())
	}
	if r := mustAppendRecords(t, l, b); r.Duplicate || r.BaseOffset != 1 {
		t.Fatalf("retry of the torn batch: %+v, want it written again at 1", r)
	}
	if r := mustAppendRecords(t, l, a); !r.Duplicate || r.BaseOffset != 0 {
		t.Fatalf("retry of the surviving batch: %+v, want the duplicate of 0", r)
	}
	// Segments [0 1] [2 3]: retention (bytes 1) deletes segment 0 with all of producer 21's batches.
	mustAppendRecords(t, l, newBatch(1002, values(2, 1, 20)...))
	mustAppendRecords(t, l, newBatch(1003, values(3, 1, 20)...))
	if err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 2 {
		t.Fatalf("log start %d, want 2", l.LogStartOffset())
	}
	if r := mustAppendRecords(t, l, b); !r.Duplicate || r.BaseOffset != 1 {
		t.Fatalf("after retention, in memory: %+v, want the duplicate of 1", r)
	}
	mustClose(t, l)
	l = mustOpen(t, "/d", cfg)
	defer func() { mustClose(t, l) }()
	if _, ok := l.ProducerEntry(21); ok {
		t.Fatal("producer 21 known after a reopen although none of its batches remain")
	}
	if r := mustAppendRecords(t, l, idemBatch(21, 0, 7, 1004, values(7, 1, 20)...)); r.Duplicate || r.BaseOffset != 4 {
		t.Fatalf("unknown producer at sequence 7: %+v, want it written at 4", r)
	}
}

// TestIdempotentProducerExpiry: a producer idle past producer.id.expiration.ms is forgotten by
// EnforceRetention and by Open.
func TestIdempotentProducerExpiry(t *testing.T) {
	clock := newClock(10_000)
	cfg := Config{FS: newMemFS(), ProducerIDExpirationMs: 5_000, RetentionMs: -1, Now: clock.now}
	l := mustOpen(t, "/d", cfg)
	defer func() { mustClose(t, l) }()
	mustAppendRecords(t, l, idemBatch(31, 0, 0, 9_000, values(0, 1, 20)...))
	clock.set(13_999)
	if err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.ProducerEntry(31); !ok {
		t.Fatal("expired early")
	}
	clock.set(14_000)
	if err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.ProducerEntry(31); ok {
		t.Fatal("producer 31 not expired 5 s after its last batch")
	}
	if _, err := l.AppendRecords(idemBatch(31, 0, 5, 14_000, values(5, 1, 20)...)); err != nil {
		t.Fatalf("expired producer's next batch: %v, want it accepted at any sequence", err)
	}
	if _, err := l.AppendRecords(idemBatch(31, 0, 0, 14_000, values(0, 1, 20)...)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("after it came back: %v", err)
	}
}
