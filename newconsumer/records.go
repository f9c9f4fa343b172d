package newconsumer

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record is one message handed to the application.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp time.Time
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// parseBatches decodes a fetched partition's v2 record batches (DefaultRecordBatch): checks each
// batch's CRC-32C (check.crcs), decompresses (gzip, snappy, lz4, zstd), skips control batches and
// records before from. It returns the records and the offset after the last complete batch (where
// the next fetch starts; at least from). A truncated last batch (the fetch's size limit) is not an
// error; a corrupt one stops the parse with an error, keeping what came before.
func parseBatches(tp TopicPartition, data []byte, from int64) ([]Record, int64, error) {
	var out []Record
	next := from
	for len(data) >= 17 {
		length := int32(binary.BigEndian.Uint32(data[8:12]))
		total := 12 + int(length)
		if length < 49 || total > len(data) {
			if length < 49 {
				return out, next, fmt.Errorf("batch length %d is too short", length)
			}
			break // partial batch at the end of the response
		}
		raw := data[:total]
		data = data[total:]
		if magic := raw[16]; magic != 2 {
			return out, next, fmt.Errorf("record batch magic %d: only v2 batches are supported", magic)
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			return out, next, fmt.Errorf("record batch: %w", err)
		}
		if crc32.Checksum(raw[21:], castagnoli) != uint32(b.CRC) {
			return out, next, fmt.Errorf("record batch at offset %d: CRC mismatch", b.FirstOffset)
		}
		last := b.FirstOffset + int64(b.LastOffsetDelta)
		if b.Attributes&0x20 != 0 { // control batch (transaction marker)
			if last+1 > next {
				next = last + 1
			}
			continue
		}
		recs, err := decompress(b.Attributes&0x07, b.Records)
		if err != nil {
			return out, next, fmt.Errorf("record batch at offset %d: %w", b.FirstOffset, err)
		}
		logAppendTime := b.Attributes&0x08 != 0
		for i := int32(0); i < b.NumRecords; i++ {
			l, n := binary.Varint(recs)
			if n <= 0 || l < 0 || int(l) > len(recs)-n {
				return out, next, fmt.Errorf("record batch at offset %d: record %d is truncated", b.FirstOffset, i)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:n+int(l)]); err != nil {
				return out, next, fmt.Errorf("record batch at offset %d: record %d: %w", b.FirstOffset, i, err)
			}
			recs = recs[n+int(l):]
			off := b.FirstOffset + int64(r.OffsetDelta)
			if off < from {
				continue
			}
			ts := b.FirstTimestamp + r.TimestampDelta64
			if logAppendTime {
				ts = b.MaxTimestamp
			}
			out = append(out, Record{Topic: tp.Topic, Partition: tp.Partition, Offset: off, Key: r.Key, Value: r.Value,
				Timestamp: time.UnixMilli(ts)})
		}
		if last+1 > next {
			next = last + 1
		}
	}
	return out, next, nil
}

// xerialHeader starts snappy data framed by xerial's SnappyOutputStream, as Kafka's Java producer writes it.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decompress undoes a batch's compression codec: 0 none, 1 gzip, 2 snappy, 3 lz4 (frame), 4 zstd.
func decompress(codec int16, data []byte) ([]byte, error) {
	switch codec {
	case 0:
		return data, nil
	case 1:
		r, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return io.ReadAll(r)
	case 2:
		if !bytes.HasPrefix(data, xerialHeader) {
			return snappy.Decode(nil, data)
		}
		var out []byte
		data = data[16:] // header, version, compatible version
		for len(data) > 0 {
			if len(data) < 4 {
				return nil, errors.New("snappy: truncated xerial chunk")
			}
			n := int(binary.BigEndian.Uint32(data))
			if n > len(data)-4 {
				return nil, errors.New("snappy: truncated xerial chunk")
			}
			chunk, err := snappy.Decode(nil, data[4:4+n])
			if err != nil {
				return nil, fmt.Errorf("snappy: %w", err)
			}
			out = append(out, chunk...)
			data = data[4+n:]
		}
		return out, nil
	case 3:
		return io.ReadAll(lz4.NewReader(bytes.NewReader(data)))
	case 4:
		d, err := zstd.NewReader(nil)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(data, nil)
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}
