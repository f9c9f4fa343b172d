package newconsumer

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/rebalancelab/rebalancelab/recordbatch"
)

// Record is one message handed to the application.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp time.Time
	// LeaderEpoch is the partition leader epoch of the record's batch (ConsumerRecord.leaderEpoch),
	// -1 when the batch carries none.
	LeaderEpoch int32
}

// parseBatches decodes a fetched partition's v2 record batches (DefaultRecordBatch, with package
// recordbatch): checks each batch's CRC-32C (check.crcs), decompresses (gzip, snappy, lz4, zstd),
// skips control batches and records before from. It returns the records and the offset after the
// last complete batch (where the next fetch starts; at least from). A truncated last batch (the
// fetch's size limit) is not an error; a corrupt one stops the parse with an error, keeping what
// came before.
func parseBatches(tp TopicPartition, data []byte, from int64) ([]Record, int64, error) {
	var out []Record
	next := from
	for len(data) > 0 {
		b, err := recordbatch.Read(data)
		if errors.Is(err, recordbatch.ErrTruncated) {
			break // partial batch at the end of the response
		}
		if err != nil {
			return out, next, fmt.Errorf("record batch at offset %d: %w", b.BaseOffset, err)
		}
		data = data[b.Size():]
		last := b.LastOffset()
		if b.IsControl() { // transaction marker
			if last+1 > next {
				next = last + 1
			}
			continue
		}
		recs, err := decompress(int16(b.Compression()), b.Records)
		if err != nil {
			return out, next, fmt.Errorf("record batch at offset %d: %w", b.BaseOffset, err)
		}
		err = recordbatch.ReadRecords(recs, b.NumRecords, func(r recordbatch.Record) error {
			off := b.BaseOffset + int64(r.OffsetDelta)
			if off < from {
				return nil
			}
			ts := b.BaseTimestamp + r.TimestampDelta
			if b.LogAppendTime() {
				ts = b.MaxTimestamp
			}
			out = append(out, Record{Topic: tp.Topic, Partition: tp.Partition, Offset: off, Key: r.Key, Value: r.Value,
				Timestamp: time.UnixMilli(ts), LeaderEpoch: b.PartitionLeaderEpoch})
			return nil
		})
		if err != nil {
			return out, next, fmt.Errorf("record batch at offset %d: %w", b.BaseOffset, err)
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
