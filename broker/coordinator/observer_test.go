package coordinator

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDriverObservesGroupChanges: with Config.OnGroupChange the driver reports every state transition
// of a group with the group as it then is, in order: a member's join (PreparingRebalance, then
// CompletingRebalance at generation 1 with the chosen protocol, the leader and the member's
// subscription), the leader's assignment (Stable, with the assignment), its leave (PreparingRebalance
// at generation 1 with no member, then Empty at generation 2). Close delivers what was queued.
func TestDriverObservesGroupChanges(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	cfg := driverConfig()
	cfg.GroupInitialRebalanceDelayMs = 0
	cfg.OnGroupChange = func(ev GroupChanged) {
		s := fmt.Sprintf("%s %s gen=%d type=%q protocol=%q leader=%t", ev.Group, ev.State, ev.Generation, ev.ProtocolType, ev.Protocol, ev.Leader != "")
		for _, m := range ev.Members {
			s += fmt.Sprintf(" [client=%s host=%s md=%q assignment=%q]", m.ClientID, m.ClientHost, m.Metadata, m.Assignment)
		}
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}
	c, err := Start(context.Background(), cfg, newMemLog(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	j := handle(t, c, "c1", joinReq("g", joinOpts{version: 3, session: 10000, rebalance: 10000})).(*kmsg.JoinGroupResponse)
	if j.ErrorCode != 0 || j.Generation != 1 {
		t.Fatalf("join: %+v", j)
	}
	if s := handle(t, c, "c1", syncReq(3, "g", j.MemberID, 1, nil, map[string]string{j.MemberID: "A"})).(*kmsg.SyncGroupResponse); s.ErrorCode != 0 {
		t.Fatalf("sync: %+v", s)
	}
	if l := handle(t, c, "c1", leaveReq(3, "g", leaveMemberReq(j.MemberID, nil))).(*kmsg.LeaveGroupResponse); l.ErrorCode != 0 {
		t.Fatalf("leave: %+v", l)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`g PreparingRebalance gen=0 type="consumer" protocol="" leader=true [client=c1 host=/127.0.0.1 md="" assignment=""]`,
		`g CompletingRebalance gen=1 type="consumer" protocol="range" leader=true [client=c1 host=/127.0.0.1 md="md" assignment=""]`,
		`g Stable gen=1 type="consumer" protocol="range" leader=true [client=c1 host=/127.0.0.1 md="md" assignment="A"]`,
		`g PreparingRebalance gen=1 type="consumer" protocol="range" leader=false`,
		`g Empty gen=2 type="consumer" protocol="" leader=false`,
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("observed:\n%s\nwant:\n%s", joinLines(seen), joinLines(want))
	}
}

func joinLines(ss []string) string {
	out := ""
	for _, s := range ss {
		out += "  " + s + "\n"
	}
	return out
}
