package broker

// The compression step of a leader append (LogValidator.validateMessagesAndAssignOffsets with
// BrokerCompressionType.targetCompression): a topic's compression.type other than producer
// recompresses the appended batch into its codec, at its level.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

// compressionConfig is a topic's compression.type (producer, or the codec stored batches get:
// uncompressed, gzip, snappy, lz4, zstd) and the levels of compression.gzip.level,
// compression.lz4.level and compression.zstd.level (KIP-390).
type compressionConfig struct {
	producer                       bool              // compression.type=producer: the producer's codec is kept
	codec                          recordbatch.Codec // otherwise, the codec of stored batches
	gzipLevel, lz4Level, zstdLevel int
}

// compressionConfigOf reads the compression keys of a topic's parsed config (newLogConfig's).
func compressionConfigOf(parsed map[string]any) compressionConfig {
	c := compressionConfig{
		gzipLevel: int(parsed["compression.gzip.level"].(int64)),
		lz4Level:  int(parsed["compression.lz4.level"].(int64)),
		zstdLevel: int(parsed["compression.zstd.level"].(int64)),
	}
	switch strings.ToLower(parsed["compression.type"].(string)) {
	case "uncompressed":
		c.codec = recordbatch.CodecNone
	case "gzip":
		c.codec = recordbatch.CodecGzip
	case "snappy":
		c.codec = recordbatch.CodecSnappy
	case "lz4":
		c.codec = recordbatch.CodecLZ4
	case "zstd":
		c.codec = recordbatch.CodecZstd
	default: // producer (the validator admits nothing else)
		c.producer = true
	}
	return c
}

// target is BrokerCompressionType.targetCompression: the codec and level (recordbatch's
// DefaultLevel for the codec's default) batches of source codec are stored with.
func (c compressionConfig) target(source recordbatch.Codec) (recordbatch.Codec, int) {
	if c.producer {
		return source, recordbatch.DefaultLevel
	}
	switch c.codec {
	case recordbatch.CodecGzip:
		return c.codec, c.gzipLevel
	case recordbatch.CodecLZ4:
		return c.codec, c.lz4Level
	case recordbatch.CodecZstd:
		return c.codec, c.zstdLevel
	}
	return c.codec, recordbatch.DefaultLevel
}

// applyCompressionType is LogValidator's choice between keeping an appended v2 batch as it is and
// rebuilding it (validateMessagesAndAssignOffsetsCompressed, buildRecordsAndAssignOffsets), for the
// compression only: records (v2 batches back to back, as the append gets them) are returned as they
// are when neither their codec (the last compressed batch's: UnifiedLog.analyzeAndValidateRecords'
// sourceCompression) nor the topic's target codec compresses, or when the two are the same and the
// records' offsets are 0..n-1; otherwise the one batch is rebuilt with the target codec and level:
// offset deltas 0..n-1, record attributes 0, the base timestamp the first record's, the max timestamp
// the records' highest (kept for a LogAppendTime batch), the batch's producer fields, other attributes
// and headers kept. An uncompressed control batch is never compressed. maxMessageBytes bounds a
// rebuilt batch (UnifiedLog.append's re-check after recompression). Errors (code and message):
// INVALID_RECORD for more than one batch with a compressed one, MESSAGE_TOO_LARGE, CORRUPT_MESSAGE for
// a batch that does not decode.
func applyCompressionType(c compressionConfig, records []byte, topic string, p int32, maxMessageBytes int32) ([]byte, int16, string) {
	source, batches := recordbatch.CodecNone, 0
	for rest := records; len(rest) > 0; batches++ { // the headers only: the log checks the CRCs
		h, err := recordbatch.ReadHeader(rest)
		if err != nil {
			return nil, kerr.CorruptMessage.Code, err.Error()
		}
		if codec := recordbatch.Codec(h.Compression()); codec != recordbatch.CodecNone {
			source = codec
		}
		rest = rest[h.Size():]
	}
	target, level := c.target(source)
	if batches == 0 || (source == recordbatch.CodecNone && target == recordbatch.CodecNone) {
		return records, 0, ""
	}
	if batches > 1 {
		return nil, kerr.InvalidRecord.Code, "Compressed outer record has more than one batch"
	}
	first, err := recordbatch.Read(records)
	if err != nil {
		return nil, kerr.CorruptMessage.Code, err.Error()
	}
	if source == recordbatch.CodecNone && first.IsControl() {
		return records, 0, ""
	}
	raw, err := recordbatch.Decompress(source, recordbatch.Magic, first.Records, maxDecompressed)
	if err != nil {
		return nil, kerr.CorruptMessage.Code, fmt.Sprintf("batch of %s-%d: %v", topic, p, err)
	}
	// A batch kept as it is (same codec, offsets 0..n-1) is only walked, not copied: the common case of
	// compression.type=producer.
	inPlace, n := source == target, int64(0)
	err = recordbatch.ReadRecords(raw, first.NumRecords, func(r recordbatch.Record) error {
		if first.BaseOffset+int64(r.OffsetDelta) != n {
			inPlace = false // "Some older clients do not implement the V1 internal offsets correctly"
		}
		n++
		return nil
	})
	if err != nil {
		return nil, kerr.CorruptMessage.Code, fmt.Sprintf("batch of %s-%d: %v", topic, p, err)
	}
	if inPlace {
		return records, 0, ""
	}
	recs := make([]recordbatch.Record, 0, n)
	if err := recordbatch.ReadRecords(raw, first.NumRecords, func(r recordbatch.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		return nil, kerr.CorruptMessage.Code, fmt.Sprintf("batch of %s-%d: %v", topic, p, err)
	}
	out, err := rebuildBatch(first.Header, recs, target, level)
	if err != nil {
		return nil, kerr.CorruptMessage.Code, fmt.Sprintf("batch of %s-%d: %v", topic, p, err)
	}
	if len(out) > int(maxMessageBytes) {
		return nil, kerr.MessageTooLarge.Code, fmt.Sprintf("Message batch size is %d bytes in append topartition %s-%d which exceeds the maximum configured size of %d.", len(out), topic, p, maxMessageBytes)
	}
	return out, 0, ""
}

// rebuildBatch is one v2 batch of recs with h's producer fields and attributes (the codec's bits
// replaced by codec), compressed at level (MemoryRecordsBuilder.appendWithOffset of each record).
func rebuildBatch(h recordbatch.Header, recs []recordbatch.Record, codec recordbatch.Codec, level int) ([]byte, error) {
	if len(recs) == 0 {
		return nil, errors.New("a batch without records")
	}
	ts := func(r recordbatch.Record) int64 { return h.BaseTimestamp + r.TimestampDelta }
	base, maxTS := ts(recs[0]), int64(recordbatch.NoTimestamp)
	var body []byte
	for i, r := range recs {
		maxTS = max(maxTS, ts(r))
		body = recordbatch.AppendRecord(body, recordbatch.Record{TimestampDelta: ts(r) - base, OffsetDelta: int32(i),
			Key: r.Key, Value: r.Value, Headers: r.Headers})
	}
	body, err := recordbatch.CompressLevel(codec, recordbatch.Magic, level, body)
	if err != nil {
		return nil, err
	}
	if h.LogAppendTime() {
		maxTS = h.MaxTimestamp
	}
	h.BaseOffset, h.LastOffsetDelta, h.NumRecords = 0, int32(len(recs)-1), int32(len(recs))
	h.BaseTimestamp, h.MaxTimestamp = base, maxTS
	h.Attributes = h.Attributes&^recordbatch.CompressionMask | int16(codec)
	return recordbatch.AppendBatch(nil, h, body), nil
}

// zstdTopicRefused is KafkaApis.maybeConvertFetchedData's first check: a consumer's Fetch below v10
// (the versions that predate zstd, KIP-110) of a partition this broker holds, whose topic's
// compression.type is zstd, is answered UNSUPPORTED_COMPRESSION_TYPE (FetchResponse.partitionResponse)
// whatever the read gave.
func (b *Broker) zstdTopicRefused(req *kmsg.FetchRequest, topic string, p int32) bool {
	if req.Version >= 10 || fetchReplicaID(req) >= 0 {
		return false
	}
	part, err := b.localPartition(topic, p)
	if err != nil {
		return false
	}
	c := part.config().compression
	return !c.producer && c.codec == recordbatch.CodecZstd
}
