package broker

// Message formats 0 and 1 (the 0.8-era and 0.10-era "message sets") for the old Produce (v0–v2) and
// Fetch (v0–v3) versions that Kafka 3.9 still serves (removed in 4.0 by KIP-896). The log holds v2
// record batches only: a Produce message set is converted on append (LogValidator's
// convertAndAssignOffsetsNonCompressed / validateMessagesAndAssignOffsetsCompressed: one v2 batch,
// timestamps kept from format 1, -1 from format 0, the wrapper's codec kept), and a Fetch answer is
// down-converted to the format its version carries (KafkaApis: v0–v1 format 0, v2–v3 format 1;
// LazyDownConversionRecords and RecordsUtil.downConvert: a compressed batch becomes one wrapper
// message of the same codec). Every codec is recordbatch's (Compress, Decompress); zstd has no place
// in formats 0 and 1.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

// legacyRecord is one record of a message set, or of a v2 batch on its way to one.
type legacyRecord struct {
	offset    int64
	timestamp int64 // -1 (NO_TIMESTAMP) for format 0
	key       []byte
	value     []byte
}

const (
	codecMask       = 0x07
	codecGzip       = 1
	legacyTimestamp = 0x08 // format 1 attribute: the timestamp is LogAppendTime
	// maxDecompressed bounds what one compressed wrapper or batch may expand to (a small gzip stream
	// can inflate a thousandfold); larger is refused as corrupt rather than allocated.
	maxDecompressed = 64 << 20
)

var (
	// errUnsupportedCodec: a zstd batch met by a down-conversion (RecordsUtil.downConvert's
	// UnsupportedCompressionTypeException), answered UNSUPPORTED_COMPRESSION_TYPE.
	errUnsupportedCodec = errors.New("down-conversion of zstandard-compressed batches is not supported")
	// errInvalidLegacyRecord: a message set LogValidator refuses with an InvalidRecordException
	// (INVALID_RECORD): more than one message beside a compressed wrapper, a compressed message inside
	// one, a zstd or null-valued wrapper.
	errInvalidLegacyRecord = errors.New("invalid message set")
	// errUnknownLegacyCodec: a codec id above 4 (CompressionType.forId's IllegalArgumentException,
	// which ReplicaManager answers UNKNOWN_SERVER_ERROR).
	errUnknownLegacyCodec = errors.New("unknown compression type id")
)

// messageSetToBatch converts the records of a Produce v0–v2 request to one v2 batch, as Kafka 3.9's
// LogValidator does with compression.type producer: uncompressed messages to an uncompressed batch,
// the messages of a compressed wrapper (gzip, snappy or lz4) to a batch of the wrapper's codec
// (BrokerCompressionType.targetCompression of the source codec); a topic's other compression.type is
// applied after, on the v2 batch (applyCompressionType). A request that already carries v2 batches
// (Kafka does not check the magic of old versions) is returned as is. Errors: CORRUPT_MESSAGE for bad
// framing, a bad CRC or data that does not decompress, INVALID_RECORD for what LogValidator refuses
// (errInvalidLegacyRecord), UNKNOWN_SERVER_ERROR for a codec id above 4, each with a message for the
// log.
func messageSetToBatch(set []byte) ([]byte, int16, string) {
	if len(set) > 16 && set[16] == 2 {
		return set, 0, ""
	}
	recs, codec, err := parseMessageSet(set)
	switch {
	case errors.Is(err, errInvalidLegacyRecord):
		return nil, kerr.InvalidRecord.Code, err.Error()
	case errors.Is(err, errUnknownLegacyCodec):
		return nil, kerr.UnknownServerError.Code, err.Error()
	case err != nil:
		return nil, kerr.CorruptMessage.Code, err.Error()
	case len(recs) == 0:
		return nil, kerr.CorruptMessage.Code, "empty message set"
	}
	batch, err := encodeV2Batch(recs, false, codec)
	if err != nil {
		return nil, kerr.CorruptMessage.Code, err.Error()
	}
	return batch, 0, ""
}

// legacyMessage is one message of a message set as framed: its offset, magic, attributes, timestamp
// (-1 for format 0), key and value.
type legacyMessage struct {
	offset    int64
	magic     int8
	attrs     byte
	timestamp int64
	key       []byte
	value     []byte
}

// readMessages reads messages (offset, size, crc, magic, attributes, [timestamp], key, value) back to
// back, checking each one's framing and CRC.
func readMessages(set []byte) ([]legacyMessage, error) {
	var out []legacyMessage
	for len(set) > 0 {
		if len(set) < 12 {
			return nil, fmt.Errorf("%d trailing bytes in a message set", len(set))
		}
		size := int(int32(binary.BigEndian.Uint32(set[8:12])))
		if size < 14 || 12+size > len(set) {
			return nil, fmt.Errorf("message of %d bytes with %d left", size, len(set)-12)
		}
		m := set[12 : 12+size]
		msg := legacyMessage{offset: int64(binary.BigEndian.Uint64(set[:8])), timestamp: -1}
		set = set[12+size:]
		if binary.BigEndian.Uint32(m[:4]) != crc32.ChecksumIEEE(m[4:]) {
			return nil, fmt.Errorf("message at offset %d: CRC mismatch", msg.offset)
		}
		msg.magic, msg.attrs = int8(m[4]), m[5]
		rest := m[6:]
		switch msg.magic {
		case 0:
		case 1:
			if len(rest) < 8 {
				return nil, fmt.Errorf("format 1 message without a timestamp")
			}
			msg.timestamp, rest = int64(binary.BigEndian.Uint64(rest[:8])), rest[8:]
		default:
			return nil, fmt.Errorf("message magic %d in a message set", msg.magic)
		}
		var ok bool
		if msg.key, rest, ok = legacyBytes(rest); !ok {
			return nil, fmt.Errorf("message at offset %d: bad key", msg.offset)
		}
		if msg.value, rest, ok = legacyBytes(rest); !ok || len(rest) != 0 {
			return nil, fmt.Errorf("message at offset %d: bad value", msg.offset)
		}
		out = append(out, msg)
	}
	return out, nil
}

// parseMessageSet reads a message set as LogValidator reads a Produce's: uncompressed messages, or one
// compressed wrapper (gzip, snappy or lz4) whose value is a message set of uncompressed messages
// (AbstractLegacyRecordBatch's deep iterator). It returns the records with the offsets a consumer sees
// (a format 1 wrapper's inner offsets are relative to its own, the last one's) and the timestamps
// (a format 1 wrapper with LogAppendTime gives its own to every inner message), and the source codec
// (UnifiedLog.analyzeAndValidateRecords: the last compressed message's). Errors wrap
// errInvalidLegacyRecord or errUnknownLegacyCodec for what Kafka refuses as such (see
// messageSetToBatch); anything else is corrupt.
func parseMessageSet(set []byte) ([]legacyRecord, recordbatch.Codec, error) {
	msgs, err := readMessages(set)
	if err != nil {
		return nil, 0, err
	}
	source := recordbatch.CodecNone
	for _, m := range msgs {
		c := recordbatch.Codec(m.attrs & codecMask)
		if c > recordbatch.CodecZstd {
			return nil, 0, fmt.Errorf("%w: %d", errUnknownLegacyCodec, c)
		}
		if c != recordbatch.CodecNone {
			source = c
		}
	}
	if source != recordbatch.CodecNone && len(msgs) > 1 {
		return nil, 0, fmt.Errorf("%w: Compressed outer record has more than one batch", errInvalidLegacyRecord)
	}
	var out []legacyRecord
	for _, m := range msgs {
		codec := recordbatch.Codec(m.attrs & codecMask)
		if codec == recordbatch.CodecNone {
			out = append(out, legacyRecord{offset: m.offset, timestamp: m.timestamp, key: m.key, value: m.value})
			continue
		}
		if codec == recordbatch.CodecZstd {
			return nil, 0, fmt.Errorf("%w: Invalid wrapper compressionType found in legacy deep record iterator %d", errInvalidLegacyRecord, m.magic)
		}
		if m.value == nil {
			return nil, 0, fmt.Errorf("%w: Found invalid compressed record set with null value (magic = %d)", errInvalidLegacyRecord, m.magic)
		}
		raw, err := recordbatch.Decompress(codec, m.magic, m.value, maxDecompressed)
		if err != nil {
			return nil, 0, fmt.Errorf("wrapper at offset %d: %w", m.offset, err)
		}
		inner, err := readMessages(raw)
		if err != nil {
			return nil, 0, fmt.Errorf("wrapper at offset %d: %w", m.offset, err)
		}
		base := int64(0) // format 1: the wrapper's offset is its last inner message's, inner offsets relative
		if m.magic > 0 && len(inner) > 0 {
			base = m.offset - inner[len(inner)-1].offset
		}
		for _, im := range inner {
			if im.attrs&codecMask != 0 {
				return nil, 0, fmt.Errorf("%w: Compressed outer record should not have an inner record with a compression attribute set", errInvalidLegacyRecord)
			}
			ts := im.timestamp
			if m.magic > 0 && m.attrs&legacyTimestamp != 0 {
				ts = m.timestamp
			}
			out = append(out, legacyRecord{offset: base + im.offset, timestamp: ts, key: im.key, value: im.value})
		}
	}
	return out, source, nil
}

// legacyBytes reads an int32-length-prefixed byte string (-1: null).
func legacyBytes(b []byte) (v, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := int(int32(binary.BigEndian.Uint32(b[:4])))
	b = b[4:]
	if n < 0 {
		return nil, b, n == -1
	}
	if n > len(b) {
		return nil, nil, false
	}
	return b[:n], b[n:], true
}

// encodeV2Batch is one v2 batch (CreateTime, or LogAppendTime when logAppend) of recs compressed with
// codec, offsets 0..n-1 (the log assigns the real ones), base timestamp that of the first record.
func encodeV2Batch(recs []legacyRecord, logAppend bool, codec recordbatch.Codec) ([]byte, error) {
	base, maxTS := recs[0].timestamp, int64(-1)
	var records []byte
	for i, r := range recs {
		maxTS = max(maxTS, r.timestamp)
		records = recordbatch.AppendRecord(records, recordbatch.Record{TimestampDelta: r.timestamp - base, OffsetDelta: int32(i), Key: r.key, Value: r.value})
	}
	records, err := recordbatch.Compress(codec, recordbatch.Magic, records)
	if err != nil {
		return nil, err
	}
	attrs := int16(codec)
	if logAppend {
		attrs |= recordbatch.LogAppendTimeBit
	}
	return recordbatch.AppendBatch(nil, recordbatch.Header{PartitionLeaderEpoch: -1, Attributes: attrs,
		LastOffsetDelta: int32(len(recs) - 1), BaseTimestamp: base, MaxTimestamp: maxTS,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: int32(len(recs))}, records), nil
}

// downConvert rewrites v2 batches read from the log as messages of format toMagic (0 or 1), as
// LazyDownConversionRecords and RecordsUtil.downConvert do: control batches dropped; an uncompressed
// batch becomes one message per record from fetchOffset on, with its absolute offset; a compressed
// batch becomes one wrapper message of the same codec holding all its records (the ones before
// fetchOffset too: the consumer skips them), inner offsets absolute in format 0 and relative to the
// first record's in format 1, the wrapper at the last record's offset with the batch's max timestamp.
// Format 1 keeps the timestamps (a LogAppendTime batch's max timestamp for all its records, with the
// attribute set). A zstd batch cannot be converted: as the first batch it is errUnsupportedCodec (the
// fetch is answered UNSUPPORTED_COMPRESSION_TYPE); later, the conversion ends before the chunk that
// holds it (LazyDownConversionRecordsSend converts chunks of up to maxOverflowChunk bytes of batches
// after the first, and fills the rest of the answer with overflow). A partial batch at the end of the
// read (a fetch's size limit cut it) ends the conversion. first is the length of the first batch's
// messages in out (LazyDownConversionRecords' first converted batch).
func downConvert(data []byte, toMagic int8, fetchOffset int64) (out []byte, first int, err error) {
	converted := 0                // batches converted to at least one message
	chunkStart, chunkSize := 0, 0 // where in out the current chunk's messages start, its batches' size
	newChunk := false             // the next batch starts a chunk
	for len(data) > 0 {
		b, err := recordbatch.Read(data)
		if errors.Is(err, recordbatch.ErrTruncated) {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("batch at %d: %w", b.BaseOffset, err)
		}
		data = data[b.Size():]
		if converted > 0 && (newChunk || chunkSize+b.Size() > maxOverflowChunk) {
			chunkStart, chunkSize, newChunk = len(out), 0, false
		}
		chunkSize += b.Size()
		if b.IsControl() { // transaction markers
			continue
		}
		codec := recordbatch.Codec(b.Compression())
		if codec == recordbatch.CodecZstd {
			if converted == 0 {
				return nil, 0, fmt.Errorf("batch at %d: %w", b.BaseOffset, errUnsupportedCodec)
			}
			return out[:chunkStart], first, nil
		}
		raw, err := recordbatch.Decompress(codec, recordbatch.Magic, b.Records, maxDecompressed)
		if err != nil {
			return nil, 0, fmt.Errorf("batch at %d: %w", b.BaseOffset, err)
		}
		logAppend := b.LogAppendTime()
		var recs []legacyRecord
		err = recordbatch.ReadRecords(raw, b.NumRecords, func(r recordbatch.Record) error {
			off := b.BaseOffset + int64(r.OffsetDelta)
			if off < fetchOffset && codec == recordbatch.CodecNone {
				return nil
			}
			ts := b.BaseTimestamp + r.TimestampDelta
			if logAppend {
				ts = b.MaxTimestamp
			}
			recs = append(recs, legacyRecord{offset: off, timestamp: ts, key: r.Key, value: r.Value})
			return nil
		})
		if err != nil {
			return nil, 0, fmt.Errorf("batch at %d: %w", b.BaseOffset, err)
		}
		if len(recs) == 0 {
			continue
		}
		if out, err = appendConverted(out, toMagic, logAppend, codec, recs); err != nil {
			return nil, 0, fmt.Errorf("batch at %d: %w", b.BaseOffset, err)
		}
		if converted++; converted == 1 {
			first, newChunk = len(out), true // the first converted batch is a chunk of its own
		}
	}
	return out, first, nil
}

// appendConverted appends recs (one batch's, in order) as messages of format magic: one message each
// when codec is none, else one wrapper message of codec (MemoryRecordsBuilder with a legacy magic:
// writeLegacyCompressedWrapperHeader).
func appendConverted(dst []byte, magic int8, logAppend bool, codec recordbatch.Codec, recs []legacyRecord) ([]byte, error) {
	if codec == recordbatch.CodecNone {
		for _, r := range recs {
			dst = appendLegacyMessage(dst, magic, logAppend, r)
		}
		return dst, nil
	}
	var inner []byte
	maxTS := int64(-1)
	for _, r := range recs {
		if magic > 0 {
			r.offset -= recs[0].offset // MemoryRecordsBuilder.toInnerOffset
		}
		maxTS = max(maxTS, r.timestamp)
		inner = appendLegacyMessage(inner, magic, logAppend, r)
	}
	value, err := recordbatch.Compress(codec, magic, inner)
	if err != nil {
		return nil, err
	}
	return appendLegacyWrapper(dst, magic, logAppend, codec, recs[len(recs)-1].offset, maxTS, value), nil
}

// appendLegacyMessage appends one uncompressed message of format magic (0 or 1).
func appendLegacyMessage(dst []byte, magic int8, logAppend bool, r legacyRecord) []byte {
	var attrs byte
	if magic == 1 && logAppend {
		attrs = legacyTimestamp
	}
	return appendLegacy(dst, magic, attrs, r)
}

// appendLegacyWrapper appends a compressed wrapper message of format magic (0 or 1) at offset (its
// last inner message's) with timestamp ts (format 1), a null key and value, the compressed inner
// message set.
func appendLegacyWrapper(dst []byte, magic int8, logAppend bool, codec recordbatch.Codec, offset, ts int64, value []byte) []byte {
	attrs := byte(codec)
	if magic == 1 && logAppend {
		attrs |= legacyTimestamp
	}
	return appendLegacy(dst, magic, attrs, legacyRecord{offset: offset, timestamp: ts, value: value})
}

// appendLegacy appends one message of r (recordbatch.AppendLegacyMessage).
func appendLegacy(dst []byte, magic int8, attrs byte, r legacyRecord) []byte {
	return recordbatch.AppendLegacyMessage(dst, magic, attrs, r.offset, r.timestamp, r.key, r.value)
}

// maxOverflowChunk is LazyDownConversionRecordsSend's MAX_READ_SIZE: the largest overflow message
// written at once.
const maxOverflowChunk = 128 * 1024

// fitDownConverted makes down-converted records exactly size bytes, as Kafka's
// LazyDownConversionRecordsSend does (the response's size is fixed before converting): the size of
// the v2 batches they were converted from, or of the first batch's messages when larger
// (LazyDownConversionRecords.sizeInBytes: a consumer needs one whole batch to make progress, and a
// compressed batch may convert to more bytes than the whole read); longer output is cut (the client
// sees a partial last message), shorter output is followed by "overflow messages" (offset -1, a
// length past the end of the response) that a client takes for a partial message and ignores.
func fitDownConverted(converted []byte, size int) []byte {
	if len(converted) >= size {
		return converted[:size]
	}
	out := converted
	for remaining := size - len(out); remaining > 0; remaining = size - len(out) {
		chunk := make([]byte, max(12, min(remaining+1, maxOverflowChunk)))
		binary.BigEndian.PutUint64(chunk, ^uint64(0))                       // offset -1
		binary.BigEndian.PutUint32(chunk[8:], uint32(max(remaining+1, 61))) // DefaultRecordBatch.RECORD_BATCH_OVERHEAD at least
		out = append(out, chunk[:min(len(chunk), remaining)]...)
	}
	return out
}
