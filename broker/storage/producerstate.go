package storage

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Producer-state constants (org.apache.kafka.common.record.RecordBatch, ProducerStateEntry).
const (
	NoProducerID    = -1 // RecordBatch.NO_PRODUCER_ID: a batch of a producer that is not idempotent
	NoProducerEpoch = -1 // RecordBatch.NO_PRODUCER_EPOCH
	NoSequence      = -1 // RecordBatch.NO_SEQUENCE
	// BatchesToRetain is ProducerStateEntry.NUM_BATCHES_TO_RETAIN: the last batches per producer kept for
	// duplicate detection (the producer's max.in.flight.requests.per.connection is at most 5 for it).
	BatchesToRetain = 5
	// DefaultProducerIDExpirationMs is producer.id.expiration.ms: a producer with no batch whose
	// timestamp is within this many ms of now is forgotten (1 day).
	DefaultProducerIDExpirationMs = 24 * 60 * 60 * 1000
)

// Errors of the producer-state checks, as kerr values (the broker answers their codes).
var (
	// ErrOutOfOrderSequence: a batch's first sequence does not follow the producer's last one
	// (OutOfOrderSequenceException).
	ErrOutOfOrderSequence = kerr.OutOfOrderSequenceNumber
	// ErrInvalidProducerEpoch: a batch's producer epoch is below the producer's last one
	// (InvalidProducerEpochException).
	ErrInvalidProducerEpoch = kerr.InvalidProducerEpoch
	// ErrInvalidTxnState: a transactional batch with no transaction open on the partition; this log
	// serves no transactions (UnifiedLog.analyzeAndValidateProducerState's InvalidTxnStateException).
	ErrInvalidTxnState = kerr.InvalidTxnState
	// ErrInvalidRecord: records a log refuses (LogValidator's InvalidRecordException): an idempotent
	// batch with a negative base sequence (LogValidator.validateBatch).
	ErrInvalidRecord = kerr.InvalidRecord
)

// ProducerBatch is the producer fields of one batch, with the offsets the log gave it.
type ProducerBatch struct {
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	LastOffsetDelta int32
	BaseOffset      int64 // assigned by the log
	MaxTimestamp    int64 // ms
	Transactional   bool
}

// LastSequence is DefaultRecordBatch.lastSequence: the base sequence plus the offset delta, wrapping
// past math.MaxInt32 to 0.
func (b ProducerBatch) LastSequence() int32 {
	if b.BaseSequence == NoSequence {
		return NoSequence
	}
	return incrementSequence(b.BaseSequence, b.LastOffsetDelta)
}

func incrementSequence(seq, inc int32) int32 {
	if seq > math.MaxInt32-inc {
		return inc - (math.MaxInt32 - seq) - 1
	}
	return seq + inc
}

func decrementSequence(seq, dec int32) int32 {
	if seq < dec {
		return math.MaxInt32 - (dec - seq) + 1
	}
	return seq - dec
}

// BatchMetadata is what the state keeps of one appended batch (Kafka's BatchMetadata).
type BatchMetadata struct {
	LastSeq     int32
	LastOffset  int64
	OffsetDelta int32
	Timestamp   int64 // the batch's max timestamp, ms
}

// FirstSeq is the batch's base sequence.
func (m BatchMetadata) FirstSeq() int32 { return decrementSequence(m.LastSeq, m.OffsetDelta) }

// FirstOffset is the batch's base offset.
func (m BatchMetadata) FirstOffset() int64 { return m.LastOffset - int64(m.OffsetDelta) }

// ProducerEntry is one producer's state on a partition (Kafka's ProducerStateEntry): its epoch and
// its last BatchesToRetain batches, oldest first.
type ProducerEntry struct {
	ProducerID    int64
	Epoch         int16
	Batches       []BatchMetadata
	LastTimestamp int64 // ms
}

func emptyEntry(pid int64) ProducerEntry {
	return ProducerEntry{ProducerID: pid, Epoch: NoProducerEpoch, LastTimestamp: noTimestamp}
}

func (e *ProducerEntry) lastSeq() int32 {
	if len(e.Batches) == 0 {
		return NoSequence
	}
	return e.Batches[len(e.Batches)-1].LastSeq
}

// addBatch is ProducerStateEntry.addBatch: a new epoch drops the batches of the old one.
func (e *ProducerEntry) addBatch(epoch int16, m BatchMetadata) {
	if e.Epoch != epoch {
		e.Batches = nil
		e.Epoch = epoch
	}
	if len(e.Batches) == BatchesToRetain {
		e.Batches = slices.Delete(slices.Clone(e.Batches), 0, 1)
	}
	e.Batches = append(slices.Clip(e.Batches), m)
	e.LastTimestamp = m.Timestamp
}

// findDuplicate is ProducerStateEntry.findDuplicateBatch: the retained batch of the same epoch with
// exactly b's sequence range.
func (e *ProducerEntry) findDuplicate(b ProducerBatch) (BatchMetadata, bool) {
	if b.ProducerEpoch != e.Epoch {
		return BatchMetadata{}, false
	}
	first, last := b.BaseSequence, b.LastSequence()
	for _, m := range e.Batches {
		if m.FirstSeq() == first && m.LastSeq == last {
			return m, true
		}
	}
	return BatchMetadata{}, false
}

// ProducerState is a partition's producer state (Kafka's ProducerStateManager without transactions
// or snapshot files): per producer id its epoch and last batches. It is a pure structure, not safe for
// concurrent use; the Log calls it under its lock. The zero value is not usable: NewProducerState.
type ProducerState struct {
	producers    map[int64]*ProducerEntry
	expirationMs int64
}

// NewProducerState returns an empty state whose producers expire after expirationMs
// (producer.id.expiration.ms; 0 means DefaultProducerIDExpirationMs).
func NewProducerState(expirationMs int64) *ProducerState {
	if expirationMs == 0 {
		expirationMs = DefaultProducerIDExpirationMs
	}
	return &ProducerState{producers: map[int64]*ProducerEntry{}, expirationMs: expirationMs}
}

// Entry returns a copy of the producer's entry (ProducerStateManager.lastEntry).
func (s *ProducerState) Entry(pid int64) (ProducerEntry, bool) {
	e, ok := s.producers[pid]
	if !ok {
		return ProducerEntry{}, false
	}
	c := *e
	c.Batches = slices.Clone(e.Batches)
	return c, true
}

// Len is the number of producers known.
func (s *ProducerState) Len() int { return len(s.producers) }

// ProducerUpdate is the validated effect of one append on the producer state; Apply it once the
// batches are written (ProducerStateManager.update of each ProducerAppendInfo).
type ProducerUpdate struct {
	entries map[int64]ProducerEntry
}

// Prepare checks the batches of one client append, offsets assigned (UnifiedLog.analyzeAndValidateProducerState
// with origin CLIENT). Batches without a producer id are not checked. For each batch of an
// idempotent producer, in order:
//   - a batch of the producer's current epoch whose sequence range equals one of its retained
//     batches is a duplicate: Prepare returns that batch's metadata, dup true, and the caller writes
//     nothing of the append;
//   - a transactional batch: ErrInvalidTxnState (no transaction is ever open here);
//   - an epoch below the producer's: ErrInvalidProducerEpoch (ProducerAppendInfo.checkProducerEpoch);
//   - a new epoch must start at sequence 0, unless the producer is unknown; within the epoch the first
//     sequence must be the last one + 1 (0 after math.MaxInt32), unless the producer is unknown (no
//     epoch: never seen, expired, or its batches were removed): else ErrOutOfOrderSequence
//     (ProducerAppendInfo.checkSequence). 3.9 never answers UNKNOWN_PRODUCER_ID here: an unknown
//     producer's batch is accepted with any sequence.
//
// Errors wrap those kerr values with Kafka's message. Prepare does not change the state.
func (s *ProducerState) Prepare(batches []ProducerBatch) (u ProducerUpdate, dup BatchMetadata, isDup bool, err error) {
	u.entries = map[int64]ProducerEntry{}
	for _, b := range batches {
		if b.ProducerID < 0 { // RecordBatch.hasProducerId: above NO_PRODUCER_ID
			continue
		}
		if e, ok := s.producers[b.ProducerID]; ok {
			if m, found := e.findDuplicate(b); found {
				return ProducerUpdate{}, m, true, nil
			}
		}
		if b.BaseSequence < 0 {
			return ProducerUpdate{}, BatchMetadata{}, false, fmt.Errorf("%w: invalid sequence number %d in record batch with producerId %d",
				ErrInvalidRecord, b.BaseSequence, b.ProducerID)
		}
		if b.Transactional {
			return ProducerUpdate{}, BatchMetadata{}, false, fmt.Errorf("%w: record was not part of an ongoing transaction", ErrInvalidTxnState)
		}
		cur := s.current(b.ProducerID)
		upd, ok := u.entries[b.ProducerID]
		if !ok {
			upd = cur
			upd.Batches = nil // ProducerAppendInfo's updatedEntry starts with no batches
		}
		if err := checkBatch(cur, upd, b); err != nil {
			return ProducerUpdate{}, BatchMetadata{}, false, err
		}
		upd.addBatch(b.ProducerEpoch, metadataOf(b))
		u.entries[b.ProducerID] = upd
	}
	return u, BatchMetadata{}, false, nil
}

func metadataOf(b ProducerBatch) BatchMetadata {
	return BatchMetadata{LastSeq: b.LastSequence(), LastOffset: b.BaseOffset + int64(b.LastOffsetDelta), OffsetDelta: b.LastOffsetDelta, Timestamp: b.MaxTimestamp}
}

func (s *ProducerState) current(pid int64) ProducerEntry {
	if e, ok := s.producers[pid]; ok {
		return *e
	}
	return emptyEntry(pid)
}

// checkBatch is ProducerAppendInfo.checkProducerEpoch and checkSequence: cur is the producer's entry
// before this append, upd its entry with this append's earlier batches.
func checkBatch(cur, upd ProducerEntry, b ProducerBatch) error {
	if b.ProducerEpoch < upd.Epoch {
		return fmt.Errorf("%w: epoch of producer %d at offset %d is %d, which is smaller than the last seen epoch %d",
			ErrInvalidProducerEpoch, b.ProducerID, b.BaseOffset, b.ProducerEpoch, upd.Epoch)
	}
	if b.ProducerEpoch != upd.Epoch {
		if b.BaseSequence != 0 && upd.Epoch != NoProducerEpoch {
			return fmt.Errorf("%w: invalid sequence number for new epoch of producer %d at offset %d: %d (request epoch), %d (seq. number), %d (current producer epoch)",
				ErrOutOfOrderSequence, b.ProducerID, b.BaseOffset, b.ProducerEpoch, b.BaseSequence, upd.Epoch)
		}
		return nil
	}
	var last int32
	switch {
	case len(upd.Batches) > 0:
		last = upd.lastSeq()
	case b.ProducerEpoch == cur.Epoch:
		last = cur.lastSeq()
	default:
		last = NoSequence
	}
	// A producer with no epoch (all its records removed by retention) may go on with any sequence.
	if cur.Epoch != NoProducerEpoch && !inSequence(last, b.BaseSequence) {
		return fmt.Errorf("%w: out of order sequence number for producer %d at offset %d: %d (incoming seq. number), %d (current end sequence number)",
			ErrOutOfOrderSequence, b.ProducerID, b.BaseOffset, b.BaseSequence, last)
	}
	return nil
}

func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// Apply stores a prepared update (ProducerStateManager.update): each producer's entry takes the new
// epoch and batches, keeping at most BatchesToRetain of them.
func (s *ProducerState) Apply(u ProducerUpdate) {
	for _, pid := range slices.Sorted(maps.Keys(u.entries)) {
		upd := u.entries[pid]
		e, ok := s.producers[pid]
		if !ok {
			c := upd
			s.producers[pid] = &c
			continue
		}
		for _, m := range upd.Batches {
			e.addBatch(upd.Epoch, m)
		}
		if len(upd.Batches) == 0 && e.Epoch != upd.Epoch {
			e.Batches, e.Epoch = nil, upd.Epoch
		}
		e.LastTimestamp = upd.LastTimestamp
	}
}

// Load replays a batch read back from the log (UnifiedLog.loadProducersFromRecords, origin
// REPLICATION): no check, the batch is taken as the producer's latest.
func (s *ProducerState) Load(b ProducerBatch) {
	if b.ProducerID < 0 { // RecordBatch.hasProducerId: above NO_PRODUCER_ID
		return
	}
	e, ok := s.producers[b.ProducerID]
	if !ok {
		n := emptyEntry(b.ProducerID)
		e = &n
		s.producers[b.ProducerID] = e
	}
	e.addBatch(b.ProducerEpoch, metadataOf(b))
}

// RemoveExpired forgets the producers whose last batch's timestamp is producer.id.expiration.ms or
// more before nowMs (ProducerStateManager.removeExpiredProducers) and returns how many it removed.
func (s *ProducerState) RemoveExpired(nowMs int64) int {
	n := 0
	for pid, e := range s.producers {
		if nowMs-e.LastTimestamp >= s.expirationMs {
			delete(s.producers, pid)
			n++
		}
	}
	return n
}
