package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestProduceConsume100k: franz-go produces 100,000 records with acks=all to a 6-partition topic; a
// direct consumer (no group) reads every partition back: the same count, the same bytes, and within
// each partition the order and the offsets the producer was told.
func TestProduceConsume100k(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, nil)
	const (
		topic      = "hundred-k"
		partitions = 6
		n          = 100000
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	admin, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	created, err := kadm.NewClient(admin).CreateTopic(ctx, partitions, 1, nil, topic)
	if err != nil || created.Err != nil {
		t.Fatalf("create: %v %v %s", err, created.Err, created.ErrMessage)
	}
	if created.NumPartitions != partitions || created.ReplicationFactor != 1 {
		t.Fatalf("created %d partitions rf %d", created.NumPartitions, created.ReplicationFactor)
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	type rec struct {
		offset int64
		value  []byte
	}
	var (
		mu       sync.Mutex
		produced = map[int32][]rec{}
		failures int
		wg       sync.WaitGroup
	)
	for i := 0; i < n; i++ {
		v := []byte(fmt.Sprintf("value-%06d-%s", i, bytes.Repeat([]byte{byte('a' + i%26)}, i%50)))
		wg.Add(1)
		prod.Produce(ctx, &kgo.Record{Value: v}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures++
				return
			}
			produced[r.Partition] = append(produced[r.Partition], rec{r.Offset, r.Value})
		})
	}
	wg.Wait()
	if failures != 0 {
		t.Fatalf("%d of %d records failed", failures, n)
	}
	if len(produced) != partitions {
		t.Fatalf("records went to %d partitions, want %d", len(produced), partitions)
	}
	for p, recs := range produced {
		// Acks come back in offset order per partition; the log assigned 0..k-1.
		for i, r := range recs {
			if r.offset != int64(i) {
				t.Fatalf("partition %d: record %d acknowledged at offset %d", p, i, r.offset)
			}
		}
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	consumed := map[int32][]*kgo.Record{}
	total := 0
	for total < n {
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", total, n)
		}
		fs := cons.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) {
			if ctx.Err() == nil {
				t.Errorf("fetch %s/%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			consumed[r.Partition] = append(consumed[r.Partition], r)
			total++
		})
	}
	if total != n {
		t.Fatalf("consumed %d records, want %d", total, n)
	}
	for p, want := range produced {
		got := consumed[p]
		if len(got) != len(want) {
			t.Fatalf("partition %d: consumed %d records, produced %d", p, len(got), len(want))
		}
		for i := range want {
			if got[i].Offset != want[i].offset || !bytes.Equal(got[i].Value, want[i].value) {
				t.Fatalf("partition %d record %d: consumed %q@%d, produced %q@%d", p, i, got[i].Value, got[i].Offset, want[i].value, want[i].offset)
			}
		}
	}

	// ListOffsets agrees: earliest 0, latest = the partition's record count.
	c := dial(t, tb.addr())
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	for p := int32(0); p < partitions; p++ {
		for _, ts := range []int64{-2, -1} {
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Partition, lp.Timestamp = p, ts
			lt.Partitions = append(lt.Partitions, lp)
		}
	}
	lo.Topics = append(lo.Topics, lt)
	lresp := request[*kmsg.ListOffsetsResponse](t, c, lo, 6)
	for i, lp := range lresp.Topics[0].Partitions {
		want := int64(0)
		if i%2 == 1 {
			want = int64(len(produced[lp.Partition]))
		}
		if lp.ErrorCode != 0 || lp.Offset != want {
			t.Fatalf("ListOffsets partition %d ts %d: offset %d error %v, want %d", lp.Partition, []int64{-2, -1}[i%2], lp.Offset, kerr.ErrorForCode(lp.ErrorCode), want)
		}
	}
	if got := counterValue(t, tb.b, "kafka_server_messages_in_total", nil); got != n {
		t.Fatalf("messages in metric %v, want %d", got, n)
	}
}

// TestFetchLongPoll: a Fetch at the high watermark with MinBytes 1 parks until a Produce arrives and is
// answered right after it (woken by the append, well before MaxWaitMillis); with nothing produced it
// answers empty once MaxWaitMillis has passed.
func TestFetchLongPoll(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, nil)
	admin := dial(t, tb.addr())
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 10000
	ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "poll", NumPartitions: 1, ReplicationFactor: 1}}
	if r := request[*kmsg.CreateTopicsResponse](t, admin, ct, 4); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}

	fetch := func(maxWait int32) *kmsg.FetchRequest {
		f := kmsg.NewPtrFetchRequest()
		f.MaxWaitMillis, f.MinBytes, f.MaxBytes = maxWait, 1, 1<<20
		f.SessionEpoch = -1
		f.Topics = []kmsg.FetchRequestTopic{{Topic: "poll", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: -1}}}}
		return f
	}
	// Nothing to read: empty answer after MaxWaitMillis.
	start := time.Now()
	r := request[*kmsg.FetchResponse](t, admin, fetch(300), 11)
	if el := time.Since(start); el < 280*time.Millisecond || el > 5*time.Second {
		t.Fatalf("empty fetch answered after %v, want about 300ms", el)
	}
	if p := r.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.HighWatermark != 0 || len(p.RecordBatches) != 0 {
		t.Fatalf("empty fetch: %+v", p)
	}

	// A parked fetch is woken by an append.
	fc := dial(t, tb.addr())
	type result struct {
		r  *kmsg.FetchResponse
		at time.Time
	}
	got := make(chan result, 1)
	go func() {
		req := fetch(20000)
		req.SetVersion(11)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := fc.Request(ctx, req)
		if err != nil {
			got <- result{}
			return
		}
		got <- result{resp.(*kmsg.FetchResponse), time.Now()}
	}()
	// The fetch parks (its answer would take 20 s otherwise): the broker's fetch purgatory holds it.
	parked := func() float64 {
		return gaugeValue(t, tb.b, "kafka_server_purgatory_size", map[string]string{"delayed_operation": "Fetch"})
	}
	testutil.WaitFor(t, 10*time.Second, "the fetch parked in the broker's purgatory", func() bool { return parked() == 1 })
	prod, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "poll", Partition: 0, Value: []byte("wake")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	acked := time.Now()
	select {
	case res := <-got:
		if res.r == nil {
			t.Fatal("parked fetch failed")
		}
		if d := res.at.Sub(acked); d > 2*time.Second {
			t.Fatalf("parked fetch answered %v after the append", d)
		}
		p := res.r.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.HighWatermark != 1 || len(p.RecordBatches) == 0 {
			t.Fatalf("woken fetch: error %v hwm %d bytes %d", kerr.ErrorForCode(p.ErrorCode), p.HighWatermark, len(p.RecordBatches))
		}
		if n := parked(); n != 0 {
			t.Fatalf("%v fetches parked after the woken one answered, want 0", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("parked fetch not woken by the append")
	}
}
