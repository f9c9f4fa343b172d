package conformance

import (
	"bytes"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

// The scripts of compressed batches, old message formats, LogAppendTime topics, the timestamp bounds
// and ListOffsets by timestamp: each case creates its own topic, so what it reads back is only what
// it wrote.

// codecs are the compression codecs by their attribute value.
var codecs = []struct {
	id   int8
	name string
	kgo  kgo.CompressionCodec
}{{1, "gzip", kgo.GzipCompression()}, {2, "snappy", kgo.SnappyCompression()}, {3, "lz4", kgo.Lz4Compression()}, {4, "zstd", kgo.ZstdCompression()}}

// compress is codec's compression of data as franz-go's producer compresses (snappy raw, lz4 frame).
func compress(codec kgo.CompressionCodec, data []byte) []byte {
	c, err := kgo.DefaultCompressor(codec)
	if err != nil {
		panic(err)
	}
	out, _ := c.Compress(new(bytes.Buffer), data)
	return append([]byte(nil), out...)
}

// stampedBatch is a v2 batch of values (keys equal to values) at timestamps recordTimestamp,
// recordTimestamp+1, ...; codec (0 none) compresses its records; attrs adds attribute bits
// (recordbatch.LogAppendTimeBit).
func stampedBatch(codec int8, attrs int16, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		recs = recordbatch.AppendRecord(recs, recordbatch.Record{TimestampDelta: int64(i), OffsetDelta: int32(i), Key: []byte(v), Value: []byte(v)})
	}
	if codec != 0 {
		recs = compress(codecs[codec-1].kgo, recs)
	}
	return recordbatch.AppendBatch(nil, recordbatch.Header{
		PartitionLeaderEpoch: -1, Attributes: int16(codec) | attrs, LastOffsetDelta: int32(len(values) - 1),
		BaseTimestamp: recordTimestamp, MaxTimestamp: recordTimestamp + int64(len(values)-1),
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: int32(len(values)),
	}, recs)
}

// legacyMessage is one message of format magic (0 or 1) at offset off: attributes attrs (a codec
// for a wrapper), timestamp ts (format 1), key (nil: null) and value.
func legacyMessage(magic byte, off int64, attrs byte, ts int64, key, value []byte) []byte {
	return recordbatch.AppendLegacyMessage(nil, int8(magic), attrs, off, ts, key, value)
}

// compressedMessageSet is a message set of format magic holding one wrapper message compressed with
// codec around values (keys equal to values, format 1 timestamps recordTimestamp, +1, ...), as the
// 0.8–0.10 producers write it: inner offsets 0..n-1, the wrapper at the last inner offset with the
// largest inner timestamp.
func compressedMessageSet(magic byte, codec int8, values ...string) []byte {
	var inner []byte
	for i, v := range values {
		inner = append(inner, legacyMessage(magic, int64(i), 0, recordTimestamp+int64(i), []byte(v), []byte(v))...)
	}
	last := int64(len(values) - 1)
	return legacyMessage(magic, last, byte(codec), recordTimestamp+last, nil, compress(codecs[codec-1].kgo, inner))
}

func createTopicReq(topic string, partitions int32, configs map[string]string) *kmsg.CreateTopicsRequest {
	r := createTopicsReq(4, false, newTopic{topic, partitions, 1})
	for _, k := range sortedKeysOf(configs) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(configs[k])
		r.Topics[0].Configs = append(r.Topics[0].Configs, c)
	}
	return r
}

// fetchAt is fetchReq for partition p from offset.
func fetchAt(v int16, topic string, p int32, offset int64) func(*state) kmsg.Request {
	return fixedReq(fetchReq(v, topic, p, offset, 1<<20))
}

// compressedCase produces one v2 batch compressed with codec (Produce v9; zstd also at v6, which
// Kafka refuses below v7) and reads it back: Fetch v4 and v12 from its first and its second record,
// Fetch v9 (zstd needs v10), ListOffsets by the timestamp of its second record (a compressed batch is
// searched record by record), MAX_TIMESTAMP, and the log end offset.
func compressedCase(v versions, codec int8) kcase {
	name := codecs[codec-1].name
	topic := "dt-codec-" + name
	steps := []step{{name: "create", req: fixedReq(createTopicReq(topic, 1, nil))}, ledBarrier(topic)}
	if codec == 4 {
		steps = append(steps, step{name: "produce-v6", req: fixedReq(produceReq(6, -1, topic, 0, stampedBatch(codec, 0, name+"-old")))})
	}
	steps = append(steps,
		step{name: "produce", req: fixedReq(produceReq(v.max[kmsg.Produce.Int16()], -1, topic, 0, stampedBatch(codec, 0, name+"-a", name+"-b", name+"-c")))},
		step{name: "fetch-v4", req: fetchAt(4, topic, 0, 0)},
		step{name: "fetch-v9", req: fetchAt(9, topic, 0, 0)},
		step{name: "fetch", req: fetchAt(v.max[kmsg.Fetch.Int16()], topic, 0, 0)},
		step{name: "fetch-from-1", req: fetchAt(v.max[kmsg.Fetch.Int16()], topic, 0, 1)},
		step{name: "list-by-timestamp", req: fixedReq(listOffsetsReq(v.max[kmsg.ListOffsets.Int16()], topic, 0, recordTimestamp+1))},
		step{name: "list-max-timestamp", req: fixedReq(listOffsetsReq(v.max[kmsg.ListOffsets.Int16()], topic, 0, -3))},
		step{name: "list-latest", req: fixedReq(listOffsetsReq(v.max[kmsg.ListOffsets.Int16()], topic, 0, -1))},
	)
	return kcase{name: "Compressed v2 " + name, steps: steps}
}

// oldFormatCompressedCase produces a message set compressed with codec at Produce v0 and v1 (format
// 0) and v2 (format 1), one partition each, and reads each back at Fetch v0–v1 (format 0), v2–v3
// (format 1) and v4 and the newest (the v2 batches stored).
func oldFormatCompressedCase(v versions, codec int8) kcase {
	name := codecs[codec-1].name
	topic := "dt-old-" + name
	steps := []step{{name: "create", req: fixedReq(createTopicReq(topic, 3, nil))}, ledBarrier(topic)}
	for pv := int16(0); pv <= 2; pv++ {
		magic := byte(0)
		if pv == 2 {
			magic = 1
		}
		vals := []string{fmt.Sprintf("%s-v%d-a", name, pv), fmt.Sprintf("%s-v%d-b", name, pv)}
		steps = append(steps, step{name: fmt.Sprintf("produce-v%d", pv), req: fixedReq(produceReq(pv, -1, topic, int32(pv), compressedMessageSet(magic, codec, vals...)))})
	}
	for p := int32(0); p <= 2; p++ {
		for _, fv := range []int16{0, 1, 2, 3, 4, v.max[kmsg.Fetch.Int16()]} {
			steps = append(steps, step{name: fmt.Sprintf("fetch-v%d-partition-%d", fv, p), req: fetchAt(fv, topic, p, 0)})
		}
	}
	return kcase{name: "Old formats compressed " + name, steps: steps}
}

// logAppendTimeCase writes to a topic with message.timestamp.type=LogAppendTime at Produce version
// pv (format 0 at v0–v1, format 1 at v2, v2 batches from v3; codec compresses the v2 batch) and reads
// the stamp back: the Produce answer's log_append_time_ms (within the request's window), the stored
// batch (LogAppendTime attribute, max timestamp the stamp), the down-converted messages of Fetch v3 and
// v1, ListOffsets by timestamp 0 (before the stamp, though the records were sent with the future
// recordTimestamp), at the stamp, after it, and MAX_TIMESTAMP; then a batch whose
// producer set the LogAppendTime attribute, refused with INVALID_TIMESTAMP.
func logAppendTimeCase(v versions, pv int16, codec int8) kcase {
	name := fmt.Sprintf("LogAppendTime Produce v%d", pv)
	topic := fmt.Sprintf("dt-lat-v%d", pv)
	if codec != 0 {
		name += " " + codecs[codec-1].name
		topic += "-" + codecs[codec-1].name
	}
	var recs []byte
	switch {
	case codec != 0:
		recs = stampedBatch(codec, 0, "l-a", "l-b")
	default:
		recs = records(pv, true, "l-a", "l-b")
	}
	lv := v.max[kmsg.ListOffsets.Int16()]
	return kcase{name: name, steps: []step{
		{name: "create", req: fixedReq(createTopicReq(topic, 1, map[string]string{"message.timestamp.type": "LogAppendTime"}))},
		ledBarrier(topic),
		{name: "produce", req: fixedReq(produceReq(pv, -1, topic, 0, recs)), after: func(st *state, r kmsg.Response) {
			st.stamp["produce"] = r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].LogAppendTime
		}},
		{name: "fetch", req: fetchAt(v.max[kmsg.Fetch.Int16()], topic, 0, 0), after: func(st *state, r kmsg.Response) {
			// Produce v0–v1 answer no log_append_time_ms: the stamp is the stored batch's max timestamp.
			p := r.(*kmsg.FetchResponse).Topics[0].Partitions[0]
			if bt, err := recordbatch.Read(p.RecordBatches); err == nil && st.stamp["produce"] == -1 {
				st.stamp["produce"] = bt.MaxTimestamp
			}
		}},
		{name: "fetch-v3", req: fetchAt(3, topic, 0, 0)},
		{name: "fetch-v1", req: fetchAt(1, topic, 0, 0)},
		{name: "list-before-stamp", req: fixedReq(listOffsetsReq(lv, topic, 0, 0))},
		{name: "list-at-stamp", req: func(st *state) kmsg.Request { return listOffsetsReq(lv, topic, 0, st.stamp["produce"]) }},
		{name: "list-after-stamp", req: func(st *state) kmsg.Request { return listOffsetsReq(lv, topic, 0, st.stamp["produce"]+1) }},
		{name: "list-max-timestamp", req: fixedReq(listOffsetsReq(lv, topic, 0, -3))},
		{name: "list-v1-before-stamp", req: fixedReq(listOffsetsReq(1, topic, 0, 0))},
		{name: "produce-log-append-time-set", req: fixedReq(produceReq(v.max[kmsg.Produce.Int16()], -1, topic, 0, stampedBatch(codec, recordbatch.LogAppendTimeBit, "l-x", "l-y")))},
		{name: "list-latest", req: fixedReq(listOffsetsReq(lv, topic, 0, -1))},
	}}
}

// boundsCase produces records outside a topic's timestamp bounds at every Produce version (format 0
// has no timestamp and passes), with the bounds set by configs: INVALID_TIMESTAMP, from v8 with the
// index of every bad record, nothing appended. The batches that mix good and bad records are built
// at send time from the clock (the request is not compared; the record errors' indexes are).
func boundsCase(v versions, label string, configs map[string]string) kcase {
	topic := "dt-bounds-" + label
	steps := []step{{name: "create", req: fixedReq(createTopicReq(topic, 1, configs))}, ledBarrier(topic)}
	const hour = int64(time.Hour / time.Millisecond)
	mixed := func(pv int16) func(*state) kmsg.Request {
		return func(*state) kmsg.Request {
			now := time.Now().UnixMilli()
			stamps := []int64{now, now - 2*hour, now, now + 2*hour}
			var recs []byte
			for i, ts := range stamps {
				recs = recordbatch.AppendRecord(recs, recordbatch.Record{TimestampDelta: ts - now, OffsetDelta: int32(i), Key: []byte("k"), Value: []byte("v")})
			}
			b := recordbatch.AppendBatch(nil, recordbatch.Header{PartitionLeaderEpoch: -1, LastOffsetDelta: 3, BaseTimestamp: now, MaxTimestamp: now + 2*hour,
				ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: 4}, recs)
			return produceReq(pv, -1, topic, 0, b)
		}
	}
	for _, pv := range v.of(kmsg.Produce) {
		steps = append(steps, step{name: fmt.Sprintf("produce-v%d-fixed-timestamp", pv), req: fixedReq(produceReq(pv, -1, topic, 0, records(pv, true, "b-a", "b-b")))})
		if pv >= 3 {
			steps = append(steps, step{name: fmt.Sprintf("produce-v%d-mixed", pv), req: mixed(pv)})
		}
	}
	steps = append(steps,
		step{name: "produce-gzip-fixed-timestamp", req: fixedReq(produceReq(v.max[kmsg.Produce.Int16()], -1, topic, 0, stampedBatch(1, 0, "b-g")))},
		step{name: "list-latest", req: fixedReq(listOffsetsReq(v.max[kmsg.ListOffsets.Int16()], topic, 0, -1))},
	)
	return kcase{name: "Timestamp bounds " + label, steps: steps}
}

// compactedKeylessCase produces records without a key to a compacted topic at every Produce version,
// uncompressed and gzip (and with a bad timestamp besides, under a bound): INVALID_RECORD with a record
// error per keyless record from v8 (INVALID_TIMESTAMP when a timestamp is bad too), nothing appended.
func compactedKeylessCase(v versions) kcase {
	topic := "dt-compacted"
	keyless := func(codec int8, keyed ...bool) []byte {
		var recs []byte
		for i, k := range keyed {
			r := recordbatch.Record{OffsetDelta: int32(i), Value: []byte("v")}
			if k {
				r.Key = []byte("k")
			}
			recs = recordbatch.AppendRecord(recs, r)
		}
		if codec != 0 {
			recs = compress(codecs[codec-1].kgo, recs)
		}
		return recordbatch.AppendBatch(nil, recordbatch.Header{PartitionLeaderEpoch: -1, Attributes: int16(codec), LastOffsetDelta: int32(len(keyed) - 1),
			BaseTimestamp: recordTimestamp, MaxTimestamp: recordTimestamp, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: int32(len(keyed))}, recs)
	}
	steps := []step{{name: "create", req: fixedReq(createTopicReq(topic, 1, map[string]string{"cleanup.policy": "compact"}))}, ledBarrier(topic)}
	for _, pv := range v.of(kmsg.Produce) {
		recs := keyless(0, false, true, false)
		if pv < 3 {
			magic := byte(0)
			if pv == 2 {
				magic = 1
			}
			recs = legacyMessage(magic, 0, 0, recordTimestamp, nil, []byte("kl"))
		}
		steps = append(steps, step{name: fmt.Sprintf("produce-v%d-keyless", pv), req: fixedReq(produceReq(pv, -1, topic, 0, recs))})
	}
	steps = append(steps,
		step{name: "produce-gzip-keyless", req: fixedReq(produceReq(v.max[kmsg.Produce.Int16()], -1, topic, 0, keyless(1, true, false, false, false, false)))},
		step{name: "produce-keyed", req: fixedReq(produceReq(v.max[kmsg.Produce.Int16()], -1, topic, 0, keyless(0, true, true)))},
		step{name: "list-latest", req: fixedReq(listOffsetsReq(v.max[kmsg.ListOffsets.Int16()], topic, 0, -1))},
	)
	return kcase{name: "Compacted topic keyless", steps: steps}
}

// timestampCases are this file's cases.
func timestampCases(v versions) []kcase {
	var cases []kcase
	for _, c := range codecs {
		cases = append(cases, compressedCase(v, c.id))
	}
	for _, c := range codecs[:3] { // formats 0 and 1 know gzip, snappy and lz4
		cases = append(cases, oldFormatCompressedCase(v, c.id))
	}
	for _, pv := range []int16{0, 2, 3, v.max[kmsg.Produce.Int16()]} {
		cases = append(cases, logAppendTimeCase(v, pv, 0))
	}
	cases = append(cases, logAppendTimeCase(v, v.max[kmsg.Produce.Int16()], 1))
	cases = append(cases, compactedKeylessCase(v))
	cases = append(cases,
		boundsCase(v, "before-after", map[string]string{"message.timestamp.before.max.ms": "3600000", "message.timestamp.after.max.ms": "3600000"}),
		boundsCase(v, "difference", map[string]string{"message.timestamp.difference.max.ms": "3600000"}),
	)
	return cases
}
