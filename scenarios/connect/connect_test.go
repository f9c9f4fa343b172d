package connect

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

// TestConnectWorkers is issue 17's Connect must-show: real Kafka Connect 3.9 workers (ConnectDistributed
// JVMs) on the lab's broker go through the four layouts (1 worker with 1+1 tasks, 1 with 2+2, 2 and 3
// workers with 2+2), each seen by the coordinator's group observer as the `connect` protocol's
// assignments, evenly spread; the third worker is killed with -9 and, with the default sessioned
// protocol, its tasks wait scheduled.rebalance.max.delay.ms (3000) before they move, while the other
// workers' tasks never stop; every record the source produced is consumed by the sink.
func TestConnectWorkers(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Connect)
	if _, err := lab.FindConnectClasspath(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var progress strings.Builder
	res, err := Run(ctx, Options{Protocol: Sessioned, Dir: t.TempDir(), Progress: &progress})
	if res != nil {
		var b strings.Builder
		_ = res.WriteTable(&b)
		t.Log("\n" + b.String())
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if os.Getenv("CONNECT_TABLE") != "" {
		_ = res.WriteTable(os.Stdout)
	}
	var workers []int
	for _, l := range res.Layouts {
		workers = append(workers, len(l.Workers))
		if l.Protocol != Sessioned {
			t.Errorf("generation %d: protocol %q, want %q", l.Generation, l.Protocol, Sessioned)
		}
	}
	if !slices.Equal(workers, []int{1, 1, 2, 3}) {
		t.Errorf("layouts' workers %v, want [1 1 2 3]", workers)
	}
	for _, tp := range []string{"connect-lab-configs", "connect-lab-offsets", "connect-lab-status"} {
		if p := res.InternalTopics[tp]; p != "compact" {
			t.Errorf("%s: cleanup.policy %q, want compact", tp, p)
		}
	}
	if len(res.KilledTasks) == 0 {
		t.Errorf("the killed worker held nothing; want some of the 6 connectors and tasks")
	}
	if d := res.DepartureDelay; d <= 0 || d > 3000 {
		t.Errorf("the departure's scheduled delay %d ms, want (0, 3000]", d)
	}
	if moved := res.ReassignedMs - res.DepartureSeenMs; moved < int64(res.DepartureDelay)-250 || moved > int64(res.DepartureDelay)+1500 {
		t.Errorf("reassigned %d ms after the departure was seen, want the delay %d ms (-250, +1500)", moved, res.DepartureDelay)
	}
	if res.Missing != 0 || res.Produced == 0 {
		t.Errorf("produced %d, consumed %d, missing %d: want none missing", res.Produced, res.Consumed, res.Missing)
	}
	for _, r := range res.Relations {
		if !r.OK {
			t.Errorf("relation %q does not hold: %s", r.Relation, r.Got)
		}
	}
	if len(res.Errors) > 0 || !res.Passed() {
		t.Errorf("the run did not pass: errors %v", res.Errors)
	}
}
