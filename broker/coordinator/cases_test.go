package coordinator

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The CO-* field cases (problems Kafka users reported against the coordinator), one test each, named
// after the case id, with the report it comes from.

// TestUnknownGroupCommit (CO-UNKNOWN-GROUP-COMMIT, KAFKA-2596): the coordinator has no state for g and gets
// OffsetCommit(g, generation 3, member m): ILLEGAL_GENERATION below v9, GROUP_ID_NOT_FOUND from v9,
// and nothing is stored. The same commit with generation -1 and an empty member id (manual
// assignment) is accepted and stored, for every version.
func TestUnknownGroupCommit(t *testing.T) {
	h := newHarness(t, testConfig())
	for v := int16(1); v <= 9; v++ {
		want := codeIllegalGeneration
		if v >= 9 {
			want = codeGroupIDNotFound
		}
		if e := commitErr(t, h.do(commitReq(v, "g", "m", 3, nil, "t", 0, 42))); e != want {
			t.Fatalf("OffsetCommit v%d for unknown group: error %d, want %d", v, e, want)
		}
		if n := h.log.count(); n != 0 {
			t.Fatalf("v%d: %d records appended for a rejected commit", v, n)
		}
		if _, ok := h.core.Group("g"); ok {
			t.Fatalf("v%d: rejected commit created the group", v)
		}
		if off := h.fetched("g", "t", 0); off != -1 {
			t.Fatalf("v%d: rejected commit visible: %d", v, off)
		}
	}
	// generation -1, empty member id (v0 carries neither: always such a commit)
	for v := int16(0); v <= 9; v++ {
		before := h.log.count()
		off := int64(100 + v)
		if e := commitErr(t, h.do(commitReq(v, "g", "", -1, nil, "t", 0, off))); e != 0 {
			t.Fatalf("simple OffsetCommit v%d: error %d", v, e)
		}
		if got := h.fetched("g", "t", 0); got != off {
			t.Fatalf("simple OffsetCommit v%d: committed %d, want %d", v, got, off)
		}
		if n := h.log.count() - before; n != 1 {
			t.Fatalf("simple OffsetCommit v%d appended %d records, want 1", v, n)
		}
	}
	if g := h.group("g"); g.State != Empty || g.Generation != 0 || g.ProtocolType != "" {
		t.Fatalf("simple group: %+v", g)
	}
}

// TestCommitDuringRebalance (CO-COMMIT-DURING-REBALANCE, KAFKA-2557): A and B Stable at generation N; C joins. A's
// Heartbeat(N) gets REBALANCE_IN_PROGRESS (every version), A's OffsetCommit(N) is accepted and
// stored (every version); once generation N+1 exists, OffsetCommit(N) gets ILLEGAL_GENERATION and
// stores nothing.
func TestCommitDuringRebalance(t *testing.T) {
	h := newHarness(t, cfgNoDelay())
	o := joinOpts{version: 5, session: 10000, rebalance: 10000}
	ms := h.stableGroup("g", 2, o)
	a, b := ms[0], ms[1]
	n := a.generation
	cJoin, cID := h.joinNew("g", o, "client-c")
	if g := h.group("g"); g.State != PreparingRebalance || g.Generation != n {
		t.Fatalf("after C joined: %s gen %d", g.State, g.Generation)
	}
	for v := int16(0); v <= 4; v++ {
		if e := h.do(heartbeatReq(v, "g", a.memberID, n, nil)).(*kmsg.HeartbeatResponse).ErrorCode; e != codeRebalanceInProgress {
			t.Fatalf("Heartbeat v%d(N) during PreparingRebalance: %d, want REBALANCE_IN_PROGRESS", v, e)
		}
	}
	for v := int16(1); v <= 9; v++ {
		before := h.log.count()
		off := int64(10 + v)
		if e := commitErr(t, h.do(commitReq(v, "g", a.memberID, n, nil, "t", 0, off))); e != 0 {
			t.Fatalf("OffsetCommit v%d(N) during PreparingRebalance: %d, want NONE", v, e)
		}
		if got := h.fetched("g", "t", 0); got != off || h.log.count()-before != 1 {
			t.Fatalf("OffsetCommit v%d(N): committed %d (want %d), %d records", v, got, off, h.log.count()-before)
		}
	}
	// A and B rejoin: the join phase ends and generation N+1 exists
	ra := h.send(joinReq("g", joinOpts{version: 5, memberID: a.memberID, session: 10000, rebalance: 10000}), "client-a")
	rb := h.send(joinReq("g", joinOpts{version: 5, memberID: b.memberID, session: 10000, rebalance: 10000}), "client-b")
	for _, id := range []RequestID{ra, rb, cJoin} {
		if r := joinResp(t, h.resp(id)); r.ErrorCode != 0 || r.Generation != n+1 {
			t.Fatalf("join response: %+v", r)
		}
	}
	check := func(phase string) {
		t.Helper()
		for v := int16(1); v <= 9; v++ {
			before := h.log.count()
			if e := commitErr(t, h.do(commitReq(v, "g", a.memberID, n, nil, "t", 0, 999))); e != codeIllegalGeneration {
				t.Fatalf("%s: OffsetCommit v%d(N): %d, want ILLEGAL_GENERATION", phase, v, e)
			}
			if got := h.fetched("g", "t", 0); got != 19 || h.log.count() != before {
				t.Fatalf("%s: stale commit v%d stored: committed %d, %d records", phase, v, got, h.log.count()-before)
			}
		}
	}
	check("CompletingRebalance")
	assign := map[string]string{a.memberID: "a", b.memberID: "b", cID: "c"}
	s := []RequestID{
		h.send(syncReq(3, "g", b.memberID, n+1, nil, nil), "b"),
		h.send(syncReq(3, "g", cID, n+1, nil, nil), "c"),
		h.send(syncReq(3, "g", a.memberID, n+1, nil, assign), "a"),
	}
	for _, id := range s {
		if r := h.resp(id).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 {
			t.Fatalf("sync: %d", r.ErrorCode)
		}
	}
	check("Stable")
	if e := h.do(heartbeatReq(3, "g", a.memberID, n, nil)).(*kmsg.HeartbeatResponse).ErrorCode; e != codeIllegalGeneration {
		t.Fatalf("Heartbeat(N) at N+1: %d, want ILLEGAL_GENERATION", e)
	}
}

// TestJoinV0Timeout (CO-JOIN-V0-TIMEOUT, KAFKA-8653): two members join with JoinGroup v0 (no rebalance timeout
// field), session timeout 10 s: the rebalance timeout is the session timeout, no MEMBER_ID_REQUIRED
// is sent, the group stabilises with 2 members and the generation stops increasing.
func TestJoinV0Timeout(t *testing.T) {
	h := newHarness(t, testConfig()) // group.initial.rebalance.delay.ms=3000
	o := joinOpts{version: 0, session: 10000}
	j1 := h.send(joinReq("g", o), "c1")
	j2 := h.send(joinReq("g", o), "c2")
	if h.resp(j1) != nil || h.resp(j2) != nil {
		t.Fatal("v0 JoinGroup answered at once (MEMBER_ID_REQUIRED is only for v4+)")
	}
	h.advance(6 * time.Second) // 3 s initial delay, extended once for the second member
	r1, r2 := joinResp(t, h.resp(j1)), joinResp(t, h.resp(j2))
	for _, r := range []*kmsg.JoinGroupResponse{r1, r2} {
		if r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != r1.MemberID || r.Protocol == nil || *r.Protocol != "range" {
			t.Fatalf("v0 join: %+v", r)
		}
	}
	for _, m := range h.group("g").Members {
		if m.RebalanceTimeoutMs != 10000 {
			t.Fatalf("member %s rebalance timeout %d, want the 10000 ms session timeout", m.MemberID, m.RebalanceTimeoutMs)
		}
	}
	s2 := h.send(syncReq(0, "g", r2.MemberID, 1, nil, nil), "c2")
	s1 := h.send(syncReq(0, "g", r1.MemberID, 1, nil, map[string]string{r1.MemberID: "x", r2.MemberID: "y"}), "c1")
	if h.resp(s1).(*kmsg.SyncGroupResponse).ErrorCode != 0 || string(h.resp(s2).(*kmsg.SyncGroupResponse).MemberAssignment) != "y" {
		t.Fatal("v0 sync failed")
	}
	// the stored group record carries the session timeout as rebalance timeout
	recs := h.log.records()
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(recs[len(recs)-1].Value); err != nil || len(v.Members) != 2 || v.Members[0].RebalanceTimeoutMillis != 10000 {
		t.Fatalf("group record: %v %+v", err, v)
	}
	for i := 0; i < 20; i++ { // a minute of heartbeats every 3 s
		h.advance(3 * time.Second)
		for _, id := range []string{r1.MemberID, r2.MemberID} {
			if e := h.do(heartbeatReq(0, "g", id, 1, nil)).(*kmsg.HeartbeatResponse).ErrorCode; e != 0 {
				t.Fatalf("heartbeat at %v: %d", h.elapsed(), e)
			}
		}
	}
	if g := h.group("g"); g.State != Stable || g.Generation != 1 || len(g.Members) != 2 {
		t.Fatalf("after a minute: %s gen %d with %d members, want Stable gen 1 with 2", g.State, g.Generation, len(g.Members))
	}
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Groups = []string{"g"}
	if d := h.do(dr).(*kmsg.DescribeGroupsResponse).Groups[0]; d.State != "Stable" || len(d.Members) != 2 {
		t.Fatalf("describe v0: %+v", d)
	}
}

// TestStaticDoubleJoin (CO-STATIC-DOUBLE-JOIN, KAFKA-8500): static member I (member id m1) is Stable; a rebalance
// starts; two JoinGroups with instance id I and no member id arrive back to back. Exactly one member
// id maps to I; every request from a replaced id gets FENCED_INSTANCE_ID; I's partitions go to one
// consumer.
func TestStaticDoubleJoin(t *testing.T) {
	h := newHarness(t, cfgNoDelay())
	I, J, K := sp("I"), sp("J"), sp("K")
	so := func(inst *string, memberID string) joinOpts {
		return joinOpts{version: 5, instanceID: inst, memberID: memberID, session: 10000, rebalance: 10000}
	}
	jI := h.send(joinReq("g", so(I, "")), "ci")
	jJ := h.send(joinReq("g", so(J, "")), "cj")
	h.advance(0)
	m1, mJ := joinResp(t, h.resp(jI)).MemberID, joinResp(t, h.resp(jJ)).MemberID
	sj := h.send(syncReq(3, "g", mJ, 1, J, nil), "cj")
	si := h.send(syncReq(3, "g", m1, 1, I, map[string]string{m1: "I-parts", mJ: "J-parts"}), "ci")
	if h.resp(si).(*kmsg.SyncGroupResponse).ErrorCode != 0 || h.resp(sj).(*kmsg.SyncGroupResponse).ErrorCode != 0 {
		t.Fatal("initial sync failed")
	}
	jK := h.send(joinReq("g", so(K, "")), "ck") // a rebalance starts
	if g := h.group("g"); g.State != PreparingRebalance {
		t.Fatalf("state %s, want PreparingRebalance", g.State)
	}
	x1 := h.send(joinReq("g", so(I, "")), "ci-1")
	x2 := h.send(joinReq("g", so(I, "")), "ci-2")
	r1 := joinResp(t, h.resp(x1))
	if r1.ErrorCode != codeFenced || r1.MemberID == "" || r1.MemberID == m1 {
		t.Fatalf("first duplicate join: %+v, want FENCED_INSTANCE_ID with its own new member id", r1)
	}
	m2 := r1.MemberID
	if h.resp(x2) != nil {
		t.Fatal("second duplicate join answered before the join phase ended")
	}
	rJ := h.send(joinReq("g", so(J, mJ)), "cj") // the last member rejoins: the join phase ends
	r2 := joinResp(t, h.resp(x2))
	m3 := r2.MemberID
	if r2.ErrorCode != 0 || r2.Generation != 2 || m3 == m1 || m3 == m2 || r2.LeaderID != m3 {
		t.Fatalf("second duplicate join: %+v", r2)
	}
	if r := joinResp(t, h.resp(rJ)); r.ErrorCode != 0 || r.Generation != 2 {
		t.Fatalf("J rejoin: %+v", r)
	}
	rk := joinResp(t, h.resp(jK))
	g := h.group("g")
	var mapped []string
	for _, m := range g.Members {
		if m.GroupInstanceID != nil && *m.GroupInstanceID == "I" {
			mapped = append(mapped, m.MemberID)
		}
	}
	if len(g.Members) != 3 || len(mapped) != 1 || mapped[0] != m3 {
		t.Fatalf("members %+v; ids mapped to I: %v, want exactly [%s]", g.Members, mapped, m3)
	}
	var leaderSees []string
	for _, m := range r2.Members {
		leaderSees = append(leaderSees, m.MemberID)
	}
	sort.Strings(leaderSees)
	want := []string{m3, mJ, rk.MemberID}
	sort.Strings(want)
	if fmt.Sprint(leaderSees) != fmt.Sprint(want) {
		t.Fatalf("leader's member list %v, want %v", leaderSees, want)
	}
	// every request from a replaced member id is fenced
	for _, old := range []string{m1, m2} {
		if e := h.do(heartbeatReq(3, "g", old, 2, I)).(*kmsg.HeartbeatResponse).ErrorCode; e != codeFenced {
			t.Fatalf("heartbeat from %s: %d", old, e)
		}
		if e := h.do(syncReq(3, "g", old, 2, I, nil)).(*kmsg.SyncGroupResponse).ErrorCode; e != codeFenced {
			t.Fatalf("sync from %s: %d", old, e)
		}
		if e := commitErr(t, h.do(commitReq(7, "g", old, 2, I, "t", 0, 5))); e != codeFenced {
			t.Fatalf("commit from %s: %d", old, e)
		}
		if e := joinResp(t, h.do(joinReq("g", so(I, old)))).ErrorCode; e != codeFenced {
			t.Fatalf("join from %s: %d", old, e)
		}
		lr := h.do(leaveReq(3, "g", leaveMemberReq(old, I))).(*kmsg.LeaveGroupResponse)
		if lr.ErrorCode != 0 || len(lr.Members) != 1 || lr.Members[0].ErrorCode != codeFenced {
			t.Fatalf("leave from %s: %+v", old, lr)
		}
	}
	// I's partitions are delivered to m3 only
	syncs := map[string]RequestID{
		mJ:          h.send(syncReq(3, "g", mJ, 2, J, nil), "cj"),
		rk.MemberID: h.send(syncReq(3, "g", rk.MemberID, 2, K, nil), "ck"),
		m3:          h.send(syncReq(3, "g", m3, 2, I, map[string]string{m3: "I-parts", mJ: "J-parts", rk.MemberID: "K-parts"}), "ci"),
	}
	got := map[string]string{}
	for id, req := range syncs {
		r := h.resp(req).(*kmsg.SyncGroupResponse)
		if r.ErrorCode != 0 {
			t.Fatalf("sync of %s: %d", id, r.ErrorCode)
		}
		got[string(r.MemberAssignment)] += id
	}
	if got["I-parts"] != m3 || len(got) != 3 {
		t.Fatalf("assignments delivered: %v", got)
	}
	if e := h.do(syncReq(3, "g", m1, 2, I, nil)).(*kmsg.SyncGroupResponse).ErrorCode; e != codeFenced {
		t.Fatalf("m1 sync after the generation completed: %d", e)
	}
}

// TestLateCommitRewind (CO-LATE-COMMIT-REWIND, kafka-go #1308): A owns p1, p2 at generation N and stops polling; B
// joins; A misses the rebalance and is removed; B gets p1 and p2 in N+1 and commits 3 for p2; A's
// late commit of 2 with its old member id and generation N is rejected with UNKNOWN_MEMBER_ID (every
// version) and p2's committed offset stays 3.
func TestLateCommitRewind(t *testing.T) {
	h := newHarness(t, cfgNoDelay())
	o := joinOpts{version: 5, session: 10000, rebalance: 20000}
	a := h.stableGroup("g", 1, o)[0]
	n := a.generation
	bJoin, bID := h.joinNew("g", o, "client-b")
	for i := 0; i < 6; i++ { // A's heartbeat thread runs on, but A never rejoins
		h.advance(3 * time.Second)
		h.do(heartbeatReq(3, "g", a.memberID, n, nil))
	}
	h.advance(2 * time.Second)
	rb := joinResp(t, h.resp(bJoin))
	if rb.ErrorCode != 0 || rb.Generation != n+1 || rb.LeaderID != bID || len(rb.Members) != 1 {
		t.Fatalf("B's join after A missed the rebalance: %+v", rb)
	}
	if s := h.do(syncReq(3, "g", bID, n+1, nil, map[string]string{bID: "p1,p2"})).(*kmsg.SyncGroupResponse); s.ErrorCode != 0 || string(s.MemberAssignment) != "p1,p2" {
		t.Fatalf("B sync: %+v", s)
	}
	if e := commitErr(t, h.do(commitReq(5, "g", bID, n+1, nil, "t", 2, 3))); e != 0 {
		t.Fatalf("B's commit: %d", e)
	}
	for v := int16(0); v <= 9; v++ {
		before := h.log.count()
		if e := commitErr(t, h.do(commitReq(v, "g", a.memberID, n, nil, "t", 2, 2))); e != codeUnknownMember {
			t.Fatalf("A's late OffsetCommit v%d: %d, want UNKNOWN_MEMBER_ID", v, e)
		}
		if got := h.fetched("g", "t", 2); got != 3 || h.log.count() != before {
			t.Fatalf("A's late commit v%d rewound p2: committed %d, %d records", v, got, h.log.count()-before)
		}
	}
}

// coopMember is a KIP-429 client in the test: its JoinGroup metadata comes from franz-go's real
// cooperative-sticky balancer (owned partitions + generation), and so does the leader's assignment.
type coopMember struct {
	name  string
	id    string
	gen   int32
	owned map[string][]int32
}

// TestCoopStaleOwned (CO-COOP-STALE-OWNED, KAFKA-12984), coordinator side: the coordinator hands every member's
// owned-partitions claim (with its generation) to the leader byte for byte, and each member exactly
// the leader's assignment. With a real cooperative-sticky leader: C3 times out, generation N+1 moves
// its partitions to C1 and C2, C3 rejoins claiming its generation-N partitions; no round assigns a
// partition twice, C3's stale claims lose, and the final assignment covers every partition exactly
// once. The variant (two same-generation claims of one partition) is checked for transport and
// coverage; who wins a tie is the assignor's rule (newconsumer's tests).
func TestCoopStaleOwned(t *testing.T) {
	bal := kgo.CooperativeStickyBalancer()
	const topic, parts = "t", 6
	h := newHarness(t, cfgNoDelay())
	o := func(m *coopMember) joinOpts {
		md := bal.JoinGroupMetadata([]string{topic}, m.owned, m.gen)
		return joinOpts{version: 5, memberID: m.id, session: 6000, rebalance: 20000,
			protocols: []kmsg.JoinGroupRequestProtocol{proto(bal.ProtocolName(), string(md))}}
	}
	c1, c2, c3 := &coopMember{name: "C1", gen: -1}, &coopMember{name: "C2", gen: -1}, &coopMember{name: "C3", gen: -1}
	all := []*coopMember{c1, c2, c3}
	for i := 0; i < 3 && coopRound(t, h, bal, o, "initial", all, nil); i++ {
	}
	checkCoverage(t, "initial", all, parts, 2)
	genN := c3.gen
	c3Claim := append([]int32(nil), c3.owned[topic]...)

	// C3 stops heartbeating; its session ends; C1 and C2 learn of the rebalance from heartbeats
	for i := 0; i < 3; i++ {
		h.advance(2 * time.Second)
		for _, m := range []*coopMember{c1, c2} {
			h.do(heartbeatReq(3, "g", m.id, m.gen, nil))
		}
	}
	if g := h.group("g"); g.State != PreparingRebalance || len(g.Members) != 2 {
		t.Fatalf("after C3's session timeout: %s with %d members", g.State, len(g.Members))
	}
	for i := 0; i < 3 && coopRound(t, h, bal, o, "C3 gone", []*coopMember{c1, c2}, nil); i++ {
	}
	checkCoverage(t, "C3 gone", []*coopMember{c1, c2}, parts, 3)
	if c1.gen <= genN {
		t.Fatalf("generation did not move: %d", c1.gen)
	}

	// C3 wakes up: its member id is gone, it rejoins as a new member still claiming generation N's
	// partitions
	old := c3.id
	if e := joinResp(t, h.do(joinReq("g", o(c3)))).ErrorCode; e != codeUnknownMember {
		t.Fatalf("C3 rejoin with removed member id %s: %d, want UNKNOWN_MEMBER_ID", old, e)
	}
	c3.id = ""
	var sawStaleClaim bool
	staleCheck := func(members []kmsg.JoinGroupResponseMember) {
		for _, m := range members {
			var meta kmsg.ConsumerMemberMetadata
			if err := meta.ReadFrom(m.ProtocolMetadata); err != nil {
				t.Fatal(err)
			}
			if m.MemberID == c3.id && meta.Generation == genN && len(meta.OwnedPartitions) == 1 &&
				fmt.Sprint(meta.OwnedPartitions[0].Partitions) == fmt.Sprint(c3Claim) {
				sawStaleClaim = true
			}
		}
	}
	heldByOthers := append(append([]int32(nil), c1.owned[topic]...), c2.owned[topic]...)
	more := coopRound(t, h, bal, o, "C3 back", all, staleCheck)
	if !sawStaleClaim {
		t.Fatal("the leader never saw C3's generation-N claim")
	}
	for _, p := range c3.owned[topic] {
		if contains(heldByOthers, p) {
			t.Fatalf("C3's stale claim won partition %d while its generation-%d owner still held it", p, c1.gen-1)
		}
	}
	if !more {
		t.Fatal("no cooperative revocation round: C3 got nothing to consume")
	}
	for i := 0; i < 3 && coopRound(t, h, bal, o, "C3 back", all, nil); i++ {
	}
	checkCoverage(t, "C3 back", all, parts, 2)

	// variant: C1 and C2 both claim partition 0 with the same generation
	c2.owned[topic] = append([]int32{0}, c2.owned[topic]...)
	c2.gen = c1.gen
	var bothClaims int
	tieCheck := func(members []kmsg.JoinGroupResponseMember) {
		for _, m := range members {
			var meta kmsg.ConsumerMemberMetadata
			_ = meta.ReadFrom(m.ProtocolMetadata)
			for _, op := range meta.OwnedPartitions {
				for _, p := range op.Partitions {
					if p == 0 && meta.Generation == c1.gen && (m.MemberID == c1.id || m.MemberID == c2.id) {
						bothClaims++
					}
				}
			}
		}
	}
	if c1.owned[topic] == nil || !contains(c1.owned[topic], 0) {
		c1.owned[topic] = append([]int32{0}, c1.owned[topic]...)
	}
	for i := 0; i < 3 && coopRound(t, h, bal, o, "tie", all, tieCheck); i++ {
		tieCheck = nil
	}
	if bothClaims != 2 {
		t.Fatalf("the leader saw %d same-generation claims of partition 0, want 2", bothClaims)
	}
	checkCoverage(t, "tie", all, parts, 2)
}

func contains(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// coopRound runs one join/sync round for ms; inspect sees the leader's member list. Each member
// adopts its new assignment; the result says whether anyone had partitions revoked (KIP-429: those
// members rejoin at once).
func coopRound(t *testing.T, h *harness, bal kgo.GroupBalancer, o func(*coopMember) joinOpts, label string,
	ms []*coopMember, inspect func([]kmsg.JoinGroupResponseMember)) bool {
	t.Helper()
	// newcomers join first; the others rejoin (as they would after a heartbeat's
	// REBALANCE_IN_PROGRESS, or to finish a cooperative revocation)
	reqs := map[*coopMember]RequestID{}
	for _, m := range ms {
		if m.id == "" {
			id, mid := h.joinNew("g", o(m), m.name)
			reqs[m], m.id = id, mid
		}
	}
	for _, m := range ms {
		if _, ok := reqs[m]; !ok {
			reqs[m] = h.send(joinReq("g", o(m)), m.name)
		}
	}
	h.advance(0)
	var leader *coopMember
	var gen int32
	plan := map[string]string{}
	for _, m := range ms {
		r := joinResp(t, h.resp(reqs[m]))
		if r.ErrorCode != 0 {
			t.Fatalf("%s: %s join error %d", label, m.name, r.ErrorCode)
		}
		gen = r.Generation
		if r.LeaderID != m.id {
			continue
		}
		leader = m
		if len(r.Members) != len(ms) {
			t.Fatalf("%s: leader sees %d members, want %d", label, len(r.Members), len(ms))
		}
		for _, lm := range r.Members {
			for _, om := range ms {
				if om.id == lm.MemberID && string(lm.ProtocolMetadata) != string(bal.JoinGroupMetadata([]string{"t"}, om.owned, om.gen)) {
					t.Fatalf("%s: leader got altered metadata for %s", label, om.name)
				}
			}
		}
		if inspect != nil {
			inspect(r.Members)
		}
		mb, _, err := bal.MemberBalancer(r.Members)
		if err != nil {
			t.Fatal(err)
		}
		into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(map[string]int32{"t": 6})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range into.IntoSyncAssignment() {
			plan[a.MemberID] = string(a.MemberAssignment)
		}
	}
	if leader == nil {
		t.Fatalf("%s: no leader among %d members", label, len(ms))
	}
	// no partition is planned for two members in one generation
	seen := map[int32]string{}
	for id, asg := range plan {
		a, err := bal.ParseSyncAssignment([]byte(asg))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range a["t"] {
			if prev, dup := seen[p]; dup {
				t.Fatalf("%s: generation %d assigns partition %d to %s and %s", label, gen, p, prev, id)
			}
			seen[p] = id
		}
	}
	syncs := map[*coopMember]RequestID{}
	for _, m := range ms {
		if m != leader {
			syncs[m] = h.send(syncReq(3, "g", m.id, gen, nil, nil), m.name)
		}
	}
	syncs[leader] = h.send(syncReq(3, "g", leader.id, gen, nil, plan), leader.name)
	revoked := false
	for _, m := range ms {
		r := h.resp(syncs[m]).(*kmsg.SyncGroupResponse)
		if r.ErrorCode != 0 {
			t.Fatalf("%s: %s sync error %d", label, m.name, r.ErrorCode)
		}
		if string(r.MemberAssignment) != plan[m.id] {
			t.Fatalf("%s: %s got %q, the leader assigned %q", label, m.name, r.MemberAssignment, plan[m.id])
		}
		a, err := bal.ParseSyncAssignment(r.MemberAssignment)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m.owned["t"] {
			if !contains(a["t"], p) {
				revoked = true
			}
		}
		m.owned, m.gen = a, gen
		if m.owned == nil {
			m.owned = map[string][]int32{}
		}
	}
	return revoked
}

// checkCoverage: every partition is owned by exactly one member, each owning perMember.
func checkCoverage(t *testing.T, label string, ms []*coopMember, parts, perMember int) {
	t.Helper()
	owner := map[int32]string{}
	for _, m := range ms {
		if len(m.owned["t"]) != perMember {
			t.Fatalf("%s: %s owns %v, want %d partitions", label, m.name, m.owned["t"], perMember)
		}
		for _, p := range m.owned["t"] {
			if prev, dup := owner[p]; dup {
				t.Fatalf("%s: partition %d owned by %s and %s", label, p, prev, m.name)
			}
			owner[p] = m.name
		}
	}
	if len(owner) != parts {
		t.Fatalf("%s: %d of %d partitions owned", label, len(owner), parts)
	}
}

// TestStaticMemberRejoinWithoutRebalance (KIP-345): a static member that restarts (JoinGroup with
// its group.instance.id and no member id) while the group is Stable gets a new member id without a
// rebalance; the group record is rewritten with the new id. Before JoinGroup v9 a restarted leader
// is told the old leader id (so it does not assign); from v9 it is told it leads, with
// SkipAssignment.
func TestStaticMemberRejoinWithoutRebalance(t *testing.T) {
	for _, v := range []int16{5, 9} {
		h := newHarness(t, cfgNoDelay())
		o := joinOpts{version: v, instanceID: sp("I"), session: 10000, rebalance: 10000}
		old := h.stableGroup("g", 1, o)[0].memberID
		before := h.log.count()
		r := joinResp(t, h.do(joinReq("g", o)))
		if r.ErrorCode != 0 || r.MemberID == old || r.Generation != 1 {
			t.Fatalf("v%d static rejoin: %+v", v, r)
		}
		switch v {
		case 5:
			if r.LeaderID != old || r.SkipAssignment || len(r.Members) != 0 {
				t.Fatalf("v5 static leader rejoin: leader %q skip %v members %d, want the old leader id %q", r.LeaderID, r.SkipAssignment, len(r.Members), old)
			}
		case 9:
			if r.LeaderID != r.MemberID || !r.SkipAssignment || len(r.Members) != 1 {
				t.Fatalf("v9 static leader rejoin: leader %q skip %v members %d", r.LeaderID, r.SkipAssignment, len(r.Members))
			}
		}
		g := h.group("g")
		if g.State != Stable || g.Generation != 1 || len(g.Members) != 1 || g.Members[0].MemberID != r.MemberID || g.Leader != r.MemberID {
			t.Fatalf("v%d group after static rejoin: %+v", v, g)
		}
		recs := h.log.records()[before:]
		var gv kmsg.GroupMetadataValue
		if len(recs) != 1 || gv.ReadFrom(recs[0].Value) != nil || gv.Members[0].MemberID != r.MemberID || *gv.Members[0].InstanceID != "I" {
			t.Fatalf("v%d: group record not rewritten with the new member id: %d records", v, len(recs))
		}
		if e := h.do(heartbeatReq(4, "g", old, 1, sp("I"))).(*kmsg.HeartbeatResponse).ErrorCode; e != codeFenced {
			t.Fatalf("v%d old id heartbeat: %d", v, e)
		}
		if s := h.do(syncReq(3, "g", r.MemberID, 1, sp("I"), nil)).(*kmsg.SyncGroupResponse); s.ErrorCode != 0 || string(s.MemberAssignment) != "asg-0" {
			t.Fatalf("v%d sync with the new id: %+v", v, s)
		}
	}
}
