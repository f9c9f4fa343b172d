package scenarios

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// TestPoolMembersChoice: above MaxInProcessMembers members, a run whose caller chose nothing runs them
// in pools of AutoMembersPerProcess; an explicit choice stands; goroutines above the bound are refused.
func TestPoolMembersChoice(t *testing.T) {
	cases := []struct {
		name       string
		n          int
		o          Options
		hosts      int
		wantK      int
		wantAs     string
		wantErrSub string
	}{
		{name: "in process at the bound", n: MaxInProcessMembers, wantK: 0, wantAs: ""},
		{name: "pools above the bound", n: MaxInProcessMembers + 1, wantK: AutoMembersPerProcess, wantAs: MembersAsProcesses},
		{name: "N=256", n: 256, wantK: 64, wantAs: MembersAsProcesses},
		{name: "explicit K stands", n: 256, o: Options{MembersPerProcess: 10, MembersAs: MembersAsProcesses}, wantK: 10, wantAs: MembersAsProcesses},
		{name: "one process per member as asked", n: 256, o: Options{MembersAs: MembersAsProcesses}, wantK: 0, wantAs: MembersAsProcesses},
		{name: "test hosts keep a process per member", n: 256, hosts: 2, o: Options{MembersAs: MembersAsProcesses}, wantK: 0, wantAs: MembersAsProcesses},
		{name: "goroutines refused above the bound", n: 201, o: Options{MembersAs: MembersAsGoroutines},
			wantErrSub: "--consumers 201: at most 200 members run as goroutines of one process"},
		{name: "Kafka's members are not pooled", n: 256, o: Options{Members: MembersKafka}, wantK: 0, wantAs: ""},
		{name: "goroutines at the bound", n: 200, o: Options{MembersAs: MembersAsGoroutines}, wantK: 0, wantAs: MembersAsGoroutines},
	}
	for _, c := range cases {
		k, as, err := PoolMembers(spec.Params{Consumers: c.n, Hosts: c.hosts}, c.o)
		if c.wantErrSub != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErrSub) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.wantErrSub)
			}
			continue
		}
		if err != nil || k != c.wantK || as != c.wantAs {
			t.Errorf("%s: PoolMembers = %d, %q, %v; want %d, %q", c.name, k, as, err, c.wantK, c.wantAs)
		}
	}
	// Run and RunSweep refuse goroutine members above the bound before anything starts (a sweep before
	// its smaller sizes run).
	o := Options{Scenario: "herd-join", MembersAs: MembersAsGoroutines, Params: spec.Params{Consumers: 256}, Log: quietLog(), LabLog: quietLog()}
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "at most 200 members run as goroutines") {
		t.Errorf("Run, 256 goroutine members: error %v, want the bound", err)
	}
	if _, err := RunSweep(context.Background(), SweepOptions{Options: o, Sizes: []int{4, 256}}); err == nil ||
		!strings.Contains(err.Error(), "at most 200 members run as goroutines") {
		t.Errorf("RunSweep to 256 goroutine members: error %v, want the bound", err)
	}
	// The catalogue's scenarios take N=256 now (in pools), up to MaxMembers.
	for _, name := range []string{"herd-join", "storm"} {
		sc, err := catalog.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sc.ScriptFor(spec.Params{Consumers: 256, Partitions: 512}, spec.LabTiming()); err != nil {
			t.Errorf("%s at N=256: %v", name, err)
		}
		if _, err := sc.ScriptFor(spec.Params{Consumers: catalog.MaxMembers + 1, Partitions: 8}, spec.LabTiming()); err == nil ||
			!strings.Contains(err.Error(), "runs at most 10000 members") {
			t.Errorf("%s at N=%d: error %v, want the bound", name, catalog.MaxMembers+1, err)
		}
	}
}

// TestSweepPlan: the eras of each run of a size rotate (each first in turn over the repeats), an era
// cut above its largest N is left out, and P = K·N at each size.
func TestSweepPlan(t *testing.T) {
	eras := []string{"zk", "classic", "cooperative", "static"}
	cut := map[string]int{"cooperative": 64, "static": 64}
	want := [][]string{
		{"zk", "classic", "cooperative", "static"},
		{"classic", "cooperative", "static", "zk"},
		{"cooperative", "static", "zk", "classic"},
		{"static", "zk", "classic", "cooperative"},
		{"zk", "classic", "cooperative", "static"},
	}
	for i, w := range want {
		if got := SweepPlan(eras, cut, 64, i); !slices.Equal(got, w) {
			t.Errorf("N=64 run %d: eras %v, want %v", i, got, w)
		}
	}
	for i, w := range [][]string{{"zk", "classic"}, {"classic", "zk"}, {"zk", "classic"}} {
		if got := SweepPlan(eras, cut, 256, i); !slices.Equal(got, w) {
			t.Errorf("N=256 run %d: eras %v, want %v", i, got, w)
		}
	}
	if got := SweepPlan([]string{"cooperative"}, cut, 256, 0); got != nil {
		t.Errorf("every era cut: %v, want none", got)
	}
	for _, c := range []struct{ p, k, n, want int }{{64, 0, 256, 64}, {64, 2, 16, 64}, {64, 2, 256, 512}, {1, 3, 5, 15}} {
		if got := SweepPartitions(c.p, c.k, c.n); got != c.want {
			t.Errorf("SweepPartitions(%d, %d, %d) = %d, want %d", c.p, c.k, c.n, got, c.want)
		}
	}
}
