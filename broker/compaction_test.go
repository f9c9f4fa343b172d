package broker_test

import (
	"context"
	"errors"
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

// compactionProps: a short cleaner back-off (a broker setting); the topic itself is made compacted by
// its own configs (compactedTopicConfigs).
var compactionProps = map[string]string{"log.cleaner.backoff.ms": "100"}

// compactedTopicConfigs make a topic compacted, with small segments and a 1 s delete.retention.ms,
// through CreateTopics (the topic configs of LogConfig) while the broker's own default stays delete.
var compactedTopicConfigs = map[string]*string{
	"cleanup.policy":      kmsg.StringPtr("compact"),
	"segment.bytes":       kmsg.StringPtr("32768"),
	"delete.retention.ms": kmsg.StringPtr("1000"),
}

type keyed struct {
	offset int64
	value  string
	null   bool
}

// produceKeyed writes recs with franz-go's producer (8 KiB batches, its default snappy compression);
// each record's Offset is then the one the broker acknowledged.
func produceKeyed(ctx context.Context, t *testing.T, addr, topic string, recs []*kgo.Record) {
	t.Helper()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(8<<10),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for _, r := range recs {
		wg.Add(1)
		prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce: %v", firstErr)
	}
}

// consumeFromStart reads partition 0 from the start to its high watermark with a franz-go consumer.
func consumeFromStart(ctx context.Context, t *testing.T, addr, topic string) []*kgo.Record {
	t.Helper()
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	// The last record below the high watermark is in the active segment, which is never cleaned.
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < end.Offset-1 {
		if ctx.Err() != nil {
			t.Fatalf("consumed %d records, not up to offset %d, before the deadline", len(out), end.Offset-1)
		}
		fs := cons.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// TestCompactionEndToEnd is the must-show through the broker: 100,000 writes to 100 keys from a
// franz-go producer on a topic created with cleanup.policy=compact and 32 KiB segments (its own configs);
// once the broker's cleaner has run, a franz-go consumer reading from the start (offset 0, cleaned
// away: the fetch answers the next batch) holds the last value of every key at the offset the
// producer was told, far fewer records than were written; the
// tombstoned keys k0-k9 are absent once delete.retention.ms (1 s) has passed and later writes made
// the log dirty enough for another pass. ListOffsets earliest stays 0. A record without a key is
// refused with INVALID_RECORD.
func TestCompactionEndToEnd(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, compactionProps)
	const topic, writes, keys = "compacted", 100_000, 100
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Scale(2*time.Minute))
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if created, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, compactedTopicConfigs, topic); err != nil || created.Err != nil {
		t.Fatalf("create: %v %v", err, created.Err)
	}

	var recs []*kgo.Record
	for i := 0; i < writes; i++ {
		k := i % keys
		r := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", k)), Value: []byte(fmt.Sprintf("v%d", i))}
		if i >= writes-keys && k < 10 { // the last write of k0-k9 is a tombstone
			r.Value = nil
		}
		recs = append(recs, r)
	}
	produceKeyed(ctx, t, tb.addr(), topic, recs)
	want := map[string]keyed{} // from the producer's acknowledgements
	for _, r := range recs {
		want[string(r.Key)] = keyed{r.Offset, string(r.Value), r.Value == nil}
	}
	if want["k99"].offset != writes-1 {
		t.Fatalf("k99 last acknowledged at %d, want %d", want["k99"].offset, writes-1)
	}

	// A keyless record on a compacted topic (LogValidator.validateKey).
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr()
	cl.Close()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record: %v, want INVALID_RECORD", err)
	}

	check := func(got []*kgo.Record, tombstonesGone bool) bool {
		held := map[string]keyed{}
		for _, r := range got {
			if r.Value == nil {
				delete(held, string(r.Key))
			} else {
				held[string(r.Key)] = keyed{r.Offset, string(r.Value), false}
			}
			if tombstonesGone && want[string(r.Key)].null {
				return false
			}
		}
		for k, w := range want {
			if w.null {
				if _, ok := held[k]; ok {
					t.Fatalf("tombstoned key %s held as %+v", k, held[k])
				}
				continue
			}
			if held[k] != w {
				t.Fatalf("key %s: consumer holds %+v, the producer's last write was %+v", k, held[k], w)
			}
		}
		return true
	}
	var got []*kgo.Record
	testutil.WaitFor(t, 60*time.Second, "the cleaner compacts the topic", func() bool {
		got = consumeFromStart(ctx, t, tb.addr(), topic)
		check(got, false)
		return len(got) < writes/10
	})
	t.Logf("after cleaning: %d of %d records", len(got), writes)
	// Compaction never moves the log start offset: ListOffsets earliest still answers 0.
	starts, err := kadm.NewClient(admin).ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup(topic, 0); s.Err != nil || s.Offset != 0 {
		t.Fatalf("ListOffsets earliest after cleaning: %d, %v; want 0", s.Offset, s.Err)
	}
	if got[0].Offset == 0 {
		t.Fatalf("offset 0 survived cleaning; the consumer's first read did not start at a cleaned-away offset")
	}

	// Tombstones go after delete.retention.ms, at a pass that more writes bring about.
	round := 0
	testutil.WaitFor(t, 60*time.Second, "tombstoned keys are gone after delete.retention.ms", func() bool {
		var more []*kgo.Record
		for i := 0; i < 2000; i++ {
			more = append(more, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", 10+i%90)), Value: []byte(fmt.Sprintf("r%d-%d", round, i))})
		}
		round++
		produceKeyed(ctx, t, tb.addr(), topic, more)
		for _, r := range more {
			want[string(r.Key)] = keyed{r.Offset, string(r.Value), false}
		}
		got = consumeFromStart(ctx, t, tb.addr(), topic)
		return check(got, true)
	})
}
