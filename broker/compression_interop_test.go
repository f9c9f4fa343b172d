package broker_test

// Compression across the message formats, with real clients, on this broker and on a real Kafka 3.9
// broker (the same assertions: the values below are Kafka's): a modern producer's (franz-go, v2
// batches) snappy and lz4 topics read by kafka-python speaking 0.8.2 (Fetch v0: down-converted to
// format 0 wrappers of the same codec, lz4 with KAFKA-3160's header checksum); kafka-python 0.8.2's
// snappy, lz4 and gzip message sets (Produce v0) read by franz-go, stored as v2 batches of the same
// codec; compression.type gzip, lz4 and uncompressed recompressing on append; zstd refused to old
// fetches; malformed message sets refused with Kafka's codes.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/lab"
)

func TestCompressionAcrossFormats(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.KafkaPython)
	compressionAcrossFormats(t, lab.Options{Brokers: 1})
}

// TestCompressionAcrossFormatsKafka39 is the same on a real Kafka 3.9 broker: the reference.
func TestCompressionAcrossFormatsKafka39(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka, testutil.KafkaPython)
	compressionAcrossFormats(t, lab.Options{Brokers: 1, Broker: lab.BrokerKafka})
}

// kafkaPython082Consume reads partition 0 of a topic from the start with kafka-python speaking 0.8.2
// (Fetch v0, message format 0) and prints the count and key=value@offset of each message.
const kafkaPython082Consume = `
import sys
from kafka import KafkaConsumer, TopicPartition
b, topic = sys.argv[1], sys.argv[2]
c = KafkaConsumer(bootstrap_servers=b, consumer_timeout_ms=10000, auto_offset_reset='earliest',
                  enable_auto_commit=False, api_version=(0, 8, 2))
tp = TopicPartition(topic, 0)
c.assign([tp]); c.seek_to_beginning(tp)
got = ['%s=%s@%d' % (m.key.decode(), m.value.decode(), m.offset) for m in c]
print(len(got)); print(','.join(got))
`

// kafkaPython082Produce sends n messages (key k<i>, value <topic>-<i>) to partition 0 with
// kafka-python speaking 0.8.2 (Produce v0: message format 0 wrappers) compressed with argv[4].
const kafkaPython082Produce = `
import sys
from kafka import KafkaProducer
b, topic, n, codec = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
p = KafkaProducer(bootstrap_servers=b, acks='all', api_version=(0, 8, 2), compression_type=codec, linger_ms=50)
for i in range(n):
    p.send(topic, key=b'k%d' % i, value=('%s-%d' % (topic, i)).encode(), partition=0)
p.flush(); p.close()
print('ok')
`

// wantRecords are the n records the tests write to topic: k<i>=<topic>-<i>@<i>.
func wantRecords(topic string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("k%d=%s-%d@%d", i, topic, i, i))
	}
	return out
}

func compressionAcrossFormats(t *testing.T, opts lab.Options) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	opts.Dir = t.TempDir()
	l, err := lab.Start(ctx, opts)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	bootstrap := l.Bootstrap()
	const n = 40

	adm, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	create := func(topic, compressionType string) {
		t.Helper()
		var configs map[string]*string
		if compressionType != "" {
			configs = map[string]*string{"compression.type": kmsg.StringPtr(compressionType)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 1, configs, topic)
		if err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
	}
	produce := func(topic string, codec kgo.CompressionCodec) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%s-%d", topic, i)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", topic, err)
		}
	}

	// A modern producer's snappy and lz4 (and zstd) batches.
	for _, c := range []struct {
		topic string
		codec kgo.CompressionCodec
	}{{"kgo-snappy", kgo.SnappyCompression()}, {"kgo-lz4", kgo.Lz4Compression()}, {"kgo-zstd", kgo.ZstdCompression()}} {
		create(c.topic, "")
		produce(c.topic, c.codec)
	}
	// compression.type recompresses a producer's snappy batches on append.
	for _, typ := range []string{"gzip", "lz4", "uncompressed"} {
		create("cfg-"+typ, typ)
		produce("cfg-"+typ, kgo.SnappyCompression())
	}
	// kafka-python 0.8.2's message sets.
	for _, codec := range []string{"snappy", "lz4", "gzip"} {
		create("py-"+codec, "")
		if out := kafkaPython(t, kafkaPython082Produce, bootstrap, "py-"+codec, strconv.Itoa(n), codec); string(out) != "ok\n" {
			t.Fatalf("kafka-python producing %s: %q", codec, out)
		}
	}

	// kafka-python 0.8.2 reads the modern producer's snappy and lz4, and the recompressed topics.
	for _, topic := range []string{"kgo-snappy", "kgo-lz4", "cfg-gzip", "cfg-lz4", "cfg-uncompressed"} {
		if got := runKafkaPython(t, kafkaPython082Consume, bootstrap, topic, n); !slices.Equal(got, wantRecords(topic, n)) {
			t.Fatalf("kafka-python 0.8.2 read %s: %v\nwant %v", topic, got, wantRecords(topic, n))
		}
	}

	// A modern consumer reads kafka-python 0.8.2's message sets; every topic's stored batches carry
	// the codec Kafka stores them with.
	c := dial(t, bootstrap)
	for _, s := range []struct {
		topic string
		codec recordbatch.Codec
	}{
		{"py-snappy", recordbatch.CodecSnappy}, {"py-lz4", recordbatch.CodecLZ4}, {"py-gzip", recordbatch.CodecGzip},
		{"kgo-snappy", recordbatch.CodecSnappy}, {"kgo-lz4", recordbatch.CodecLZ4}, {"kgo-zstd", recordbatch.CodecZstd},
		{"cfg-gzip", recordbatch.CodecGzip}, {"cfg-lz4", recordbatch.CodecLZ4}, {"cfg-uncompressed", recordbatch.CodecNone},
	} {
		codecs, recs := storedBatches(t, c, s.topic)
		for i, codec := range codecs {
			if codec != s.codec {
				t.Fatalf("%s: stored batch %d of %d has codec %s, want %s", s.topic, i, len(codecs), codec, s.codec)
			}
		}
		if !slices.Equal(recs, wantRecords(s.topic, n)) {
			t.Fatalf("%s: stored records %v\nwant %v", s.topic, recs, wantRecords(s.topic, n))
		}
		if got := kgoConsume(t, bootstrap, s.topic, n); !slices.Equal(got, wantRecords(s.topic, n)) {
			t.Fatalf("franz-go read %s: %v", s.topic, got)
		}
	}

	// The lz4 wrappers of a down-conversion: format 0 with the broken header checksum (0x1a), format 1
	// with the right one (0x82), as Lz4BlockOutputStream writes them.
	for _, f := range []struct {
		version int16
		magic   byte
		header  string
	}{{0, 0, "04224d1860401a"}, {2, 1, "04224d18604082"}} {
		p := request[*kmsg.FetchResponse](t, c, consumerFetch("kgo-lz4", 1<<20), f.version).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("Fetch v%d of kgo-lz4: error %d", f.version, p.ErrorCode)
		}
		magic, attrs, value := firstLegacyMessage(t, p.RecordBatches)
		if magic != f.magic || attrs != 3 || fmt.Sprintf("%x", value[:min(7, len(value))]) != f.header {
			t.Fatalf("Fetch v%d of kgo-lz4: first message magic %d, attributes %d, value starting %x; want magic %d, lz4, header %s",
				f.version, magic, attrs, value[:min(7, len(value))], f.magic, f.header)
		}
	}

	// Down-conversion of every stored compressed batch, message by message, against what the stored
	// batches say (RecordsUtil.downConvert): one wrapper of the batch's codec at its last offset (format
	// 1: with the max timestamp), holding every record (format 1: offsets relative to the first).
	for _, topic := range []string{"kgo-snappy", "kgo-lz4", "py-gzip", "cfg-gzip"} {
		for _, version := range []int16{0, 2} {
			magic := int8(version / 2)
			p := request[*kmsg.FetchResponse](t, c, consumerFetch(topic, 1<<20), version).Topics[0].Partitions[0]
			if p.ErrorCode != 0 {
				t.Fatalf("Fetch v%d of %s: error %d", version, topic, p.ErrorCode)
			}
			got := legacyMessages(t, p.RecordBatches)
			want := expectedDownConversion(t, c, topic, magic)
			if !slices.Equal(got, want) {
				t.Fatalf("Fetch v%d of %s:\n%s\nwant\n%s", version, topic, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}

	// zstd: a zstd batch to an old fetch, and any old fetch (< v10) of a compression.type=zstd topic.
	create("cfg-zstd", "zstd")
	for _, f := range []struct {
		topic   string
		version int16
	}{{"kgo-zstd", 0}, {"kgo-zstd", 2}, {"kgo-zstd", 3}, {"cfg-zstd", 4}, {"cfg-zstd", 9}} {
		p := request[*kmsg.FetchResponse](t, c, consumerFetch(f.topic, 1<<20), f.version).Topics[0].Partitions[0]
		if p.ErrorCode != kerr.UnsupportedCompressionType.Code || p.HighWatermark != -1 || len(p.RecordBatches) != 0 {
			t.Fatalf("Fetch v%d of %s: error %d, high watermark %d, %d bytes; want UNSUPPORTED_COMPRESSION_TYPE, -1, none",
				f.version, f.topic, p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
		}
	}
	if p := request[*kmsg.FetchResponse](t, c, consumerFetch("cfg-zstd", 1<<20), 10).Topics[0].Partitions[0]; p.ErrorCode != 0 {
		t.Fatalf("Fetch v10 of cfg-zstd: error %d", p.ErrorCode)
	}

	// Message sets LogValidator refuses (Produce v2, format 1).
	create("bad", "")
	plain := legacyMessage(1, 0, 0, 5, []byte("k"), []byte("v"))
	gz := legacyWrapper(t, 1, recordbatch.CodecGzip, 0, plain)
	zstdInner, err := recordbatch.Compress(recordbatch.CodecZstd, 2, plain)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		name string
		set  []byte
		code int16
	}{
		{"zstd wrapper", legacyMessage(1, 0, 4, 5, nil, zstdInner), kerr.InvalidRecord.Code},
		{"nested wrapper", legacyWrapper(t, 1, recordbatch.CodecGzip, 0, gz), kerr.InvalidRecord.Code},
		{"two wrappers", append(slices.Clone(gz), gz...), kerr.InvalidRecord.Code},
		{"a message beside a wrapper", append(slices.Clone(plain), gz...), kerr.InvalidRecord.Code},
		{"null wrapper", legacyMessage(1, 0, 1, 5, nil, nil), kerr.InvalidRecord.Code},
		{"codec 5", legacyMessage(1, 0, 5, 5, nil, []byte("?")), kerr.UnknownServerError.Code},
		{"gzip wrapper", gz, 0},
	} {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "bad"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = m.set
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		if code := request[*kmsg.ProduceResponse](t, c, req, 2).Topics[0].Partitions[0].ErrorCode; code != m.code {
			t.Fatalf("Produce v2 of a %s: error %d, want %d", m.name, code, m.code)
		}
	}
}

// storedBatches reads partition 0 of topic with Fetch v11 (the stored v2 batches as they are) and
// returns each batch's codec and every record as key=value@offset.
func storedBatches(t *testing.T, c *wire.Conn, topic string) ([]recordbatch.Codec, []string) {
	t.Helper()
	req := consumerFetch(topic, 1<<20)
	req.SetVersion(11)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("Fetch v11 of %s: error %d", topic, p.ErrorCode)
	}
	var codecs []recordbatch.Codec
	var recs []string
	for data := p.RecordBatches; len(data) > 0; {
		b, err := recordbatch.Read(data)
		if err != nil {
			t.Fatalf("%s: %v", topic, err)
		}
		data = data[b.Size():]
		codecs = append(codecs, recordbatch.Codec(b.Compression()))
		raw, err := recordbatch.Decompress(recordbatch.Codec(b.Compression()), 2, b.Records, 1<<20)
		if err != nil {
			t.Fatalf("%s batch at %d: %v", topic, b.BaseOffset, err)
		}
		err = recordbatch.ReadRecords(raw, b.NumRecords, func(r recordbatch.Record) error {
			recs = append(recs, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, b.BaseOffset+int64(r.OffsetDelta)))
			return nil
		})
		if err != nil {
			t.Fatalf("%s batch at %d: %v", topic, b.BaseOffset, err)
		}
	}
	return codecs, recs
}

// kgoConsume reads n records of topic from the start with franz-go, as key=value@offset.
func kgoConsume(t *testing.T, bootstrap, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("franz-go reading %s after %d records: %v", topic, len(out), err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Offset)) })
	}
	return out
}

// legacyMessage is one message of format magic (0 or 1) at offset with attributes attrs: offset, size,
// CRC-32, magic, attributes, timestamp (format 1), key, value.
func legacyMessage(magic int8, offset int64, attrs byte, ts int64, key, value []byte) []byte {
	return recordbatch.AppendLegacyMessage(nil, int8(magic), attrs, offset, ts, key, value)
}

// legacyWrapper is a wrapper message of format magic, compressed with codec, holding inner.
func legacyWrapper(t *testing.T, magic int8, codec recordbatch.Codec, offset int64, inner []byte) []byte {
	t.Helper()
	v, err := recordbatch.Compress(codec, magic, inner)
	if err != nil {
		t.Fatal(err)
	}
	return legacyMessage(magic, offset, byte(codec), 5, nil, v)
}

// firstLegacyMessage decodes the first message of a message set: its magic, attributes and value.
func firstLegacyMessage(t *testing.T, set []byte) (magic, attrs byte, value []byte) {
	t.Helper()
	if len(set) < 26 {
		t.Fatalf("message set of %d bytes", len(set))
	}
	size := int(binary.BigEndian.Uint32(set[8:12]))
	m := set[12 : 12+size]
	magic, attrs, rest := m[4], m[5], m[6:]
	if magic == 1 {
		rest = rest[8:]
	}
	if kl := int32(binary.BigEndian.Uint32(rest)); kl > 0 {
		rest = rest[4+kl:]
	} else {
		rest = rest[4:]
	}
	vl := int32(binary.BigEndian.Uint32(rest))
	if vl < 0 {
		return magic, attrs, nil
	}
	return magic, attrs, bytes.Clone(rest[4 : 4+vl])
}

// TestBrokerCompressionType: the broker's compression.type (gzip) is the default of every topic's: a
// producer's lz4 batches are stored as gzip, except in a topic whose own compression.type is producer,
// where they stay lz4; the records are intact either way.
func TestBrokerCompressionType(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	brokerCompressionType(t, lab.Options{Brokers: 1})
}

// TestBrokerCompressionTypeKafka39 is the same on a real Kafka 3.9 broker.
func TestBrokerCompressionTypeKafka39(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka)
	brokerCompressionType(t, lab.Options{Brokers: 1, Broker: lab.BrokerKafka})
}

func brokerCompressionType(t *testing.T, opts lab.Options) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	opts.Dir = t.TempDir()
	opts.BrokerConfig = map[string]string{"compression.type": "gzip"}
	l, err := lab.Start(ctx, opts)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	const n = 20
	cl, err := kgo.NewClient(kgo.SeedBrokers(l.Bootstrap()), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	c := dial(t, l.Bootstrap())
	for _, s := range []struct {
		topic     string
		overrides map[string]*string
		codec     recordbatch.Codec
	}{
		{"default", nil, recordbatch.CodecGzip},
		{"producer", map[string]*string{"compression.type": kmsg.StringPtr("producer")}, recordbatch.CodecLZ4},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, s.overrides, s.topic)
		if err != nil || r.Err != nil {
			cancel()
			t.Fatalf("create %s: %v %v", s.topic, err, r.Err)
		}
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: s.topic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%s-%d", s.topic, i)})
		}
		err = cl.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce %s: %v", s.topic, err)
		}
		codecs, got := storedBatches(t, c, s.topic)
		for i, codec := range codecs {
			if codec != s.codec {
				t.Fatalf("%s: stored batch %d of %d has codec %s, want %s", s.topic, i, len(codecs), codec, s.codec)
			}
		}
		if !slices.Equal(got, wantRecords(s.topic, n)) {
			t.Fatalf("%s: stored records %v\nwant %v", s.topic, got, wantRecords(s.topic, n))
		}
	}
}

// legacyMessages decodes a (down-converted) message set to one line per message, a wrapper's inner
// messages indented after it: "offset magic attributes timestamp key=value" (timestamp only in format 1),
// up to the first partial or overflow message.
func legacyMessages(t *testing.T, set []byte) []string {
	t.Helper()
	var out []string
	var walk func(set []byte, indent string)
	walk = func(set []byte, indent string) {
		for len(set) >= 12 {
			off, size := int64(binary.BigEndian.Uint64(set)), int(binary.BigEndian.Uint32(set[8:12]))
			if off < 0 || 12+size > len(set) {
				return // overflow or partial
			}
			m := set[12 : 12+size]
			set = set[12+size:]
			magic, attrs, rest := int8(m[4]), m[5], m[6:]
			line := fmt.Sprintf("%s%d m%d a%d", indent, off, magic, attrs)
			if magic == 1 {
				line += fmt.Sprintf(" t%d", int64(binary.BigEndian.Uint64(rest)))
				rest = rest[8:]
			}
			var kv [2][]byte
			for i := range kv {
				l := int32(binary.BigEndian.Uint32(rest))
				rest = rest[4:]
				if l >= 0 {
					kv[i], rest = rest[:l], rest[l:]
				}
			}
			if codec := recordbatch.Codec(attrs & 7); codec != recordbatch.CodecNone {
				out = append(out, fmt.Sprintf("%s key=%q", line, kv[0]))
				inner, err := recordbatch.Decompress(codec, magic, kv[1], 1<<20)
				if err != nil {
					t.Fatalf("wrapper at %d: %v", off, err)
				}
				walk(inner, indent+"  ")
				continue
			}
			out = append(out, fmt.Sprintf("%s %s=%s", line, kv[0], kv[1]))
		}
	}
	walk(set, "")
	return out
}

// expectedDownConversion is what legacyMessages must read from a Fetch of topic's partition 0 down-
// converted to format magic, computed from its stored batches (all compressed here).
func expectedDownConversion(t *testing.T, c *wire.Conn, topic string, magic int8) []string {
	t.Helper()
	req := consumerFetch(topic, 1<<20)
	p := request[*kmsg.FetchResponse](t, c, req, 11).Topics[0].Partitions[0]
	var out []string
	for data := p.RecordBatches; len(data) > 0; {
		b, err := recordbatch.Read(data)
		if err != nil {
			t.Fatal(err)
		}
		data = data[b.Size():]
		raw, err := recordbatch.Decompress(recordbatch.Codec(b.Compression()), 2, b.Records, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var recs []recordbatch.Record
		if err := recordbatch.ReadRecords(raw, b.NumRecords, func(r recordbatch.Record) error { recs = append(recs, r); return nil }); err != nil {
			t.Fatal(err)
		}
		first, last := b.BaseOffset+int64(recs[0].OffsetDelta), b.BaseOffset+int64(recs[len(recs)-1].OffsetDelta)
		maxTS := int64(-1)
		for _, r := range recs {
			maxTS = max(maxTS, b.BaseTimestamp+r.TimestampDelta)
		}
		line := fmt.Sprintf("%d m%d a%d", last, magic, b.Compression())
		if magic == 1 {
			line += fmt.Sprintf(" t%d", maxTS)
		}
		out = append(out, line+` key=""`)
		for _, r := range recs {
			off := b.BaseOffset + int64(r.OffsetDelta)
			if magic == 1 {
				off -= first
			}
			line := fmt.Sprintf("  %d m%d a0", off, magic)
			if magic == 1 {
				line += fmt.Sprintf(" t%d", b.BaseTimestamp+r.TimestampDelta)
			}
			out = append(out, fmt.Sprintf("%s %s=%s", line, r.Key, r.Value))
		}
	}
	return out
}
