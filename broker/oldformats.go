package broker

// Message formats 0 and 1 (the 0.8-era and 0.10-era "message sets") for the old Produce (v0–v2) and
// Fetch (v0–v3) versions that Kafka 3.9 still serves (removed in 4.0 by KIP-896). The log holds v2
// record batches only: a Produce message set is converted on append (LogValidator's
// convertAndAssignOffsetsNonCompressed / validateMessagesAndAssignOffsetsCompressed: one v2 batch,
// timestamps kept from format 1, -1 from format 0), and a Fetch answer is down-converted to the
// format its version carries (KafkaApis: v0–v1 format 0, v2–v3 format 1; RecordsUtil.downConvert).
// Compression: none and gzip; other codecs are refused (see README's fidelity table).

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/rebalancelab/rebalancelab/recordbatch"
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
	maxLegacyDepth  = 1    // a compressed wrapper holds plain messages only
	// maxDecompressed bounds what one compressed wrapper or batch may expand to (a small gzip stream
	// can inflate a thousandfold); larger is refused as corrupt rather than allocated.
	maxDecompressed = 64 << 20
)

var errUnsupportedCodec = errors.New("compression codec not supported for message formats 0 and 1")

// messageSetToBatch converts the records of a Produce v0–v2 request to one v2 batch. A request that
// already carries v2 batches (Kafka does not check the magic of old versions) is returned as is.
// Errors: CORRUPT_MESSAGE for bad framing or a bad CRC, UNSUPPORTED_COMPRESSION_TYPE for a codec
// other than gzip, with a message for the log.
func messageSetToBatch(set []byte) ([]byte, int16, string) {
	if len(set) > 16 && set[16] == 2 {
		return set, 0, ""
	}
	recs, err := parseMessageSet(set, 0)
	switch {
	case errors.Is(err, errUnsupportedCodec):
		return nil, kerr.UnsupportedCompressionType.Code, err.Error()
	case err != nil:
		return nil, kerr.CorruptMessage.Code, err.Error()
	case len(recs) == 0:
		return nil, kerr.CorruptMessage.Code, "empty message set"
	}
	return encodeV2Batch(recs, false), 0, ""
}

// parseMessageSet reads messages (offset, size, crc, magic, attributes, [timestamp], key, value)
// back to back, unwrapping gzip-compressed wrappers one level deep.
func parseMessageSet(set []byte, depth int) ([]legacyRecord, error) {
	var out []legacyRecord
	for len(set) > 0 {
		if len(set) < 12 {
			return nil, fmt.Errorf("%d trailing bytes in a message set", len(set))
		}
		size := int(int32(binary.BigEndian.Uint32(set[8:12])))
		if size < 14 || 12+size > len(set) {
			return nil, fmt.Errorf("message of %d bytes with %d left", size, len(set)-12)
		}
		m := set[12 : 12+size]
		offset := int64(binary.BigEndian.Uint64(set[:8]))
		set = set[12+size:]
		if binary.BigEndian.Uint32(m[:4]) != crc32.ChecksumIEEE(m[4:]) {
			return nil, fmt.Errorf("message at offset %d: CRC mismatch", offset)
		}
		magic, attrs, rest := m[4], m[5], m[6:]
		ts := int64(-1)
		switch magic {
		case 0:
		case 1:
			if len(rest) < 8 {
				return nil, fmt.Errorf("format 1 message without a timestamp")
			}
			ts, rest = int64(binary.BigEndian.Uint64(rest[:8])), rest[8:]
		default:
			return nil, fmt.Errorf("message magic %d in a message set", magic)
		}
		key, rest, ok := legacyBytes(rest)
		if !ok {
			return nil, fmt.Errorf("message at offset %d: bad key", offset)
		}
		value, rest, ok := legacyBytes(rest)
		if !ok || len(rest) != 0 {
			return nil, fmt.Errorf("message at offset %d: bad value", offset)
		}
		switch attrs & codecMask {
		case 0:
			out = append(out, legacyRecord{offset: offset, timestamp: ts, key: key, value: value})
		case codecGzip:
			if depth >= maxLegacyDepth {
				return nil, fmt.Errorf("nested compressed message")
			}
			zr, err := gzip.NewReader(bytes.NewReader(value))
			if err != nil {
				return nil, fmt.Errorf("gzip wrapper: %w", err)
			}
			inner, err := io.ReadAll(io.LimitReader(zr, maxDecompressed+1))
			if err != nil {
				return nil, fmt.Errorf("gzip wrapper: %w", err)
			}
			if len(inner) > maxDecompressed {
				return nil, fmt.Errorf("gzip wrapper decompresses past %d bytes", maxDecompressed)
			}
			recs, err := parseMessageSet(inner, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, recs...)
		default:
			return nil, fmt.Errorf("%w (codec %d)", errUnsupportedCodec, attrs&codecMask)
		}
	}
	return out, nil
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

// encodeV2Batch is one uncompressed v2 batch (CreateTime, or LogAppendTime when logAppend) of recs,
// offsets 0..n-1 (the log assigns the real ones), base timestamp that of the first record.
func encodeV2Batch(recs []legacyRecord, logAppend bool) []byte {
	base, maxTS := recs[0].timestamp, int64(-1)
	var records []byte
	for i, r := range recs {
		maxTS = max(maxTS, r.timestamp)
		records = recordbatch.AppendRecord(records, recordbatch.Record{TimestampDelta: r.timestamp - base, OffsetDelta: int32(i), Key: r.key, Value: r.value})
	}
	var attrs int16
	if logAppend {
		attrs = recordbatch.LogAppendTimeBit
	}
	return recordbatch.AppendBatch(nil, recordbatch.Header{PartitionLeaderEpoch: -1, Attributes: attrs,
		LastOffsetDelta: int32(len(recs) - 1), BaseTimestamp: base, MaxTimestamp: maxTS,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: int32(len(recs))}, records)
}

// downConvert rewrites v2 batches read from the log as messages of format toMagic (0 or 1), the
// records before fetchOffset left out (a v2 batch is read whole), control batches dropped, each
// message uncompressed with its absolute offset; format 1 keeps the timestamp (a LogAppendTime batch's
// max timestamp for all its records, with the attribute set). A compressed batch other than gzip is
// errUnsupportedCodec. A partial batch at the end of the read (a fetch's size limit cut it) ends the
// conversion. first is the length of the first batch's messages in out (LazyDownConversionRecords'
// first converted batch).
func downConvert(data []byte, toMagic int8, fetchOffset int64) (out []byte, first int, err error) {
	converted := 0 // batches converted
	for len(data) > 0 {
		b, err := recordbatch.Read(data)
		if errors.Is(err, recordbatch.ErrTruncated) {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("batch at %d: %w", b.BaseOffset, err)
		}
		data = data[b.Size():]
		if b.IsControl() { // transaction markers
			continue
		}
		raw := b.Records
		switch b.Compression() {
		case 0:
		case codecGzip:
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				return nil, 0, err
			}
			if raw, err = io.ReadAll(io.LimitReader(zr, maxDecompressed+1)); err != nil {
				return nil, 0, err
			}
			if len(raw) > maxDecompressed {
				return nil, 0, fmt.Errorf("batch at %d decompresses past %d bytes", b.BaseOffset, maxDecompressed)
			}
		default:
			return nil, 0, fmt.Errorf("%w (codec %d)", errUnsupportedCodec, b.Compression())
		}
		logAppend := b.LogAppendTime()
		err = recordbatch.ReadRecords(raw, b.NumRecords, func(r recordbatch.Record) error {
			off := b.BaseOffset + int64(r.OffsetDelta)
			if off < fetchOffset {
				return nil
			}
			ts := b.BaseTimestamp + r.TimestampDelta
			if logAppend {
				ts = b.MaxTimestamp
			}
			out = appendLegacyMessage(out, toMagic, logAppend, legacyRecord{offset: off, timestamp: ts, key: r.Key, value: r.Value})
			return nil
		})
		if err != nil {
			return nil, 0, fmt.Errorf("batch at %d: %w", b.BaseOffset, err)
		}
		if converted++; converted == 1 {
			first = len(out)
		}
	}
	return out, first, nil
}

// appendLegacyMessage appends one uncompressed message of format magic (0 or 1).
func appendLegacyMessage(dst []byte, magic int8, logAppend bool, r legacyRecord) []byte {
	var m []byte
	m = append(m, 0, 0, 0, 0, byte(magic)) // CRC, filled below
	var attrs byte
	if magic == 1 && logAppend {
		attrs = legacyTimestamp
	}
	m = append(m, attrs)
	if magic == 1 {
		m = binary.BigEndian.AppendUint64(m, uint64(r.timestamp))
	}
	for _, b := range [][]byte{r.key, r.value} {
		if b == nil {
			m = binary.BigEndian.AppendUint32(m, ^uint32(0))
			continue
		}
		m = binary.BigEndian.AppendUint32(m, uint32(len(b)))
		m = append(m, b...)
	}
	binary.BigEndian.PutUint32(m[:4], crc32.ChecksumIEEE(m[4:]))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.offset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(m)))
	return append(dst, m...)
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
