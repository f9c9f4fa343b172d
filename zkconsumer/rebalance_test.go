package zkconsumer

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// These tests run against a real ZooKeeper with broker registrations for ports where nobody
// listens: the rebalance (ZooKeeper only) completes, the fetchers find no leader.

func createStreams(t *testing.T, m *member, topics map[string]int) map[string][]<-chan Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := m.CreateMessageStreams(ctx, topics)
	if err != nil {
		t.Fatalf("%s: CreateMessageStreams: %v", m.ConsumerID(), err)
	}
	return s
}

// 3 connectors × 1 thread on 6 partitions: range gives each two consecutive partitions, in the
// string order of their thread ids, and the owner znodes say exactly that.
func TestRangeOwnersThreeConnectors(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 6)
	var ms []*member
	for _, id := range []string{"c1", "c2", "c3"} {
		m := newMember(t, z.Connect(), "g", id, nil)
		createStreams(t, m, map[string]int{"t": 1})
		ms = append(ms, m)
	}
	want := map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0", 4: "g_c3-0", 5: "g_c3-0"}
	testutil.WaitFor(t, 30*time.Second, "range owners", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), want) && ms[0].rebalanceIdle() && ms[1].rebalanceIdle() && ms[2].rebalanceIdle()
	})
	for i, m := range ms {
		wantOwned := fmt.Sprintf("t:[%d %d]", 2*i, 2*i+1)
		if got := ownedString(m.Owned()); got != wantOwned {
			t.Errorf("%s owns %s, want %s", m.ConsumerID(), got, wantOwned)
		}
	}
	// The registration JSON is 0.8.2's.
	data, _, err := a.conn.Get("/consumers/g/ids/g_c2")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := parseRegistration(data)
	if err != nil || reg.Version != 1 || reg.Pattern != "static" || !reflect.DeepEqual(reg.Subscription, map[string]int{"t": 1}) || reg.Timestamp == "" {
		t.Fatalf("registration %s: %+v, %v", data, reg, err)
	}
}

// 11 connectors (consumer.id c1..c11) on 12 partitions: thread ids sort as strings, so g_c1-0 gets
// partitions 0 and 1, g_c10-0 gets 2, g_c11-0 gets 3, g_c2-0 gets 4, ... g_c9-0 gets 11.
func TestRangeElevenConnectorsStringOrder(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 12)
	ms := make([]*member, 11)
	var wg sync.WaitGroup
	for i := range ms {
		ms[i] = newMember(t, z.Connect(), "g", fmt.Sprintf("c%d", i+1), nil)
	}
	for _, m := range ms { // join together: the storm settles
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if _, err := m.CreateMessageStreams(ctx, map[string]int{"t": 1}); err != nil {
				t.Errorf("%s: %v", m.ConsumerID(), err)
			}
		}()
	}
	wg.Wait()
	want := map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c10-0", 3: "g_c11-0", 4: "g_c2-0", 5: "g_c3-0",
		6: "g_c4-0", 7: "g_c5-0", 8: "g_c6-0", 9: "g_c7-0", 10: "g_c8-0", 11: "g_c9-0"}
	testutil.WaitFor(t, 60*time.Second, "eleven owners", func() bool {
		if !reflect.DeepEqual(a.owners("g", "t"), want) {
			return false
		}
		for _, m := range ms {
			if !m.rebalanceIdle() {
				return false
			}
		}
		return true
	})
	for _, m := range ms {
		var mine []int32
		for p, owner := range want {
			if owner == m.ConsumerID()+"-0" {
				mine = append(mine, p)
			}
		}
		sort.Slice(mine, func(i, j int) bool { return mine[i] < mine[j] })
		if got, w := ownedString(m.Owned()), fmt.Sprintf("t:%v", mine); got != w {
			t.Errorf("%s owns %s, want %s", m.ConsumerID(), got, w)
		}
	}
}

// Round-robin over two topics deals the topic-partitions in the order of Java's
// "[topic,partition]".hashCode() (values from the JRE, see assign_test.go).
func TestRoundRobinTwoTopicsHashOrder(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("orders", 3)
	a.createTopic("t", 12)
	props := map[string]string{"partition.assignment.strategy": "roundrobin"}
	m1 := newMember(t, z.Connect(), "g", "c1", props)
	createStreams(t, m1, map[string]int{"orders": 1, "t": 1})
	m2 := newMember(t, z.Connect(), "g", "c2", props)
	createStreams(t, m2, map[string]int{"orders": 1, "t": 1})
	wantOrders := map[int32]string{0: "g_c1-0", 1: "g_c2-0", 2: "g_c1-0"}
	wantT := map[int32]string{10: "g_c1-0", 11: "g_c2-0", 0: "g_c2-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c1-0",
		4: "g_c2-0", 5: "g_c1-0", 6: "g_c2-0", 7: "g_c1-0", 8: "g_c2-0", 9: "g_c1-0"}
	testutil.WaitFor(t, 30*time.Second, "round-robin owners", func() bool {
		return reflect.DeepEqual(a.owners("g", "orders"), wantOrders) && reflect.DeepEqual(a.owners("g", "t"), wantT) &&
			m1.rebalanceIdle() && m2.rebalanceIdle()
	})
	if got := ownedString(m1.Owned()); got != "orders:[0 2] t:[1 3 5 7 9 10]" {
		t.Errorf("c1 owns %s", got)
	}
	if got := ownedString(m2.Owned()); got != "orders:[1] t:[0 2 4 6 8 11]" {
		t.Errorf("c2 owns %s", got)
	}
}

// ZK-ROUNDROBIN-EMPTY (KAFKA-1648): round-robin with a whitelist on a cluster without topics
// rebalances successfully with nothing assigned; a topic created later is assigned whole.
func TestZKRoundRobinEmpty(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0) // no /brokers/topics at all
	m := newMember(t, z.Connect(), "g", "c1", map[string]string{"partition.assignment.strategy": "roundrobin"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := m.CreateMessageStreamsByFilter(ctx, Whitelist(".*"), 1); err != nil {
		t.Fatalf("initial rebalance with no topics: %v", err)
	}
	if got := m.count(0, timeline.RebalanceEnd, func(r timeline.Record) bool { return *r.OK && r.Attempt == 1 }); got != 1 {
		t.Fatalf("rebalance_end{ok, attempt 1} records = %d, want 1", got)
	}
	if got := m.Owned(); len(got) != 0 {
		t.Fatalf("owns %v with no topics", got)
	}
	data, _, err := a.conn.Get("/consumers/g/ids/g_c1")
	if err != nil {
		t.Fatal(err)
	}
	if reg, _ := parseRegistration(data); reg.Pattern != "white_list" || !reflect.DeepEqual(reg.Subscription, map[string]int{".*": 1}) {
		t.Fatalf("registration %s", data)
	}

	a.createTopic("x", 2)
	testutil.WaitFor(t, 30*time.Second, "the new topic assigned", func() bool {
		return reflect.DeepEqual(a.owners("g", "x"), map[int32]string{0: "g_c1-0", 1: "g_c1-0"}) && m.rebalanceIdle()
	})
	if got := ownedString(m.Owned()); got != "x:[0 1]" {
		t.Fatalf("owns %s, want x:[0 1]", got)
	}
	if n := m.count(0, timeline.Error, nil); n != 0 {
		t.Fatalf("%d error records", n)
	}
}

// ZK-FAILED-ATTEMPT-RELEASES (kafka-node #981): an attempt that claims some owner znodes and then
// meets a conflict deletes everything it claimed before its backoff; once the conflict is gone,
// every partition has exactly one owner znode and the connector owns exactly those naming it.
func TestZKFailedAttemptReleases(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 6)
	// Another session owns partition 3 (as a member whose release has not happened yet would).
	squatter := newAdmin(t, z.Connect())
	squatter.create("/consumers/g/owners/t/3", []byte("g_other-0"), zk.FlagEphemeral)

	m := newMember(t, z.Connect(), "g", "c1", map[string]string{"rebalance.backoff.ms": "1500"})
	done := make(chan error, 1)
	go func() {
		_, err := m.CreateMessageStreams(context.Background(), map[string]int{"t": 1})
		done <- err
	}()

	// Attempt 1: creates for 0..5 (3 conflicts), then deletes of the 5 it claimed — before attempt 2.
	claimedPaths := []string{}
	for _, p := range []int{0, 1, 2, 4, 5} {
		claimedPaths = append(claimedPaths, fmt.Sprintf("/consumers/g/owners/t/%d", p))
	}
	testutil.WaitFor(t, 20*time.Second, "attempt 1's deletes", func() bool {
		return m.count(0, timeline.ZKOp, func(r timeline.Record) bool {
			return isWrite(r) && strings.HasPrefix(r.Path, "/consumers/g/owners/t/")
		}) >= 11
	})
	// During the backoff ZooKeeper holds only the squatter's znode.
	if got := a.owners("g", "t"); !reflect.DeepEqual(got, map[int32]string{3: "g_other-0"}) {
		t.Fatalf("during the backoff the owners are %v, want only 3 → g_other-0", got)
	}
	var ownerWrites []string
	for _, r := range m.rec.Records() {
		if r.Kind == timeline.ZKOp && isWrite(r) && strings.HasPrefix(r.Path, "/consumers/g/owners/t/") {
			ownerWrites = append(ownerWrites, r.Path)
		}
	}
	wantWrites := []string{}
	for p := 0; p < 6; p++ { // creates, in partition order
		wantWrites = append(wantWrites, fmt.Sprintf("/consumers/g/owners/t/%d", p))
	}
	wantWrites = append(wantWrites, claimedPaths...) // then the deletes
	if !reflect.DeepEqual(ownerWrites[:11], wantWrites) {
		t.Fatalf("owner writes of attempt 1 = %v, want %v", ownerWrites[:11], wantWrites)
	}

	squatter.conn.Close() // its ephemeral owner znode goes
	if err := <-done; err != nil {
		t.Fatalf("initial rebalance: %v", err)
	}
	want := map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c1-0", 3: "g_c1-0", 4: "g_c1-0", 5: "g_c1-0"}
	if got := a.owners("g", "t"); !reflect.DeepEqual(got, want) {
		t.Fatalf("owners = %v, want %v", got, want)
	}
	if got := ownedString(m.Owned()); got != "t:[0 1 2 3 4 5]" {
		t.Fatalf("owns %s", got)
	}
	ends := m.rec.Records()
	var last timeline.Record
	for _, r := range ends {
		if r.Kind == timeline.RebalanceEnd {
			last = r
		}
	}
	if !*last.OK || last.Attempt < 2 {
		t.Fatalf("rebalance_end = ok %v attempt %d, want ok after >= 2 attempts", *last.OK, last.Attempt)
	}
}

// ZK-PARTITIONS-ADDED (KAFKA-1075), ZooKeeper side: the topic's partition map grows from 2 to 4;
// the data watch on /brokers/topics/<t> triggers a rebalance and range splits 2 and 2.
func TestZKPartitionsAddedOwners(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 2)
	m1 := newMember(t, z.Connect(), "g", "c1", nil)
	createStreams(t, m1, map[string]int{"t": 1})
	m2 := newMember(t, z.Connect(), "g", "c2", nil)
	createStreams(t, m2, map[string]int{"t": 1})
	testutil.WaitFor(t, 30*time.Second, "2 partitions split", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), map[int32]string{0: "g_c1-0", 1: "g_c2-0"}) && m1.rebalanceIdle() && m2.rebalanceIdle()
	})
	before1, before2 := m1.count(0, timeline.RebalanceBegin, nil), m2.count(0, timeline.RebalanceBegin, nil)
	if _, err := a.conn.Set(brokerTopicsPath+"/t", topicJSON(4), -1); err != nil {
		t.Fatal(err)
	}
	want := map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0"}
	testutil.WaitFor(t, 30*time.Second, "4 partitions split", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), want) && m1.rebalanceIdle() && m2.rebalanceIdle()
	})
	if n := m1.count(0, timeline.ZKWatch, func(r timeline.Record) bool {
		return r.Path == "/brokers/topics/t" && r.Type == "NodeDataChanged"
	}); n != 1 {
		t.Fatalf("c1 saw %d NodeDataChanged on /brokers/topics/t, want 1", n)
	}
	if d1, d2 := m1.count(0, timeline.RebalanceBegin, nil)-before1, m2.count(0, timeline.RebalanceBegin, nil)-before2; d1 != 1 || d2 != 1 {
		t.Fatalf("rebalances after the change: c1 %d, c2 %d; want 1 each", d1, d2)
	}
	if ownedString(m1.Owned()) != "t:[0 1]" || ownedString(m2.Owned()) != "t:[2 3]" {
		t.Fatalf("owned: c1 %v, c2 %v", m1.Owned(), m2.Owned())
	}
}

// ZK-BROKER-VANISHES (KAFKA-1010): a broker's /brokers/ids/<id> disappears between listing the
// children and reading the node. The broker is treated as gone: the attempt succeeds (0.8.2's
// getCluster threw here and failed the attempt) and every partition has one owner.
func TestZKBrokerVanishes(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.fakeBroker(1)
	a.createTopic("t", 4)
	m := newMember(t, z.Connect(), "g", "c1", nil)
	var once sync.Once
	m.zk.testHookAfterOp = func(op, path string) {
		if op == "read" && path == brokerIdsPath {
			once.Do(func() {
				if err := a.conn.Delete(brokerIdsPath+"/1", -1); err != nil {
					t.Errorf("deleting broker 1: %v", err)
				}
			})
		}
	}
	createStreams(t, m, map[string]int{"t": 1})
	var vanishedRead int
	for _, r := range m.rec.Records() {
		if r.Kind == timeline.ZKOp && r.Path == brokerIdsPath+"/1" {
			vanishedRead++
		}
	}
	if vanishedRead == 0 {
		t.Fatal("the connector never read /brokers/ids/1 after listing it: the race was not exercised")
	}
	if n := m.count(0, timeline.RebalanceEnd, func(r timeline.Record) bool { return *r.OK && r.Attempt == 1 }); n != 1 {
		t.Fatalf("rebalance_end{ok, attempt 1} = %d, want 1", n)
	}
	want := map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c1-0", 3: "g_c1-0"}
	if got := a.owners("g", "t"); !reflect.DeepEqual(got, want) {
		t.Fatalf("owners = %v, want %v", got, want)
	}
	brokers, err := m.allBrokers()
	if err != nil || len(brokers) != 1 || brokers[0].id != 0 {
		t.Fatalf("brokers now %v, %v; want only broker 0", brokers, err)
	}
}

// Herd effect: 5 connectors stable (each watches /consumers/g/ids: wchp shows 5 sessions), a 6th
// joins, and every member rebalances: 6 rebalance_begin records, 5 NodeChildrenChanged
// notifications, and ZooKeeper operations that follow 0.8.2's reads exactly.
func TestHerdEffect(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 5) // with 6 threads range moves nothing: no conflicts, exact counts
	// No auto-commit (no commit writes); the leader finder makes one round per fetcher start.
	props := map[string]string{"auto.commit.enable": "false", "refresh.leader.backoff.ms": "600000"}
	var ms []*member
	for i := 1; i <= 5; i++ {
		m := newMember(t, z.Connect(), "g", fmt.Sprintf("c%d", i), props)
		createStreams(t, m, map[string]int{"t": 1})
		ms = append(ms, m)
	}
	// Settled: owners final, no rebalance running, and each member's leader finder made its round
	// (2 reads of /brokers/ids*) after its last rebalance.
	leaderFinderDone := func(m *member) bool {
		if len(m.Owned()) == 0 { // no partition: the leader finder has nothing to look up
			return true
		}
		recs := m.rec.Records()
		last := -1
		for i, r := range recs {
			if r.Kind == timeline.RebalanceEnd {
				last = i
			}
		}
		n := 0
		for _, r := range recs[last+1:] {
			if r.Kind == timeline.ZKOp && strings.HasPrefix(r.Path, brokerIdsPath) {
				n++
			}
		}
		return n >= 2
	}
	settled := func(n int) bool {
		for _, m := range ms[:n] {
			if !m.rebalanceIdle() || !leaderFinderDone(m) {
				return false
			}
		}
		return true
	}
	testutil.WaitFor(t, 30*time.Second, "5 members stable", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), map[int32]string{0: "g_c1-0", 1: "g_c2-0", 2: "g_c3-0", 3: "g_c4-0", 4: "g_c5-0"}) && settled(5)
	})
	sessions := func() []int64 {
		out, err := z.FourLetter(context.Background(), 0, "wchp")
		if err != nil {
			t.Fatal(err)
		}
		s := lab.ParseWatchesByPath(out)["/consumers/g/ids"]
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s
	}
	memberSessions := func() []int64 {
		var s []int64
		for _, m := range ms {
			s = append(s, m.SessionID())
		}
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s
	}
	if got, want := sessions(), memberSessions(); !reflect.DeepEqual(got, want) {
		t.Fatalf("wchp /consumers/g/ids watchers = %x, want the 5 members' sessions %x", got, want)
	}
	mark := make([]int, 5)
	for i, m := range ms {
		mark[i] = len(m.rec.Records())
	}

	c6 := newMember(t, z.Connect(), "g", "c6", props)
	createStreams(t, c6, map[string]int{"t": 1})
	ms = append(ms, c6)
	mark = append(mark, 0)
	testutil.WaitFor(t, 30*time.Second, "everyone rebalanced once more", func() bool {
		for i, m := range ms[:5] {
			if m.count(mark[i], timeline.RebalanceEnd, nil) != 1 {
				return false
			}
		}
		return settled(6)
	})
	if got := a.owners("g", "t"); !reflect.DeepEqual(got, map[int32]string{0: "g_c1-0", 1: "g_c2-0", 2: "g_c3-0", 3: "g_c4-0", 4: "g_c5-0"}) {
		t.Fatalf("owners after the join = %v", got)
	}
	var begins, reads, writes, watches int
	for i, m := range ms {
		b := m.count(mark[i], timeline.RebalanceBegin, nil)
		r := m.count(mark[i], timeline.ZKOp, isRead)
		w := m.count(mark[i], timeline.ZKOp, isWrite)
		n := m.count(mark[i], timeline.ZKWatch, func(r timeline.Record) bool {
			return r.Path == "/consumers/g/ids" && r.Type == "NodeChildrenChanged"
		})
		// An existing member: ZkClient's event thread answers the notification with exists +
		// getChildren of /consumers/g/ids (2); the attempt reads the cluster (2), its own
		// registration (1), the brokers (2), its registration again (1), the topic (1), the ids
		// (1), 6 registrations, the ids again (1) and its offset (1) = 16; the leader finder lists
		// and reads the brokers (2): 20 reads. Writes: release 1 + claim 1.
		// The newcomer: subscribeChildChanges(ids) = exists + getChildren (2),
		// subscribeDataChanges(topic) = exists (1), the attempt without offset (15): 18 reads;
		// it gets no partition, so no leader finder round. Writes: its registration.
		wantR, wantW, wantN := 20, 2, 1
		if i == 5 {
			wantR, wantW, wantN = 18, 1, 0
		}
		if b != 1 || r != wantR || w != wantW || n != wantN {
			t.Errorf("%s: rebalance_begin %d, zk reads %d, writes %d, ids notifications %d; want 1, %d, %d, %d",
				m.ConsumerID(), b, r, w, n, wantR, wantW, wantN)
		}
		begins, reads, writes, watches = begins+b, reads+r, writes+w, watches+n
	}
	if begins != 6 || reads != 118 || writes != 11 || watches != 5 {
		t.Fatalf("join of the 6th: rebalance_begin %d, reads %d, writes %d, notifications %d; want 6, 118, 11, 5", begins, reads, writes, watches)
	}
	if got, want := sessions(), memberSessions(); !reflect.DeepEqual(got, want) || len(got) != 6 {
		t.Fatalf("wchp /consumers/g/ids watchers after the join = %x, want %x", got, want)
	}
	// The counters agree with the records.
	for i, m := range ms {
		r, w := m.ZooKeeperOps()
		if int(r) != m.count(0, timeline.ZKOp, isRead) || int(w) != m.count(0, timeline.ZKOp, isWrite) {
			t.Errorf("member %d: counters %d/%d disagree with zk_op records", i, r, w)
		}
	}
}
