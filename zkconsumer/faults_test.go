package zkconsumer

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// Faults through each member's own proxies (lab.MemberLinks: its ZooKeeper link and its fetch
// link), on a real ZooKeeper and the project's broker.

// threeLinked starts c1, c2, c3 (each on its own links) on topic t with 6 partitions, waits for
// range's split {0,1}, {2,3}, {4,5}, and checks that each owner delivers a record of each of its
// partitions.
func threeLinked(t *testing.T, props map[string]string) (l *lab.Lab, a *admin, ms []*member, links []*lab.MemberLinks, sinks []*sink) {
	t.Helper()
	l = startLab(t, 1)
	cl := labClient(t, l)
	createTopicAssigned(t, cl, "t", onBroker1(6))
	a = newAdmin(t, l.ZKConnect())
	for _, id := range []string{"c1", "c2", "c3"} {
		m, ln := linkedMember(t, l.ZKConnect(), "g", id, props)
		sinks = append(sinks, drain(allStreams(createStreams(t, m, map[string]int{"t": 1}))...))
		ms, links = append(ms, m), append(links, ln)
	}
	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0", 4: "g_c3-0", 5: "g_c3-0"}, ms...)
	for _, r := range produceEach(t, cl, "t", 6, "before") {
		m := ms[r.partition/2]
		testutil.WaitFor(t, 20*time.Second, "the owner delivers "+r.value, func() bool { return m.delivered("t", r.partition, r.offset) })
	}
	return l, a, ms, links, sinks
}

// A crash: c2's ZooKeeper and fetch links are cut and it stops without a goodbye (Crash: no
// commit, and its closeSession cannot reach the server). Its registration and owner znodes stay
// while its session lives; once ZooKeeper expires the session they go, the survivors rebalance
// and own all of c2's partitions (range over c1, c3), and deliver what was sent to them.
func TestCrashSurvivorsTakeOverAfterExpiry(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false"}
	l, a, ms, links, _ := threeLinked(t, props)
	c1, c2, c3 := ms[0], ms[1], ms[2]
	oldSession := c2.SessionID()
	c1Mark, c3Mark := len(c1.rec.Records()), len(c3.rec.Records())

	for _, link := range []lab.Link{lab.LinkZooKeeper, lab.LinkFetch} {
		if err := links[1].Cut(link); err != nil {
			t.Fatal(err)
		}
	}
	cutAt := time.Now()
	c2.Crash()
	stopped := len(c2.rec.Records())
	if owner, ok := a.ephemeralOwner("/consumers/g/ids/g_c2"); !ok || owner != oldSession {
		t.Fatalf("right after the crash /consumers/g/ids/g_c2 has owner %x (present %v), want c2's session %x", owner, ok, oldSession)
	}
	if got, want := a.owners("g", "t"), map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0", 4: "g_c3-0", 5: "g_c3-0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("owners right after the crash = %v, want %v (c2's znodes live until its session expires)", got, want)
	}

	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c1-0", 3: "g_c3-0", 4: "g_c3-0", 5: "g_c3-0"}, c1, c3)
	// The server expires a session zookeeper.session.timeout.ms (2000) after the last packet it got;
	// c2's last packet was at most one ping interval (2000/3 ms) before the cut.
	if d := time.Since(cutAt); d < 2000*time.Millisecond-2000*time.Millisecond/3 {
		t.Fatalf("the survivors took over %v after the cut: sooner than a session expiry", d)
	}
	if _, ok := a.ephemeralOwner("/consumers/g/ids/g_c2"); ok {
		t.Fatal("c2's registration survived its session")
	}
	// Each survivor ran exactly one rebalance for the expiry (the ids child change).
	if n1, n3 := c1.count(c1Mark, timeline.RebalanceBegin, nil), c3.count(c3Mark, timeline.RebalanceBegin, nil); n1 != 1 || n3 != 1 {
		t.Fatalf("rebalances after the crash: c1 %d, c3 %d; want 1 each", n1, n3)
	}
	if got := ownedString(c1.Owned()); got != "t:[0 1 2]" {
		t.Fatalf("c1 owns %s", got)
	}
	if got := ownedString(c3.Owned()); got != "t:[3 4 5]" {
		t.Fatalf("c3 owns %s", got)
	}
	// Nothing was committed, so the new owners start c2's partitions from the earliest offset: the
	// record sent before the crash comes again, and the one sent after it arrives.
	cl := labClient(t, l)
	after := produceEach(t, cl, "t", 6, "after")
	testutil.WaitFor(t, 20*time.Second, "c2's partitions consumed by the survivors", func() bool {
		return c1.delivered("t", 2, 0) && c1.delivered("t", 2, after[2].offset) &&
			c3.delivered("t", 3, 0) && c3.delivered("t", 3, after[3].offset)
	})
	if n := len(c2.rec.Records()); n != stopped {
		t.Fatalf("c2 wrote %d records after its crash", n-stopped)
	}
	if n := c2.count(0, timeline.Commit, nil); n != 0 {
		t.Fatalf("c2 committed %d times", n)
	}
}

// A stall: c2's ZooKeeper link stops delivering bytes (its fetch link stays up). Its session
// expires on the server, the survivors take its partitions — while c2, unaware, keeps fetching
// and delivering one of them (split brain). When the link heals, c2 learns of the expiry,
// registers again under a new session and the group rebalances to include it again.
func TestStalledZooKeeperLinkReregisters(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false"}
	l, a, ms, links, _ := threeLinked(t, props)
	c1, c2, c3 := ms[0], ms[1], ms[2]
	oldSession := c2.SessionID()

	if err := links[1].Stall(lab.LinkZooKeeper); err != nil {
		t.Fatal(err)
	}
	stalled := len(c2.rec.Records())
	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c1-0", 3: "g_c3-0", 4: "g_c3-0", 5: "g_c3-0"}, c1, c3)
	if _, ok := a.ephemeralOwner("/consumers/g/ids/g_c2"); ok {
		t.Fatal("c2's registration outlived its session")
	}
	// Split brain: c2's fetchers still run and deliver partition 2's new record, as c1 does.
	cl := labClient(t, l)
	mid := produce(t, cl, "t", 2, "during")[0]
	testutil.WaitFor(t, 20*time.Second, "partition 2's record at c1 and at c2", func() bool {
		return c1.delivered("t", 2, mid) && c2.delivered("t", 2, mid)
	})
	if n := c2.count(stalled, timeline.RebalanceBegin, nil) + c2.count(stalled, timeline.Revoked, nil); n != 0 {
		t.Fatalf("c2 recorded %d rebalances/revocations while cut off from ZooKeeper", n)
	}

	healed := len(c2.rec.Records())
	if err := links[1].Heal(lab.LinkZooKeeper); err != nil {
		t.Fatal(err)
	}
	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0", 4: "g_c3-0", 5: "g_c3-0"}, c1, c2, c3)
	newSession := c2.SessionID()
	if newSession == oldSession || newSession == 0 {
		t.Fatalf("c2's session is %x after the heal, was %x: want a new session", newSession, oldSession)
	}
	if owner, ok := a.ephemeralOwner("/consumers/g/ids/g_c2"); !ok || owner != newSession {
		t.Fatalf("/consumers/g/ids/g_c2 owner %x (present %v), want c2's new session %x", owner, ok, newSession)
	}
	for _, p := range []string{"2", "3"} {
		if owner, _ := a.ephemeralOwner("/consumers/g/owners/t/" + p); owner != newSession {
			t.Fatalf("owner znode of partition %s belongs to session %x, want %x", p, owner, newSession)
		}
	}
	if n := c2.count(healed, timeline.Error, func(r timeline.Record) bool { return r.Text == "zookeeper session expired" }); n != 1 {
		t.Fatalf("c2 recorded %d session expiries after the heal, want 1", n)
	}
	if got := ownedString(c2.Owned()); got != "t:[2 3]" {
		t.Fatalf("c2 owns %s", got)
	}
	// And it consumes them again: a new record of partition 3 reaches c2, not c3.
	last := produce(t, cl, "t", 3, "healed")[0]
	testutil.WaitFor(t, 20*time.Second, "c2 delivers partition 3", func() bool { return c2.delivered("t", 3, last) })
	if c3.delivered("t", 3, last) {
		t.Fatal("c3 delivered partition 3 after handing it back")
	}
}

// zkLatency is the delay added to every answer on c1's ZooKeeper link in the conflict tests. c1
// needs about nine round trips (the notification, ZkClient's exists + getChildren, the cluster
// and registration reads, then its deletes in partition order) before it deletes its owner znode
// of partition 2, so it holds that znode for over a second after the join, while the others, on
// plain links, finish a whole attempt in a few milliseconds.
const zkLatency = 150 * time.Millisecond

// twoThenLatency starts c2 and c1 (on its own links) on a 6-partition topic with a registered
// broker that serves nothing (no fetching: these tests are about ZooKeeper), waits for the split
// {0,1,2}, {3,4,5}, then slows c1's ZooKeeper link. c2 starts first, alone: with c2Props'
// rebalance.max.retries=1 its one attempt at joining must not meet c1's owner znodes of 3, 4 and 5
// before c1 has released them (that race belongs to c1, which retries).
func twoThenLatency(t *testing.T, c2Props map[string]string) (z *lab.ZooKeeper, a *admin, c1, c2 *member, l1 *lab.MemberLinks) {
	t.Helper()
	z = startZK(t)
	a = newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 6)
	c2 = newMember(t, z.Connect(), "g", "c2", conflictProps(c2Props))
	createStreams(t, c2, map[string]int{"t": 1})
	c1, l1 = linkedMember(t, z.Connect(), "g", "c1", conflictProps(nil))
	createStreams(t, c1, map[string]int{"t": 1})
	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c1-0", 3: "g_c2-0", 4: "g_c2-0", 5: "g_c2-0"}, c1, c2)
	if err := l1.Latency(lab.LinkZooKeeper, zkLatency); err != nil {
		t.Fatal(err)
	}
	return z, a, c1, c2, l1
}

// conflictProps: no auto-commit (no commit writes in the way), one leader-finder round per
// fetcher start (the fake broker never answers), many attempts unless extra says otherwise.
func conflictProps(extra map[string]string) map[string]string {
	p := map[string]string{"auto.commit.enable": "false", "refresh.leader.backoff.ms": "600000", "rebalance.max.retries": "50"}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// attemptsOf walks m's records from index from: the rebalance_end oks in order, and per attempt
// the paths of its claims marked as ownership conflicts.
func attemptsOf(m *member, from int) (oks []bool, conflicts [][]string, begins int) {
	var cur []string
	for _, r := range m.rec.Records()[from:] {
		switch {
		case r.Kind == timeline.RebalanceBegin:
			begins++
		case r.Kind == timeline.ZKOp && r.Result == timeline.ZKOwnerConflict:
			cur = append(cur, r.Path)
		case r.Kind == timeline.RebalanceEnd:
			oks = append(oks, *r.OK)
			conflicts = append(conflicts, cur)
			cur = nil
		}
	}
	return oks, conflicts, begins
}

// firstRecord is the first of m's records from index from that match.
func firstRecord(m *member, from int, match func(timeline.Record) bool) (timeline.Record, bool) {
	for _, r := range m.rec.Records()[from:] {
		if match(r) {
			return r, true
		}
	}
	return timeline.Record{}, false
}

// A real ownership conflict: c1's ZooKeeper answers come 150 ms late when c3 joins. Range gives
// partition 2 to c2 now; c2 claims it while slow c1 has yet to delete its owner znode, so c2's
// attempt fails (the claim's write marked "conflict"; the partition 3 it did claim is deleted),
// and c2 retries after rebalance.backoff.ms until c1 has let go. The group then settles on
// range's split.
func TestOwnerConflictFromZooKeeperLatency(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z, a, c1, c2, _ := twoThenLatency(t, nil)
	m1, m2 := len(c1.rec.Records()), len(c2.rec.Records())
	c3 := newMember(t, z.Connect(), "g", "c3", conflictProps(nil))
	createStreams(t, c3, map[string]int{"t": 1})
	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0", 4: "g_c3-0", 5: "g_c3-0"}, c1, c2, c3)

	oks, conflicts, begins := attemptsOf(c2, m2)
	if begins != 1 || len(oks) < 2 || oks[0] || !oks[len(oks)-1] {
		t.Fatalf("c2: %d rebalance_begin, attempts ok %v; want one rebalance whose attempt 1 failed and whose last attempt (>= 2) succeeded", begins, oks)
	}
	for i, ok := range oks {
		want := []string{"/consumers/g/owners/t/2"} // each failed attempt: exactly the claim of c1's partition
		if ok {
			want = nil
		}
		if !reflect.DeepEqual(conflicts[i], want) {
			t.Fatalf("c2 attempt %d (ok %v): conflicts %v, want %v", i+1, ok, conflicts[i], want)
		}
	}
	// Attempt 1 released c2's old partitions, met the conflict on 2, claimed 3 and deleted it again
	// before its backoff: deletes of 3, 4, 5, create 2 (conflict), create 3, delete 3.
	var writes []string
	for _, r := range c2.rec.Records()[m2:] {
		if r.Kind == timeline.RebalanceEnd {
			break
		}
		if r.Kind == timeline.ZKOp && r.Op == "write" && strings.HasPrefix(r.Path, "/consumers/g/owners/") {
			writes = append(writes, r.Path+":"+r.Result)
		}
	}
	if want := []string{"/consumers/g/owners/t/3:", "/consumers/g/owners/t/4:", "/consumers/g/owners/t/5:",
		"/consumers/g/owners/t/2:conflict", "/consumers/g/owners/t/3:", "/consumers/g/owners/t/3:"}; !reflect.DeepEqual(writes, want) {
		t.Fatalf("c2's owner writes in attempt 1 = %v, want %v", writes, want)
	}
	// The conflict was real: c2 met c1's znode before c1 deleted it.
	conflict, _ := firstRecord(c2, m2, func(r timeline.Record) bool { return r.Result == timeline.ZKOwnerConflict })
	release, ok := firstRecord(c1, m1, func(r timeline.Record) bool {
		return r.Kind == timeline.ZKOp && r.Op == "write" && r.Path == "/consumers/g/owners/t/2"
	})
	if !ok || conflict.TsMs > release.TsMs {
		t.Fatalf("c2's conflict at %d ms, c1's release of partition 2 at %d ms (found %v): want the conflict first", conflict.TsMs, release.TsMs, ok)
	}
	// The slow member itself had nothing to wait for: one attempt, no conflict.
	if oks, conflicts, begins := attemptsOf(c1, m1); begins != 1 || !reflect.DeepEqual(oks, []bool{true}) || len(conflicts[0]) != 0 {
		t.Fatalf("c1: %d rebalance_begin, attempts %v, conflicts %v; want 1, [true], none", begins, oks, conflicts)
	}
	if got := ownedString(c2.Owned()); got != "t:[2 3]" {
		t.Fatalf("c2 owns %s", got)
	}
}

// The same conflict with rebalance.max.retries=1 on c2: its only attempt fails, the failure
// (ErrRebalanceFailed naming c1's thread as the owner) reaches c2's error channel, and c2 owns
// nothing — no owner znode names it, partitions 2 and 3 have no owner — until the next change
// of the group, whose rebalance gives it its partitions.
func TestOwnerConflictMaxRetriesOneReportsError(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z, a, c1, c2, l1 := twoThenLatency(t, map[string]string{"rebalance.max.retries": "1"})
	m2 := len(c2.rec.Records())
	c3 := newMember(t, z.Connect(), "g", "c3", conflictProps(nil))
	createStreams(t, c3, map[string]int{"t": 1})

	var err error
	select {
	case err = <-c2.Errors():
	case <-time.After(20 * time.Second):
		t.Fatal("c2 reported no error")
	}
	if !errors.Is(err, ErrRebalanceFailed) || !strings.Contains(err.Error(), `can't rebalance after 1 retries`) ||
		!strings.Contains(err.Error(), `/consumers/g/owners/t/2 is owned by "g_c1-0"`) {
		t.Fatalf("c2 reported %v; want ErrRebalanceFailed after 1 attempt, partition 2 owned by g_c1-0", err)
	}
	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0", 4: "g_c3-0", 5: "g_c3-0"}, c1, c3)
	oks, conflicts, begins := attemptsOf(c2, m2)
	if begins != 1 || !reflect.DeepEqual(oks, []bool{false}) || !reflect.DeepEqual(conflicts, [][]string{{"/consumers/g/owners/t/2"}}) {
		t.Fatalf("c2: %d rebalance_begin, attempts %v, conflicts %v; want 1, [false], [[/consumers/g/owners/t/2]]", begins, oks, conflicts)
	}
	if n := c2.count(m2, timeline.Error, func(r timeline.Record) bool { return strings.Contains(r.Text, "can't rebalance after 1 retries") }); n != 1 {
		t.Fatalf("c2 error records = %d, want 1", n)
	}
	// Nothing happens until the group changes: c2 stays without partitions. The error above is
	// reported after syncedRebalance's last attempt and back-off, so no retry of that rebalance is in
	// flight, and the core arms no timer once it gives up (TestRebalanceCoreGivesUpAfterMaxRetries:
	// its last effect is effFinished). The barrier below is the next change of the group (c3 leaves):
	// from here until that change's rebalance settles, c2 begins exactly one rebalance — its own.
	idle := len(c2.rec.Records())
	if got := c2.Owned(); len(got) != 0 {
		t.Fatalf("c2 owns %v after its failed rebalance", got)
	}
	if got, want := a.owners("g", "t"), map[int32]string{0: "g_c1-0", 1: "g_c1-0", 4: "g_c3-0", 5: "g_c3-0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("owners = %v, want %v (2 and 3 unowned)", got, want)
	}
	if n := c2.count(idle, timeline.RebalanceBegin, nil); n != 0 {
		t.Fatalf("c2 began %d rebalances with no change in the group", n)
	}

	// The next change: c3 leaves. c2's rebalance succeeds at its one attempt.
	if err := l1.Heal(lab.LinkZooKeeper); err != nil {
		t.Fatal(err)
	}
	c3.Shutdown()
	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c1-0", 3: "g_c2-0", 4: "g_c2-0", 5: "g_c2-0"}, c1, c2)
	if oks, _, begins := attemptsOf(c2, idle); begins != 1 || !reflect.DeepEqual(oks, []bool{true}) {
		t.Fatalf("c2 after c3 left: %d rebalance_begin, attempts %v; want 1, [true]", begins, oks)
	}
	if got := ownedString(c2.Owned()); got != "t:[3 4 5]" {
		t.Fatalf("c2 owns %s", got)
	}
}

// crashReturns runs m.Crash() and fails the test if it has not returned within d.
func crashReturns(t *testing.T, m *member, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { m.Crash(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("Crash() has not returned after %v", d)
	}
}

// The crash procedure (cut the member's links, then Crash) while the connector's goroutines are
// blocked on ZooKeeper behind the cut link: Crash returns within seconds, and nothing written after
// the cut reaches ZooKeeper. (go-zookeeper queues a request while disconnected and fails the queue
// with ErrNoServer each time it has tried every server — about once a second when connections are
// refused; the connector then waits for a session to send it again, as ZkClient's
// retryUntilConnected does, until Crash ends the wait.) The goroutines: the leader finder, looking
// up leaders again after the fetch link was cut, and the auto-committer with an offset to write.
func TestCrashWhileBlockedOnZooKeeper(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	t.Run("leader finder", func(t *testing.T) {
		l := startLab(t, 1)
		cl := labClient(t, l)
		createTopicAssigned(t, cl, "t", onBroker1(2))
		a := newAdmin(t, l.ZKConnect())
		m, links := linkedMember(t, l.ZKConnect(), "g", "c1", map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false"})
		drain(allStreams(createStreams(t, m, map[string]int{"t": 1}))...)
		settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0"}, m)
		first := produce(t, cl, "t", 0, "first")[0]
		testutil.WaitFor(t, 20*time.Second, "fetching", func() bool { return m.delivered("t", 0, first) })
		mark := len(m.rec.Records())
		if err := links.Cut(lab.LinkFetch); err != nil {
			t.Fatal(err)
		}
		// The fetcher fails, the partitions go back to the leader finder, which reads /brokers/ids and
		// /brokers/ids/1 again every refresh.leader.backoff.ms (200) and cannot reach the broker.
		brokerReads := func(from int) int {
			return m.count(from, timeline.ZKOp, func(r timeline.Record) bool { return strings.HasPrefix(r.Path, brokerIdsPath) })
		}
		testutil.WaitFor(t, 20*time.Second, "the leader finder looking again, twice", func() bool { return brokerReads(mark) >= 4 })
		cut := len(m.rec.Records()) // before the cut: the read that fails as the link goes counts
		if err := links.Cut(lab.LinkZooKeeper); err != nil {
			t.Fatal(err)
		}
		// A read since the cut, and the client knows it has no connection: the leader finder waits on
		// ZooKeeper behind the cut link (or will at its next read, 200 ms on).
		testutil.WaitFor(t, 20*time.Second, "a leader-finder read as the link is cut", func() bool {
			return brokerReads(cut) >= 1 && m.zk.conn.State() != zk.StateHasSession
		})
		crashReturns(t, m, 10*time.Second)
	})
	t.Run("auto-commit", func(t *testing.T) {
		l := startLab(t, 1)
		cl := labClient(t, l)
		createTopicAssigned(t, cl, "t", onBroker1(1))
		a := newAdmin(t, l.ZKConnect())
		m, links := linkedMember(t, l.ZKConnect(), "g", "c1", map[string]string{"auto.offset.reset": "smallest", "auto.commit.interval.ms": "100"})
		drain(allStreams(createStreams(t, m, map[string]int{"t": 1}))...)
		settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0"}, m)
		first := produce(t, cl, "t", 0, "first")[0]
		testutil.WaitFor(t, 20*time.Second, "first committed", func() bool { return reflect.DeepEqual(a.offsets("g", "t", 1), map[int32]int64{0: first + 1}) })
		if err := links.Cut(lab.LinkZooKeeper); err != nil {
			t.Fatal(err)
		}
		// The fetch link is up: a new record is delivered, so the auto-committer has an offset to write.
		off := produce(t, cl, "t", 0, "x")[0]
		testutil.WaitFor(t, 20*time.Second, "the record delivered", func() bool { return m.delivered("t", 0, off) })
		delivered := len(m.rec.Records())
		testutil.WaitFor(t, 20*time.Second, "an auto-commit of it failed behind the cut link", func() bool {
			return m.count(delivered, timeline.ZKOp, func(r timeline.Record) bool { return isWrite(r) && r.Path == "/consumers/g/offsets/t/0" }) >= 1
		})
		crashReturns(t, m, 10*time.Second)
		// The commit waited for a session until Crash ended the wait: one record, rejected.
		if got := m.count(0, timeline.Commit, func(r timeline.Record) bool { return *r.Offset == off+1 }); got != 1 {
			t.Fatalf("%d commit records of offset %d, want 1 (the commit blocked behind the cut link)", got, off+1)
		}
		if n := m.count(0, timeline.Commit, func(r timeline.Record) bool { return *r.Offset == off+1 && r.Result != timeline.CommitRejected }); n != 0 {
			t.Fatalf("%d commits of offset %d recorded as applied behind a cut link", n, off+1)
		}
		if got := a.offsets("g", "t", 1); !reflect.DeepEqual(got, map[int32]int64{0: first + 1}) {
			t.Fatalf("offset znode %v after the crash, want %d (the last commit before the cut)", got, first+1)
		}
	})
}
