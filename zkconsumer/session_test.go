package zkconsumer

import (
	"reflect"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// Split brain after a session expiry (architecture, kept): A's ZooKeeper link stalls, its session
// expires on the server, B takes A's partition — while A's fetchers, on their own link, keep
// delivering it. Both deliver the same message. When A's link heals, A learns of the expiry,
// resets, re-registers and rebalances (its fetchers stop only then), and the group settles.
func TestSessionExpirySplitBrain(t *testing.T) {
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {1}})
	a := newAdmin(t, z.Connect())
	links := lab.NewMemberLinks("A")
	t.Cleanup(func() { links.Close() })
	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false"}

	mA := newMemberWith(t, z.Connect(), "g", "c1", props, func(c *Config) { c.ZKDialer = links.ZKDialer() })
	sA := drain(allStreams(createStreams(t, mA, map[string]int{"t": 1}))...)
	mB := newMember(t, z.Connect(), "g", "c2", props)
	sB := drain(allStreams(createStreams(t, mB, map[string]int{"t": 1}))...)
	testutil.WaitFor(t, 20*time.Second, "A owns 0, B owns 1", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), map[int32]string{0: "g_c1-0", 1: "g_c2-0"}) && mA.rebalanceIdle() && mB.rebalanceIdle()
	})
	produce(t, cl, "t", 0, "x0")
	testutil.WaitFor(t, 10*time.Second, "A delivers x0", func() bool { return sA.len() == 1 })

	stalledAt := len(mA.rec.Records())
	if err := links.Stall(lab.LinkZooKeeper); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "B owning both after A's session expired", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), map[int32]string{0: "g_c2-0", 1: "g_c2-0"}) && mB.rebalanceIdle()
	})
	// B starts partition 0 from the beginning (nothing committed): x0 again.
	testutil.WaitFor(t, 10*time.Second, "B delivers x0", func() bool { return sB.len() == 1 })
	produce(t, cl, "t", 0, "x1")
	testutil.WaitFor(t, 10*time.Second, "x1 at both", func() bool { return sA.len() == 2 && sB.len() == 2 })
	if got, want := sA.got(), msgs("t", 0, 0, "x0", "x1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("A delivered %v, want %v", got, want)
	}
	if got, want := sB.got(), msgs("t", 0, 0, "x0", "x1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("B delivered %v, want %v", got, want)
	}
	if n := mA.count(stalledAt, timeline.Revoked, nil) + mA.count(stalledAt, timeline.RebalanceBegin, nil); n != 0 {
		t.Fatalf("A recorded %d rebalances/revocations while cut off from ZooKeeper", n)
	}

	mark := len(mA.rec.Records())
	if err := links.Heal(lab.LinkZooKeeper); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "the group settled again", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), map[int32]string{0: "g_c1-0", 1: "g_c2-0"}) && mA.rebalanceIdle() && mB.rebalanceIdle()
	})
	// A: the expiry, then a rebalance whose first act is to stop its fetchers (revoked t:[0]).
	var kinds []string
	for _, r := range mA.rec.Records()[mark:] {
		switch r.Kind {
		case timeline.Error, timeline.RebalanceBegin, timeline.Revoked:
			kinds = append(kinds, string(r.Kind)+":"+r.Text+ownedString(r.Partitions))
		}
	}
	if len(kinds) < 3 || kinds[0] != "error:zookeeper session expired" || kinds[1] != "rebalance_begin:" || kinds[2] != "revoked:t:[0]" {
		t.Fatalf("A's records after the heal = %v, want error (session expired), rebalance_begin, revoked t:[0], ...", kinds)
	}
	produce(t, cl, "t", 0, "x2")
	produce(t, cl, "t", 1, "y0")
	testutil.WaitFor(t, 10*time.Second, "x2 at A, y0 at B", func() bool {
		return contains(sA.got(), "t/0@2=x2") && contains(sB.got(), "t/1@0=y0")
	})
	// B's settled rebalance stopped its fetcher of partition 0 (x2 was produced after it): B now
	// fetches partition 1 alone, so it cannot deliver x2.
	if got, want := mB.fetchPlaces(), map[string]string{"t/1": "broker 1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("B fetches %v after settling, want %v", got, want)
	}
	if contains(sB.got(), "t/0@2=x2") {
		t.Fatalf("B still delivers partition 0 after settling: %v", sB.got())
	}
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

// Crash with the member's ZooKeeper link cut: no commit, no closeSession reaches the server, so
// the registration and owner znodes stay until the session expires (zookeeper.session.timeout.ms).
func TestCrashLeavesZnodesUntilExpiry(t *testing.T) {
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 2)
	links := lab.NewMemberLinks("A")
	t.Cleanup(func() { links.Close() })
	m := newMemberWith(t, z.Connect(), "g", "c1", nil, func(c *Config) { c.ZKDialer = links.ZKDialer() })
	createStreams(t, m, map[string]int{"t": 1})
	if err := links.Cut(lab.LinkZooKeeper); err != nil {
		t.Fatal(err)
	}
	m.Crash()
	crashed := time.Now()
	if ok, _, err := a.conn.Exists("/consumers/g/ids/g_c1"); !ok || err != nil {
		t.Fatalf("registration gone right after the crash (%v, %v)", ok, err)
	}
	if got := a.owners("g", "t"); !reflect.DeepEqual(got, map[int32]string{0: "g_c1-0", 1: "g_c1-0"}) {
		t.Fatalf("owners right after the crash = %v", got)
	}
	testutil.WaitFor(t, 20*time.Second, "the session to expire", func() bool {
		ok, _, _ := a.conn.Exists("/consumers/g/ids/g_c1")
		return !ok && len(a.owners("g", "t")) == 0
	})
	if d := time.Since(crashed); d < time.Second {
		t.Fatalf("znodes went after %v: the session was closed, not expired", d)
	}
	if n := m.count(0, timeline.Commit, nil); n != 0 {
		t.Fatalf("%d commit records after a crash", n)
	}
}
