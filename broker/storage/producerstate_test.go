package storage

import (
	"errors"
	"math"
	"testing"
)

// pb is a batch of producer 7, epoch e, n records from sequence seq at offset off.
func pb(e int16, seq int32, n int32, off int64) ProducerBatch {
	return ProducerBatch{ProducerID: 7, ProducerEpoch: e, BaseSequence: seq, LastOffsetDelta: n - 1, BaseOffset: off, MaxTimestamp: 1000 + off}
}

// appendOK prepares and applies b, failing the test on an error or a duplicate.
func appendOK(t *testing.T, s *ProducerState, b ProducerBatch) {
	t.Helper()
	u, _, dup, err := s.Prepare([]ProducerBatch{b})
	if err != nil || dup {
		t.Fatalf("batch seq %d epoch %d: dup %v err %v", b.BaseSequence, b.ProducerEpoch, dup, err)
	}
	s.Apply(u)
}

// sixBatches: producer 7 appends 6 batches of 3 records (sequences 0-17, offsets 0-17).
func sixBatches(t *testing.T) *ProducerState {
	s := NewProducerState(0)
	for i := int32(0); i < 6; i++ {
		appendOK(t, s, pb(0, 3*i, 3, int64(3*i)))
	}
	return s
}

func TestProducerStateDuplicateOfEachOfTheLastFive(t *testing.T) {
	s := sixBatches(t)
	e, _ := s.Entry(7)
	if len(e.Batches) != BatchesToRetain || e.Batches[0].FirstSeq() != 3 || e.Batches[4].LastSeq != 17 {
		t.Fatalf("retained %+v, want the 5 batches of sequences 3-17", e.Batches)
	}
	for i := int32(1); i < 6; i++ {
		// The retry carries new offsets (the log would assign them): the answer is the original's.
		_, m, dup, err := s.Prepare([]ProducerBatch{pb(0, 3*i, 3, 100)})
		if err != nil || !dup {
			t.Fatalf("batch %d: dup %v err %v, want a duplicate", i, dup, err)
		}
		if m.FirstOffset() != int64(3*i) || m.LastOffset != int64(3*i+2) || m.Timestamp != 1000+int64(3*i) {
			t.Fatalf("batch %d: duplicate of offsets %d-%d ts %d, want %d-%d ts %d", i, m.FirstOffset(), m.LastOffset, m.Timestamp, 3*i, 3*i+2, 1000+3*i)
		}
	}
	if e2, _ := s.Entry(7); len(e2.Batches) != 5 || e2.Batches[4].LastOffset != 17 {
		t.Fatalf("Prepare changed the state: %+v", e2)
	}
}

func TestProducerStateSixthOlderBatchIsOutOfOrder(t *testing.T) {
	s := sixBatches(t)
	// Batch 0 (sequences 0-2) fell out of the 5 retained: not recognised, and 0 does not follow 17.
	_, _, dup, err := s.Prepare([]ProducerBatch{pb(0, 0, 3, 100)})
	if dup || !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("dup %v err %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", dup, err)
	}
	// A batch overlapping a retained one without matching its range is not a duplicate either.
	_, _, dup, err = s.Prepare([]ProducerBatch{pb(0, 4, 3, 100)})
	if dup || !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("overlap: dup %v err %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", dup, err)
	}
}

func TestProducerStateGap(t *testing.T) {
	s := sixBatches(t)
	_, _, dup, err := s.Prepare([]ProducerBatch{pb(0, 19, 1, 18)}) // 18 missing
	if dup || !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("dup %v err %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", dup, err)
	}
	appendOK(t, s, pb(0, 18, 1, 18)) // the next one is accepted
	// Two batches in one append are checked in order: the second must follow the first.
	_, _, _, err = s.Prepare([]ProducerBatch{pb(0, 19, 2, 19), pb(0, 22, 1, 21)})
	if !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("second batch of an append after a gap: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", err)
	}
	u, _, _, err := s.Prepare([]ProducerBatch{pb(0, 19, 2, 19), pb(0, 21, 1, 21)})
	if err != nil {
		t.Fatal(err)
	}
	s.Apply(u)
	if e, _ := s.Entry(7); e.Batches[4].LastSeq != 21 || e.Batches[0].FirstSeq() != 12 {
		t.Fatalf("after two batches in one append: %+v", e.Batches)
	}
}

func TestProducerStateOldEpoch(t *testing.T) {
	s := NewProducerState(0)
	appendOK(t, s, pb(3, 0, 2, 0))
	_, _, dup, err := s.Prepare([]ProducerBatch{pb(2, 2, 1, 2)})
	if dup || !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("dup %v err %v, want INVALID_PRODUCER_EPOCH", dup, err)
	}
	// Even an exact copy of an appended batch, sent with an older epoch, is refused, not a duplicate.
	_, _, dup, err = s.Prepare([]ProducerBatch{pb(2, 0, 2, 2)})
	if dup || !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old-epoch copy: dup %v err %v, want INVALID_PRODUCER_EPOCH", dup, err)
	}
}

func TestProducerStateEpochBump(t *testing.T) {
	s := sixBatches(t)
	// KIP-360: the idempotent producer bumps its epoch itself and restarts at sequence 0.
	_, _, _, err := s.Prepare([]ProducerBatch{pb(1, 18, 1, 18)})
	if !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("new epoch at sequence 18: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", err)
	}
	appendOK(t, s, pb(1, 0, 2, 18))
	e, _ := s.Entry(7)
	if e.Epoch != 1 || len(e.Batches) != 1 || e.Batches[0].FirstOffset() != 18 {
		t.Fatalf("after the bump: %+v, want epoch 1 with only the new batch", e)
	}
	// The old epoch's batches no longer count as duplicates: their retry is now an old epoch.
	if _, _, dup, err := s.Prepare([]ProducerBatch{pb(0, 15, 3, 20)}); dup || !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch's retry: dup %v err %v", dup, err)
	}
	if _, _, dup, err := s.Prepare([]ProducerBatch{pb(1, 0, 2, 20)}); !dup || err != nil {
		t.Fatalf("new epoch's retry: dup %v err %v, want a duplicate", dup, err)
	}
}

func TestProducerStateUnknownProducerAnySequence(t *testing.T) {
	s := NewProducerState(0)
	// 3.9: a producer the partition does not know (new, expired or removed) starts at any sequence.
	appendOK(t, s, pb(4, 42, 1, 0))
	appendOK(t, s, pb(4, 43, 1, 1))
	if _, _, _, err := s.Prepare([]ProducerBatch{pb(4, 45, 1, 2)}); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("known now: gap answered %v", err)
	}
	// Batches without a producer id are never checked.
	if u, _, dup, err := s.Prepare([]ProducerBatch{{ProducerID: NoProducerID, ProducerEpoch: -1, BaseSequence: -1}}); err != nil || dup || len(u.entries) != 0 {
		t.Fatalf("non-idempotent batch: %v %v %v", u, dup, err)
	}
}

func TestProducerStateSequenceWraps(t *testing.T) {
	s := NewProducerState(0)
	appendOK(t, s, pb(0, math.MaxInt32-1, 2, 0)) // sequences MaxInt32-1, MaxInt32
	appendOK(t, s, pb(0, 0, 2, 2))
	b := pb(0, math.MaxInt32, 3, 4) // MaxInt32, 0, 1
	if b.LastSequence() != 1 {
		t.Fatalf("last sequence %d, want 1", b.LastSequence())
	}
	if _, _, _, err := s.Prepare([]ProducerBatch{pb(0, 3, 1, 4)}); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap after the wrap: %v", err)
	}
}

func TestProducerStateInvalidBatches(t *testing.T) {
	s := NewProducerState(0)
	if _, _, _, err := s.Prepare([]ProducerBatch{pb(0, -1, 1, 0)}); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("negative sequence: %v, want INVALID_RECORD", err)
	}
	tx := pb(0, 0, 1, 0)
	tx.Transactional = true
	if _, _, _, err := s.Prepare([]ProducerBatch{tx}); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("transactional: %v, want INVALID_TXN_STATE", err)
	}
}

func TestProducerStateLoadAndExpire(t *testing.T) {
	s := NewProducerState(60_000)
	for i := int64(0); i < 7; i++ {
		s.Load(pb(0, int32(i), 1, i)) // timestamps 1000..1006
	}
	other := pb(0, 0, 1, 7)
	other.ProducerID, other.MaxTimestamp = 8, 50_000
	s.Load(other)
	if e, _ := s.Entry(7); len(e.Batches) != 5 || e.Batches[4].LastSeq != 6 || e.LastTimestamp != 1006 {
		t.Fatalf("loaded %+v", e)
	}
	if _, _, dup, _ := s.Prepare([]ProducerBatch{pb(0, 6, 1, 9)}); !dup {
		t.Fatal("a loaded batch is not recognised as a duplicate")
	}
	if n := s.RemoveExpired(61_006); n != 1 || s.Len() != 1 {
		t.Fatalf("removed %d, %d left; want producer 7 gone, 8 kept", n, s.Len())
	}
	if _, ok := s.Entry(7); ok {
		t.Fatal("producer 7 still known")
	}
}
