package scenarios

import (
	"fmt"
	"slices"
	"testing"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// TestMembersInPools: consumer-crash on the zk and classic eras with 4 members, 2 to a
// `rebalancelab member-pool` process (MembersPerProcess 2). Exactly 2 processes run per era (pool0
// and pool1, distinct pids), both ending with exit status 0 once their stdin closes; the crashed
// member's records stop at its member_stop{crash}; its restart goes back to its pool (no third
// process); every relation of the scenario holds; and each member's records came through the pool
// that holds it (every member has records).
func TestMembersInPools(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bin := testutil.Binary(t)
	res := runScenarioWith(t, "consumer-crash", spec.Params{Consumers: 4, Partitions: 4, Seed: 1}, func(o *Options) {
		o.Eras, o.MemberBinary, o.MembersPerProcess = []string{"zk", "classic"}, bin, 2
	})
	if res.MembersAs != MembersAsProcesses {
		t.Fatalf("members as %q, want %q (implied by MembersPerProcess)", res.MembersAs, MembersAsProcesses)
	}
	crashed := crashedIn(res)
	if len(crashed) != 1 {
		t.Fatalf("script crashes %v, want one member", crashed)
	}
	for _, e := range res.Eras {
		var names []string
		pids := map[int]bool{}
		for _, p := range e.Processes {
			names = append(names, p.Member)
			pids[p.PID] = true
			if p.Stop != "stop" || p.ExitCode != 0 || p.Signal != "" {
				t.Errorf("%s: %s (pid %d) ended %+v, want exit status 0 after its stdin closed", e.Era, p.Member, p.PID, p)
			}
		}
		slices.Sort(names)
		if fmt.Sprint(names) != "[pool0 pool1]" || len(pids) != 2 {
			t.Errorf("%s: processes %+v, want pool0 and pool1 with distinct pids", e.Era, e.Processes)
		}
		recs := map[string]int{}
		var stopAt int64 = -1
		var after []timeline.Record
		for _, r := range e.Records {
			recs[r.Member]++
			if !crashed[r.Member] {
				continue
			}
			switch {
			case r.Kind == timeline.MemberStop && r.How == "crash":
				stopAt = r.TsMs
			case r.Kind == timeline.MemberStart:
				stopAt = -1 // its restart
			case stopAt >= 0:
				after = append(after, r)
			}
		}
		if len(after) > 0 {
			t.Errorf("%s: the crashed member wrote after its member_stop{crash}: %+v", e.Era, after)
		}
		for i := 1; i <= 4; i++ {
			if m := fmt.Sprintf("m%d", i); recs[m] < 3 {
				t.Errorf("%s: %s has %d records, want its start, join and assignment at least", e.Era, m, recs[m])
			}
		}
		if len(e.Errors) > 0 {
			t.Errorf("%s: runner errors %v", e.Era, e.Errors)
		}
	}
}
