package coordinator

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	codeUnknownMember          = kerr.UnknownMemberID.Code
	codeIllegalGeneration      = kerr.IllegalGeneration.Code
	codeRebalanceInProgress    = kerr.RebalanceInProgress.Code
	codeMemberIDRequired       = kerr.MemberIDRequired.Code
	codeFenced                 = kerr.FencedInstanceID.Code
	codeInconsistentProtocol   = kerr.InconsistentGroupProtocol.Code
	codeInvalidSessionTimeout  = kerr.InvalidSessionTimeout.Code
	codeInvalidGroupID         = kerr.InvalidGroupID.Code
	codeGroupIDNotFound        = kerr.GroupIDNotFound.Code
	codeNonEmptyGroup          = kerr.NonEmptyGroup.Code
	codeNotCoordinator         = kerr.NotCoordinator.Code
	codeOffsetMetadataTooLarge = kerr.OffsetMetadataTooLarge.Code
)

// joinNew starts a JoinGroup for a new member. A v4+ member without group.instance.id first gets
// MEMBER_ID_REQUIRED (KIP-394) and rejoins with the id it was given. Returns the parked (or answered)
// request and the member id when already known.
func (h *harness) joinNew(group string, o joinOpts, clientID string) (RequestID, string) {
	h.t.Helper()
	o.memberID = ""
	id := h.send(joinReq(group, o), clientID)
	if o.version >= 4 && o.instanceID == nil {
		r := joinResp(h.t, h.resp(id))
		if r.ErrorCode != codeMemberIDRequired || r.MemberID == "" {
			h.t.Fatalf("first v%d JoinGroup: error %d member %q, want MEMBER_ID_REQUIRED with an id", o.version, r.ErrorCode, r.MemberID)
		}
		o.memberID = r.MemberID
		return h.send(joinReq(group, o), clientID), r.MemberID
	}
	return id, ""
}

// stableGroup forms a Stable group of n members (initial delay 0 in cfg) and returns them in join
// order; the leader (the first) assigns "asg-<i>" to member i.
func (h *harness) stableGroup(group string, n int, o joinOpts) []joined {
	h.t.Helper()
	var reqs []RequestID
	for i := 0; i < n; i++ {
		id, _ := h.joinNew(group, o, "client-"+string(rune('a'+i)))
		reqs = append(reqs, id)
	}
	h.advance(0)
	var out []joined
	for i, id := range reqs {
		r := joinResp(h.t, h.resp(id))
		if r.ErrorCode != 0 {
			h.t.Fatalf("member %d join error %d", i, r.ErrorCode)
		}
		out = append(out, joined{memberID: r.MemberID, generation: r.Generation, leader: r.LeaderID, members: r.Members})
	}
	assign := map[string]string{}
	for i, j := range out {
		assign[j.memberID] = "asg-" + string(rune('0'+i))
	}
	var syncs []RequestID
	for i := n - 1; i >= 0; i-- { // followers first, the leader last
		a := map[string]string(nil)
		if out[i].memberID == out[i].leader {
			a = assign
		}
		syncs = append(syncs, h.send(syncReq(o.syncVersion(), group, out[i].memberID, out[i].generation, o.instanceID, a), "c"))
	}
	for _, id := range syncs {
		r := h.resp(id)
		if r == nil || r.(*kmsg.SyncGroupResponse).ErrorCode != 0 {
			h.t.Fatalf("sync: %+v", r)
		}
	}
	if g := h.group(group); g.State != Stable {
		h.t.Fatalf("group state %s, want Stable", g.State)
	}
	return out
}

func (o joinOpts) syncVersion() int16 {
	switch {
	case o.version >= 9:
		return 5
	case o.version >= 5:
		return 3
	}
	return 0
}

func cfgNoDelay() Config {
	cfg := testConfig()
	cfg.GroupInitialRebalanceDelayMs = 0
	return cfg
}

func TestTransitions(t *testing.T) {
	valid := map[GroupState][]GroupState{
		PreparingRebalance:  {Stable, CompletingRebalance, Empty},
		CompletingRebalance: {PreparingRebalance},
		Stable:              {CompletingRebalance},
		Dead:                {Stable, PreparingRebalance, CompletingRebalance, Empty, Dead},
		Empty:               {PreparingRebalance},
	}
	all := []GroupState{Empty, PreparingRebalance, CompletingRebalance, Stable, Dead}
	for _, to := range all {
		for _, from := range all {
			want := false
			for _, ok := range valid[to] {
				if ok == from {
					want = true
				}
			}
			g := newGroup("g", from, 1, 0)
			err := g.transitionTo(to, 77)
			if want {
				if err != nil || g.state != to || g.stateTimestamp != 77 {
					t.Errorf("%s -> %s: err %v state %s", from, to, err, g.state)
				}
				continue
			}
			var ite *IllegalTransitionError
			if !errors.As(err, &ite) || g.state != from || g.stateTimestamp != 0 {
				t.Errorf("%s -> %s: want refusal, got err %v state %s", from, to, err, g.state)
			}
		}
	}
}

func TestPartitionForJavaHashCode(t *testing.T) {
	// values of java.lang.String.hashCode and of Utils.abs(hashCode) % 50 (computed independently over
	// UTF-16 code units)
	cases := []struct {
		s    string
		hash int32
		p50  int32
	}{
		{"", 0, 0},
		{"abc", 96354, 4},
		{"my-group", -1906497762, 12},
		{"console-consumer-12345", 158455506, 6},
		{"grüße", 98768023, 23},
		{"polygenelubricants", math.MinInt32, 0}, // hashCode is Integer.MIN_VALUE: Utils.abs gives 0
		{"😀", 1772899, 49},                       // a surrogate pair: two UTF-16 code units
	}
	for _, c := range cases {
		if h := JavaStringHashCode(c.s); h != c.hash {
			t.Errorf("hashCode(%q) = %d, want %d", c.s, h, c.hash)
		}
		if p := PartitionFor(c.s, 50); p != c.p50 {
			t.Errorf("PartitionFor(%q, 50) = %d, want %d", c.s, p, c.p50)
		}
	}
}

// TestJoinSyncThreeMembers: three v5 members form one generation; the first is the leader and gets
// everyone's metadata; followers park in SyncGroup until the leader's assignment is stored; each gets
// its own part. The initial rebalance delay (3 s) is extended once because members kept arriving.
func TestJoinSyncThreeMembers(t *testing.T) {
	h := newHarness(t, testConfig())
	o := joinOpts{version: 5, session: 10000, rebalance: 10000}
	var reqs []RequestID
	var ids []string
	for _, c := range []string{"a", "b", "c"} {
		id, mid := h.joinNew("g", o, "client-"+c)
		reqs, ids = append(reqs, id), append(ids, mid)
	}
	if g := h.group("g"); g.State != PreparingRebalance || len(g.Members) != 3 {
		t.Fatalf("after joins: %+v", g)
	}
	// InitialDelayedJoin: 3000 ms, then another 3000 ms because new members were added
	h.advance(5999 * time.Millisecond)
	for _, id := range reqs {
		if h.resp(id) != nil {
			t.Fatalf("join answered at %v, before the initial delay ended", h.elapsed())
		}
	}
	h.advance(time.Millisecond)
	leader := ids[0]
	for i, id := range reqs {
		r := joinResp(t, h.resp(id))
		if r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != leader || r.MemberID != ids[i] || r.Protocol == nil || *r.Protocol != "range" {
			t.Fatalf("member %d join response: %+v", i, r)
		}
		wantMembers := 0
		if i == 0 {
			wantMembers = 3
		}
		if len(r.Members) != wantMembers {
			t.Fatalf("member %d got %d members, want %d", i, len(r.Members), wantMembers)
		}
	}
	if g := h.group("g"); g.State != CompletingRebalance || g.Generation != 1 {
		t.Fatalf("after join phase: %s gen %d", g.State, g.Generation)
	}
	before := h.log.count()
	sb := h.send(syncReq(3, "g", ids[1], 1, nil, nil), "client-b")
	sc := h.send(syncReq(3, "g", ids[2], 1, nil, nil), "client-c")
	if h.resp(sb) != nil || h.resp(sc) != nil {
		t.Fatal("followers' SyncGroup answered before the leader's")
	}
	sa := h.send(syncReq(3, "g", ids[0], 1, nil, map[string]string{ids[0]: "p0", ids[1]: "p1", ids[2]: "p2"}), "client-a")
	for i, id := range []RequestID{sa, sb, sc} {
		r := h.resp(id).(*kmsg.SyncGroupResponse)
		if r.ErrorCode != 0 || string(r.MemberAssignment) != []string{"p0", "p1", "p2"}[i] {
			t.Fatalf("member %d sync: error %d assignment %q", i, r.ErrorCode, r.MemberAssignment)
		}
	}
	if g := h.group("g"); g.State != Stable {
		t.Fatalf("state %s, want Stable", g.State)
	}
	if got := h.log.count() - before; got != 1 {
		t.Fatalf("%d records appended for the assignment, want 1 group record", got)
	}
	for _, id := range ids {
		if e := h.do(heartbeatReq(3, "g", id, 1, nil)).(*kmsg.HeartbeatResponse).ErrorCode; e != 0 {
			t.Fatalf("heartbeat of %s: %d", id, e)
		}
	}
}

// TestSelectProtocolByVote: the protocol is the one supported by every member that most members
// prefer (GroupMetadata.selectProtocol).
func TestSelectProtocolByVote(t *testing.T) {
	cases := []struct {
		prefs [][]string
		want  string
	}{
		{[][]string{{"range", "roundrobin"}, {"roundrobin", "range"}, {"roundrobin", "sticky"}}, "roundrobin"}, // only candidate
		{[][]string{{"range", "roundrobin"}, {"roundrobin", "range"}, {"roundrobin", "range"}}, "roundrobin"},  // 2 votes to 1
		{[][]string{{"range", "roundrobin"}, {"range", "roundrobin"}, {"roundrobin", "range"}}, "range"},
	}
	for i, c := range cases {
		h := newHarness(t, cfgNoDelay())
		var reqs []RequestID
		for _, prefs := range c.prefs {
			o := joinOpts{version: 3, session: 10000, rebalance: 10000}
			for _, p := range prefs {
				o.protocols = append(o.protocols, proto(p, p+"-md"))
			}
			id, _ := h.joinNew("g", o, "c")
			reqs = append(reqs, id)
		}
		h.advance(0)
		for _, id := range reqs {
			r := joinResp(t, h.resp(id))
			if r.ErrorCode != 0 || r.Protocol == nil || *r.Protocol != c.want {
				t.Fatalf("case %d: join response error %d protocol %v, want %s", i, r.ErrorCode, r.Protocol, c.want)
			}
		}
		leader := joinResp(t, h.resp(reqs[0]))
		for _, m := range leader.Members {
			if string(m.ProtocolMetadata) != c.want+"-md" {
				t.Fatalf("case %d: leader got metadata %q for %s", i, m.ProtocolMetadata, m.MemberID)
			}
		}
	}
}

// TestSessionExpiryTriggersRebalance: a member that stops heartbeating is removed exactly when its
// session timeout ends; the group rebalances and the survivor forms the next generation.
func TestSessionExpiryTriggersRebalance(t *testing.T) {
	h := newHarness(t, cfgNoDelay())
	ms := h.stableGroup("g", 2, joinOpts{version: 3, session: 6000, rebalance: 20000})
	a, b := ms[0], ms[1]
	for i := 0; i < 2; i++ { // b heartbeats every 2 s, a is silent
		h.advance(2 * time.Second)
		if e := h.do(heartbeatReq(3, "g", b.memberID, 1, nil)).(*kmsg.HeartbeatResponse).ErrorCode; e != 0 {
			t.Fatalf("b heartbeat: %d", e)
		}
	}
	h.advance(1999 * time.Millisecond)
	if g := h.group("g"); g.State != Stable || len(g.Members) != 2 {
		t.Fatalf("at %v: %s with %d members, want Stable with 2", h.elapsed(), g.State, len(g.Members))
	}
	h.advance(time.Millisecond) // a's session (6000 ms since its last sign of life) ends
	g := h.group("g")
	if g.State != PreparingRebalance || len(g.Members) != 1 || g.Members[0].MemberID != b.memberID {
		t.Fatalf("after a's session timeout: %+v", g)
	}
	if e := h.do(heartbeatReq(3, "g", b.memberID, 1, nil)).(*kmsg.HeartbeatResponse).ErrorCode; e != codeRebalanceInProgress {
		t.Fatalf("b heartbeat during rebalance: %d, want REBALANCE_IN_PROGRESS", e)
	}
	if e := h.do(heartbeatReq(3, "g", a.memberID, 1, nil)).(*kmsg.HeartbeatResponse).ErrorCode; e != codeUnknownMember {
		t.Fatalf("a heartbeat after removal: %d, want UNKNOWN_MEMBER_ID", e)
	}
	id := h.send(joinReq("g", joinOpts{version: 3, memberID: b.memberID, session: 6000, rebalance: 20000}), "c")
	r := joinResp(t, h.resp(id)) // every remaining member rejoined: the join completes at once
	if r.ErrorCode != 0 || r.Generation != 2 || r.LeaderID != b.memberID || len(r.Members) != 1 {
		t.Fatalf("b rejoin: %+v", r)
	}
}

// TestRebalanceTimeoutRemovesMembersThatDoNotRejoin: a member that keeps heartbeating but does not
// rejoin is dropped when the rebalance timeout ends (DelayedJoin), and the generation goes on
// without it.
func TestRebalanceTimeoutRemovesMembersThatDoNotRejoin(t *testing.T) {
	h := newHarness(t, cfgNoDelay())
	o := joinOpts{version: 3, session: 10000, rebalance: 30000}
	ms := h.stableGroup("g", 2, o)
	a, b := ms[0], ms[1]
	o.memberID = a.memberID
	rejoin := h.send(joinReq("g", o), "c") // the leader rejoins: rebalance
	for i := 0; i < 9; i++ {
		h.advance(3 * time.Second)
		if e := h.do(heartbeatReq(3, "g", b.memberID, 1, nil)).(*kmsg.HeartbeatResponse).ErrorCode; e != codeRebalanceInProgress {
			t.Fatalf("b heartbeat %d: %d, want REBALANCE_IN_PROGRESS", i, e)
		}
	}
	h.advance(2999 * time.Millisecond)
	if h.resp(rejoin) != nil {
		t.Fatalf("join completed at %v, before the 30 s rebalance timeout", h.elapsed())
	}
	h.advance(time.Millisecond)
	r := joinResp(t, h.resp(rejoin))
	if r.ErrorCode != 0 || r.Generation != 2 || len(r.Members) != 1 || r.Members[0].MemberID != a.memberID {
		t.Fatalf("join after rebalance timeout: %+v", r)
	}
	if e := h.do(heartbeatReq(3, "g", b.memberID, 1, nil)).(*kmsg.HeartbeatResponse).ErrorCode; e != codeUnknownMember {
		t.Fatalf("b after removal: %d, want UNKNOWN_MEMBER_ID", e)
	}
}

// TestJoinV0UsesSessionTimeoutAsRebalanceTimeout: JoinGroup v0 has no rebalance timeout field, so
// the session timeout bounds the join phase (even if a caller filled the v1+ field).
func TestJoinV0UsesSessionTimeoutAsRebalanceTimeout(t *testing.T) {
	h := newHarness(t, cfgNoDelay())
	o := joinOpts{version: 0, session: 10000, rebalance: 60000}
	ms := h.stableGroup("g", 2, o)
	for _, m := range h.group("g").Members {
		if m.RebalanceTimeoutMs != 10000 || m.SessionTimeoutMs != 10000 {
			t.Fatalf("member %s: rebalance %d session %d, want 10000/10000", m.MemberID, m.RebalanceTimeoutMs, m.SessionTimeoutMs)
		}
	}
	o.memberID = ms[0].memberID
	rejoin := h.send(joinReq("g", o), "c")
	for i := 0; i < 3; i++ {
		h.advance(3 * time.Second)
		h.do(heartbeatReq(0, "g", ms[1].memberID, 1, nil))
	}
	h.advance(999 * time.Millisecond)
	if h.resp(rejoin) != nil {
		t.Fatal("v0 join phase ended early")
	}
	h.advance(time.Millisecond)
	if r := joinResp(t, h.resp(rejoin)); r.ErrorCode != 0 || r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("v0 join phase did not end at the 10 s session timeout: %+v", r)
	}
}

// TestMemberIDRequiredOnlyV4PlusDynamic: KIP-394's MEMBER_ID_REQUIRED goes to JoinGroup v4+
// without group.instance.id only.
func TestMemberIDRequiredOnlyV4PlusDynamic(t *testing.T) {
	for v := int16(0); v <= 9; v++ {
		for _, static := range []bool{false, true} {
			if static && v < 5 {
				continue
			}
			h := newHarness(t, cfgNoDelay())
			o := joinOpts{version: v, session: 10000, rebalance: 10000}
			if static {
				o.instanceID = sp("inst")
			}
			id := h.send(joinReq("g", o), "c")
			h.advance(0)
			r := joinResp(t, h.resp(id))
			wantRequired := v >= 4 && !static
			if (r.ErrorCode == codeMemberIDRequired) != wantRequired {
				t.Fatalf("v%d static=%v: error %d, MEMBER_ID_REQUIRED expected: %v", v, static, r.ErrorCode, wantRequired)
			}
			if !wantRequired && (r.ErrorCode != 0 || r.Generation != 1) {
				t.Fatalf("v%d static=%v: %+v", v, static, r)
			}
			if wantRequired {
				if g := h.group("g"); len(g.PendingMembers) != 1 || g.PendingMembers[0] != r.MemberID || len(g.Members) != 0 {
					t.Fatalf("v%d: pending members %v members %d", v, g.PendingMembers, len(g.Members))
				}
			}
		}
	}
}

// TestPendingMemberExpires: a member id handed out with MEMBER_ID_REQUIRED that never comes back is
// forgotten after the session timeout, and it no longer holds up a rebalance.
func TestPendingMemberExpires(t *testing.T) {
	h := newHarness(t, cfgNoDelay())
	o := joinOpts{version: 5, session: 7000, rebalance: 60000}
	ms := h.stableGroup("g", 1, o)
	first := h.send(joinReq("g", o), "late")
	pending := joinResp(t, h.resp(first)).MemberID
	o.memberID = ms[0].memberID
	rejoin := h.send(joinReq("g", o), "c") // leader rejoin: waits for the pending member too
	h.advance(6999 * time.Millisecond)
	if h.resp(rejoin) != nil || len(h.group("g").PendingMembers) != 1 {
		t.Fatal("pending member expired early")
	}
	h.advance(time.Millisecond)
	if g := h.group("g"); len(g.PendingMembers) != 0 {
		t.Fatalf("pending members %v after session timeout", g.PendingMembers)
	}
	if r := joinResp(t, h.resp(rejoin)); r.ErrorCode != 0 || r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("rejoin after pending member %s expired: %+v", pending, r)
	}
}

// TestBadInput: invalid requests get Kafka 3.9's error codes; none crashes or creates state.
func TestBadInput(t *testing.T) {
	h := newHarness(t, cfgNoDelay())
	jr := func(o joinOpts) *kmsg.JoinGroupResponse { return joinResp(t, h.do(joinReq("g", o))) }

	// no protocols / empty protocol type on a new group
	o := joinOpts{version: 3, session: 10000, rebalance: 10000, protocols: []kmsg.JoinGroupRequestProtocol{}}
	if r := jr(o); r.ErrorCode != codeInconsistentProtocol || r.MemberID != "" || r.Generation != -1 {
		t.Fatalf("no protocols: %+v", r)
	}
	r := joinReq("g", joinOpts{version: 3, session: 10000, rebalance: 10000})
	r.ProtocolType = ""
	if resp := joinResp(t, h.do(r)); resp.ErrorCode != codeInconsistentProtocol {
		t.Fatalf("empty protocol type: %d", resp.ErrorCode)
	}
	// session timeout outside [group.min.session.timeout.ms, group.max.session.timeout.ms]
	for _, s := range []int32{5999, 1800001, -1} {
		if resp := jr(joinOpts{version: 3, session: s, rebalance: 10000}); resp.ErrorCode != codeInvalidSessionTimeout {
			t.Fatalf("session %d: %d, want INVALID_SESSION_TIMEOUT", s, resp.ErrorCode)
		}
	}
	if _, ok := h.core.Group("other"); ok {
		t.Fatal("group created")
	}
	// protocols no member shares, and another protocol type
	ms := h.stableGroup("g", 1, joinOpts{version: 3, session: 10000, rebalance: 10000})
	if resp := jr(joinOpts{version: 3, session: 10000, rebalance: 10000,
		protocols: []kmsg.JoinGroupRequestProtocol{proto("roundrobin", "x")}}); resp.ErrorCode != codeInconsistentProtocol {
		t.Fatalf("unshared protocol: %d", resp.ErrorCode)
	}
	r = joinReq("g", joinOpts{version: 3, session: 10000, rebalance: 10000})
	r.ProtocolType = "connect"
	if resp := joinResp(t, h.do(r)); resp.ErrorCode != codeInconsistentProtocol {
		t.Fatalf("other protocol type: %d", resp.ErrorCode)
	}
	if g := h.group("g"); g.State != Stable || len(g.Members) != 1 || g.Generation != 1 {
		t.Fatalf("rejected joins changed the group: %+v", g)
	}
	// a known member id for a group that does not exist
	if resp := joinResp(t, h.do(joinReq("nope", joinOpts{version: 3, memberID: "m", session: 10000, rebalance: 10000}))); resp.ErrorCode != codeUnknownMember {
		t.Fatalf("join unknown group with member id: %d", resp.ErrorCode)
	}
	// SyncGroup for an unknown group or member
	for _, sr := range []*kmsg.SyncGroupRequest{syncReq(3, "nope", "m", 1, nil, nil), syncReq(3, "g", "m", 1, nil, nil)} {
		if e := h.do(sr).(*kmsg.SyncGroupResponse).ErrorCode; e != codeUnknownMember {
			t.Fatalf("sync %s/%s: %d, want UNKNOWN_MEMBER_ID", sr.Group, sr.MemberID, e)
		}
	}
	// SyncGroup v5 without protocol type/name
	sr := syncReq(5, "g", ms[0].memberID, 1, nil, nil)
	sr.ProtocolType = nil
	if e := h.do(sr).(*kmsg.SyncGroupResponse).ErrorCode; e != codeInconsistentProtocol {
		t.Fatalf("sync v5 without protocol type: %d", e)
	}
	// SyncGroup with the wrong generation
	if e := h.do(syncReq(3, "g", ms[0].memberID, 7, nil, nil)).(*kmsg.SyncGroupResponse).ErrorCode; e != codeIllegalGeneration {
		t.Fatalf("sync wrong generation: %d", e)
	}
	// heartbeat for unknown group/member
	if e := h.do(heartbeatReq(3, "nope", "m", 1, nil)).(*kmsg.HeartbeatResponse).ErrorCode; e != codeUnknownMember {
		t.Fatalf("heartbeat unknown group: %d", e)
	}
	// an empty group id: INVALID_GROUP_ID for the membership APIs
	if resp := joinResp(t, h.do(joinReq("", joinOpts{version: 5, session: 10000, rebalance: 10000}))); resp.ErrorCode != codeInvalidGroupID {
		t.Fatalf("join empty group id: %d", resp.ErrorCode)
	}
	if e := h.do(syncReq(3, "", "m", 1, nil, nil)).(*kmsg.SyncGroupResponse).ErrorCode; e != codeInvalidGroupID {
		t.Fatalf("sync empty group id: %d", e)
	}
	if e := h.do(heartbeatReq(3, "", "m", 1, nil)).(*kmsg.HeartbeatResponse).ErrorCode; e != codeInvalidGroupID {
		t.Fatalf("heartbeat empty group id: %d", e)
	}
	if e := h.do(leaveReq(1, "", leaveMemberReq("m", nil))).(*kmsg.LeaveGroupResponse).ErrorCode; e != codeInvalidGroupID {
		t.Fatalf("leave empty group id: %d", e)
	}
	// oversized offset metadata: OFFSET_METADATA_TOO_LARGE, nothing stored
	before := h.log.count()
	cr := commitReq(5, "simple", "", -1, nil, "t", 0, 5)
	big := make([]byte, 4097)
	for i := range big {
		big[i] = 'x'
	}
	cr.Topics[0].Partitions[0].Metadata = sp(string(big))
	if e := commitErr(t, h.do(cr)); e != codeOffsetMetadataTooLarge {
		t.Fatalf("big metadata: %d", e)
	}
	if h.log.count() != before || h.fetched("simple", "t", 0) != -1 {
		t.Fatal("oversized commit stored something")
	}
	// versions Kafka 3.9 does not have, and APIs that are not the coordinator's
	jv := joinReq("g", joinOpts{version: 10, session: 10000})
	id := h.send(jv, "c")
	if err := h.errs[id]; !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("JoinGroup v10: %v", err)
	}
	id = h.send(kmsg.NewPtrProduceRequest(), "c")
	if err := h.errs[id]; !errors.Is(err, ErrNotGroupAPI) {
		t.Fatalf("Produce: %v", err)
	}
	id = h.send(nil, "c")
	if err := h.errs[id]; !errors.Is(err, ErrNotGroupAPI) {
		t.Fatalf("nil request: %v", err)
	}
}

// TestLeaveGroup: v0-v2 leave one member with a top-level error; v3+ leaves a batch, by member id or
// (admin) by group.instance.id, with an error per member.
func TestLeaveGroup(t *testing.T) {
	h := newHarness(t, cfgNoDelay())
	ms := h.stableGroup("g", 1, joinOpts{version: 3, session: 10000, rebalance: 10000})
	if e := h.do(leaveReq(0, "g", leaveMemberReq("ghost", nil))).(*kmsg.LeaveGroupResponse).ErrorCode; e != codeUnknownMember {
		t.Fatalf("v0 leave of unknown member: %d", e)
	}
	if e := h.do(leaveReq(2, "nope", leaveMemberReq("ghost", nil))).(*kmsg.LeaveGroupResponse).ErrorCode; e != codeUnknownMember {
		t.Fatalf("v2 leave of unknown group: %d", e)
	}
	if e := h.do(leaveReq(1, "g", leaveMemberReq(ms[0].memberID, nil))).(*kmsg.LeaveGroupResponse).ErrorCode; e != 0 {
		t.Fatalf("v1 leave: %d", e)
	}
	g := h.group("g")
	if g.State != Empty || len(g.Members) != 0 || g.Generation != 2 {
		t.Fatalf("after the last member left: %+v", g)
	}

	h2 := newHarness(t, cfgNoDelay())
	s1 := h2.stableGroup("s", 1, joinOpts{version: 5, session: 10000, rebalance: 10000, instanceID: sp("i1")})
	resp := h2.do(leaveReq(3, "s",
		leaveMemberReq("", sp("i1")),             // admin removal by instance id
		leaveMemberReq("", sp("i9")),             // unknown instance
		leaveMemberReq("ghost", nil),             // unknown member
		leaveMemberReq(s1[0].memberID, sp("i1")), // already gone
	)).(*kmsg.LeaveGroupResponse)
	want := []int16{0, codeUnknownMember, codeUnknownMember, codeUnknownMember}
	if resp.ErrorCode != 0 || len(resp.Members) != 4 {
		t.Fatalf("batch leave: %+v", resp)
	}
	for i, m := range resp.Members {
		if m.ErrorCode != want[i] {
			t.Fatalf("batch leave member %d (%s/%v): %d, want %d", i, m.MemberID, m.InstanceID, m.ErrorCode, want[i])
		}
	}
	if g := h2.group("s"); g.State != Empty {
		t.Fatalf("after batch leave: %s", g.State)
	}
}

// TestDescribeListDeleteGroups: DescribeGroups shows metadata and assignments only when Stable;
// ListGroups filters by state; DeleteGroups deletes Empty groups only and writes tombstones.
func TestDescribeListDeleteGroups(t *testing.T) {
	h := newHarness(t, cfgNoDelay())
	ms := h.stableGroup("g", 2, joinOpts{version: 5, session: 10000, rebalance: 10000})
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Version, dr.Groups, dr.IncludeAuthorizedOperations = 5, []string{"g", "unknown"}, true
	d := h.do(dr).(*kmsg.DescribeGroupsResponse)
	if len(d.Groups) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	g := d.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || g.ProtocolType != "consumer" || g.Protocol != "range" || len(g.Members) != 2 ||
		g.AuthorizedOperations != 328 {
		t.Fatalf("describe g: %+v", g)
	}
	if m := g.Members[1]; m.MemberID != ms[1].memberID || m.ClientID != "client-b" || m.ClientHost != "/127.0.0.1" ||
		string(m.ProtocolMetadata) != "md" || string(m.MemberAssignment) != "asg-1" {
		t.Fatalf("describe member: %+v", m)
	}
	if u := d.Groups[1]; u.ErrorCode != 0 || u.State != "Dead" || len(u.Members) != 0 || u.AuthorizedOperations != 328 {
		t.Fatalf("describe unknown: %+v", u)
	}

	// a simple (offsets-only) group and an Empty one
	h.do(commitReq(5, "simple", "", -1, nil, "t", 0, 1))
	lr := kmsg.NewPtrListGroupsRequest()
	lr.Version = 4
	l := h.do(lr).(*kmsg.ListGroupsResponse)
	if l.ErrorCode != 0 || len(l.Groups) != 2 || l.Groups[0].Group != "g" || l.Groups[0].GroupState != "Stable" ||
		l.Groups[1].Group != "simple" || l.Groups[1].GroupState != "Empty" || l.Groups[1].ProtocolType != "" {
		t.Fatalf("list: %+v", l)
	}
	lr.StatesFilter = []string{"EMPTY"}
	if l := h.do(lr).(*kmsg.ListGroupsResponse); len(l.Groups) != 1 || l.Groups[0].Group != "simple" {
		t.Fatalf("list Empty: %+v", l)
	}
	lr.Version, lr.StatesFilter, lr.TypesFilter = 5, nil, []string{"consumer"}
	if l := h.do(lr).(*kmsg.ListGroupsResponse); len(l.Groups) != 0 {
		t.Fatalf("list type consumer: %+v", l)
	}

	before := h.log.count()
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version, del.Groups = 2, []string{"g", "simple", "unknown", "simple"}
	dres := h.do(del).(*kmsg.DeleteGroupsResponse)
	want := map[string]int16{"g": codeNonEmptyGroup, "simple": 0, "unknown": codeGroupIDNotFound}
	if len(dres.Groups) != 3 {
		t.Fatalf("delete: %+v", dres)
	}
	for _, r := range dres.Groups {
		if r.ErrorCode != want[r.Group] {
			t.Fatalf("delete %s: %d, want %d", r.Group, r.ErrorCode, want[r.Group])
		}
	}
	recs := h.log.records()[before:]
	if len(recs) != 1 || recs[0].Value != nil {
		t.Fatalf("delete of simple wrote %d records, want 1 offset tombstone (generation 0: no group tombstone)", len(recs))
	}
	if _, ok := h.core.Group("simple"); ok {
		t.Fatal("deleted group still cached")
	}
	if h.fetched("simple", "t", 0) != -1 {
		t.Fatal("deleted group's offset still served")
	}
}

// TestAppendFailure: a commit whose record cannot be appended is not acknowledged and not stored
// (KAFKA_STORAGE_ERROR → NOT_COORDINATOR); a failed assignment store makes the group rebalance.
func TestAppendFailure(t *testing.T) {
	h := newHarness(t, cfgNoDelay())
	ms := h.stableGroup("g", 1, joinOpts{version: 3, session: 10000, rebalance: 10000})
	h.log.failing = errTest
	if e := commitErr(t, h.do(commitReq(5, "g", ms[0].memberID, 1, nil, "t", 0, 9))); e != codeNotCoordinator {
		t.Fatalf("commit with failing log: %d, want NOT_COORDINATOR", e)
	}
	h.log.failing = nil
	if off := h.fetched("g", "t", 0); off != -1 {
		t.Fatalf("failed commit visible: %d", off)
	}

	o := joinOpts{version: 3, memberID: ms[0].memberID, session: 10000, rebalance: 10000}
	j := joinResp(t, h.do(joinReq("g", o))) // leader rejoin, alone: generation 2 at once
	h.log.failing = errTest
	s := h.do(syncReq(3, "g", j.MemberID, j.Generation, nil, map[string]string{j.MemberID: "x"})).(*kmsg.SyncGroupResponse)
	h.log.failing = nil
	if s.ErrorCode != codeNotCoordinator {
		t.Fatalf("sync with failing log: %d", s.ErrorCode)
	}
	if g := h.group("g"); g.State != PreparingRebalance {
		t.Fatalf("after failed store: %s, want PreparingRebalance", g.State)
	}
}

// TestInternalFaultAnswersUnknownServerError: an internal inconsistency (here: a group forced into a
// state Kafka never reaches) is recovered, recorded in Faults and answered with
// UNKNOWN_SERVER_ERROR instead of crashing the broker.
func TestInternalFaultAnswersUnknownServerError(t *testing.T) {
	core, _ := NewCore(cfgNoDelay(), nil, 1)
	h := startedHarness(t, core)
	ms := h.stableGroup("g", 1, joinOpts{version: 3, session: 10000, rebalance: 10000})
	core.groups["g"].state = GroupState(42) // corrupt the state on purpose
	r := h.do(syncReq(3, "g", ms[0].memberID, 1, nil, nil)).(*kmsg.SyncGroupResponse)
	if r.ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("sync on a corrupted group: %d", r.ErrorCode)
	}
	if len(core.Faults()) != 1 {
		t.Fatalf("faults: %v", core.Faults())
	}
	id := h.send((*kmsg.HeartbeatRequest)(nil), "c")
	if err := h.errs[id]; !errors.Is(err, ErrNotGroupAPI) {
		t.Fatalf("typed nil request: %v", err)
	}
}

// startedHarness drives core (of cfgNoDelay) from time 1000 ms: started, its 5 partitions loaded empty.
func startedHarness(t *testing.T, core *Core) *harness {
	h := &harness{t: t, core: core, now: time.UnixMilli(1000), log: newMemLog(), timers: map[TimerID]time.Time{},
		resps: map[RequestID]kmsg.Response{}, errs: map[RequestID]error{}}
	h.apply(core.Startup(h.now))
	for p := int32(0); p < 5; p++ {
		core.BeginLoad(p)
		h.apply(mustLoad(t, core, h.now, p))
	}
	return h
}

func mustLoad(t *testing.T, core *Core, now time.Time, p int32) []Effect {
	t.Helper()
	effects, err := core.CompleteLoad(now, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return effects
}

// OffsetFetch v0-v1 have no top-level error code: a group's error (here NOT_COORDINATOR) is every
// requested partition's, with no offset and no metadata (OffsetFetchRequest.getErrorResponse); from
// v2 it is top-level, from v8 the group's. The differential test found v1 answering nothing.
func TestOffsetFetchErrorResponseByVersion(t *testing.T) {
	for _, v := range []int16{1, 2, 8} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(v)
		req.Group = "g"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0, 3}
		req.Topics = append(req.Topics, rt)
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = "g"
		req.Groups = append(req.Groups, rg)
		resp := errorResponse(req, kerr.NotCoordinator.Code).(*kmsg.OffsetFetchResponse)
		switch v {
		case 1:
			if len(resp.Topics) != 1 || resp.Topics[0].Topic != "t" || len(resp.Topics[0].Partitions) != 2 {
				t.Fatalf("v1: %+v", resp.Topics)
			}
			for i, p := range resp.Topics[0].Partitions {
				if p.Partition != rt.Partitions[i] || p.ErrorCode != kerr.NotCoordinator.Code || p.Offset != -1 || p.Metadata == nil || *p.Metadata != "" {
					t.Errorf("v1 partition %d: %+v", i, p)
				}
			}
		case 2:
			if resp.ErrorCode != kerr.NotCoordinator.Code || len(resp.Topics) != 0 {
				t.Errorf("v2: error %d, topics %+v", resp.ErrorCode, resp.Topics)
			}
		case 8:
			if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != kerr.NotCoordinator.Code || len(resp.Topics) != 0 {
				t.Errorf("v8: %+v", resp)
			}
		}
	}
}

func subscription(topics ...string) string {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return string(m.AppendTo(nil))
}

func offsetDeleteReq(group string, tps map[string][]int32, order ...string) *kmsg.OffsetDeleteRequest {
	r := kmsg.NewPtrOffsetDeleteRequest()
	r.Group = group
	for _, topic := range order {
		t := kmsg.NewOffsetDeleteRequestTopic()
		t.Topic = topic
		for _, p := range tps[topic] {
			rp := kmsg.NewOffsetDeleteRequestTopicPartition()
			rp.Partition = p
			t.Partitions = append(t.Partitions, rp)
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

// offsetDeleteErrs flattens an OffsetDelete answer to "topic/partition" -> error code.
func offsetDeleteErrs(r kmsg.Response) (int16, map[string]int16) {
	resp := r.(*kmsg.OffsetDeleteResponse)
	out := map[string]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[fmt.Sprintf("%s/%d", t.Topic, p.Partition)] = p.ErrorCode
		}
	}
	return resp.ErrorCode, out
}

// TestDeleteOffsets is GroupCoordinator.handleDeleteOffsets: a Stable consumer group's subscribed
// topics get GROUP_SUBSCRIBED_TO_TOPIC and the others are deleted (a tombstone each); an Empty group
// deletes anything asked, and becomes Dead without offsets; unknown, empty-id and non-consumer groups
// get their group errors with no partitions; unknown partitions UNKNOWN_TOPIC_OR_PARTITION.
func TestDeleteOffsets(t *testing.T) {
	h := newHarness(t, cfgNoDelay())
	h.core.cfg.PartitionExists = func(topic string, p int32) bool { return (topic == "t" || topic == "u") && p < 2 }
	o := joinOpts{version: 5, session: 10000, rebalance: 10000, protocols: []kmsg.JoinGroupRequestProtocol{proto("range", subscription("t"))}}
	ms := h.stableGroup("g", 1, o)
	for _, c := range []struct {
		topic string
		p     int32
	}{{"t", 0}, {"t", 1}, {"u", 0}} {
		if e := commitErr(t, h.do(commitReq(5, "g", ms[0].memberID, ms[0].generation, nil, c.topic, c.p, 7))); e != 0 {
			t.Fatalf("commit %s/%d: %d", c.topic, c.p, e)
		}
	}
	before := h.log.count()
	ge, errs := offsetDeleteErrs(h.do(offsetDeleteReq("g", map[string][]int32{"t": {0}, "u": {0, 5}, "x": {0}}, "t", "u", "x")))
	want := map[string]int16{"t/0": kerr.GroupSubscribedToTopic.Code, "u/0": 0, "u/5": kerr.UnknownTopicOrPartition.Code, "x/0": kerr.UnknownTopicOrPartition.Code}
	if ge != 0 || fmt.Sprint(errs) != fmt.Sprint(want) {
		t.Fatalf("stable group: error %d, partitions %v, want 0 and %v", ge, errs, want)
	}
	if recs := h.log.records()[before:]; len(recs) != 1 || recs[0].Value != nil {
		t.Fatalf("stable group's delete wrote %d records, want 1 tombstone", len(recs))
	}
	if h.fetched("g", "u", 0) != -1 || h.fetched("g", "t", 0) != 7 {
		t.Fatalf("after delete: u/0 %d (want -1), t/0 %d (want 7)", h.fetched("g", "u", 0), h.fetched("g", "t", 0))
	}

	// Group errors come alone.
	for _, c := range []struct {
		group string
		code  int16
	}{{"", kerr.InvalidGroupID.Code}, {"never", kerr.GroupIDNotFound.Code}} {
		ge, errs := offsetDeleteErrs(h.do(offsetDeleteReq(c.group, map[string][]int32{"t": {0}, "x": {0}}, "t", "x")))
		if ge != c.code || len(errs) != 0 {
			t.Fatalf("group %q: %d %v, want %d and no partitions", c.group, ge, errs, c.code)
		}
	}
	conn := joinOpts{version: 5, session: 10000, rebalance: 10000, protocolType: "connect", protocols: []kmsg.JoinGroupRequestProtocol{proto("default", "md")}}
	h.stableGroup("workers", 1, conn)
	if ge, errs := offsetDeleteErrs(h.do(offsetDeleteReq("workers", map[string][]int32{"t": {0}}, "t"))); ge != kerr.NonEmptyGroup.Code || len(errs) != 0 {
		t.Fatalf("connect group: %d %v, want NON_EMPTY_GROUP", ge, errs)
	}

	// Empty: anything goes, then the group without offsets is Dead.
	h.do(leaveReq(3, "g", leaveMemberReq(ms[0].memberID, nil)))
	if s := h.group("g").State; s != Empty {
		t.Fatalf("after leave: %s", s)
	}
	before = h.log.count()
	ge, errs = offsetDeleteErrs(h.do(offsetDeleteReq("g", map[string][]int32{"t": {0, 1}, "u": {1}}, "t", "u")))
	if want := map[string]int16{"t/0": 0, "t/1": 0, "u/1": 0}; ge != 0 || fmt.Sprint(errs) != fmt.Sprint(want) {
		t.Fatalf("empty group: %d %v, want %v", ge, errs, want)
	}
	if recs := h.log.records()[before:]; len(recs) != 3 {
		t.Fatalf("empty group's delete wrote %d records, want 2 offset tombstones and the group's", len(recs))
	}
	if _, ok := h.core.Group("g"); ok {
		t.Fatal("group without offsets still cached")
	}
	if ge, _ := offsetDeleteErrs(h.do(offsetDeleteReq("g", map[string][]int32{"t": {0}}, "t"))); ge != kerr.GroupIDNotFound.Code {
		t.Fatalf("dead group: %d, want GROUP_ID_NOT_FOUND", ge)
	}
}
