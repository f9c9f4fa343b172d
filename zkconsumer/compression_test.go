package zkconsumer

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

// TestCompressedTopicZK: a modern producer (franz-go, v2 batches) writes partition 0 of a topic with
// snappy and partition 1 with lz4; zkconsumer (Fetch v4+, the batches as stored) and the real Kafka
// 0.8.2.2 connector (Fetch v0: down-converted to format 0 wrappers of the same codec, lz4 with the
// header checksum 0.8.2 computes) each read every record exactly: key, value, partition and offset.
func TestCompressedTopicZK(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.OldConnector)
	compressedTopic(t, lab.Options{Brokers: 1})
}

// TestCompressedTopicZKKafka39 is the same on a real Kafka 3.9 broker.
func TestCompressedTopicZKKafka39(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka, testutil.OldConnector)
	compressedTopic(t, lab.Options{Brokers: 1, Broker: lab.BrokerKafka})
}

func compressedTopic(t *testing.T, opts lab.Options) {
	cp, err := lab.FindOldConsumerClasspath()
	if err != nil {
		t.Fatalf("the real 0.8.2.2 connector: %v", err)
	}
	const (
		topic = "codecs"
		n     = 30
	)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	opts.Log = testLog()
	l, err := lab.Start(ctx, opts)
	cancel()
	if err != nil {
		t.Fatalf("starting the lab: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	createTopicAssigned(t, labClient(t, l), topic, onBroker1(2))
	var want []string
	for p, codec := range []kgo.CompressionCodec{kgo.SnappyCompression(), kgo.Lz4Compression()} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(l.Bootstrap()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "p%d-%d", p, i)})
			want = append(want, fmt.Sprintf("%d@%d k%d=p%d-%d", p, i, i, p, i))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = cl.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		cl.Close()
		if err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}
	sort.Strings(want)

	m := newMember(t, l.ZKConnect(), "zk", "c1", map[string]string{"auto.offset.reset": "smallest"})
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	streams, err := m.CreateMessageStreams(ctx, map[string]int{topic: 1})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	s := drain(allStreams(streams)...)
	testutil.WaitFor(t, 30*time.Second, "zkconsumer's deliveries", func() bool { return s.len() >= 2*n })
	s.mu.Lock()
	var got []string
	for _, msg := range s.msgs {
		got = append(got, fmt.Sprintf("%d@%d %s=%s", msg.Partition, msg.Offset, msg.Key, msg.Value))
	}
	s.mu.Unlock()
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("zkconsumer read %v\nwant %v", got, want)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	old, err := lab.StartOldConsumer(ctx, lab.OldConsumerOptions{ZooKeeper: l.ZKConnect(), Group: "old", Topic: topic,
		ConsumerID: "c1", Config: map[string]string{"auto.offset.reset": "smallest"}, Classpath: cp,
		LogPath: t.TempDir() + "/old.log", Log: testLog()})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(old.Kill)
	delivered := func() (out []string, errs []string) {
		for _, e := range old.Events() {
			switch e.Event {
			case "delivered":
				k, v := "<nil>", "<nil>"
				if e.Key != nil {
					k = *e.Key
				}
				if e.Value != nil {
					v = *e.Value
				}
				out = append(out, fmt.Sprintf("%d@%d %s=%s", e.Partition, e.Offset, k, v))
			case "error":
				errs = append(errs, e.Message)
			case "log":
				if e.Level == "ERROR" || e.Level == "FATAL" {
					errs = append(errs, e.Message)
				}
			}
		}
		return out, errs
	}
	testutil.WaitFor(t, 60*time.Second, "the 0.8.2.2 connector's deliveries", func() bool {
		d, errs := delivered()
		return len(d) >= 2*n || len(errs) > 0
	})
	got, errs := delivered()
	sort.Strings(got)
	if len(errs) > 0 || !slices.Equal(got, want) {
		t.Fatalf("the 0.8.2.2 connector read %v (errors %v)\nwant %v", got, errs, want)
	}
}
