package report

import (
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// TestSweepTableCut: an era cut above its largest N (EraMaxN) prints "cut" in its cells above it and a
// "stopped" line; the timings are named.
func TestSweepTableCut(t *testing.T) {
	cut := map[string]int{"cooperative": 64, "static": 64}
	s := &SweepResult{Scenario: "herd-join", Trigger: "join", EraMaxN: cut, Timings: TimingName(false, spec.LabTiming())}
	for _, n := range []int{64, 256} {
		z := &SweepSize{N: n}
		figs := map[string]figures.Figures{"zk": {TimeToStableMs: int64(n)}, "classic": {TimeToStableMs: 300}}
		if n <= 64 {
			figs["cooperative"] = figures.Figures{TimeToStableMs: 900}
		}
		z.Runs = append(z.Runs, fakeRun(n, figs))
		s.Sizes = append(s.Sizes, z)
	}
	var b strings.Builder
	if err := s.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"stopped: cooperative at N=64, cut above it (--era-max-consumers)",
		"reached: zk N=256 (1 run(s)), classic N=256 (1 run(s)), cooperative N=64 (1 run(s))\n",
		"time_to_stable_ms [the lab's short sessions] (ms): N=64:", "time_to_stable_ms [the lab's short sessions]: ",
		", timings: the lab's short sessions: zookeeper.session.timeout.ms 2000, session.timeout.ms 2000:"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == figures.FigTimeToStableMs && f[1] == "cooperative" {
			row = l
		}
		if f := strings.Fields(l); len(f) > 2 && f[0] == figures.FigZKReads && f[1] == "cooperative" {
			t.Errorf("a row of zk_reads for cooperative (n/a, then cut): %q", l)
		}
	}
	if f := strings.Fields(row); len(f) != 6 || f[2] != "900" || f[5] != "cut" {
		t.Errorf("cooperative's time_to_stable_ms row %q: want its N=256 cell cut", row)
	}
}

// TestSplitBrainLines: a run's table has a line per era with its split brain, naming the timings, the
// zk era's zombie commits "n/a rejected"; none without a split brain.
func TestSplitBrainLines(t *testing.T) {
	r := &RunResult{Scenario: "split-brain-zombie", Params: spec.Params{Consumers: 2, Partitions: 4}, Timing: spec.LabTiming()}
	for _, era := range []string{"zk", "classic"} {
		tot := figures.Figures{ConcurrentOwnerMs: 8166, MaxConcurrentOwners: 2, Duplicates: 154, StaleCommitsApplied: 2}
		if era == "classic" {
			tot = figures.Figures{ConcurrentOwnerMs: 6600, MaxConcurrentOwners: 2, Duplicates: 134, StaleCommitsRejected: 2}
		}
		r.Eras = append(r.Eras, &EraRun{Era: era, Applies: true, Result: figures.Result{Era: era, NotApplicable: figures.NotApplicable(era), Totals: tot}})
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"split brain zk: concurrent_owner_ms 8166 (2 members at most; the lab's short sessions: zookeeper.session.timeout.ms 2000, session.timeout.ms 2000), 154 records delivered again, zombie commits 2 applied / n/a rejected (nothing in the era can refuse one)\n",
		"split brain classic: concurrent_owner_ms 6600 (2 members at most; the lab's short sessions: zookeeper.session.timeout.ms 2000, session.timeout.ms 2000), 134 records delivered again, zombie commits 0 applied / 2 rejected\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	for _, e := range r.Eras {
		e.Result.Totals.MaxConcurrentOwners = 1
	}
	b.Reset()
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "split brain") {
		t.Errorf("no split brain, yet a split-brain line:\n%s", b.String())
	}
}

// TestNoEraAppliesFails: a run whose requested eras all do not apply measured nothing and checked no
// relation: it does not pass, and its verdict and failures say why, era by era.
func TestNoEraAppliesFails(t *testing.T) {
	r := &RunResult{Scenario: "zk-quorum-loss", Eras: []*EraRun{
		{Era: "static", Reason: "an external ZooKeeper ensemble (--zk) cannot be stopped"},
	}}
	want := "no requested era applies: static: an external ZooKeeper ensemble (--zk) cannot be stopped"
	if r.Passed() {
		t.Error("a run where no era applies passed")
	}
	if f := r.Failures(); len(f) != 1 || f[0] != want {
		t.Errorf("failures %q, want [%q]", f, want)
	}
	if v := r.Verdict(); v != "result: FAIL ("+want+")" {
		t.Errorf("verdict %q", v)
	}
	r.Eras = append(r.Eras, &EraRun{Era: "zk", Applies: true})
	if !r.Passed() || r.Verdict() != "result: PASS (relations: 0 held, 0 failed, 0 skipped (not measured); errors: 0)" {
		t.Errorf("with an era that applies: passed %v, verdict %q", r.Passed(), r.Verdict())
	}
}

// TestInterruptedRunFails: a run cancelled (Ctrl-C) while its first era created its topic, before the
// second era started, does not pass: its verdict and failures say it was interrupted and how far it
// got, and its table shows no figure column for an era that measured nothing.
func TestInterruptedRunFails(t *testing.T) {
	r := &RunResult{Scenario: "herd-join", Seed: 1, Params: spec.Params{Consumers: 4, Partitions: 8}, Broker: "rebalancelab",
		Interrupted: true, Eras: []*EraRun{
			{Era: "zk", Applies: true, Interrupted: true},
			{Era: "classic", Applies: true, NotRun: true},
			{Era: "static", Reason: "no static members here"},
		}}
	want := "interrupted: zk did not finish, classic did not run"
	if r.Passed() {
		t.Error("an interrupted run passed")
	}
	if f := r.Failures(); len(f) != 1 || f[0] != want {
		t.Errorf("failures %q, want [%q]", f, want)
	}
	verdict := "result: FAIL (" + want + "; relations: 0 held, 0 failed, 0 skipped (not measured); errors: 0)"
	if v := r.Verdict(); v != verdict {
		t.Errorf("verdict %q, want %q", v, verdict)
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	table := "herd-join (seed 1, 4 consumers, 8 partitions, broker rebalancelab)\n" +
		"zk: interrupted before it measured anything\n" +
		"classic: not run: the run was interrupted before it\n" +
		"static: not applicable: no static members here\n" +
		verdict + "\n"
	if b.String() != table {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), table)
	}
	var js strings.Builder
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"passed": false`, `"interrupted": true`, `"not_run": true`, `"failures": [
    "` + want + `"`} {
		if !strings.Contains(js.String(), s) {
			t.Errorf("JSON lacks %s:\n%s", s, js.String())
		}
	}
	if strings.Contains(js.String(), `"totals"`) {
		t.Errorf("JSON has totals for eras that measured nothing:\n%s", js.String())
	}

	// An era interrupted after it recorded something shows what it measured, and says so.
	r.Eras[0].Records = []timeline.Record{{TsMs: 1, Kind: timeline.Trigger, Name: "join"}}
	r.Eras[0].Result = figures.Result{Era: "zk"}
	b.Reset()
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "figure") || !strings.Contains(b.String(), "zk: interrupted: its figures are what was measured until then\n") {
		t.Errorf("table of an era interrupted after it measured:\n%s", b.String())
	}
	if strings.Contains(b.String(), "classic  ") {
		t.Errorf("a figure column for an era that did not run:\n%s", b.String())
	}
}

// TestWriteRelations: one line a relation: its mark, the era padded to 12, the relation and what was got.
func TestWriteRelations(t *testing.T) {
	var b strings.Builder
	WriteRelations(&b, "zk", []RelationResult{
		{Relation: "a < b", Got: "1 < 2", OK: true},
		{Relation: "c", Got: "3", Skipped: true},
		{Relation: "d", Got: "4"},
	})
	want := "ok   zk           a < b: 1 < 2\nskip zk           c: 3\nFAIL zk           d: 4\n"
	if b.String() != want {
		t.Errorf("got:\n%q\nwant:\n%q", b.String(), want)
	}
}
