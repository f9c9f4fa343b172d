package zkconsumer

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// ZK-NO-AUTOCOMMIT (KAFKA-919), the case's second branch: the offset znode holds the last explicit
// commit. c1 (auto.commit.enable=false) reads 3 records per partition and commits them
// (CommitOffsets: "3"), then reads 2 more per partition without committing; c2 joins. The
// rebalance writes no offset (each znode keeps its data and its version), so the 2 records read
// after the commit are delivered again — partition 0 by c1, partition 1 by c2 — and nothing before
// the commit is.
func TestZKNoAutoCommitExplicitCommit(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	l := startLab(t, 1)
	cl := labClient(t, l)
	createTopicAssigned(t, cl, "t", onBroker1(2))
	a := newAdmin(t, l.ZKConnect())
	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false"}
	for p := int32(0); p < 2; p++ {
		produce(t, cl, "t", p, fmt.Sprintf("v%d-0", p), fmt.Sprintf("v%d-1", p), fmt.Sprintf("v%d-2", p))
	}
	c1 := newMember(t, l.ZKConnect(), "g", "c1", props)
	drain(allStreams(createStreams(t, c1, map[string]int{"t": 1}))...)
	testutil.WaitFor(t, 20*time.Second, "3 records per partition at c1", func() bool { return c1.delivered("t", 0, 2) && c1.delivered("t", 1, 2) })
	if err := c1.CommitOffsets(); err != nil {
		t.Fatal(err)
	}
	type znode struct {
		data    string
		version int32
		mzxid   int64
	}
	read := func() map[int]znode {
		out := map[int]znode{}
		for p := 0; p < 2; p++ {
			data, st, err := a.conn.Get(fmt.Sprintf("/consumers/g/offsets/t/%d", p))
			if err != nil {
				t.Fatal(err)
			}
			out[p] = znode{string(data), st.Version, st.Mzxid}
		}
		return out
	}
	committed := read()
	if committed[0].data != "3" || committed[1].data != "3" {
		t.Fatalf("offset znodes after the explicit commit: %+v, want \"3\" and \"3\"", committed)
	}
	for p := int32(0); p < 2; p++ {
		produce(t, cl, "t", p, fmt.Sprintf("v%d-3", p), fmt.Sprintf("v%d-4", p))
	}
	testutil.WaitFor(t, 20*time.Second, "2 more per partition at c1", func() bool { return c1.delivered("t", 0, 4) && c1.delivered("t", 1, 4) })
	commitsBefore := c1.count(0, timeline.Commit, nil)

	c2 := newMember(t, l.ZKConnect(), "g", "c2", props)
	drain(allStreams(createStreams(t, c2, map[string]int{"t": 1}))...)
	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c2-0"}, c1, c2)
	testutil.WaitFor(t, 20*time.Second, "the uncommitted records again", func() bool {
		return c2.delivered("t", 1, 4) && c1.count(0, timeline.Deliver, func(r timeline.Record) bool { return *r.Partition == 0 && *r.Offset == 4 }) == 2
	})
	// Nothing else may follow: a barrier record per partition (offset 5), delivered at its owner
	// after whatever else was coming from that partition.
	for p := int32(0); p < 2; p++ {
		produce(t, cl, "t", p, "barrier")
	}
	testutil.WaitFor(t, 20*time.Second, "the barriers (offset 5) at c1 and c2", func() bool { return c1.delivered("t", 0, 5) && c2.delivered("t", 1, 5) })
	if got := read(); !reflect.DeepEqual(got, committed) {
		t.Fatalf("offset znodes after the rebalance %+v, want them untouched %+v", got, committed)
	}
	if n := c1.count(0, timeline.Commit, nil) + c2.count(0, timeline.Commit, nil); n != commitsBefore {
		t.Fatalf("%d commit records, want only the explicit commit's %d", n, commitsBefore)
	}
	deliveries := func(m *member, p int32) []int64 {
		var out []int64
		for _, r := range m.rec.Records() {
			if r.Kind == timeline.Deliver && *r.Partition == p {
				out = append(out, *r.Offset)
			}
		}
		return out
	}
	if got, want := deliveries(c1, 0), []int64{0, 1, 2, 3, 4, 3, 4, 5}; !reflect.DeepEqual(got, want) {
		t.Fatalf("c1 delivered partition 0 offsets %v, want %v", got, want)
	}
	if got, want := deliveries(c2, 1), []int64{3, 4, 5}; !reflect.DeepEqual(got, want) {
		t.Fatalf("c2 delivered partition 1 offsets %v, want %v (from the explicit commit, then the barrier)", got, want)
	}
	if got := deliveries(c2, 0); len(got) != 0 {
		t.Fatalf("c2 delivered partition 0 offsets %v", got)
	}
}
