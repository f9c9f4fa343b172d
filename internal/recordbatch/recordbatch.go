// Package recordbatch encodes and decodes Kafka's v2 record batches (magic 2, Kafka 0.11+:
// org.apache.kafka.common.record.DefaultRecordBatch and DefaultRecord), the one codec the broker's
// storage, the group coordinator's __consumer_offsets records, the broker's data APIs and the
// consumer share. It covers the batch header, the CRC-32C and the varint-framed records, and
// (compress.go) the one compression path of the project: the codecs of batches and of the older
// message formats' wrapper messages, framed as Kafka frames them. The older message formats (magic 0
// and 1) themselves are the broker's (broker/oldformats.go).
//
// Layout of a batch (big-endian):
//
//	baseOffset int64 | length int32 | partitionLeaderEpoch int32 | magic int8 | crc uint32 |
//	attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64 |
//	producerId int64 | producerEpoch int16 | baseSequence int32 | records count int32 | records
//
// length counts the bytes after the length field; the CRC-32C (Castagnoli) covers attributes to
// the end of the batch, so baseOffset and partitionLeaderEpoch can be rewritten without it.
package recordbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Sizes and byte positions of the header (DefaultRecordBatch's *_OFFSET constants).
const (
	// LogOverhead is Records.LOG_OVERHEAD: baseOffset and length, the bytes length does not count.
	LogOverhead = 12
	// HeaderSize is DefaultRecordBatch.RECORD_BATCH_OVERHEAD: the header through the records count.
	HeaderSize = 61
	// Magic is the only format version this package reads and writes.
	Magic = 2

	OffLength               = 8
	OffPartitionLeaderEpoch = 12
	OffMagic                = 16
	OffCRC                  = 17
	OffAttributes           = 21
	OffLastOffsetDelta      = 23
	OffBaseTimestamp        = 27
	OffMaxTimestamp         = 35
	OffProducerID           = 43
	OffProducerEpoch        = 51
	OffBaseSequence         = 53
	OffRecordsCount         = 57
)

// Attribute bits (DefaultRecordBatch).
const (
	CompressionMask  = 0x07 // 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	LogAppendTimeBit = 0x08 // timestampType: LogAppendTime
	TransactionalBit = 0x10
	ControlBit       = 0x20 // a control batch (transaction markers)
)

// NoTimestamp is RecordBatch.NO_TIMESTAMP.
const NoTimestamp = -1

// ErrCorrupt is wrapped by every error for bytes that are not a valid v2 batch or record.
var ErrCorrupt = errors.New("corrupt record batch")

// ErrTruncated is wrapped (together with ErrCorrupt) when the data ends before the batch does: a
// fetch response whose size limit cut its last batch, or a torn write.
var ErrTruncated = errors.New("truncated record batch")

type truncated struct{ msg string }

func (e *truncated) Error() string { return e.msg }
func (e *truncated) Is(target error) bool {
	return target == ErrTruncated || target == ErrCorrupt
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C of batch (one whole batch, header included) as the header's crc field
// must hold it: over attributes to the end.
func Checksum(batch []byte) uint32 { return crc32.Checksum(batch[OffAttributes:], castagnoli) }

// Header is a batch's fixed part.
type Header struct {
	BaseOffset           int64
	Length               int32 // bytes after the length field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64 // ms
	MaxTimestamp         int64 // ms
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// Size is the batch's size in bytes, LOG_OVERHEAD included.
func (h Header) Size() int { return LogOverhead + int(h.Length) }

// Compression is the codec of the records section: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
func (h Header) Compression() int8 { return int8(h.Attributes & CompressionMask) }

// IsControl reports a control batch (transaction markers), which carries no data records.
func (h Header) IsControl() bool { return h.Attributes&ControlBit != 0 }

// LogAppendTime reports timestampType LogAppendTime: every record's timestamp is MaxTimestamp.
func (h Header) LogAppendTime() bool { return h.Attributes&LogAppendTimeBit != 0 }

// LastOffset is BaseOffset + LastOffsetDelta.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Batch is one decoded batch. Records is the records section as stored (compressed when
// Compression() != 0); it aliases the bytes Read was given.
type Batch struct {
	Header
	Records []byte
}

// readHeader decodes the header fields from b (at least HeaderSize bytes).
func readHeader(b []byte) Header {
	be := binary.BigEndian
	return Header{
		BaseOffset:           int64(be.Uint64(b)),
		Length:               int32(be.Uint32(b[OffLength:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[OffPartitionLeaderEpoch:])),
		Magic:                int8(b[OffMagic]),
		CRC:                  be.Uint32(b[OffCRC:]),
		Attributes:           int16(be.Uint16(b[OffAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[OffLastOffsetDelta:])),
		BaseTimestamp:        int64(be.Uint64(b[OffBaseTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[OffMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[OffProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[OffProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[OffBaseSequence:])),
		NumRecords:           int32(be.Uint32(b[OffRecordsCount:])),
	}
}

// ReadHeader decodes only the header of the batch at the start of data and checks its framing: a
// length that covers the header and fits in data (the batch is data[:h.Size()]). It checks neither
// the magic nor the CRC (Read does): for a scan that only needs sizes and counts, such as Produce's
// size limit. Errors wrap ErrCorrupt, and also ErrTruncated when data ends before the batch does.
func ReadHeader(data []byte) (Header, error) {
	if len(data) < HeaderSize {
		return Header{}, &truncated{fmt.Sprintf("%d bytes left, a batch header needs %d", len(data), HeaderSize)}
	}
	h := readHeader(data)
	if h.Length < HeaderSize-LogOverhead {
		return h, fmt.Errorf("%w: batch length %d below the minimum %d", ErrCorrupt, h.Length, HeaderSize-LogOverhead)
	}
	if h.Size() > len(data) {
		return h, &truncated{fmt.Sprintf("batch of %d bytes overruns the %d bytes left", h.Size(), len(data))}
	}
	return h, nil
}

// Read decodes the batch at the start of data (more bytes may follow; the batch is
// data[:b.Size()]) and checks what any reader must (DefaultRecordBatch.ensureValid): a length that
// covers the header and fits in data, magic 2 and the CRC-32C. It does not look inside the records
// section (see ReadRecords). Errors wrap ErrCorrupt, and also ErrTruncated when data ends before the
// header or the batch does; when data held a whole header, the returned Batch has it even with an
// error (to name the batch's offset).
func Read(data []byte) (Batch, error) {
	h, err := ReadHeader(data)
	if err != nil {
		return Batch{Header: h}, err
	}
	size := h.Size()
	if h.Magic != Magic {
		return Batch{Header: h}, fmt.Errorf("%w: magic %d, only v2 record batches (magic 2) are supported", ErrCorrupt, h.Magic)
	}
	raw := data[:size]
	if sum := Checksum(raw); sum != h.CRC {
		return Batch{Header: h}, fmt.Errorf("%w: CRC mismatch: CRC-32C %08x, batch says %08x", ErrCorrupt, sum, h.CRC)
	}
	return Batch{Header: h, Records: raw[HeaderSize:]}, nil
}

// RecordHeader is one header of a record.
type RecordHeader struct {
	Key   string
	Value []byte // nil when null
}

// Record is one DefaultRecord. Key and Value are nil when null and alias the decoded bytes.
type Record struct {
	Attributes     int8
	TimestampDelta int64 // ms from the batch's BaseTimestamp
	OffsetDelta    int32 // from the batch's BaseOffset
	Key            []byte
	Value          []byte
	Headers        []RecordHeader
}

// ReadRecords decodes n uncompressed records from recs (a batch's records section, decompressed
// if it was compressed) as DefaultRecord.readFrom does, and calls fn with each: every record must
// fill exactly the length its varint prefix declares, and the n records exactly recs. Errors wrap
// ErrCorrupt and name the record ("record 2: bad key"); fn's error stops the walk and is returned
// as is.
func ReadRecords(recs []byte, n int32, fn func(Record) error) error {
	for i := int32(0); i < n; i++ {
		l, k := varint(recs, 32)
		if k <= 0 || l < 0 || l > int64(len(recs)-k) {
			return fmt.Errorf("%w: record %d: bad length", ErrCorrupt, i)
		}
		r, err := readRecord(recs[k : k+int(l)])
		if err != nil {
			return fmt.Errorf("%w: record %d: %v", ErrCorrupt, i, err)
		}
		recs = recs[k+int(l):]
		if err := fn(r); err != nil {
			return err
		}
	}
	if len(recs) != 0 {
		return fmt.Errorf("%w: %d bytes after the last record", ErrCorrupt, len(recs))
	}
	return nil
}

func readRecord(b []byte) (Record, error) {
	var r Record
	if len(b) < 1 {
		return r, errors.New("empty")
	}
	r.Attributes = int8(b[0])
	b = b[1:]
	v, k := varint(b, 64)
	if k <= 0 {
		return r, errors.New("bad timestamp delta")
	}
	r.TimestampDelta, b = v, b[k:]
	if v, k = varint(b, 32); k <= 0 {
		return r, errors.New("bad offset delta")
	}
	r.OffsetDelta, b = int32(v), b[k:]
	var ok bool
	if r.Key, b, ok = readBytes(b, true); !ok {
		return r, errors.New("bad key")
	}
	if r.Value, b, ok = readBytes(b, true); !ok {
		return r, errors.New("bad value")
	}
	nh, k := varint(b, 32)
	if k <= 0 || nh < 0 || nh > int64(len(b)) { // every header takes at least 2 bytes
		return r, errors.New("bad header count")
	}
	b = b[k:]
	if nh > 0 {
		r.Headers = make([]RecordHeader, 0, nh)
	}
	for j := int64(0); j < nh; j++ {
		var hk, hv []byte
		if hk, b, ok = readBytes(b, false); !ok {
			return r, fmt.Errorf("header %d: bad key", j)
		}
		if hv, b, ok = readBytes(b, true); !ok {
			return r, fmt.Errorf("header %d: bad value", j)
		}
		r.Headers = append(r.Headers, RecordHeader{Key: string(hk), Value: hv})
	}
	if len(b) != 0 {
		return r, fmt.Errorf("%d bytes beyond the record's fields", len(b))
	}
	return r, nil
}

// readBytes reads a varint-length-prefixed byte string (-1 = null, when nullable).
func readBytes(b []byte, nullable bool) (val, rest []byte, ok bool) {
	l, k := varint(b, 32)
	if k <= 0 || l < -1 || (l == -1 && !nullable) || l > int64(len(b)-k) {
		return nil, nil, false
	}
	if l < 0 {
		return nil, b[k:], true
	}
	return b[k : k+int(l) : k+int(l)], b[k+int(l):], true
}

// varint reads a zigzag varint of at most bits bits (ByteUtils.readVarint / readVarlong); k <= 0
// when b does not start with a valid one.
func varint(b []byte, bits int) (int64, int) {
	v, k := binary.Varint(b)
	if k <= 0 || (bits == 32 && (k > 5 || v < math.MinInt32 || v > math.MaxInt32)) {
		return 0, 0
	}
	return v, k
}

// AppendRecord appends r as a DefaultRecord (its varint length, then attributes, timestampDelta,
// offsetDelta, key, value and headers, lengths as zigzag varints, -1 for null).
func AppendRecord(dst []byte, r Record) []byte {
	var body [binary.MaxVarintLen64]byte
	size := 1 + varintLen(r.TimestampDelta) + varintLen(int64(r.OffsetDelta)) +
		bytesLen(r.Key) + bytesLen(r.Value) + varintLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		size += varintLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	dst = append(dst, body[:binary.PutVarint(body[:], int64(size))]...)
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendBytes(dst, h.Value)
	}
	return dst
}

func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

func bytesLen(b []byte) int {
	if b == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(b))) + len(b)
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// AppendBatch appends a v2 batch with h's fields and the records section records (encoded records,
// compressed if h's attributes say so). Length and CRC are computed and magic is 2; h's are ignored.
func AppendBatch(dst []byte, h Header, records []byte) []byte {
	start := len(dst)
	be := binary.BigEndian
	h.Magic = Magic
	dst = be.AppendUint64(dst, uint64(h.BaseOffset))
	dst = be.AppendUint32(dst, uint32(HeaderSize-LogOverhead+len(records)))
	dst = be.AppendUint32(dst, uint32(h.PartitionLeaderEpoch))
	dst = append(dst, byte(h.Magic))
	dst = be.AppendUint32(dst, 0) // CRC, below
	dst = be.AppendUint16(dst, uint16(h.Attributes))
	dst = be.AppendUint32(dst, uint32(h.LastOffsetDelta))
	dst = be.AppendUint64(dst, uint64(h.BaseTimestamp))
	dst = be.AppendUint64(dst, uint64(h.MaxTimestamp))
	dst = be.AppendUint64(dst, uint64(h.ProducerID))
	dst = be.AppendUint16(dst, uint16(h.ProducerEpoch))
	dst = be.AppendUint32(dst, uint32(h.BaseSequence))
	dst = be.AppendUint32(dst, uint32(h.NumRecords))
	dst = append(dst, records...)
	be.PutUint32(dst[start+OffCRC:], Checksum(dst[start:]))
	return dst
}
