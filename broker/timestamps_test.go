package broker_test

import (
	"bytes"
	"compress/gzip"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
)

// tsBatch is a v2 batch of one record per timestamp (keys "k<i>"), CreateTime unless logAppend,
// its records gzip-compressed when gz.
func tsBatch(t *testing.T, gz, logAppend bool, stamps ...int64) []byte {
	t.Helper()
	var recs []byte
	maxTS := int64(-1)
	for i, ts := range stamps {
		recs = recordbatch.AppendRecord(recs, recordbatch.Record{TimestampDelta: ts - stamps[0], OffsetDelta: int32(i), Key: []byte{'k', byte('0' + i)}, Value: []byte("v")})
		maxTS = max(maxTS, ts)
	}
	var attrs int16
	if gz {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		if _, err := w.Write(recs); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		recs, attrs = b.Bytes(), 1
	}
	if logAppend {
		attrs |= recordbatch.LogAppendTimeBit
	}
	return recordbatch.AppendBatch(nil, recordbatch.Header{PartitionLeaderEpoch: -1, Attributes: attrs, LastOffsetDelta: int32(len(stamps) - 1),
		BaseTimestamp: stamps[0], MaxTimestamp: maxTS, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: int32(len(stamps))}, recs)
}

// produceAt sends one partition's records with Produce version v, acks 1.
func produceAt(t *testing.T, c *wire.Conn, v int16, topic string, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return request[*kmsg.ProduceResponse](t, c, req, v).Topics[0].Partitions[0]
}

// fetchBatches reads partition 0 of topic from offset with Fetch v12 and decodes its batches.
func fetchBatches(t *testing.T, c *wire.Conn, topic string, offset int64) []recordbatch.Batch {
	t.Helper()
	req := consumerFetch(topic, 1<<20)
	req.Topics[0].Partitions[0].FetchOffset = offset
	p := request[*kmsg.FetchResponse](t, c, req, 12).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch %s@%d: %v", topic, offset, kerr.ErrorForCode(p.ErrorCode))
	}
	var out []recordbatch.Batch
	for data := p.RecordBatches; len(data) > 0; {
		b, err := recordbatch.Read(data)
		if err != nil {
			t.Fatalf("fetch %s@%d: %v", topic, offset, err)
		}
		out = append(out, b)
		data = data[b.Size():]
	}
	return out
}

// listAt is ListOffsets v9 for partition 0 of topic at ts.
func listAt(t *testing.T, c *wire.Conn, topic string, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return request[*kmsg.ListOffsetsResponse](t, c, req, 9).Topics[0].Partitions[0]
}

// TestLogAppendTimeTopic: on a topic with message.timestamp.type=LogAppendTime every batch — v2
// uncompressed and gzip, and a format 1 message set converted on append — is stored with the LogAppendTime
// attribute and the broker's append time as its max timestamp (CRC still valid), the Produce answer
// carries that time as log_append_time_ms (-1 on a CreateTime topic), ListOffsets by timestamp and
// MAX_TIMESTAMP answer the stamped times, a batch whose producer set the LogAppendTime attribute is
// refused with INVALID_TIMESTAMP, one record error per record, a corrupt batch as corrupt (not
// stamped), nothing appended; and an alter of message.timestamp.type applies to the next batch.
func TestLogAppendTimeTopic(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1, nil)
	c := dial(t, b.addr())
	for _, topic := range []string{"lat", "ct"} {
		cfg := map[string]string{}
		if topic == "lat" {
			cfg["message.timestamp.type"] = "LogAppendTime"
		}
		if r := createTopicWithConfigs(t, c, topic, cfg); r.ErrorCode != 0 {
			t.Fatalf("create %s: %v", topic, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	waitLeader(t, c, "lat", "ct")

	if r := produceAt(t, c, 9, "ct", tsBatch(t, false, false, 1000, 1001)); r.ErrorCode != 0 || r.LogAppendTime != -1 {
		t.Fatalf("CreateTime produce: error %d log append time %d; want 0, -1", r.ErrorCode, r.LogAppendTime)
	}

	var stamps []int64
	for i, records := range [][]byte{tsBatch(t, false, false, 1000, 1001), tsBatch(t, true, false, 2000, 2002, 2001)} {
		before := time.Now().UnixMilli()
		r := produceAt(t, c, 9, "lat", records)
		after := time.Now().UnixMilli()
		if r.ErrorCode != 0 || r.LogAppendTime < before || r.LogAppendTime > after {
			t.Fatalf("produce %d: error %d log append time %d; want 0 and a time in [%d, %d]", i, r.ErrorCode, r.LogAppendTime, before, after)
		}
		stamps = append(stamps, r.LogAppendTime)
	}
	// Produce v2: a format 1 message set, converted to one v2 batch and stamped.
	before := time.Now().UnixMilli()
	r := produceAt(t, c, 2, "lat", append(legacyMessage(1, 0, 0, 3000, nil, []byte("a")), legacyMessage(1, 0, 0, 3001, nil, []byte("b"))...))
	after := time.Now().UnixMilli()
	if r.ErrorCode != 0 || r.BaseOffset != 5 || r.LogAppendTime < before || r.LogAppendTime > after {
		t.Fatalf("produce v2: error %d base offset %d log append time %d; want 0, 5 and a time in [%d, %d]", r.ErrorCode, r.BaseOffset, r.LogAppendTime, before, after)
	}
	stamps = append(stamps, r.LogAppendTime)

	got := fetchBatches(t, c, "lat", 0)
	if len(got) != 3 {
		t.Fatalf("fetched %d batches, want 3", len(got))
	}
	for i, bt := range got {
		if !bt.LogAppendTime() || bt.MaxTimestamp != stamps[i] {
			t.Errorf("batch %d: LogAppendTime attribute %v, max timestamp %d; want true, %d", i, bt.LogAppendTime(), bt.MaxTimestamp, stamps[i])
		}
	}
	if got[1].Compression() != 1 || got[0].BaseTimestamp != 1000 || got[1].BaseTimestamp != 2000 || got[2].BaseTimestamp != 3000 {
		t.Errorf("codec %d, base timestamps %d %d %d; want gzip kept and the base timestamps as sent (1000, 2000, 3000)",
			got[1].Compression(), got[0].BaseTimestamp, got[1].BaseTimestamp, got[2].BaseTimestamp)
	}

	// ListOffsets sees every record at its batch's stamp: timestamp 1000 (before every stamp) is
	// offset 0; just after the first stamp, the gzip batch's first record; MAX_TIMESTAMP, the last
	// batch's first record.
	maxOff, maxStamp := int64(-1), int64(-1)
	for i, base := range []int64{0, 2, 5} {
		if stamps[i] > maxStamp {
			maxOff, maxStamp = base, stamps[i]
		}
	}
	for _, q := range []struct {
		ts, off, stamp int64
	}{{1000, 0, stamps[0]}, {stamps[0] + 1, 2, stamps[1]}, {-3, maxOff, maxStamp}, {maxStamp + 1, -1, -1}} {
		if q.ts > 0 && q.off == 2 && stamps[1] == stamps[0] {
			continue // both batches stamped in the same millisecond: no timestamp between them
		}
		p := listAt(t, c, "lat", q.ts)
		if p.ErrorCode != 0 || p.Offset != q.off || p.Timestamp != q.stamp {
			t.Errorf("ListOffsets %d: error %d offset %d timestamp %d; want 0, %d, %d", q.ts, p.ErrorCode, p.Offset, p.Timestamp, q.off, q.stamp)
		}
	}

	// A producer may not set the LogAppendTime attribute on a LogAppendTime topic.
	r = produceAt(t, c, 9, "lat", tsBatch(t, false, true, 4000, 4001))
	if r.ErrorCode != kerr.InvalidTimestamp.Code || r.BaseOffset != -1 || len(r.ErrorRecords) != 2 || r.ErrorRecords[1].RelativeOffset != 1 ||
		deref(r.ErrorMessage) != "One or more records have been rejected due to invalid timestamp" {
		t.Errorf("LogAppendTime set by the producer: error %d base offset %d record errors %d %+v message %q; want INVALID_TIMESTAMP, -1, 2 records",
			r.ErrorCode, r.BaseOffset, len(r.ErrorRecords), r.ErrorRecords, deref(r.ErrorMessage))
	}
	// A batch whose CRC does not match is refused as corrupt, not stamped (a stamp recomputes the CRC).
	bad := tsBatch(t, false, false, 5000)
	bad[len(bad)-1] ^= 0xff
	if r := produceAt(t, c, 9, "lat", bad); r.ErrorCode != kerr.CorruptMessage.Code {
		t.Errorf("corrupt batch: error %d, want CORRUPT_MESSAGE", r.ErrorCode)
	}
	if p := listAt(t, c, "lat", -1); p.Offset != 7 {
		t.Errorf("log end offset %d after the refused batches, want 7", p.Offset)
	}

	// The type changes live: once the change notification reaches the broker, the CreateTime topic's
	// next batch is stamped.
	if code, msg := alterTopic(t, c, "ct", "message.timestamp.type", "LogAppendTime"); code != 0 {
		t.Fatalf("alter ct: %v %s", kerr.ErrorForCode(code), msg)
	}
	testutil.WaitFor(t, 10*time.Second, "ct stamps its batches after the alter", func() bool {
		return produceAt(t, c, 9, "ct", tsBatch(t, false, false, 1000)).LogAppendTime != -1
	})
}

// TestTimestampBounds: message.timestamp.before.max.ms and .after.max.ms (KIP-937), and the
// deprecated message.timestamp.difference.max.ms when they keep their defaults, refuse a batch with
// a record timestamp outside [now - before, now + after] with INVALID_TIMESTAMP: from Produce v8 with
// the index of every bad record and Kafka's message, before v8 the code alone; the whole batch is
// refused, uncompressed or gzip, and nothing is appended. Records within the bounds, and records
// without a timestamp (format 0), pass.
func TestTimestampBounds(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1, nil)
	c := dial(t, b.addr())
	const hour = int64(3600_000)
	for topic, cfg := range map[string]map[string]string{
		"bounds":     {"message.timestamp.before.max.ms": "3600000", "message.timestamp.after.max.ms": "3600000"},
		"difference": {"message.timestamp.difference.max.ms": "3600000"},
	} {
		if r := createTopicWithConfigs(t, c, topic, cfg); r.ErrorCode != 0 {
			t.Fatalf("create %s: %v", topic, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	waitLeader(t, c, "bounds", "difference")
	for _, topic := range []string{"bounds", "difference"} {
		now := time.Now().UnixMilli()
		for i, q := range []struct {
			v      int16
			gz     bool
			stamps []int64
			bad    []int32 // record errors expected (v8+)
		}{
			{9, false, []int64{now, now - 2*hour, now + 2*hour}, []int32{1, 2}},
			{9, true, []int64{now - 2*hour, now}, []int32{0}},
			{7, false, []int64{now + 2*hour}, nil},
		} {
			r := produceAt(t, c, q.v, topic, tsBatch(t, q.gz, false, q.stamps...))
			var idx []int32
			for _, e := range r.ErrorRecords {
				idx = append(idx, e.RelativeOffset)
			}
			wantMsg := "<null>" // no error_message before v8
			if q.v >= 8 {
				wantMsg = "One or more records have been rejected due to invalid timestamp"
			}
			if r.ErrorCode != kerr.InvalidTimestamp.Code || r.BaseOffset != -1 || r.LogStartOffset != 0 || deref(r.ErrorMessage) != wantMsg || !equalInt32(idx, q.bad) {
				t.Errorf("%s case %d: error %d base offset %d log start %d message %q record errors %v; want INVALID_TIMESTAMP, -1, 0, %q, %v",
					topic, i, r.ErrorCode, r.BaseOffset, r.LogStartOffset, deref(r.ErrorMessage), idx, wantMsg, q.bad)
			}
		}
		if p := listAt(t, c, topic, -1); p.Offset != 0 {
			t.Errorf("%s: log end offset %d after refused batches, want 0", topic, p.Offset)
		}
		now = time.Now().UnixMilli()
		if r := produceAt(t, c, 9, topic, tsBatch(t, true, false, now-hour/2, now+hour/2)); r.ErrorCode != 0 || r.BaseOffset != 0 {
			t.Errorf("%s: records within the bounds: error %d base offset %d; want 0, 0", topic, r.ErrorCode, r.BaseOffset)
		}
		if r := produceAt(t, c, 0, topic, legacyMessage(0, 0, 0, 0, nil, []byte("no timestamp"))); r.ErrorCode != 0 || r.BaseOffset != 2 {
			t.Errorf("%s: a format 0 message: error %d base offset %d; want 0, 2", topic, r.ErrorCode, r.BaseOffset)
		}
	}
}

func equalInt32(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCompactedTopicKeylessRecords: on a compacted topic a batch with keyless records — uncompressed or
// gzip — is refused as LogValidator refuses it: INVALID_RECORD with one record error per keyless
// record and the message naming the first three; a bad timestamp among them makes it INVALID_TIMESTAMP.
func TestCompactedTopicKeylessRecords(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1, nil)
	c := dial(t, b.addr())
	if r := createTopicWithConfigs(t, c, "cmp", map[string]string{"cleanup.policy": "compact", "message.timestamp.before.max.ms": "3600000"}); r.ErrorCode != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	waitLeader(t, c, "cmp")
	keyless := func(gz bool, stamps []int64, keyed ...bool) []byte {
		var recs []byte
		for i, k := range keyed {
			r := recordbatch.Record{TimestampDelta: stamps[i] - stamps[0], OffsetDelta: int32(i), Value: []byte("v")}
			if k {
				r.Key = []byte("k")
			}
			recs = recordbatch.AppendRecord(recs, r)
		}
		var attrs int16
		if gz {
			var buf bytes.Buffer
			w := gzip.NewWriter(&buf)
			w.Write(recs)
			w.Close()
			recs, attrs = buf.Bytes(), 1
		}
		return recordbatch.AppendBatch(nil, recordbatch.Header{PartitionLeaderEpoch: -1, Attributes: attrs, LastOffsetDelta: int32(len(keyed) - 1),
			BaseTimestamp: stamps[0], MaxTimestamp: stamps[len(stamps)-1], ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: int32(len(keyed))}, recs)
	}
	now := time.Now().UnixMilli()
	flat := []int64{now, now, now, now, now}
	want := "One or more records have been rejected due to 4 record errors in total, and only showing the first three errors at most: [" +
		"RecordError(batchIndex=0, message='Compacted topic cannot accept message without key in topic partition cmp-0'), " +
		"RecordError(batchIndex=2, message='Compacted topic cannot accept message without key in topic partition cmp-0'), " +
		"RecordError(batchIndex=3, message='Compacted topic cannot accept message without key in topic partition cmp-0')]"
	for _, gz := range []bool{false, true} {
		r := produceAt(t, c, 9, "cmp", keyless(gz, flat, false, true, false, false, false))
		var idx []int32
		for _, e := range r.ErrorRecords {
			idx = append(idx, e.RelativeOffset)
		}
		if r.ErrorCode != kerr.InvalidRecord.Code || deref(r.ErrorMessage) != want || !equalInt32(idx, []int32{0, 2, 3, 4}) {
			t.Errorf("gzip %v: error %d message %q record errors %v; want INVALID_RECORD, %q, [0 2 3 4]", gz, r.ErrorCode, deref(r.ErrorMessage), idx, want)
		}
	}
	// A keyed record with a bad timestamp after a keyless one: the timestamp decides the code.
	r := produceAt(t, c, 9, "cmp", keyless(false, []int64{now, now - 7200_000}, false, true))
	if r.ErrorCode != kerr.InvalidTimestamp.Code || len(r.ErrorRecords) != 2 {
		t.Errorf("keyless and a bad timestamp: error %d, %d record errors; want INVALID_TIMESTAMP, 2", r.ErrorCode, len(r.ErrorRecords))
	}
	if r := produceAt(t, c, 9, "cmp", keyless(true, flat[:2], true, true)); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Errorf("keyed records: error %d base offset %d; want 0, 0", r.ErrorCode, r.BaseOffset)
	}
}
