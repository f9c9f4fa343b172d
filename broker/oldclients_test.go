package broker_test

// 0.8-era clients against the broker, as Kafka 3.9 serves them: Produce v0 with message format 0
// (converted on append to v2 batches), Fetch v0 down-converted back, ListOffsets v0 and Metadata v0.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

// TestOldClientSarama082: sarama speaking Kafka 0.8.2.0 (Produce v0, Fetch v0, Metadata v0,
// ListOffsets v0) produces uncompressed messages to partition 0 and a gzip-compressed message set to
// partition 1, and reads every one back, in order, at the offsets the producer was given.
func TestOldClientSarama082(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	l := interopLab(t, lab.Options{Brokers: 1})
	interopCreateTopic(t, l.Bootstrap(), "old", 2)

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V0_8_2_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	const n = 50
	send := func(codec sarama.CompressionCodec, partition int32) {
		c := *cfg
		c.Producer.Compression = codec
		c.Producer.Flush.Messages = n // one message set of n messages: one gzip wrapper
		prod, err := sarama.NewSyncProducer([]string{l.Bootstrap()}, &c)
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		var msgs []*sarama.ProducerMessage
		for i := 0; i < n; i++ {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: "old", Partition: partition,
				Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("%d-%d", partition, i))})
		}
		if err := prod.SendMessages(msgs); err != nil {
			t.Fatalf("partition %d (%v): %v", partition, codec, err)
		}
		for i, m := range msgs {
			if m.Partition != partition || m.Offset != int64(i) {
				t.Fatalf("message %d stored at %d@%d, want %d@%d", i, m.Partition, m.Offset, partition, i)
			}
		}
	}
	send(sarama.CompressionNone, 0)
	send(sarama.CompressionGZIP, 1)

	cons, err := sarama.NewConsumer([]string{l.Bootstrap()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for p := int32(0); p < 2; p++ {
		pc, err := cons.ConsumePartition("old", p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		if hwm := pc.HighWaterMarkOffset(); hwm != 0 && hwm != n {
			t.Fatalf("partition %d high watermark %d", p, hwm)
		}
		for i := 0; i < n; i++ {
			select {
			case m := <-pc.Messages():
				if string(m.Value) != fmt.Sprintf("%d-%d", p, i) || string(m.Key) != fmt.Sprintf("k%d", i) || m.Offset != int64(i) {
					t.Fatalf("partition %d message %d: %q=%q@%d", p, i, m.Key, m.Value, m.Offset)
				}
			case err := <-pc.Errors():
				t.Fatalf("partition %d: %v", p, err)
			case <-time.After(20 * time.Second):
				t.Fatalf("partition %d: message %d not delivered within 20 s", p, i)
			}
		}
		pc.Close()
	}
}

// kafkaPython082 produces and consumes with kafka-python speaking 0.8.2 (api_version=(0, 8, 2)):
// Produce v0 / Fetch v0 with message format 0.
const kafkaPython082 = `
import sys
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
b, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = KafkaProducer(bootstrap_servers=b, acks='all', api_version=(0, 8, 2))
for i in range(n):
    p.send(topic, key=b'k%d' % i, value=b'py-%d' % i, partition=0)
p.flush(); p.close()
c = KafkaConsumer(bootstrap_servers=b, consumer_timeout_ms=10000, auto_offset_reset='earliest',
                  enable_auto_commit=False, api_version=(0, 8, 2))
tp = TopicPartition(topic, 0)
c.assign([tp]); c.seek_to_beginning(tp)
got = ['%s=%s@%d' % (m.key.decode(), m.value.decode(), m.offset) for m in c]
print(len(got)); print(','.join(got))
`

// TestOldClientKafkaPython082: kafka-python with api_version=(0, 8, 2) round-trips n messages.
func TestOldClientKafkaPython082(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.KafkaPython)
	l := interopLab(t, lab.Options{Brokers: 1})
	interopCreateTopic(t, l.Bootstrap(), "py082", 1)
	const n = 100
	for i, v := range runKafkaPython(t, kafkaPython082, l.Bootstrap(), "py082", n) {
		if want := fmt.Sprintf("k%d=py-%d@%d", i, i, i); v != want {
			t.Fatalf("message %d is %q, want %q", i, v, want)
		}
	}
}

// TestFetchV2OfAHighlyCompressedRecord: a producer's gzip batch of one 100 kB record of zeros is a
// few hundred bytes in the log; a Fetch v2 (down-converted to message format 1) asks for 1 kB and gets
// one gzip wrapper message at offset 0 holding the whole record, as from Kafka (RecordsUtil.downConvert
// recompresses with the batch's codec), not a 100 kB uncompressed message cut at 1 kB.
func TestFetchV2OfAHighlyCompressedRecord(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()), kgo.DefaultProduceTopic("zeros"),
		kgo.ProducerBatchCompression(kgo.GzipCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "zeros"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 100_000)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c := dial(t, tb.addr())
	resp := request[*kmsg.FetchResponse](t, c, consumerFetch("zeros", 1000), 2)
	p := resp.Topics[0].Partitions[0]
	set := p.RecordBatches
	if p.ErrorCode != 0 || len(set) < 12 {
		t.Fatalf("error %d, %d bytes", p.ErrorCode, len(set))
	}
	size := int(binary.BigEndian.Uint32(set[8:12]))
	if offset := int64(binary.BigEndian.Uint64(set)); offset != 0 || 12+size > len(set) || set[12+4] != 1 || set[12+5] != 1 {
		t.Fatalf("first message at offset %d of %d bytes, magic %d, attributes %d, answer %d bytes: want a whole format 1 gzip wrapper at 0",
			offset, size, set[12+4], set[12+5], len(set))
	}
	magic, attrs, value := firstLegacyMessage(t, set)
	inner, err := recordbatch.Decompress(recordbatch.CodecGzip, 1, value, 1<<20)
	if err != nil || magic != 1 || attrs != 1 {
		t.Fatalf("the wrapper: magic %d, attributes %d, %v", magic, attrs, err)
	}
	if _, _, v := firstLegacyMessage(t, inner); len(v) != 100_000 || !bytes.Equal(v, make([]byte, 100_000)) {
		t.Fatalf("the wrapper's message has a value of %d bytes, want the 100 kB of zeros", len(v))
	}
}
