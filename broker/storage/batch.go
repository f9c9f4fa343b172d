package storage

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

// Errors. They are kerr values, so the broker can answer with their code directly
// (errors.As(err, new(*kerr.Error))); the returned errors wrap them with detail.
var (
	// ErrCorruptRecord: a batch failed validation (size, magic, CRC-32C, record
	// framing) — Kafka's CorruptRecordException / InvalidRecordException.
	ErrCorruptRecord = kerr.CorruptMessage
	// ErrOffsetOutOfRange: Read or ReadUpTo below LogStartOffset or above LogEndOffset;
	// AppendAsFollower of batches starting below LogEndOffset (Kafka's follower raises
	// UnexpectedAppendOffsetException, which has no error code) or leaving a gap in a log
	// that is not compacted.
	ErrOffsetOutOfRange = kerr.OffsetOutOfRange
	// ErrRecordBatchTooLarge: the records of one Append are larger than
	// log.segment.bytes (Kafka's RecordBatchTooLargeException).
	ErrRecordBatchTooLarge = kerr.RecordListTooLarge
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("storage: log closed")
)

// Layout of a v2 RecordBatch (org.apache.kafka.common.record.DefaultRecordBatch; the codec is
// package recordbatch). baseOffset and length form Kafka's LOG_OVERHEAD; the CRC covers attributes
// onward, so baseOffset and partitionLeaderEpoch can be rewritten without touching it.
const (
	offLength               = recordbatch.OffLength
	offPartitionLeaderEpoch = recordbatch.OffPartitionLeaderEpoch
	offMagic                = recordbatch.OffMagic
	offCRC                  = recordbatch.OffCRC
	offAttributes           = recordbatch.OffAttributes
	offLastOffsetDelta      = recordbatch.OffLastOffsetDelta
	offMaxTimestamp         = recordbatch.OffMaxTimestamp
	logOverhead             = recordbatch.LogOverhead
	batchOverhead           = recordbatch.HeaderSize // RECORD_BATCH_OVERHEAD: the header up to and including the record count
	noTimestamp             = recordbatch.NoTimestamp
)

// batchInfo is what the log keeps of one validated batch.
type batchInfo struct {
	size            int   // bytes, LOG_OVERHEAD included
	baseOffset      int64 // as found in the bytes
	lastOffsetDelta int32
	epoch           int32 // partitionLeaderEpoch
	maxTimestamp    int64 // ms, -1 when none
	producerID      int64 // -1: not an idempotent producer's batch
	producerEpoch   int16
	baseSequence    int32
	transactional   bool
}

// producerBatch is the batch's producer fields for the ProducerState.
func (b batchInfo) producerBatch() ProducerBatch {
	return ProducerBatch{ProducerID: b.producerID, ProducerEpoch: b.producerEpoch, BaseSequence: b.baseSequence,
		LastOffsetDelta: b.lastOffsetDelta, BaseOffset: b.baseOffset, MaxTimestamp: b.maxTimestamp, Transactional: b.transactional}
}

// parseBatch validates the v2 RecordBatch at the start of b (more bytes may
// follow) the way Kafka's DefaultRecordBatch.ensureValid and LogValidator.validateBatch
// do for a client batch. A stored batch (stored=true, read back from a segment)
// may hold fewer records than its offset range, down to none: the Cleaner keeps
// a rewritten batch's base and last offsets (MemoryRecords.filterTo). Errors
// wrap ErrCorruptRecord.
func parseBatch(b []byte, stored bool) (batchInfo, error) {
	rb, err := recordbatch.Read(b)
	if err != nil {
		return batchInfo{}, fmt.Errorf("%w: %v", ErrCorruptRecord, err)
	}
	if codec := rb.Compression(); codec > 4 {
		return batchInfo{}, fmt.Errorf("%w: unknown compression codec %d", ErrCorruptRecord, codec)
	}
	// LogValidator.validateBatch: offsets and count must agree.
	if stored {
		if rb.LastOffsetDelta < 0 || rb.NumRecords < 0 || int64(rb.NumRecords) > int64(rb.LastOffsetDelta)+1 {
			return batchInfo{}, fmt.Errorf("%w: %d records but last offset delta %d", ErrCorruptRecord, rb.NumRecords, rb.LastOffsetDelta)
		}
	} else if rb.LastOffsetDelta < 0 || rb.NumRecords <= 0 || int64(rb.NumRecords) != int64(rb.LastOffsetDelta)+1 {
		return batchInfo{}, fmt.Errorf("%w: %d records but last offset delta %d", ErrCorruptRecord, rb.NumRecords, rb.LastOffsetDelta)
	}
	// Uncompressed records are framed one by one, as DefaultRecord.readFrom does.
	// Compressed payloads are covered by the CRC only (Kafka decompresses them).
	// Records are stored as received: this only reads.
	if rb.Compression() == 0 {
		if err := recordbatch.ReadRecords(rb.Records, rb.NumRecords, func(recordbatch.Record) error { return nil }); err != nil {
			return batchInfo{}, fmt.Errorf("%w: %v", ErrCorruptRecord, err)
		}
	}
	return batchInfo{
		size:            rb.Size(),
		baseOffset:      rb.BaseOffset,
		lastOffsetDelta: rb.LastOffsetDelta,
		epoch:           rb.PartitionLeaderEpoch,
		maxTimestamp:    rb.MaxTimestamp,
		producerID:      rb.ProducerID,
		producerEpoch:   rb.ProducerEpoch,
		baseSequence:    rb.BaseSequence,
		transactional:   rb.Attributes&recordbatch.TransactionalBit != 0,
	}, nil
}

// splitBatches validates records (one or more batches back to back) and
// returns their infos. Any invalid batch fails the whole slice.
func splitBatches(records []byte) ([]batchInfo, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("%w: no record batch", ErrCorruptRecord)
	}
	var out []batchInfo
	for pos := 0; pos < len(records); {
		info, err := parseBatch(records[pos:], false)
		if err != nil {
			return nil, fmt.Errorf("batch %d at byte %d: %w", len(out), pos, err)
		}
		out = append(out, info)
		pos += info.size
	}
	return out, nil
}
