package newconsumer

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/newconsumer/assignor"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// tps builds partitions from "t:0 t:1".
func tps(s string) []TopicPartition {
	out := []TopicPartition{}
	for _, f := range strings.Fields(s) {
		t, p, _ := strings.Cut(f, ":")
		n, _ := strconv.Atoi(p)
		out = append(out, TopicPartition{Topic: t, Partition: int32(n)})
	}
	return out
}

func TestJoinPrepare(t *testing.T) {
	gen := generation{id: 4, memberID: "m", protocol: "range"}
	owned := tps("u:0 t:1 t:0")
	subscribed := map[string]bool{"t": true}

	d := joinPrepare(assignor.Eager, gen, owned, subscribed)
	if !reflect.DeepEqual(d.revoke, tps("t:0 t:1 u:0")) || len(d.lose) != 0 || len(d.keep) != 0 || !d.callRevoked {
		t.Fatalf("eager: %+v", d)
	}
	if d := joinPrepare(assignor.Eager, gen, nil, subscribed); !d.callRevoked || len(d.revoke) != 0 {
		t.Fatalf("eager with nothing owned still calls onPartitionsRevoked: %+v", d)
	}
	d = joinPrepare(assignor.Cooperative, gen, owned, subscribed)
	if !reflect.DeepEqual(d.revoke, tps("u:0")) || !reflect.DeepEqual(d.keep, tps("t:0 t:1")) || !d.callRevoked {
		t.Fatalf("cooperative: only the unsubscribed topic goes: %+v", d)
	}
	if d := joinPrepare(assignor.Cooperative, gen, tps("t:0"), subscribed); d.callRevoked || len(d.revoke) != 0 {
		t.Fatalf("cooperative with nothing to revoke: %+v", d)
	}
	for _, g := range []generation{noGeneration, {id: -1, memberID: "m"}, {id: 4}} {
		d := joinPrepare(assignor.Cooperative, g, owned, subscribed)
		if !reflect.DeepEqual(d.lose, tps("t:0 t:1 u:0")) || len(d.revoke) != 0 || len(d.keep) != 0 || d.callRevoked {
			t.Fatalf("reset generation %+v: everything is lost: %+v", g, d)
		}
	}
}

func TestJoinComplete(t *testing.T) {
	owned, assigned := tps("t:0 t:1 t:2"), tps("t:1 t:2 t:3")
	d := joinComplete(assignor.Eager, nil, assigned)
	if !reflect.DeepEqual(d.added, tps("t:1 t:2 t:3")) || len(d.revoked) != 0 || d.rejoin {
		t.Fatalf("eager: %+v", d)
	}
	d = joinComplete(assignor.Cooperative, owned, assigned)
	if !reflect.DeepEqual(d.added, tps("t:3")) || !reflect.DeepEqual(d.revoked, tps("t:0")) || !d.rejoin {
		t.Fatalf("cooperative: revoke only what moves, then rejoin: %+v", d)
	}
	d = joinComplete(assignor.Cooperative, owned, owned)
	if len(d.added) != 0 || len(d.revoked) != 0 || d.rejoin {
		t.Fatalf("cooperative, unchanged: %+v", d)
	}
}

func TestMatchesSubscription(t *testing.T) {
	if !matchesSubscription(tps("t:0 u:1"), map[string]bool{"t": true, "u": true}) {
		t.Fatal("subscribed topics do not match")
	}
	if matchesSubscription(tps("t:0 v:1"), map[string]bool{"t": true}) {
		t.Fatal("an unsubscribed topic matched")
	}
}

func TestLeavePrepare(t *testing.T) {
	m, _ := joined(false)
	if revoke, lose := leavePrepare(m, tps("t:1 t:0")); !reflect.DeepEqual(revoke, tps("t:0 t:1")) || lose != nil {
		t.Fatalf("stable: revoke %v lose %v", revoke, lose)
	}
	m.startJoin()
	if revoke, lose := leavePrepare(m, tps("t:0")); revoke != nil || !reflect.DeepEqual(lose, tps("t:0")) {
		t.Fatalf("mid-rebalance: revoke %v lose %v", revoke, lose)
	}
	m2, _ := joined(false)
	m2.resetStateAndRejoin("fenced", false)
	if revoke, lose := leavePrepare(m2, tps("t:0")); revoke != nil || !reflect.DeepEqual(lose, tps("t:0")) {
		t.Fatalf("reset: revoke %v lose %v", revoke, lose)
	}
	if revoke, lose := leavePrepare(m, nil); revoke != nil || lose != nil {
		t.Fatal("nothing owned, nothing to call")
	}
}

// The leader decodes each member's v3 subscription, assigns, and encodes one assignment per member;
// an undecodable member gets an empty one.
func TestLeaderAssignment(t *testing.T) {
	meta := func(topics ...string) []byte {
		return assignor.EncodeSubscription(assignor.Subscription{Topics: topics, Generation: -1})
	}
	members := []kmsg.JoinGroupResponseMember{
		{MemberID: "b", ProtocolMetadata: meta("t")},
		{MemberID: "a", ProtocolMetadata: meta("t", "u")},
		{MemberID: "z", ProtocolMetadata: []byte{0, 3, 0}},
	}
	if got := subscribedTopics(members); !reflect.DeepEqual(got, []string{"t", "u"}) {
		t.Fatalf("subscribed topics %v", got)
	}
	assignments, plan, bad := leaderAssignment(assignor.Range{}, members, map[string]int32{"t": 3, "u": 1})
	if len(bad) != 1 || !strings.Contains(bad[0].Error(), "member z") {
		t.Fatalf("bad = %v", bad)
	}
	want := map[string][]TopicPartition{"a": tps("t:0 t:1 u:0"), "b": tps("t:2"), "z": {}}
	if !reflect.DeepEqual(plan, want) {
		t.Fatalf("plan %v", plan)
	}
	if len(assignments) != 3 {
		t.Fatalf("%d assignments", len(assignments))
	}
	for _, a := range assignments {
		ps, _, err := assignor.DecodeAssignment(a.MemberAssignment)
		if err != nil || !reflect.DeepEqual(ps, want[a.MemberID]) {
			t.Fatalf("%s: %v %v", a.MemberID, ps, err)
		}
	}
}
