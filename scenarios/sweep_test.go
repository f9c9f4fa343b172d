package scenarios

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// TestHerdSweep runs herd-effect at N = 4, 16, 64 for real: the zk era's reads per join grow faster
// than linearly (the growth exponent between the two largest sizes above 1.5) and reach at least N+1 per woken member; the coordinator
// era's ZooKeeper figures are not applicable.
func TestHerdSweep(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	s, err := RunSweep(ctx, SweepOptions{Options: Options{Scenario: "herd-effect", Eras: []string{"zk", "classic"},
		Params: spec.Params{Partitions: 64, Seed: 1}, Version: "test", Log: quietLog(), LabLog: quietLog()},
		Sizes: []int{4, 16, 64}, Deadline: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var tbl bytes.Buffer
	_ = s.WriteTable(&tbl)
	t.Logf("\n%s", tbl.String())
	for _, z := range s.Sizes {
		if z.Stopped != "" || len(z.Runs) != 1 {
			t.Fatalf("N=%d: stopped %q", z.N, z.Stopped)
		}
		reads, _ := s.Median(z, "zk", figures.FigZKReads)
		woken, _ := s.Median(z, "zk", figures.FigRebalanceParticipants)
		if woken != float64(z.N+1) || reads < woken*float64(z.N+1) {
			t.Errorf("N=%d: %v zk reads over %v woken members: want N+1 woken, at least N+1 reads each", z.N, reads, woken)
		}
		if _, ok := s.Median(z, "classic", figures.FigZKReads); ok {
			t.Errorf("N=%d: classic has zk_reads; want n/a", z.N)
		}
		if _, ok := s.Median(z, "classic", figures.FigGroupRequests); !ok {
			t.Errorf("N=%d: classic has no group_requests", z.N)
		}
	}
	f, ok := s.FitZKReads()
	if !ok || f.Exponent <= 1.5 {
		t.Errorf("zk reads per join: fit %+v ok=%v, want an exponent above 1.5", f, ok)
	}
}
