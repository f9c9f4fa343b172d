package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors. They are kerr values, so the broker can answer with their code directly
// (errors.As(err, new(*kerr.Error))); the returned errors wrap them with detail.
var (
	// ErrCorruptRecord: a batch failed validation (size, magic, CRC-32C, record
	// framing) — Kafka's CorruptRecordException / InvalidRecordException.
	ErrCorruptRecord = kerr.CorruptMessage
	// ErrOffsetOutOfRange: Read below LogStartOffset or above HighWatermark.
	ErrOffsetOutOfRange = kerr.OffsetOutOfRange
	// ErrRecordBatchTooLarge: the records of one Append are larger than
	// log.segment.bytes (Kafka's RecordBatchTooLargeException).
	ErrRecordBatchTooLarge = kerr.RecordListTooLarge
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("storage: log closed")
)

// Layout of a v2 RecordBatch (org.apache.kafka.common.record.DefaultRecordBatch).
// baseOffset and length form Kafka's LOG_OVERHEAD; the CRC covers attributes onward,
// so baseOffset and partitionLeaderEpoch can be rewritten without touching it.
const (
	offLength               = 8
	offPartitionLeaderEpoch = 12
	offMagic                = 16
	offCRC                  = 17
	offAttributes           = 21
	offLastOffsetDelta      = 23
	offMaxTimestamp         = 35
	logOverhead             = 12 // baseOffset int64 + length int32
	batchOverhead           = 61 // RECORD_BATCH_OVERHEAD: the header up to and including the record count
	noTimestamp             = -1 // RecordBatch.NO_TIMESTAMP
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchInfo is what the log keeps of one validated batch.
type batchInfo struct {
	size            int   // bytes, LOG_OVERHEAD included
	baseOffset      int64 // as found in the bytes
	lastOffsetDelta int32
	epoch           int32 // partitionLeaderEpoch
	maxTimestamp    int64 // ms, -1 when none
}

// parseBatch validates the v2 RecordBatch at the start of b (more bytes may
// follow) the way Kafka's DefaultRecordBatch.ensureValid and LogValidator.validateBatch
// do for a client batch. Errors wrap ErrCorruptRecord.
func parseBatch(b []byte) (batchInfo, error) {
	if len(b) < batchOverhead {
		return batchInfo{}, fmt.Errorf("%w: %d bytes left, a batch header needs %d", ErrCorruptRecord, len(b), batchOverhead)
	}
	length := int32(binary.BigEndian.Uint32(b[offLength:]))
	if length < batchOverhead-logOverhead {
		return batchInfo{}, fmt.Errorf("%w: batch length %d below the minimum %d", ErrCorruptRecord, length, batchOverhead-logOverhead)
	}
	size := logOverhead + int(length)
	if size > len(b) {
		return batchInfo{}, fmt.Errorf("%w: batch of %d bytes overruns the %d bytes left", ErrCorruptRecord, size, len(b))
	}
	b = b[:size]
	if magic := int8(b[offMagic]); magic != 2 {
		return batchInfo{}, fmt.Errorf("%w: magic %d, only v2 record batches (magic 2) are stored", ErrCorruptRecord, magic)
	}
	var rb kmsg.RecordBatch
	if err := rb.UnsafeReadFrom(b); err != nil {
		return batchInfo{}, fmt.Errorf("%w: %v", ErrCorruptRecord, err)
	}
	if sum := crc32.Checksum(b[offAttributes:], castagnoli); sum != uint32(rb.CRC) {
		return batchInfo{}, fmt.Errorf("%w: CRC-32C %08x, batch says %08x", ErrCorruptRecord, sum, uint32(rb.CRC))
	}
	if codec := rb.Attributes & 0x07; codec > 4 {
		return batchInfo{}, fmt.Errorf("%w: unknown compression codec %d", ErrCorruptRecord, codec)
	}
	// LogValidator.validateBatch: offsets and count must agree.
	if rb.LastOffsetDelta < 0 || rb.NumRecords <= 0 || int64(rb.NumRecords) != int64(rb.LastOffsetDelta)+1 {
		return batchInfo{}, fmt.Errorf("%w: %d records but last offset delta %d", ErrCorruptRecord, rb.NumRecords, rb.LastOffsetDelta)
	}
	// Uncompressed records are framed one by one, as DefaultRecord.readFrom does.
	// Compressed payloads are covered by the CRC only (Kafka decompresses them).
	if rb.Attributes&0x07 == 0 {
		if err := checkRecords(rb.Records, rb.NumRecords); err != nil {
			return batchInfo{}, fmt.Errorf("%w: %v", ErrCorruptRecord, err)
		}
	}
	return batchInfo{
		size:            size,
		baseOffset:      rb.FirstOffset,
		lastOffsetDelta: rb.LastOffsetDelta,
		epoch:           rb.PartitionLeaderEpoch,
		maxTimestamp:    rb.MaxTimestamp,
	}, nil
}

// checkRecords walks n uncompressed v2 records (DefaultRecord: varint length,
// attributes, varlong timestampDelta, varint offsetDelta, key, value, headers)
// and requires each to fill exactly its declared length and the n records to
// fill exactly recs. It only reads; records are stored as received.
func checkRecords(recs []byte, n int32) error {
	for i := int32(0); i < n; i++ {
		l, k := varint(recs, 32)
		if k <= 0 || l < 0 || l > int64(len(recs)-k) {
			return fmt.Errorf("record %d: bad length", i)
		}
		if err := checkRecord(recs[k : k+int(l)]); err != nil {
			return fmt.Errorf("record %d: %v", i, err)
		}
		recs = recs[k+int(l):]
	}
	if len(recs) != 0 {
		return fmt.Errorf("%d bytes after the last record", len(recs))
	}
	return nil
}

func checkRecord(r []byte) error {
	if len(r) < 1 {
		return errors.New("empty")
	}
	r = r[1:] // attributes
	if _, k := varint(r, 64); k <= 0 {
		return errors.New("bad timestamp delta")
	} else {
		r = r[k:]
	}
	if _, k := varint(r, 32); k <= 0 {
		return errors.New("bad offset delta")
	} else {
		r = r[k:]
	}
	var ok bool
	if r, ok = skipBytes(r, true); !ok {
		return errors.New("bad key")
	}
	if r, ok = skipBytes(r, true); !ok {
		return errors.New("bad value")
	}
	h, k := varint(r, 32)
	if k <= 0 || h < 0 {
		return errors.New("bad header count")
	}
	r = r[k:]
	for j := int64(0); j < h; j++ {
		if r, ok = skipBytes(r, false); !ok {
			return fmt.Errorf("header %d: bad key", j)
		}
		if r, ok = skipBytes(r, true); !ok {
			return fmt.Errorf("header %d: bad value", j)
		}
	}
	if len(r) != 0 {
		return fmt.Errorf("%d bytes beyond the record's fields", len(r))
	}
	return nil
}

// skipBytes skips a varint-length-prefixed byte string (-1 = null when nullable).
func skipBytes(r []byte, nullable bool) ([]byte, bool) {
	l, k := varint(r, 32)
	if k <= 0 || l < -1 || (l == -1 && !nullable) || l > int64(len(r)-k) {
		return nil, false
	}
	if l < 0 {
		l = 0
	}
	return r[k+int(l):], true
}

// varint reads a zigzag varint of at most bits bits (Kafka's ByteUtils.readVarint /
// readVarlong); k <= 0 when b does not hold a valid one.
func varint(b []byte, bits int) (int64, int) {
	v, k := binary.Varint(b)
	if k <= 0 || (bits == 32 && (k > 5 || v < math.MinInt32 || v > math.MaxInt32)) {
		return 0, 0
	}
	return v, k
}

// splitBatches validates records (one or more batches back to back) and
// returns their infos. Any invalid batch fails the whole slice.
func splitBatches(records []byte) ([]batchInfo, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("%w: no record batch", ErrCorruptRecord)
	}
	var out []batchInfo
	for pos := 0; pos < len(records); {
		info, err := parseBatch(records[pos:])
		if err != nil {
			return nil, fmt.Errorf("batch %d at byte %d: %w", len(out), pos, err)
		}
		out = append(out, info)
		pos += info.size
	}
	return out, nil
}
