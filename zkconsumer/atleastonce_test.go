package zkconsumer

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// Every message produced while the group changes (a third connector joins, then the first leaves
// gracefully) is delivered at least once, with the value the broker stored at that offset; and
// once the owners have delivered everything, CommitOffsets() leaves every offset znode equal to the
// partition's high watermark as the broker reports it (ListOffsets), in decimal.
func TestEveryMessageDeliveredCommitsAtHighWatermark(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	const parts = 6
	l := startLab(t, 1)
	cl := labClient(t, l)
	createTopicAssigned(t, cl, "t", onBroker1(parts))
	a := newAdmin(t, l.ZKConnect())
	// auto.commit.enable stays true (0.8.2's default): the rebalances and the graceful leave commit
	// before releasing; the 60 s interval never fires in this test.
	props := map[string]string{"auto.offset.reset": "smallest"}

	var mu sync.Mutex
	got := map[produced]int{} // (partition, offset, value) → deliveries, over every member
	collect := func(streams map[string][]<-chan Message) *sync.WaitGroup {
		var wg sync.WaitGroup
		for _, s := range allStreams(streams) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for m := range s {
					mu.Lock()
					got[produced{m.Partition, m.Offset, string(m.Value)}]++
					mu.Unlock()
				}
			}()
		}
		return &wg
	}
	c1 := newMember(t, l.ZKConnect(), "g", "c1", props)
	w1 := collect(createStreams(t, c1, map[string]int{"t": 1}))
	c2 := newMember(t, l.ZKConnect(), "g", "c2", props)
	collect(createStreams(t, c2, map[string]int{"t": 1}))
	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c1-0", 3: "g_c2-0", 4: "g_c2-0", 5: "g_c2-0"}, c1, c2)

	// A producer runs through both membership changes.
	var pmu sync.Mutex
	var sent []produced
	stop := make(chan struct{})
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var recs []*kgo.Record
			for p := int32(0); p < parts; p++ {
				recs = append(recs, &kgo.Record{Topic: "t", Partition: p, Value: []byte(fmt.Sprintf("v%d-%d", p, i))})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			res := cl.ProduceSync(ctx, recs...)
			cancel()
			if err := res.FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			pmu.Lock()
			for _, r := range res {
				sent = append(sent, produced{r.Record.Partition, r.Record.Offset, string(r.Record.Value)})
			}
			pmu.Unlock()
			time.Sleep(5 * time.Millisecond) // pace: a few hundred records per second (the load's rate, not a synchronisation)
		}
	}()
	sentCount := func() int {
		pmu.Lock()
		defer pmu.Unlock()
		return len(sent)
	}
	testutil.WaitFor(t, 20*time.Second, "60 records produced", func() bool { return sentCount() >= 60 })
	c3 := newMember(t, l.ZKConnect(), "g", "c3", props)
	collect(createStreams(t, c3, map[string]int{"t": 1}))
	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0", 4: "g_c3-0", 5: "g_c3-0"}, c1, c2, c3)
	mark := sentCount()
	testutil.WaitFor(t, 20*time.Second, "60 more records", func() bool { return sentCount() >= mark+60 })
	c1.Shutdown()
	w1.Wait() // c1's streams are closed
	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c2-0", 1: "g_c2-0", 2: "g_c2-0", 3: "g_c3-0", 4: "g_c3-0", 5: "g_c3-0"}, c2, c3)
	mark = sentCount()
	testutil.WaitFor(t, 20*time.Second, "60 more records", func() bool { return sentCount() >= mark+60 })
	close(stop)
	pwg.Wait()
	// One last record per partition, produced once the group is stable: its owner must deliver it.
	pmu.Lock()
	sent = append(sent, produceEach(t, cl, "t", parts, "last")...)
	all := append([]produced(nil), sent...)
	pmu.Unlock()

	hwm := highWatermarks(t, cl, "t", parts)
	perPartition := map[int32]int64{}
	for _, r := range all {
		perPartition[r.partition]++
	}
	for p := int32(0); p < parts; p++ {
		if hwm[p] != perPartition[p] {
			t.Fatalf("partition %d: high watermark %d, but %d records were acknowledged", p, hwm[p], perPartition[p])
		}
	}
	owner := map[int32]*member{0: c2, 1: c2, 2: c2, 3: c3, 4: c3, 5: c3}
	testutil.WaitFor(t, 30*time.Second, "every record delivered, the owners at the high watermarks", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range all {
			if got[r] == 0 {
				return false
			}
		}
		for p, m := range owner {
			if !m.delivered("t", p, hwm[p]-1) {
				return false
			}
		}
		return true
	})
	mu.Lock()
	dups := 0
	for r, n := range got {
		if n > 1 {
			dups += n - 1
		}
		if r.offset >= hwm[r.partition] {
			t.Errorf("delivered %+v beyond the high watermark %d", r, hwm[r.partition])
		}
	}
	extra := len(got) - len(all) // deliveries of (partition, offset, value) never produced
	mu.Unlock()
	if extra != 0 {
		t.Fatalf("%d delivered (partition, offset, value) triples were never produced", extra)
	}
	t.Logf("%d records produced, all delivered; %d duplicate deliveries", len(all), dups)

	// CommitOffsets writes exactly the partitions the member owns, each at its high watermark.
	for _, m := range []*member{c2, c3} {
		from := len(m.rec.Records())
		if err := m.CommitOffsets(); err != nil {
			t.Fatal(err)
		}
		commits := map[int32]int64{}
		for _, r := range m.rec.Records()[from:] {
			if r.Kind == timeline.Commit {
				if r.Result != timeline.CommitApplied || r.Topic != "t" {
					t.Fatalf("%s: commit record %+v", m.ConsumerID(), r)
				}
				commits[*r.Partition] = *r.Offset
			}
		}
		want := map[int32]int64{}
		for p, o := range owner {
			if o == m {
				want[p] = hwm[p]
			}
		}
		if !equalOffsets(commits, want) {
			t.Fatalf("%s committed %v, want %v", m.ConsumerID(), commits, want)
		}
	}
	if committed := a.offsets("g", "t", parts); !equalOffsets(committed, hwm) {
		t.Fatalf("offset znodes %v, want the high watermarks %v", committed, hwm)
	}
}

func equalOffsets(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
