package coordinator

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// determinismScript drives one core through joins (v3, and v5 with MEMBER_ID_REQUIRED pending
// members), syncs, heartbeats, commits, a LeaveGroup, a session expiry, DeleteGroups, the offset
// cleanup task and the unload and reload of partitions holding multi-member groups, with the
// harness's fake clock. It returns the harness, whose effects are the core's output.
func determinismScript(t *testing.T) *harness {
	t.Helper()
	cfg := testConfig()
	cfg.OffsetsTopicNumPartitions = 2
	cfg.ObserveGroups = true // GroupChanged effects are outputs too
	h := newHarness(t, cfg)
	o5 := joinOpts{version: 5, session: 10000, rebalance: 20000}
	o3 := joinOpts{version: 3, session: 6000, rebalance: 20000}

	// form a group of n members; v5 members first get a member id (a pending member each)
	form := func(group string, o joinOpts, n int) []string {
		ids := make([]string, n)
		reqs := make([]RequestID, n)
		for i := range ids {
			oo := o
			client := fmt.Sprintf("%s-client-%d", group, i)
			if o.version >= 4 {
				first := joinResp(t, h.resp(h.send(joinReq(group, o), client)))
				if first.ErrorCode != codeMemberIDRequired {
					t.Fatalf("%s first join: %d", group, first.ErrorCode)
				}
				oo.memberID = first.MemberID
			}
			reqs[i] = h.send(joinReq(group, oo), client)
		}
		// the initial delay runs again while members keep arriving
		for i := 0; h.resps[reqs[n-1]] == nil && i < 10; i++ {
			h.advance(time.Duration(cfg.GroupInitialRebalanceDelayMs) * time.Millisecond)
		}
		var leader string
		for i, id := range reqs {
			r := joinResp(t, h.resp(id))
			if r.ErrorCode != 0 {
				t.Fatalf("%s join %d: %d", group, i, r.ErrorCode)
			}
			ids[i], leader = r.MemberID, r.LeaderID
		}
		asg := map[string]string{}
		for i, id := range ids {
			asg[id] = fmt.Sprintf("p%d", i)
		}
		var syncs []RequestID
		for _, id := range ids {
			if id != leader {
				syncs = append(syncs, h.send(syncReq(3, group, id, 1, nil, nil), "c"))
			}
		}
		syncs = append(syncs, h.send(syncReq(3, group, leader, 1, nil, asg), "c"))
		for _, id := range syncs {
			if r := h.resp(id); r == nil || r.(*kmsg.SyncGroupResponse).ErrorCode != 0 {
				t.Fatalf("%s sync: %+v", group, r)
			}
		}
		return ids
	}

	a := form("alpha", o5, 4)
	b := form("beta", o3, 3)
	c := form("gamma", o5, 3)
	for i, id := range a {
		h.do(heartbeatReq(3, "alpha", id, 1, nil))
		h.do(commitReq(8, "alpha", id, 1, nil, "t", int32(i), int64(10*i)))
	}
	for p := int32(0); p < 4; p++ {
		h.do(commitReq(2, "simple", "", -1, nil, fmt.Sprintf("topic-%d", p%2), p, int64(p)))
	}
	// pending members that never come back, in an Empty group
	for i := 0; i < 3; i++ {
		h.send(joinReq("pending", o5), fmt.Sprintf("pending-%d", i))
	}
	// beta: one member leaves, the others go silent and expire
	h.do(leaveReq(3, "beta", leaveMemberReq(b[0], nil)))
	for _, id := range c {
		h.do(heartbeatReq(3, "gamma", id, 1, nil))
	}
	h.advance(7 * time.Second)
	for _, id := range a {
		h.do(heartbeatReq(3, "alpha", id, 1, nil))
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version = 2
	del.Groups = []string{"beta", "simple", "pending"}
	h.do(del)

	// unload every partition (groups with several members and pending members go), then load them
	// back from the log
	for p := int32(0); p < cfg.OffsetsTopicNumPartitions; p++ {
		h.apply(h.core.Unload(h.now, p))
	}
	for p := int32(0); p < cfg.OffsetsTopicNumPartitions; p++ {
		h.core.BeginLoad(p)
		var recs []KV
		if err := h.log.ReadAll(p, func(k, v []byte) error { recs = append(recs, KV{k, v}); return nil }); err != nil {
			t.Fatal(err)
		}
		effects, err := h.core.CompleteLoad(h.now, p, recs)
		if err != nil {
			t.Fatal(err)
		}
		h.apply(effects)
	}
	// loaded members that do not heartbeat expire; the cleanup task runs
	h.advance(time.Duration(cfg.OffsetsRetentionCheckIntervalMs) * time.Millisecond)
	return h
}

// TestCoreSameInputsSameOutputs: the core is a pure function of its inputs. One script stepped
// through fresh cores (same seed, same fake clock) gives the same effects, in the same order, every
// time; 20 runs catch Go's randomised map iteration wherever effects come from a map. Before the
// group timers of an unloaded group were cancelled in sorted order, the CancelTimer effects came
// out in map order and the runs differed.
func TestCoreSameInputsSameOutputs(t *testing.T) {
	want := determinismScript(t).effects
	var cancels, responds, appends, changes int
	for _, e := range want {
		switch e.(type) {
		case CancelTimer:
			cancels++
		case Respond:
			responds++
		case Append:
			appends++
		case GroupChanged:
			changes++
		}
	}
	// the script must reach the paths that emit several effects from one map
	if cancels < 10 || responds < 40 || appends < 10 || changes < 10 {
		t.Fatalf("script produced %d CancelTimer, %d Respond, %d Append, %d GroupChanged effects; it no longer exercises the core", cancels, responds, appends, changes)
	}
	for run := 1; run < 20; run++ {
		got := determinismScript(t).effects
		if reflect.DeepEqual(got, want) {
			continue
		}
		for i := range want {
			if i >= len(got) || !reflect.DeepEqual(got[i], want[i]) {
				var g Effect
				if i < len(got) {
					g = got[i]
				}
				t.Fatalf("run %d: effect %d of %d differs:\n got %#v\nwant %#v", run, i, len(want), g, want[i])
			}
		}
		t.Fatalf("run %d: %d effects, want %d", run, len(got), len(want))
	}
}
