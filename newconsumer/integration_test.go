package newconsumer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/newconsumer/assignor"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// Integration tests: a real ZooKeeper and broker (lab.Start), the group coordinator, and this
// package's consumers, with franz-go (kgo/kadm) creating the topic and producing.

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	return logrus.NewEntry(l)
}

// advertisesGroupAPIs reports whether the broker at addr answers JoinGroup.
func advertisesGroupAPIs(t *testing.T, addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := wire.Dial(ctx, nil, addr, "probe")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	r, err := c.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range r.(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == kmsg.JoinGroup.Int16() {
			return true
		}
	}
	return false
}

// startCluster starts ZooKeeper and one broker (with its group coordinator), creates topic with
// partitions and produces perPartition records ("<partition>-<i>") to each partition. With an
// initial rebalance delay, the first members to join land in the same generation.
func startCluster(t *testing.T, topic string, partitions int32, perPartition int, initialDelayMs int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	delay := strconv.Itoa(initialDelayMs)
	l, err := lab.Start(ctx, lab.Options{Brokers: 1, Dir: t.TempDir(), Log: quietLog(),
		BrokerConfig: map[string]string{"group.initial.rebalance.delay.ms": delay}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	bootstrap := l.Bootstrap()
	if !advertisesGroupAPIs(t, bootstrap) {
		t.Fatalf("the broker at %s does not advertise JoinGroup: no group coordinator", bootstrap)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < perPartition; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%d-%d", p, i))})
		}
	}
	if len(recs) > 0 {
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return bootstrap
}

// member is a consumer run by a goroutine that polls until stopped, recording listener calls and
// deliveries.
type member struct {
	name string
	c    *Consumer

	mu        sync.Mutex
	calls     []string // "revoked [..]", "assigned [..]", "lost [..]"
	revoked   []TopicPartition
	delivered map[string]int // "partition/offset" -> times

	pauseMu sync.Mutex
	resumed chan struct{} // non-nil while paused (the loop calls Poll no more: a stuck application); resume closes it
	stop    chan struct{}
	done    chan struct{}
}

// pause stops the member's loop from calling Poll (from its next turn) until resume.
func (m *member) pause() {
	m.pauseMu.Lock()
	defer m.pauseMu.Unlock()
	if m.resumed == nil {
		m.resumed = make(chan struct{})
	}
}

// resume lets a paused member's loop call Poll again.
func (m *member) resume() {
	m.pauseMu.Lock()
	defer m.pauseMu.Unlock()
	if m.resumed != nil {
		close(m.resumed)
		m.resumed = nil
	}
}

// pausedUntil is the channel resume closes while m is paused, nil while it runs.
func (m *member) pausedUntil() chan struct{} {
	m.pauseMu.Lock()
	defer m.pauseMu.Unlock()
	return m.resumed
}

func (m *member) note(kind string, ps []TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, fmt.Sprint(kind, " ", ps))
	if kind == "revoked" || kind == "lost" {
		m.revoked = append(m.revoked, ps...)
	}
}

func (m *member) snapshot() (calls []string, revoked []TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.calls...), append([]TopicPartition(nil), m.revoked...)
}

// startMember creates and runs a member with the lab's short timings; opts adjust the config.
func startMember(t *testing.T, name, bootstrap, topic string, col *timeline.Collector, props map[string]string, opts ...func(*Config)) *member {
	t.Helper()
	p := map[string]string{"bootstrap.servers": bootstrap, "group.id": "g", "session.timeout.ms": "2000",
		"heartbeat.interval.ms": "500", "auto.offset.reset": "earliest", "client.id": name}
	for k, v := range props {
		p[k] = v
	}
	cfg, err := FromProperties(p)
	if err != nil {
		t.Fatal(err)
	}
	m := &member{name: name, delivered: map[string]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	cfg.Listener = ListenerFuncs{
		Revoked:  func(ps []TopicPartition) { m.note("revoked", ps) },
		Assigned: func(ps []TopicPartition) { m.note("assigned", ps) },
		Lost:     func(ps []TopicPartition) { m.note("lost", ps) },
	}
	cfg.Timeline = &timeline.Recorder{Sink: col, Era: "classic", Member: name}
	cfg.Log = quietLog()
	for _, o := range opts {
		o(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic); err != nil {
		t.Fatal(err)
	}
	m.c = c
	go func() {
		defer close(m.done)
		for {
			select {
			case <-m.stop:
				return
			default:
			}
			if resumed := m.pausedUntil(); resumed != nil {
				select {
				case <-m.stop:
					return
				case <-resumed:
				}
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			recs, err := c.Poll(ctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				t.Errorf("%s: Poll: %v", name, err)
				return
			}
			m.mu.Lock()
			for _, r := range recs {
				m.delivered[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]++
			}
			m.mu.Unlock()
		}
	}()
	t.Cleanup(func() { m.close(t) })
	return m
}

// close stops polling and closes the consumer (once).
func (m *member) close(t *testing.T) {
	select {
	case <-m.stop:
		return
	default:
	}
	close(m.stop)
	<-m.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.c.Close(ctx); err != nil {
		t.Errorf("%s: Close: %v", m.name, err)
	}
}

// groupStable reports whether every member is in the same generation, no rebalance pending, and the
// members' assignments cover every partition of the topic exactly once.
func groupStable(ms []*member, partitions int32) bool {
	gen := ms[0].c.Generation()
	seen := map[TopicPartition]int{}
	for _, m := range ms {
		m.c.mu.Lock()
		ok := m.c.m.state == stable && !m.c.m.rejoinNeeded && m.c.join == nil && m.c.m.gen.id == gen
		m.c.mu.Unlock()
		if !ok || gen < 0 {
			return false
		}
		for _, tp := range m.c.Assignment() {
			seen[tp]++
		}
	}
	if len(seen) != int(partitions) {
		return false
	}
	for _, n := range seen {
		if n != 1 {
			return false
		}
	}
	return true
}

// byMemberID returns the members sorted by their member ids.
func byMemberID(ms []*member) []*member {
	out := append([]*member(nil), ms...)
	sort.Slice(out, func(i, j int) bool { return out[i].c.MemberID() < out[j].c.MemberID() })
	return out
}

func assignments(ms []*member) map[string][]TopicPartition {
	out := map[string][]TopicPartition{}
	for _, m := range ms {
		out[m.name] = m.c.Assignment()
	}
	return out
}

func partitionsOf(topic string, ps ...int32) []TopicPartition {
	out := []TopicPartition{}
	for _, p := range ps {
		out = append(out, TopicPartition{Topic: topic, Partition: p})
	}
	return out
}

// Three members joining the first generation together get exactly the assignor's result over
// their sorted member ids; every produced record is delivered.
func TestIntegrationThreeMembers(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	for _, c := range []struct {
		assignor string
		want     [][]int32 // by sorted member id
	}{
		{"range", [][]int32{{0, 1}, {2, 3}, {4, 5}}},              // RangeAssignor: consecutive ranges
		{"roundrobin", [][]int32{{0, 3}, {1, 4}, {2, 5}}},         // RoundRobinAssignor: dealt in turn
		{"sticky", [][]int32{{0, 3}, {1, 4}, {2, 5}}},             // fresh sticky: round robin over sorted members
		{"cooperative-sticky", [][]int32{{0, 3}, {1, 4}, {2, 5}}}, // the same, cooperatively
	} {
		t.Run(c.assignor, func(t *testing.T) {
			bootstrap := startCluster(t, "t", 6, 5, 2000)
			col := &timeline.Collector{}
			var ms []*member
			for i := 1; i <= 3; i++ {
				ms = append(ms, startMember(t, fmt.Sprintf("m%d", i), bootstrap, "t", col,
					map[string]string{"partition.assignment.strategy": c.assignor}))
			}
			testutil.WaitFor(t, 30*time.Second, "a stable group of 3", func() bool { return groupStable(ms, 6) })
			want := map[string][]TopicPartition{}
			for i, m := range byMemberID(ms) {
				want[m.name] = partitionsOf("t", c.want[i]...)
			}
			if got := assignments(ms); !reflect.DeepEqual(got, want) {
				t.Fatalf("assignment\n got %v\nwant %v", got, want)
			}
			if g := ms[0].c.Generation(); g != 1 {
				t.Fatalf("generation %d, want 1 (all three joined the first rebalance)", g)
			}
			testutil.WaitFor(t, 20*time.Second, "all 30 records delivered", func() bool {
				n := 0
				for _, m := range ms {
					m.mu.Lock()
					n += len(m.delivered)
					m.mu.Unlock()
				}
				return n == 30
			})
			for _, m := range ms {
				m.mu.Lock()
				for k, n := range m.delivered {
					var p, off int32
					fmt.Sscanf(k, "%d/%d", &p, &off)
					owned := false
					for _, tp := range want[m.name] {
						owned = owned || tp.Partition == p
					}
					if n != 1 || !owned {
						t.Errorf("%s delivered %s %d times (owns %v)", m.name, k, n, want[m.name])
					}
				}
				m.mu.Unlock()
			}
		})
	}
}

// A member leaves (Close: LeaveGroup); with the sticky assignor the two survivors keep what they
// had and split the leaver's partitions: exactly the constrained sticky arithmetic.
func TestIntegrationStickyMemberLeaves(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bootstrap := startCluster(t, "t", 6, 0, 2000)
	col := &timeline.Collector{}
	var ms []*member
	for i := 1; i <= 3; i++ {
		ms = append(ms, startMember(t, fmt.Sprintf("m%d", i), bootstrap, "t", col, map[string]string{"partition.assignment.strategy": "sticky"}))
	}
	testutil.WaitFor(t, 30*time.Second, "a stable group of 3", func() bool { return groupStable(ms, 6) })
	sorted := byMemberID(ms)
	a, b, leaver := sorted[0], sorted[1], sorted[2]
	if got := [][]TopicPartition{a.c.Assignment(), b.c.Assignment(), leaver.c.Assignment()}; !reflect.DeepEqual(got,
		[][]TopicPartition{partitionsOf("t", 0, 3), partitionsOf("t", 1, 4), partitionsOf("t", 2, 5)}) {
		t.Fatalf("first generation %v", got)
	}
	gen := a.c.Generation()
	leaver.close(t)
	survivors := []*member{a, b}
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2", func() bool { return groupStable(survivors, 6) && a.c.Generation() > gen })
	// Constrained sticky: both keep their two (under minQuota 3); t-2 and t-5 go round robin.
	if got := assignments(survivors); !reflect.DeepEqual(got, map[string][]TopicPartition{
		a.name: partitionsOf("t", 0, 2, 3), b.name: partitionsOf("t", 1, 4, 5)}) {
		t.Fatalf("after %s left: %v", leaver.name, got)
	}
	// The leaver's LeaveGroup is on the timeline; the survivors lost nothing.
	left := false
	for _, r := range col.Records() {
		left = left || (r.Member == leaver.name && r.Kind == timeline.GroupRequest && r.API == "LeaveGroup" && r.Err == "")
	}
	if !left {
		t.Fatal("no successful LeaveGroup from the leaver on the timeline")
	}
	for _, m := range survivors {
		if calls, _ := m.snapshot(); containsPrefix(calls, "lost") {
			t.Fatalf("%s: partitions lost: %v", m.name, calls)
		}
	}
}

func containsPrefix(ss []string, prefix string) bool {
	for _, s := range ss {
		if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

// KIP-429: a third member joins two cooperative-sticky members; each of the two revokes exactly the
// one partition that moves (listener and timeline), never one it keeps, and nothing is lost.
func TestIntegrationCooperativeJoinRevokesOnlyWhatMoves(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bootstrap := startCluster(t, "t", 6, 0, 0)
	col := &timeline.Collector{}
	props := map[string]string{"partition.assignment.strategy": "cooperative-sticky"}
	m1 := startMember(t, "m1", bootstrap, "t", col, props)
	m2 := startMember(t, "m2", bootstrap, "t", col, props)
	two := []*member{m1, m2}
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2 with 3 partitions each", func() bool {
		return groupStable(two, 6) && len(m1.c.Assignment()) == 3
	})
	before := assignments(two)
	_, r1 := m1.snapshot()
	_, r2 := m2.snapshot()
	revokedBefore := map[string]int{m1.name: len(r1), m2.name: len(r2)}

	m3 := startMember(t, "m3", bootstrap, "t", col, props)
	three := []*member{m1, m2, m3}
	testutil.WaitFor(t, 30*time.Second, "a stable group of 3 with 2 partitions each", func() bool {
		if !groupStable(three, 6) {
			return false
		}
		for _, m := range three {
			if len(m.c.Assignment()) != 2 {
				return false
			}
		}
		return true
	})
	after := assignments(three)
	for _, m := range two {
		calls, revoked := m.snapshot()
		revoked = revoked[revokedBefore[m.name]:]
		moved := diff(before[m.name], after[m.name])
		if len(moved) != 1 || !reflect.DeepEqual(sortedTPs(revoked), moved) {
			t.Fatalf("%s: revoked %v; what moved: %v (before %v, after %v; calls %v)", m.name, revoked, moved, before[m.name], after[m.name], calls)
		}
		if containsPrefix(calls, "lost") {
			t.Fatalf("%s: partitions lost: %v", m.name, calls)
		}
	}
	if got := append(diff(before[m1.name], after[m1.name]), diff(before[m2.name], after[m2.name])...); !reflect.DeepEqual(sortedTPs(got), after[m3.name]) {
		t.Fatalf("m3 got %v, the others gave up %v", after[m3.name], got)
	}
	// On the timeline too: the two revoked one partition each after the join.
	for _, m := range two {
		n := 0
		joined := false
		for _, r := range col.Records() {
			if r.Member == m3.name && r.Kind == timeline.RebalanceBegin {
				joined = true
			}
			if joined && r.Member == m.name && r.Kind == timeline.Revoked {
				for _, ps := range r.Partitions {
					n += len(ps)
				}
			}
		}
		if n != 1 {
			t.Fatalf("%s: %d partitions revoked on the timeline after m3 joined, want 1", m.name, n)
		}
	}
}

func sortedTPs(ps []TopicPartition) []TopicPartition {
	out := append([]TopicPartition{}, ps...)
	assignor.SortPartitions(out)
	return out
}

// timelineHas reports whether some record of member matches.
func timelineHas(col *timeline.Collector, member string, match func(timeline.Record) bool) bool {
	for _, r := range col.Records() {
		if r.Member == member && match(r) {
			return true
		}
	}
	return false
}

// max.poll.interval.ms: a member that stops polling leaves the group from its heartbeat goroutine
// (LeaveGroup), the other takes everything; polling again, it finds its partitions lost
// (OnPartitionsLost, not Revoked: they may be someone else's by now) and rejoins.
func TestIntegrationPollTimeoutLeavesGroup(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bootstrap := startCluster(t, "t", 6, 0, 0)
	col := &timeline.Collector{}
	props := map[string]string{"partition.assignment.strategy": "range", "max.poll.interval.ms": "1500"}
	m1 := startMember(t, "m1", bootstrap, "t", col, props)
	m2 := startMember(t, "m2", bootstrap, "t", col, props)
	both := []*member{m1, m2}
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2", func() bool { return groupStable(both, 6) && len(m1.c.Assignment()) == 3 })
	owned := m2.c.Assignment()
	m2.pause()
	testutil.WaitFor(t, 20*time.Second, "m1 owning all 6 partitions", func() bool { return groupStable([]*member{m1}, 6) })
	if !timelineHas(col, "m2", func(r timeline.Record) bool {
		return r.Kind == timeline.GroupRequest && r.API == "LeaveGroup" && r.Err == ""
	}) {
		t.Fatal("m2 sent no LeaveGroup when its poll interval ran out")
	}
	if m2.c.Generation() != -1 || m2.c.MemberID() != "" {
		t.Fatalf("m2 kept generation %d member %q after leaving", m2.c.Generation(), m2.c.MemberID())
	}
	m2.resume()
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2 again", func() bool { return groupStable(both, 6) && len(m2.c.Assignment()) == 3 })
	calls, _ := m2.snapshot()
	lost := fmt.Sprint("lost ", owned)
	if !reflect.DeepEqual(calls[len(calls)-2:], []string{lost, fmt.Sprint("assigned ", m2.c.Assignment())}) {
		t.Fatalf("m2's listener calls %v, want them to end with %q then assigned", calls, lost)
	}
}

// KIP-345: a static member's Close sends no LeaveGroup, so the group does not rebalance; the same
// group.instance.id coming back before session.timeout.ms gets its partitions back.
func TestIntegrationStaticMemberRestart(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bootstrap := startCluster(t, "t", 6, 0, 0)
	col := &timeline.Collector{}
	props := map[string]string{"partition.assignment.strategy": "range", "session.timeout.ms": "6000"}
	m1 := startMember(t, "m1", bootstrap, "t", col, props)
	static := map[string]string{"partition.assignment.strategy": "range", "session.timeout.ms": "6000", "group.instance.id": "s2"}
	m2 := startMember(t, "m2", bootstrap, "t", col, static)
	both := []*member{m1, m2}
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2", func() bool { return groupStable(both, 6) && len(m1.c.Assignment()) == 3 })
	gen, owned := m1.c.Generation(), m2.c.Assignment()
	m2.close(t)
	if timelineHas(col, "m2", func(r timeline.Record) bool { return r.Kind == timeline.GroupRequest && r.API == "LeaveGroup" }) {
		t.Fatal("a static member sent LeaveGroup on Close")
	}
	m2b := startMember(t, "m2b", bootstrap, "t", col, static)
	testutil.WaitFor(t, 20*time.Second, "the static member back", func() bool { return groupStable([]*member{m1, m2b}, 6) })
	if got := m2b.c.Assignment(); !reflect.DeepEqual(got, owned) {
		t.Fatalf("restarted static member got %v, had %v", got, owned)
	}
	if m1.c.Generation() != gen {
		t.Fatalf("m1's generation went from %d to %d: the static member's restart caused a rebalance", gen, m1.c.Generation())
	}
}

// A member whose coordinator link stalls longer than session.timeout.ms is expired by the
// coordinator while its fetch link keeps working (separate connections). When the link heals, its
// heartbeat gets UNKNOWN_MEMBER_ID: it loses its partitions (OnPartitionsLost), rejoins with a new
// member id, and the group ends stable with both members.
func TestIntegrationCoordinatorStallFencesMember(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bootstrap := startCluster(t, "t", 6, 0, 0)
	col := &timeline.Collector{}
	props := map[string]string{"partition.assignment.strategy": "range"}
	links := lab.NewMemberLinks("m2")
	t.Cleanup(func() { links.Close() })
	m1 := startMember(t, "m1", bootstrap, "t", col, props)
	m2 := startMember(t, "m2", bootstrap, "t", col, props, func(c *Config) {
		c.CoordinatorDialer = links.Dialer(lab.LinkCoordinator)
		c.FetchDialer = links.Dialer(lab.LinkFetch)
	})
	both := []*member{m1, m2}
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2", func() bool { return groupStable(both, 6) && len(m1.c.Assignment()) == 3 })
	owned, oldID := m2.c.Assignment(), m2.c.MemberID()
	if err := links.Stall(lab.LinkCoordinator); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "m1 owning all 6 partitions", func() bool { return groupStable([]*member{m1}, 6) })
	if err := links.Heal(lab.LinkCoordinator); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2 again", func() bool { return groupStable(both, 6) && len(m2.c.Assignment()) == 3 })
	if m2.c.MemberID() == oldID {
		t.Fatalf("m2 kept member id %s after being expired", oldID)
	}
	calls, _ := m2.snapshot()
	if !containsString(calls, fmt.Sprint("lost ", owned)) {
		t.Fatalf("m2's listener calls %v: no OnPartitionsLost(%v)", calls, owned)
	}
	if !timelineHas(col, "m2", func(r timeline.Record) bool {
		return r.Kind == timeline.GroupRequest && r.API == "Heartbeat" && r.Err == "UNKNOWN_MEMBER_ID"
	}) {
		t.Fatal("no Heartbeat answered UNKNOWN_MEMBER_ID on m2's timeline")
	}
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// rawJoin is a hand-driven group member: JoinGroup (after MEMBER_ID_REQUIRED, with the id given)
// with the cooperative-sticky protocol claiming owned in generation gen, then SyncGroup; it returns
// its member id, the generation and the assignment it got.
func rawJoin(t *testing.T, ctx context.Context, conn *wire.Conn, owned []TopicPartition, gen int32) (string, int32, []TopicPartition) {
	t.Helper()
	meta := assignor.EncodeSubscription(assignor.Subscription{Topics: []string{"t"}, OwnedPartitions: owned, Generation: gen,
		UserData: assignor.EncodeCooperativeUserData(gen)})
	memberID := ""
	for {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 9
		req.Group, req.MemberID, req.ProtocolType = "g", memberID, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "cooperative-sticky", Metadata: meta}}
		r, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := r.(*kmsg.JoinGroupResponse)
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			memberID = resp.MemberID
			continue
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("raw JoinGroup: %s", errName(resp.ErrorCode))
		}
		if resp.LeaderID == resp.MemberID {
			t.Fatal("the raw member became the leader; the test needs a newconsumer to assign")
		}
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Version = 5
		sync.Group, sync.MemberID, sync.Generation = "g", resp.MemberID, resp.Generation
		sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), resp.Protocol
		r, err = conn.Request(ctx, sync)
		if err != nil {
			t.Fatal(err)
		}
		sresp := r.(*kmsg.SyncGroupResponse)
		if sresp.ErrorCode != 0 {
			t.Fatalf("raw SyncGroup: %s", errName(sresp.ErrorCode))
		}
		ps, _, err := assignor.DecodeAssignment(sresp.MemberAssignment)
		if err != nil {
			t.Fatal(err)
		}
		return resp.MemberID, resp.Generation, ps
	}
}

// CO-COOP-STALE-OWNED (KAFKA-12984), end to end: two newconsumers (cooperative-sticky) own 0,2,4 and
// 1,3,5 in generation N; a member joins claiming 0 and 2 in generation N-1. The leader's assignor
// does not fail, the older claim loses (the stale claimant gets neither), the owners keep 2 each and
// revoke exactly the partition that moves; the stale claimant leaves and the group covers every
// partition exactly once again.
func TestIntegrationCoopStaleOwned(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bootstrap := startCluster(t, "t", 6, 0, 0)
	col := &timeline.Collector{}
	// 10 s sessions: the exact revocations asserted below must not be blurred by a member that
	// misses a 2 s session on a loaded machine and loses everything.
	props := map[string]string{"partition.assignment.strategy": "cooperative-sticky",
		"session.timeout.ms": "10000", "heartbeat.interval.ms": "1000"}
	// The owners' revocations wait at a gate until the stale claimant's SyncGroup is answered: a
	// cooperative owner rejoins as soon as its OnPartitionsRevoked returns, and a rejoin before the
	// claimant's SyncGroup would answer that SyncGroup REBALANCE_IN_PROGRESS (as Kafka does) and
	// take away the generation whose assignment is asserted.
	var holding atomic.Bool
	gate := make(chan struct{})
	holdRevocations := func(cfg *Config) {
		l := cfg.Listener.(ListenerFuncs)
		inner := l.Revoked
		l.Revoked = func(ps []TopicPartition) {
			if holding.Load() {
				<-gate
			}
			inner(ps)
		}
		cfg.Listener = l
	}
	a := startMember(t, "a", bootstrap, "t", col, props, holdRevocations)
	b := startMember(t, "b", bootstrap, "t", col, props, holdRevocations)
	two := []*member{a, b}
	var openOnce sync.Once
	openGate := func() { openOnce.Do(func() { close(gate) }) }
	t.Cleanup(openGate) // runs before the members' own cleanups close them
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range two {
				calls, _ := m.snapshot()
				t.Logf("%s: generation %d, listener calls %v", m.name, m.c.Generation(), calls)
			}
		}
	})
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2 with 3 partitions each", func() bool {
		return groupStable(two, 6) && len(a.c.Assignment()) == 3
	})
	gen, owned := a.c.Generation(), a.c.Assignment()
	_, ra := a.snapshot()
	_, rb := b.snapshot()
	before := map[string]int{"a": len(ra), "b": len(rb)}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := wire.Dial(ctx, nil, bootstrap, "stale")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stale := owned[:2] // a's first two partitions, claimed one generation back
	holding.Store(true)
	id, xgen, got := rawJoin(t, ctx, conn, stale, gen-1)
	openGate()
	if len(got) != 0 || xgen != gen+1 {
		t.Fatalf("stale claimant got %v in generation %d (want nothing in %d)", got, xgen, gen+1)
	}
	// Each owner revokes exactly one partition: a keeps its stale-claimed two.
	testutil.WaitFor(t, 20*time.Second, "a and b revoking one partition each", func() bool {
		_, ra := a.snapshot()
		_, rb := b.snapshot()
		return len(ra) == before["a"]+1 && len(rb) == before["b"]+1
	})
	_, ra = a.snapshot()
	if r := ra[before["a"]:]; !reflect.DeepEqual(r, owned[2:]) {
		t.Fatalf("a revoked %v, want %v (it keeps %v)", r, owned[2:], stale)
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version = 5
	leave.Group = "g"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: id}}
	if _, err := conn.Request(ctx, leave); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2 again", func() bool {
		return groupStable(two, 6) && len(a.c.Assignment()) == 3
	})
	for _, m := range two {
		if calls, _ := m.snapshot(); containsPrefix(calls, "lost") {
			t.Fatalf("%s lost partitions: %v", m.name, calls)
		}
	}
}

// KIP-345: a second member with the same group.instance.id replaces the first; the first one's
// heartbeat gets FENCED_INSTANCE_ID, which is fatal (Poll returns it, as Java's poll throws
// FencedInstanceIdException), and its Close reports the partitions lost.
func TestIntegrationStaticMemberFenced(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bootstrap := startCluster(t, "t", 6, 0, 0)
	col := &timeline.Collector{}
	static := map[string]string{"partition.assignment.strategy": "range", "group.instance.id": "s"}
	old := startMember(t, "old", bootstrap, "t", col, static)
	testutil.WaitFor(t, 30*time.Second, "the static member owning 6 partitions", func() bool { return groupStable([]*member{old}, 6) })
	owned := old.c.Assignment()
	old.pause() // its heartbeat goroutine runs on; its application polls no more for now
	fresh := startMember(t, "new", bootstrap, "t", col, static)
	testutil.WaitFor(t, 30*time.Second, "the new instance owning 6 partitions", func() bool { return groupStable([]*member{fresh}, 6) })
	testutil.WaitFor(t, 20*time.Second, "FENCED_INSTANCE_ID on the old instance's heartbeat", func() bool {
		return timelineHas(col, "old", func(r timeline.Record) bool {
			return r.Kind == timeline.GroupRequest && r.API == "Heartbeat" && r.Err == "FENCED_INSTANCE_ID"
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := old.c.Poll(ctx); !errors.Is(err, kerr.FencedInstanceID) {
		t.Fatalf("Poll after being fenced: %v, want FENCED_INSTANCE_ID", err)
	}
	old.close(t)
	calls, _ := old.snapshot()
	if last := calls[len(calls)-1]; last != fmt.Sprint("lost ", owned) {
		t.Fatalf("old instance's listener calls %v: want OnPartitionsLost(%v) last", calls, owned)
	}
	if timelineHas(col, "old", func(r timeline.Record) bool { return r.Kind == timeline.GroupRequest && r.API == "LeaveGroup" }) {
		t.Fatal("a static member sent LeaveGroup")
	}
}
