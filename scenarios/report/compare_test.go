package report

import (
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
)

// TestRenderBrokerComparison: a figure equal on both brokers shows once, one that differs shows both
// values (ours / kafka); n/a stays n/a; an era that did not run on one broker is left out.
func TestRenderBrokerComparison(t *testing.T) {
	run := func(broker, kafkaVersion string, stable, revocations int64, staticRan bool) *RunResult {
		r := &RunResult{Scenario: "herd-effect", Broker: broker, Versions: map[string]string{}}
		if kafkaVersion != "" {
			r.Versions["kafka"] = kafkaVersion
		}
		for _, era := range []string{"zk", "classic", "static"} {
			e := &EraRun{Era: era, Applies: era != "static" || staticRan}
			e.Result = figures.Result{Era: era, NotApplicable: figures.NotApplicable(era),
				Totals: figures.Figures{TimeToStableMs: stable, Revocations: revocations, RebalanceParticipants: 5}}
			r.Eras = append(r.Eras, e)
		}
		return r
	}
	var b strings.Builder
	if err := RenderBrokerComparison(&b, run("rebalancelab", "", 369, 24, true), run("kafka", "3.9.2", 292, 24, false)); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	lines := strings.Split(got, "\n")
	fields := func(prefix string) []string {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix+" ") {
				return strings.Fields(l)
			}
		}
		t.Fatalf("no %s line in:\n%s", prefix, got)
		return nil
	}
	if !strings.HasPrefix(lines[0], "herd-effect on rebalancelab / kafka 3.9.2") {
		t.Fatalf("header %q", lines[0])
	}
	if f := fields("figure"); strings.Join(f, " ") != "figure zk classic" {
		t.Fatalf("columns %v: want zk and classic (static did not run on kafka)", f)
	}
	if f := fields("time_to_stable_ms"); strings.Join(f, " ") != "time_to_stable_ms 369 / 292 369 / 292" {
		t.Fatalf("time_to_stable_ms row %v", f)
	}
	if f := fields("revocations"); strings.Join(f, " ") != "revocations 24 24" {
		t.Fatalf("revocations row %v", f)
	}
	if f := fields("group_requests"); f[1] != "n/a" {
		t.Fatalf("group_requests row %v: zk's is n/a", f)
	}
	if err := RenderBrokerComparison(&b, run("kafka", "3.9.2", 1, 1, true)); err == nil {
		t.Fatal("one run: no error")
	}
}
