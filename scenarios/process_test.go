package scenarios

import (
	"sort"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

func asProcesses(t *testing.T, eras ...string) func(o *Options) {
	bin := testutil.Binary(t)
	return func(o *Options) {
		o.Eras, o.MembersAs, o.MemberBinary = eras, MembersAsProcesses, bin
	}
}

// starts counts the script's start steps per member.
func starts(script []spec.Step) map[string]int {
	n := map[string]int{}
	for _, st := range script {
		if st.Action == spec.ActStart {
			n[st.Member]++
		}
	}
	return n
}

// TestConsumerCrashAsProcesses: consumer-crash on the zk and classic eras with every member its own
// `rebalancelab member` process. The crashed member's process was really killed with -9 — its wait
// status says SIGKILL, and the runner asked for exactly that — while every other process stopped on
// SIGTERM with exit status 0; one process per member; the timeline holds the crashed member's records
// up to its member_stop{crash} and none after; and every relation of the scenario holds (the time to
// stable at least the session timeout less one liveness interval: the kill sends no goodbye).
func TestConsumerCrashAsProcesses(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	res := runScenarioWith(t, "consumer-crash", spec.Params{Consumers: 2, Partitions: 4, Seed: 1}, asProcesses(t, "zk", "classic"))
	if res.MembersAs != MembersAsProcesses || res.ParamsMap()["members_as"] != MembersAsProcesses {
		t.Fatalf("members as %q, params %v", res.MembersAs, res.ParamsMap()["members_as"])
	}
	crashed := crashedIn(res)
	if len(crashed) != 1 {
		t.Fatalf("script crashes %v, want one member", crashed)
	}
	for _, e := range res.Eras {
		if len(e.Processes) != 2 {
			t.Errorf("%s: %d processes %+v, want 2 (one per member)", e.Era, len(e.Processes), e.Processes)
		}
		pids := map[int]bool{}
		for _, p := range e.Processes {
			pids[p.PID] = true
			if crashed[p.Member] {
				if p.Stop != "sigkill" || p.Signal != "SIGKILL" || p.ExitCode != -1 || p.Status != "signal: killed" {
					t.Errorf("%s: crashed %s's process ended %+v, want killed by SIGKILL on the runner's request", e.Era, p.Member, p)
				}
				continue
			}
			if p.Stop != "sigterm" || p.Signal != "" || p.ExitCode != 0 {
				t.Errorf("%s: %s's process ended %+v, want exit status 0 after SIGTERM", e.Era, p.Member, p)
			}
		}
		if len(pids) != len(e.Processes) {
			t.Errorf("%s: processes share a pid: %+v", e.Era, e.Processes)
		}
		var stopAt int64 = -1
		var after []timeline.Record
		for _, r := range e.Records {
			if !crashed[r.Member] {
				continue
			}
			switch {
			case r.Kind == timeline.MemberStop:
				if r.How != "crash" || stopAt >= 0 {
					t.Errorf("%s: %s member_stop %q (second: %v)", e.Era, r.Member, r.How, stopAt >= 0)
				}
				stopAt = r.TsMs
			case stopAt >= 0:
				after = append(after, r)
			}
		}
		if stopAt < 0 || len(after) > 0 {
			t.Errorf("%s: crashed member's member_stop at %d, records after it: %+v", e.Era, stopAt, after)
		}
		if len(e.Errors) > 0 {
			t.Errorf("%s: runner errors %v", e.Era, e.Errors)
		}
	}
}

// TestRollingRestartAsProcesses: rolling-restart on the zk and classic eras with members as processes
// maps each restart onto a real process stop (SIGTERM, exit status 0) and a new process under the
// same member name: 2N processes, two per member with distinct pids, every relation holding (each
// restart rebalances the whole group twice).
func TestRollingRestartAsProcesses(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	res := runScenarioWith(t, "rolling-restart", spec.Params{Consumers: 2, Partitions: 4, Seed: 1}, asProcesses(t, "zk", "classic"))
	want := starts(res.Script)
	for _, e := range res.Eras {
		got := map[string][]int{}
		for _, p := range e.Processes {
			got[p.Member] = append(got[p.Member], p.PID)
			if p.Stop != "sigterm" || p.ExitCode != 0 || p.Signal != "" {
				t.Errorf("%s: %s's process %d ended %+v, want exit status 0 after SIGTERM", e.Era, p.Member, p.PID, p)
			}
		}
		var names []string
		for m, n := range want {
			names = append(names, m)
			pids := got[m]
			sort.Ints(pids)
			distinct := len(pids) == n
			for i := 1; i < len(pids); i++ {
				distinct = distinct && pids[i] != pids[i-1]
			}
			if n != 2 || !distinct {
				t.Errorf("%s: %s started %d times, processes %v", e.Era, m, n, pids)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: processes of %v, want of %s", e.Era, got, strings.Join(names, ","))
		}
	}
}

// TestSplitBrainZombieAsProcesses: the link faults of split-brain-zombie (the zombie's coordination link
// stalled past its session while its fetch link stays up, then healed) reach member processes through
// the runner's proxies (--route): the stall's begin and end are recorded on the zombie's link, and every
// relation holds on the zk and classic eras (two owners at once; zk's stale commits land, classic's are
// fenced).
func TestSplitBrainZombieAsProcesses(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	res := runScenarioWith(t, "split-brain-zombie", spec.Params{Consumers: 2, Partitions: 4, Seed: 1}, asProcesses(t, "zk", "classic"))
	for _, e := range res.Eras {
		link := map[string]string{"zk": "zookeeper", "classic": "coordinator"}[e.Era]
		phases := map[string]int{}
		for _, r := range e.Records {
			if r.Kind == timeline.Fault && r.Action == "stall" && strings.HasSuffix(r.Target, "/"+link) {
				phases[r.Phase]++
			}
		}
		if phases[timeline.FaultBegin] != 1 || phases[timeline.FaultEnd] != 1 {
			t.Errorf("%s: stall records on the %s link by phase %v, want one begin and one end", e.Era, link, phases)
		}
		if len(e.Processes) != 2 {
			t.Errorf("%s: processes %+v, want 2", e.Era, e.Processes)
		}
	}
}
