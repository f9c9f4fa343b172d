package broker_test

// The group coordinator through the real broker (started by the lab on a real ZooKeeper), driven
// on the wire with kmsg requests: the CO-* field cases (problems Kafka users reported, each named after its report) at the
// request versions clients send, and bad input answered with Kafka 3.9's error codes — never a
// crash, and the group and other connections keep working.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/lab"
)

// consumerMeta is a consumer-protocol subscription to topics (ConsumerProtocolSubscription v0).
func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

// wireMember is a group member driven by hand on its own connection (a JoinGroup may wait for
// the whole join phase, and a connection carries one request at a time).
type wireMember struct {
	c          *wire.Conn
	group      string
	id         string
	generation int32
	leader     string
	protocols  []kmsg.JoinGroupRequestProtocol
	session    int32 // ms
	rebalance  int32 // ms
}

func newWireMember(t *testing.T, addr, group string) *wireMember {
	return &wireMember{c: dial(t, addr), group: group, session: 30000, rebalance: 30000,
		protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: consumerMeta("t")}}}
}

// join sends JoinGroup v9 (first with no member id: MEMBER_ID_REQUIRED gives it one, KIP-394) and
// returns the response that ends the round; the member takes its id and generation from it.
func (m *wireMember) join(t *testing.T) *kmsg.JoinGroupResponse {
	t.Helper()
	for {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = m.group, m.id, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = m.session, m.rebalance
		req.Protocols = m.protocols
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		req.SetVersion(9)
		r, err := m.c.Request(ctx, req)
		cancel()
		if err != nil {
			t.Errorf("JoinGroup: %v", err)
			return nil
		}
		resp := r.(*kmsg.JoinGroupResponse)
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			m.id = resp.MemberID
			continue
		}
		if resp.ErrorCode != 0 {
			t.Errorf("JoinGroup of %s: %v", m.id, kerr.ErrorForCode(resp.ErrorCode))
			return resp
		}
		m.id, m.generation, m.leader = resp.MemberID, resp.Generation, resp.LeaderID
		return resp
	}
}

// sync sends SyncGroup v5 for the member's generation with assignment (the leader's; nil for a
// follower) and returns the member's own assignment. On the test goroutine only: another goroutine
// calls trySync and hands its error to the test goroutine.
func (m *wireMember) sync(t *testing.T, assignment map[string][]byte) []byte {
	t.Helper()
	a, err := m.trySync(assignment)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// synced is a trySync's outcome, sent from a goroutine to the test's.
type synced struct {
	assignment []byte
	err        error
}

// trySync is sync returning its failure (the request's error, or the answer's error code).
func (m *wireMember) trySync(assignment map[string][]byte) ([]byte, error) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.generation
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for id, a := range assignment {
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a})
	}
	resp, err := tryRequest[*kmsg.SyncGroupResponse](m.c, req, 5)
	if err != nil {
		return nil, err
	}
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("SyncGroup of %s: %v", m.id, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.MemberAssignment, nil
}

// syncIn runs m.trySync(assignment) in a goroutine; its outcome comes on the channel.
func (m *wireMember) syncIn(assignment map[string][]byte) <-chan synced {
	ch := make(chan synced, 1)
	go func() {
		a, err := m.trySync(assignment)
		ch <- synced{a, err}
	}()
	return ch
}

// awaitSync is the outcome of a syncIn, on the test goroutine: its error fails the test.
func awaitSync(t *testing.T, ch <-chan synced) []byte {
	t.Helper()
	s := <-ch
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.assignment
}

func (m *wireMember) heartbeat(t *testing.T, v int16, generation int32) int16 {
	t.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, generation
	return request[*kmsg.HeartbeatResponse](t, m.c, req, v).ErrorCode
}

// commitWire sends OffsetCommit v with generation and member id for t/partition at offset and
// returns the partition's error code.
func commitWire(t *testing.T, c *wire.Conn, v int16, group, memberID string, generation, partition int32, offset int64) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = group, memberID, generation
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{
		{Partition: partition, Offset: offset, LeaderEpoch: -1}}}}
	resp := request[*kmsg.OffsetCommitResponse](t, c, req, v)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("OffsetCommit v%d: %+v", v, resp)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// fetchWire returns group's committed offset of t/partition (OffsetFetch v8; -1: none).
func fetchWire(t *testing.T, c *wire.Conn, group string, partition int32) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{partition}}}}}
	resp := request[*kmsg.OffsetFetchResponse](t, c, req, 8)
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("OffsetFetch %s: %v / %v", group, kerr.ErrorForCode(g.ErrorCode), kerr.ErrorForCode(g.Topics[0].Partitions[0].ErrorCode))
	}
	return g.Topics[0].Partitions[0].Offset
}

// waitGroupReady waits until the coordinator serves group: FindCoordinator answers, and the group's
// __consumer_offsets partition is loaded here (DescribeGroups no longer answers NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS, which clients retry).
func waitGroupReady(t *testing.T, c *wire.Conn, group string) {
	t.Helper()
	waitCoordinator(t, c, group)
	testutil.WaitFor(t, 30*time.Second, "group "+group+" served by its coordinator", func() bool {
		return describeWire(t, c, group).ErrorCode == 0
	})
}

// describeWire returns group's DescribeGroups v5 entry.
func describeWire(t *testing.T, c *wire.Conn, group string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	return request[*kmsg.DescribeGroupsResponse](t, c, req, 5).Groups[0]
}

// TestUnknownGroupCommitWire (CO-UNKNOWN-GROUP-COMMIT, KAFKA-2596) through a fresh broker, and through one that lost
// a group's metadata (the group left and was deleted): OffsetCommit(g, generation 3, member m) is
// rejected with ILLEGAL_GENERATION at v1-v8 and GROUP_ID_NOT_FOUND at v9, stores nothing
// (OffsetFetch -1) and creates no group (DescribeGroups: Dead); the same commit with generation -1
// and an empty member id (manual assignment) is stored, at v8 and at v9.
func TestUnknownGroupCommitWire(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	l := interopLab(t, lab.Options{Brokers: 1})
	interopCreateTopic(t, l.Bootstrap(), "t", 2)
	c := dial(t, l.Bootstrap())
	waitGroupReady(t, c, "g")
	waitGroupReady(t, c, "lost")

	// A group that existed and lost its metadata: one member joins, commits, leaves; deleted.
	m := newWireMember(t, l.Bootstrap(), "lost")
	if r := m.join(t); r == nil || r.ErrorCode != 0 {
		t.FailNow()
	}
	m.sync(t, map[string][]byte{m.id: nil})
	if e := commitWire(t, c, 9, "lost", m.id, m.generation, 0, 7); e != 0 {
		t.Fatalf("member's commit: %v", kerr.ErrorForCode(e))
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "lost"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: m.id}}
	if r := request[*kmsg.LeaveGroupResponse](t, c, leave, 5); r.ErrorCode != 0 || r.Members[0].ErrorCode != 0 {
		t.Fatalf("LeaveGroup: %+v", r)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"lost"}
	if r := request[*kmsg.DeleteGroupsResponse](t, c, del, 2); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("DeleteGroups: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}

	for _, group := range []string{"g", "lost"} {
		for v := int16(1); v <= 9; v++ {
			want := kerr.IllegalGeneration.Code
			if v >= 9 {
				want = kerr.GroupIDNotFound.Code
			}
			if e := commitWire(t, c, v, group, "m", 3, 0, 42); e != want {
				t.Fatalf("%s: OffsetCommit v%d (generation 3, member m) for a group the coordinator does not know: %v, want %v",
					group, v, kerr.ErrorForCode(e), kerr.ErrorForCode(want))
			}
			if off := fetchWire(t, c, group, 0); off != -1 {
				t.Fatalf("%s: rejected OffsetCommit v%d stored offset %d", group, v, off)
			}
			if d := describeWire(t, c, group); d.ErrorCode != 0 || d.State != "Dead" || len(d.Members) != 0 {
				t.Fatalf("%s: rejected OffsetCommit v%d left a group: %+v", group, v, d)
			}
		}
	}
	// Manual assignment: generation -1, no member id.
	for i, v := range []int16{8, 9} {
		off := int64(100 + i)
		if e := commitWire(t, c, v, "g", "", -1, 1, off); e != 0 {
			t.Fatalf("OffsetCommit v%d with generation -1 and no member id: %v", v, kerr.ErrorForCode(e))
		}
		if got := fetchWire(t, c, "g", 1); got != off {
			t.Fatalf("OffsetCommit v%d with generation -1: committed %d, want %d", v, got, off)
		}
	}
	if d := describeWire(t, c, "g"); d.State != "Empty" || d.ProtocolType != "" || len(d.Members) != 0 {
		t.Fatalf("the manual-assignment group: %+v, want Empty with no protocol type and no members", d)
	}
}

// TestCommitDuringRebalanceWire (CO-COMMIT-DURING-REBALANCE, KAFKA-2557) through the broker: A and B are Stable at
// generation N; C joins, the group is PreparingRebalance. A's Heartbeat(N) gets
// REBALANCE_IN_PROGRESS at v0-v4 (not ILLEGAL_GENERATION); A's OffsetCommit(N) at v8 and v9 is
// accepted and stored. Once the join phase has ended (A, B and C in generation N+1,
// CompletingRebalance) and again once N+1 is Stable, OffsetCommit(N) gets ILLEGAL_GENERATION at
// v1-v9 and the committed offset stays.
func TestCommitDuringRebalanceWire(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	l := interopLab(t, lab.Options{Brokers: 1})
	interopCreateTopic(t, l.Bootstrap(), "t", 2)
	c := dial(t, l.Bootstrap())
	waitGroupReady(t, c, "g")
	a, b, cm := newWireMember(t, l.Bootstrap(), "g"), newWireMember(t, l.Bootstrap(), "g"), newWireMember(t, l.Bootstrap(), "g")

	// joinAll runs the members' JoinGroups at once (each blocks until the join phase ends).
	joinAll := func(ms ...*wireMember) {
		t.Helper()
		var wg sync.WaitGroup
		for _, m := range ms {
			wg.Add(1)
			go func(m *wireMember) { defer wg.Done(); m.join(t) }(m)
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	waitState := func(state string) {
		t.Helper()
		testutil.WaitFor(t, 20*time.Second, "group g "+state, func() bool { return describeWire(t, c, "g").State == state })
	}
	// A alone, then B joins: A learns of it from its heartbeat and rejoins.
	joinAll(a)
	a.sync(t, map[string][]byte{a.id: nil})
	joined := make(chan struct{})
	go func() { defer close(joined); b.join(t) }()
	waitState("PreparingRebalance")
	if e := a.heartbeat(t, 4, a.generation); e != kerr.RebalanceInProgress.Code {
		t.Fatalf("A's heartbeat while B joins: %v", kerr.ErrorForCode(e))
	}
	joinAll(a)
	<-joined
	if a.generation != b.generation || a.leader != a.id {
		t.Fatalf("A gen %d (leader %s), B gen %d", a.generation, a.leader, b.generation)
	}
	bs := b.syncIn(nil)
	a.sync(t, map[string][]byte{a.id: []byte("A"), b.id: []byte("B")})
	if got := awaitSync(t, bs); string(got) != "B" {
		t.Fatalf("B's assignment %q", got)
	}
	waitState("Stable")
	n := a.generation

	// C joins: PreparingRebalance at generation N.
	cJoined := make(chan struct{})
	go func() { defer close(cJoined); cm.join(t) }()
	waitState("PreparingRebalance")
	for v := int16(0); v <= 4; v++ {
		if e := a.heartbeat(t, v, n); e != kerr.RebalanceInProgress.Code {
			t.Fatalf("A's Heartbeat v%d(N=%d) during PreparingRebalance: %v, want REBALANCE_IN_PROGRESS", v, n, kerr.ErrorForCode(e))
		}
	}
	for i, v := range []int16{8, 9} {
		off := int64(10 + i)
		if e := commitWire(t, a.c, v, "g", a.id, n, 0, off); e != 0 {
			t.Fatalf("A's OffsetCommit v%d(N) during PreparingRebalance: %v, want accepted", v, kerr.ErrorForCode(e))
		}
		if got := fetchWire(t, c, "g", 0); got != off {
			t.Fatalf("A's OffsetCommit v%d(N) during PreparingRebalance: committed %d, want %d", v, got, off)
		}
	}
	const stored = 11

	// A and B rejoin: the join phase ends, generation N+1 exists.
	joinAll(a, b)
	<-cJoined
	if t.Failed() {
		t.FailNow()
	}
	for _, m := range []*wireMember{a, b, cm} {
		if m.generation != n+1 {
			t.Fatalf("member %s in generation %d after the join phase, want %d", m.id, m.generation, n+1)
		}
	}
	staleCommits := func(phase string) {
		t.Helper()
		for v := int16(1); v <= 9; v++ {
			if e := commitWire(t, a.c, v, "g", a.id, n, 0, 999); e != kerr.IllegalGeneration.Code {
				t.Fatalf("%s: A's OffsetCommit v%d(N=%d) at generation %d: %v, want ILLEGAL_GENERATION", phase, v, n, n+1, kerr.ErrorForCode(e))
			}
			if got := fetchWire(t, c, "g", 0); got != stored {
				t.Fatalf("%s: A's stale OffsetCommit v%d moved the committed offset to %d (want %d)", phase, v, got, stored)
			}
		}
	}
	if d := describeWire(t, c, "g"); d.State != "CompletingRebalance" {
		t.Fatalf("after the join phase: %s, want CompletingRebalance", d.State)
	}
	staleCommits("CompletingRebalance")
	bSync, cSync := b.syncIn(nil), cm.syncIn(nil)
	a.sync(t, map[string][]byte{a.id: []byte("A"), b.id: []byte("B"), cm.id: []byte("C")})
	awaitSync(t, bSync)
	awaitSync(t, cSync)
	waitState("Stable")
	staleCommits("Stable")
	if e := a.heartbeat(t, 4, n); e != kerr.IllegalGeneration.Code {
		t.Fatalf("A's Heartbeat(N) at generation N+1: %v, want ILLEGAL_GENERATION", kerr.ErrorForCode(e))
	}
	if e := commitWire(t, a.c, 9, "g", a.id, n+1, 0, 12); e != 0 {
		t.Fatalf("A's OffsetCommit(N+1): %v", kerr.ErrorForCode(e))
	}
}

// TestLateCommitRewindWire (CO-LATE-COMMIT-REWIND, kafka-go #1308) through the broker: p2 holds offsets 0-2. A owns
// p1 and p2 in generation N and stops taking part (it heartbeats on but never rejoins); B joins; A's
// rebalance timeout (3 s) removes it and B alone makes generation N+1, gets p1 and p2, and commits 3
// for p2. A's late OffsetCommit of 2 for p2 with its old member id and generation N is rejected with
// UNKNOWN_MEMBER_ID at v8 and v9; the committed offset of p2 stays 3, equal to the high watermark
// (lag 0).
func TestLateCommitRewindWire(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	l := interopLab(t, lab.Options{Brokers: 1})
	interopCreateTopic(t, l.Bootstrap(), "t", 3)
	prod, err := kgo.NewClient(kgo.SeedBrokers(l.Bootstrap()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 3; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 2, Value: []byte{byte('0' + i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c := dial(t, l.Bootstrap())
	waitGroupReady(t, c, "g")
	a, b := newWireMember(t, l.Bootstrap(), "g"), newWireMember(t, l.Bootstrap(), "g")
	a.rebalance, b.rebalance = 3000, 3000 // the join phase waits at most the largest rebalance timeout
	if r := a.join(t); r == nil || r.ErrorCode != 0 {
		t.FailNow()
	}
	a.sync(t, map[string][]byte{a.id: []byte("p1,p2")})
	n := a.generation

	// B joins; A heartbeats (REBALANCE_IN_PROGRESS) but does not rejoin within the rebalance timeout.
	bJoined := make(chan struct{})
	go func() { defer close(bJoined); b.join(t) }()
	testutil.WaitFor(t, 20*time.Second, "group g PreparingRebalance", func() bool { return describeWire(t, c, "g").State == "PreparingRebalance" })
wait:
	for {
		select {
		case <-bJoined:
			break wait
		case <-time.After(500 * time.Millisecond):
			if e := a.heartbeat(t, 4, n); e != kerr.RebalanceInProgress.Code && e != kerr.UnknownMemberID.Code {
				t.Fatalf("A's heartbeat while B joins: %v, want REBALANCE_IN_PROGRESS (or UNKNOWN_MEMBER_ID once removed)", kerr.ErrorForCode(e))
			}
		}
	}
	if b.generation != n+1 || b.leader != b.id {
		t.Fatalf("B: generation %d leader %s, want generation %d led by itself", b.generation, b.leader, n+1)
	}
	if d := describeWire(t, c, "g"); len(d.Members) != 1 || d.Members[0].MemberID != b.id {
		t.Fatalf("members after A missed the rebalance: %+v", d.Members)
	}
	if got := b.sync(t, map[string][]byte{b.id: []byte("p1,p2")}); string(got) != "p1,p2" {
		t.Fatalf("B's assignment %q", got)
	}
	if e := commitWire(t, b.c, 9, "g", b.id, b.generation, 2, 3); e != 0 {
		t.Fatalf("B's commit: %v", kerr.ErrorForCode(e))
	}
	for _, v := range []int16{8, 9} {
		if e := commitWire(t, a.c, v, "g", a.id, n, 2, 2); e != kerr.UnknownMemberID.Code {
			t.Fatalf("A's late OffsetCommit v%d (old member id, generation %d): %v, want UNKNOWN_MEMBER_ID", v, n, kerr.ErrorForCode(e))
		}
	}
	if got := fetchWire(t, c, "g", 2); got != 3 {
		t.Fatalf("p2's committed offset after A's late commit: %d, want 3", got)
	}
	ends, err := kadm.NewClient(prod).ListEndOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if end, ok := ends.Lookup("t", 2); !ok || end.Err != nil || end.Offset-3 != 0 {
		t.Fatalf("p2's high watermark %+v: lag %d, want 0", end, end.Offset-3)
	}
}

// TestGroupBadInputWire: with a franz-go consumer Stable in group g (both partitions of t) and
// socket.request.max.bytes lowered to 8192, bad group requests get Kafka 3.9's codes: JoinGroup with
// no protocols or an empty protocol type, and with protocols no member shares (for g and for a new
// group): INCONSISTENT_GROUP_PROTOCOL; a session timeout outside [group.min.session.timeout.ms,
// group.max.session.timeout.ms]: INVALID_SESSION_TIMEOUT; SyncGroup for an unknown group or member:
// UNKNOWN_MEMBER_ID. None of them disturbs g (still Stable, one member, the consumer never
// reassigned). Then a member joins g and sends a SyncGroup whose assignment makes the request larger
// than socket.request.max.bytes: the broker closes that connection (counted as request_too_large),
// an older connection keeps answering, and the group goes on without it: the member is expired after
// its 3 s session, the consumer owns both partitions again and consumes new records.
func TestGroupBadInputWire(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	l := interopLab(t, lab.Options{Brokers: 1, BrokerConfig: map[string]string{"socket.request.max.bytes": "8192"}})
	addr := l.Bootstrap()
	interopCreateTopic(t, addr, "t", 2)
	c := dial(t, addr)
	for _, g := range []string{"g", "new-group", "nope"} {
		waitGroupReady(t, c, g)
	}

	var mu sync.Mutex
	var owned map[string][]int32
	assignedCalls := 0
	seen := map[string]int{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("k"), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"),
		kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			mu.Lock()
			owned = a
			assignedCalls++
			mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				mu.Lock()
				seen[string(r.Value)]++
				mu.Unlock()
			})
		}
	}()
	defer func() { cancel(); wg.Wait(); cl.Close() }()
	ownsBoth := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(owned["t"]) == 2
	}
	testutil.WaitFor(t, 30*time.Second, "the consumer owning both partitions", func() bool {
		return ownsBoth() && describeWire(t, c, "g").State == "Stable"
	})
	mu.Lock()
	callsBefore := assignedCalls
	mu.Unlock()
	before := describeWire(t, c, "g")

	join := func(group string, v int16, protocolType string, protocols []kmsg.JoinGroupRequestProtocol, session int32) int16 {
		t.Helper()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.ProtocolType, req.Protocols = group, protocolType, protocols
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = session, 30000
		return request[*kmsg.JoinGroupResponse](t, c, req, v).ErrorCode
	}
	inconsistent, invalidSession := kerr.InconsistentGroupProtocol.Code, kerr.InvalidSessionTimeout.Code
	rr := []kmsg.JoinGroupRequestProtocol{{Name: "roundrobin", Metadata: consumerMeta("t")}}
	rangeP := []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: consumerMeta("t")}}
	for _, v := range []int16{0, 5, 9} {
		for _, group := range []string{"g", "new-group"} {
			if e := join(group, v, "consumer", nil, 10000); e != inconsistent {
				t.Fatalf("JoinGroup v%d %s with no protocols: %v, want INCONSISTENT_GROUP_PROTOCOL", v, group, kerr.ErrorForCode(e))
			}
			if e := join(group, v, "", rangeP, 10000); e != inconsistent {
				t.Fatalf("JoinGroup v%d %s with an empty protocol type: %v, want INCONSISTENT_GROUP_PROTOCOL", v, group, kerr.ErrorForCode(e))
			}
			for _, s := range []int32{499, 1800001} { // lab: group.min.session.timeout.ms 500; Kafka's max 1800000
				if e := join(group, v, "consumer", rangeP, s); e != invalidSession {
					t.Fatalf("JoinGroup v%d %s with session timeout %d ms: %v, want INVALID_SESSION_TIMEOUT", v, group, s, kerr.ErrorForCode(e))
				}
			}
		}
		// g's member uses range only: a joiner offering only roundrobin shares no protocol with it.
		if e := join("g", v, "consumer", rr, 10000); e != inconsistent {
			t.Fatalf("JoinGroup v%d g with only roundrobin: %v, want INCONSISTENT_GROUP_PROTOCOL", v, kerr.ErrorForCode(e))
		}
	}
	for _, v := range []int16{0, 3, 5} {
		for _, group := range []string{"nope", "g"} {
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group, req.MemberID, req.Generation = group, "stranger", 1
			req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
			if e := request[*kmsg.SyncGroupResponse](t, c, req, v).ErrorCode; e != kerr.UnknownMemberID.Code {
				t.Fatalf("SyncGroup v%d for unknown member of %s: %v, want UNKNOWN_MEMBER_ID", v, group, kerr.ErrorForCode(e))
			}
		}
	}
	after := describeWire(t, c, "g")
	mu.Lock()
	calls := assignedCalls
	mu.Unlock()
	if after.State != "Stable" || len(after.Members) != 1 || after.Members[0].MemberID != before.Members[0].MemberID || calls != callsBefore {
		t.Fatalf("bad requests disturbed g: %s with %d members (was %s), consumer assigned %d times (was %d)",
			after.State, len(after.Members), before.State, calls, callsBefore)
	}

	// A member whose SyncGroup is larger than socket.request.max.bytes.
	x := newWireMember(t, addr, "g")
	x.session = 3000
	if r := x.join(t); r == nil || r.ErrorCode != 0 || r.LeaderID == x.id {
		t.Fatalf("x's join: %+v (x must be a follower)", r)
	}
	big := make([]byte, 10000)
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = "g", x.id, x.generation
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: x.id, MemberAssignment: big}}
	req.SetVersion(5)
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = x.c.Request(rctx, req)
	expired := rctx.Err() != nil
	rcancel()
	// The connection ended under the request (the broker's counter below says who closed it).
	if err == nil || expired || !(errors.Is(err, wire.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
		t.Fatalf("oversized SyncGroup: %v, want the connection closed by the broker", err)
	}
	if n := counterValue(t, l.Brokers()[0].Broker(), "kafka_network_connections_closed_total", map[string]string{"reason": "request_too_large"}); n != 1 {
		t.Fatalf("connections closed for request_too_large: %v, want 1", n)
	}
	if d := describeWire(t, c, "g"); d.ErrorCode != 0 {
		t.Fatalf("the older connection after the oversized request: %v", kerr.ErrorForCode(d.ErrorCode))
	}
	// The group finishes without x: x is expired after its 3 s session, the consumer owns both again.
	testutil.WaitFor(t, 30*time.Second, "the consumer alone owning both partitions again", func() bool {
		d := describeWire(t, c, "g")
		return d.State == "Stable" && len(d.Members) == 1 && d.Members[0].MemberID == before.Members[0].MemberID && ownsBoth()
	})
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	pctx, pcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer pcancel()
	for p := int32(0); p < 2; p++ {
		if err := prod.ProduceSync(pctx, &kgo.Record{Topic: "t", Partition: p, Value: []byte{'a' + byte(p)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, 30*time.Second, "the consumer consuming after the oversized request", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen["a"] == 1 && seen["b"] == 1
	})
}
