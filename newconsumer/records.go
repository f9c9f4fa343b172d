package newconsumer

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
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
// recordbatch): checks each batch's CRC-32C (check.crcs), decompresses (recordbatch.Decompress: gzip, snappy, lz4, zstd),
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
		// Kafka's client reads a batch into a Java buffer: at most 2 GiB.
		recs, err := recordbatch.Decompress(recordbatch.Codec(b.Compression()), recordbatch.Magic, b.Records, math.MaxInt32)
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
