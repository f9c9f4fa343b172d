package broker_test

// The group coordinator inside a running broker, driven by a real client (franz-go's group
// consumer): the group forms, every message is consumed exactly once, and committed offsets and the
// group's generation survive a broker restart (read back from __consumer_offsets).

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

func TestGroupConsumeAndRestartKeepsOffsets(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	l := interopLab(t, lab.Options{Brokers: 1})
	const topic, group, parts, n = "grp", "g1", 4, 400
	interopCreateTopic(t, l.Bootstrap(), topic, parts)

	var mu sync.Mutex
	assigned := map[string]map[string][]int32{} // client -> assignment
	seen := map[string]int{}                    // value -> times consumed
	newMember := func(name string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(l.Bootstrap()), kgo.ClientID(name),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.Balancers(kgo.RangeBalancer()),
			kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
				mu.Lock()
				assigned[name] = a
				mu.Unlock()
			}))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	members := []*kgo.Client{newMember("a"), newMember("b")}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func(m *kgo.Client) {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := m.PollFetches(ctx)
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)]++
					mu.Unlock()
				})
				if len(fs.Records()) > 0 {
					_ = m.CommitUncommittedOffsets(ctx)
				}
			}
		}(m)
	}
	testutil.WaitFor(t, 30*time.Second, "both members assigned 2 partitions each", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(assigned["a"][topic]) == 2 && len(assigned["b"][topic]) == 2
	})

	prod, err := kgo.NewClient(kgo.SeedBrokers(l.Bootstrap()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := 0; i < n; i++ {
		if err := prod.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, 30*time.Second, "every message consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n
	})
	adm := kadm.NewClient(prod)
	testutil.WaitFor(t, 30*time.Second, "commits reach the high watermarks", func() bool {
		offs, err := adm.FetchOffsets(context.Background(), group)
		if err != nil {
			return false
		}
		total := int64(0)
		offs.Each(func(o kadm.OffsetResponse) { total += o.At })
		return total == n
	})
	cancel()
	wg.Wait()
	for _, m := range members {
		m.Close() // LeaveGroup
	}
	mu.Lock()
	for v, c := range seen {
		if c != 1 {
			t.Errorf("message %s consumed %d times, want 1", v, c)
		}
	}
	mu.Unlock()
	described, err := adm.DescribeGroups(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	before := described[group]

	// Restart the broker: offsets and the group come back from __consumer_offsets.
	b := l.Brokers()[0]
	sctx, scancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer scancel()
	if err := b.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(sctx); err != nil {
		t.Fatal(err)
	}
	adm2cl, err := kgo.NewClient(kgo.SeedBrokers(l.Bootstrap()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm2cl.Close()
	adm2 := kadm.NewClient(adm2cl)
	var after kadm.OffsetResponses
	testutil.WaitFor(t, 30*time.Second, "offsets fetched after restart", func() bool {
		offs, err := adm2.FetchOffsets(context.Background(), group)
		if err != nil || offs.Error() != nil {
			return false
		}
		after = offs
		return true
	})
	per := map[int32]int64{}
	after.Each(func(o kadm.OffsetResponse) { per[o.Partition] = o.At })
	for p := int32(0); p < parts; p++ {
		if per[p] != n/parts {
			t.Errorf("partition %d: committed %d after restart, want %d", p, per[p], n/parts)
		}
	}
	d2, err := adm2.DescribeGroups(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	if got := d2[group]; got.State != "Empty" || got.Err != nil || before.State != "Empty" {
		t.Errorf("group state before restart %q, after %q (err %v), want Empty both", before.State, got.State, got.Err)
	}
}
