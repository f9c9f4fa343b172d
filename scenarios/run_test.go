package scenarios

// Each scenario runs for real at small N (a real ZooKeeper, an in-process broker, real consumers) and
// must show its relations (catalog.go) on every era; no exact timing is asserted.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(testutil.Exit)) // Exit: removes the test binary (testutil.Binary)
}

// testEras are the eras the scenario tests run (REBALANCELAB_ERAS overrides, e.g. "zk").
func testEras() []string {
	if v := os.Getenv("REBALANCELAB_ERAS"); v != "" {
		return strings.Split(v, ",")
	}
	return []string{"all"}
}

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetLevel(logrus.FatalLevel)
	return logrus.NewEntry(l)
}

// small is the scenario's small size (Scenario.Small: what its test and `make kafka-scenarios` run),
// seed 1.
func small(t *testing.T, name string) spec.Params {
	t.Helper()
	sc, err := catalog.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	p := sc.Small
	p.Seed = 1
	return p
}

// runScenario runs name on this project's broker and fails the test unless every era ran, recorded no
// error (a fault that could not be injected, a member that could not start...), and every relation
// held, the fault-record relation (every scripted fault took effect) among them.
func runScenario(t *testing.T, name string, p spec.Params) *RunResult {
	t.Helper()
	return runScenarioOn(t, "", name, p)
}

// runScenarioOn is runScenario on the given broker implementation (lab.Broker*; "" the default).
func runScenarioOn(t *testing.T, broker, name string, p spec.Params) *RunResult {
	t.Helper()
	return runScenarioWith(t, name, p, func(o *Options) { o.Broker = broker })
}

// runScenarioWith is runScenario with Options changed by opt (eras, broker, members as processes).
func runScenarioWith(t *testing.T, name string, p spec.Params, opt func(o *Options)) *RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	// REBALANCELAB_REPORT=DIR keeps each scenario's report (DIR/<scenario>) for a look afterwards.
	var report string
	if dir := os.Getenv("REBALANCELAB_REPORT"); dir != "" {
		report = filepath.Join(dir, name)
	}
	o := Options{Scenario: name, Eras: testEras(), Params: p, Version: "test",
		Log: quietLog(), LabLog: quietLog(), Progress: &progress, ReportDir: report}
	opt(&o)
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("%s: %v\nprogress:\n%s", name, err, progress.String())
	}
	var table bytes.Buffer
	_ = res.WriteTable(&table)
	t.Logf("%s\n%s", name, table.String())
	sc, err := catalog.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Eras {
		if !e.Applies {
			if why, declared := sc.NotApplicable[spec.Era(e.Era)]; !declared || e.Reason != why {
				t.Errorf("%s: era %s did not run: %s", name, e.Era, e.Reason)
			}
			continue
		}
		if len(e.Relations) == 0 {
			t.Errorf("%s/%s: no relation checked", name, e.Era)
		}
		for _, rel := range e.Relations {
			if rel.Skipped {
				// Only cross-era relations skip, when the other era did not run.
				if len(res.Eras) > 1 {
					t.Errorf("%s/%s: %s skipped: %s", name, e.Era, rel.Relation, rel.Got)
				}
				continue
			}
			if !rel.OK {
				t.Errorf("%s/%s: relation %q does not hold: %s", name, e.Era, rel.Relation, rel.Got)
			}
		}
		for _, msg := range e.Errors {
			t.Errorf("%s/%s: the run recorded an error: %s", name, e.Era, msg)
		}
	}
	if !res.Passed() && !t.Failed() {
		t.Errorf("%s: the run did not pass: %v", name, res.Failures())
	}
	if t.Failed() {
		t.Logf("progress:\n%s", progress.String())
	}
	return res
}

func TestHerdEffect(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	res := runScenario(t, "herd-effect", small(t, "herd-effect"))
	// The JSON has docs/design.md's shape and the run's script.
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Scenario string            `json:"scenario"`
		Seed     int64             `json:"seed"`
		Params   map[string]any    `json:"params"`
		Versions map[string]string `json:"versions"`
		Script   []spec.Step       `json:"script"`
		Eras     []struct {
			Era    string `json:"era"`
			Totals map[string]int64
			Events []struct {
				Trigger string           `json:"trigger"`
				AtMs    int64            `json:"at_ms"`
				Figures map[string]int64 `json:"figures"`
			} `json:"events"`
			NotApplicable []string `json:"not_applicable"`
			Timeline      string   `json:"timeline"`
		} `json:"eras"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Scenario != "herd-effect" || doc.Seed != 1 || doc.Params["consumers"] != float64(2) || doc.Params["partitions"] != float64(4) {
		t.Errorf("json head: %+v", doc)
	}
	if doc.Versions["zookeeper"] != "3.8.0" || doc.Versions["rebalancelab"] != "test" {
		t.Errorf("versions %v", doc.Versions)
	}
	if !bytes.Equal(spec.FormatScript(doc.Script), spec.FormatScript(res.Script)) {
		t.Errorf("script in JSON differs")
	}
	for _, e := range doc.Eras {
		if len(e.Totals) != len(figures.FigureNames) {
			t.Errorf("%s: totals has %d figures, want %d", e.Era, len(e.Totals), len(figures.FigureNames))
		}
		var triggers []string
		for _, ev := range e.Events {
			triggers = append(triggers, ev.Trigger)
		}
		if strings.Join(triggers, ",") != "join,leave" {
			t.Errorf("%s: events %v, want join,leave", e.Era, triggers)
		}
		if len(e.NotApplicable) == 0 {
			t.Errorf("%s: no not_applicable list", e.Era)
		}
	}
	// Every member record carries the era and a scenario member name; the producer acked P partitions.
	for _, e := range res.Eras {
		parts := map[int32]bool{}
		for _, r := range e.Records {
			if r.Era != e.Era {
				t.Fatalf("%s: record of era %q", e.Era, r.Era)
			}
			if r.Kind == timeline.Produce {
				parts[*r.Partition] = true
			}
		}
		if len(parts) != 4 {
			t.Errorf("%s: produced to %d partitions, want 4", e.Era, len(parts))
		}
		if !e.Drained {
			t.Errorf("%s: not drained", e.Era)
		}
		if len(e.ShutdownRecords) == 0 || e.ShutdownRecords[0].Name != report.ScriptEndTrigger {
			t.Errorf("%s: shutdown records do not start with the shutdown trigger", e.Era)
		}
	}
}

func TestHerdJoin(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	runScenario(t, "herd-join", small(t, "herd-join"))
}

func TestConsumerCrash(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	runScenario(t, "consumer-crash", small(t, "consumer-crash"))
}

func TestSplitBrainZombie(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	runScenario(t, "split-brain-zombie", small(t, "split-brain-zombie"))
}

func TestSplitBrainDivergentViews(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	runScenario(t, "split-brain-divergent-views", small(t, "split-brain-divergent-views"))
}

func TestRollingRestart(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	runScenario(t, "rolling-restart", small(t, "rolling-restart"))
}

func TestZKQuorumLoss(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	runScenario(t, "zk-quorum-loss", small(t, "zk-quorum-loss"))
}

func TestStorm(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	runScenario(t, "storm", small(t, "storm"))
}

// The scenarios of Kafka's consumer system tests (catalog/consumer-*.yaml, static-*.yaml), each with its test's relation.

func TestConsumerBounceCleanRolling(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	runScenario(t, "consumer-bounce-clean-rolling", small(t, "consumer-bounce-clean-rolling"))
}

func TestConsumerBounceCleanAll(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	runScenario(t, "consumer-bounce-clean-all", small(t, "consumer-bounce-clean-all"))
}

func TestConsumerBounceHardRolling(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	runScenario(t, "consumer-bounce-hard-rolling", small(t, "consumer-bounce-hard-rolling"))
}

func TestConsumerBounceHardAll(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	res := runScenario(t, "consumer-bounce-hard-all", small(t, "consumer-bounce-hard-all"))
	// A crash commits nothing: every era re-delivers what the crashed members had not committed.
	for _, e := range res.Eras {
		if pos, consumed := e.Extra["consumed_position"], e.Extra["records_consumed"]; consumed <= pos {
			t.Errorf("%s: consumed %d, position %d: a hard bounce re-delivered nothing", e.Era, consumed, pos)
		}
	}
}

func TestStaticMemberBounce(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	res := runScenario(t, "static-member-bounce", small(t, "static-member-bounce"))
	if e := eraOf(res, "cooperative"); e == nil || e.Applies {
		t.Errorf("cooperative ran: Kafka's static bounce test is eager-only")
	}
}

func TestStaticFencing(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	res := runScenario(t, "static-fencing", small(t, "static-fencing"))
	if e := eraOf(res, "static"); e == nil || !e.Applies {
		t.Fatalf("the static era did not run")
	}
}

func TestConsumerFailure(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	runScenario(t, "consumer-failure", small(t, "consumer-failure"))
}

func TestConsumerFailureManualCommit(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	runScenario(t, "consumer-failure-manual-commit", small(t, "consumer-failure-manual-commit"))
}

// TestReportDir: --report writes index.html and a timeline per era that reads back to the records.
func TestReportDir(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{Scenario: "storm", Eras: []string{"zk"}, Params: spec.Params{Consumers: 2, Partitions: 2},
		ReportDir: dir, Log: quietLog(), LabLog: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	e := res.Eras[0]
	if e.Timeline != "timeline-zk.jsonl" {
		t.Fatalf("timeline name %q", e.Timeline)
	}
	f, err := os.Open(filepath.Join(dir, e.Timeline))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := timeline.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(e.Records)+len(e.ShutdownRecords) {
		t.Fatalf("file has %d records, run %d+%d", len(recs), len(e.Records), len(e.ShutdownRecords))
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte(`data-era="zk"`)) || !bytes.Contains(page, []byte("storm")) {
		t.Fatal("index.html lacks the era or the scenario")
	}
}

// TestCancel: a cancelled context stops the run promptly and cleans up (goleak checks the rest).
func TestCancel(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := &cancelAt{at: "step 2/", cancel: cancel}
	start := time.Now()
	res, err := Run(ctx, Options{Scenario: "herd-effect", Eras: []string{"zk", "classic"}, Params: spec.Params{Consumers: 2, Partitions: 2},
		Log: quietLog(), LabLog: quietLog(), Progress: progress})
	if err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// The zk era was cut at its second step; classic never started: the run does not pass and says so.
	if !res.Interrupted || !res.Eras[0].Interrupted || res.Eras[0].NotRun || !res.Eras[1].NotRun || res.Eras[1].Interrupted {
		t.Errorf("interrupted %v; zk interrupted %v, not run %v; classic interrupted %v, not run %v", res.Interrupted,
			res.Eras[0].Interrupted, res.Eras[0].NotRun, res.Eras[1].Interrupted, res.Eras[1].NotRun)
	}
	if f := res.Failures(); len(f) != 1 || f[0] != "interrupted: zk did not finish, classic did not run" {
		t.Errorf("failures %q", f)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("cancelled run took %v", d)
	}
}

// cancelAt is a progress writer that cancels the run as the line containing at is written: the
// cancellation lands at that step, with nothing polling the output.
type cancelAt struct {
	at     string
	cancel context.CancelFunc
	mu     sync.Mutex
	b      bytes.Buffer
}

func (c *cancelAt) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.b.Write(p)
	if strings.Contains(c.b.String(), c.at) {
		c.cancel()
	}
	return n, err
}

// TestFIDStallTimeSplitBrainZombie: in split-brain-zombie the zombie's coordination-link stall lasts
// what the script says in the zk era and in a coordinator era alike: from the fault record that starts
// it to the next fault record on the same link (its end), within max(100 ms, 2%) of the scripted
// delay before the heal. The records are stamped by the member's proxies (when the fault really took
// effect), and the era's fault windows are computed from them.
func TestFIDStallTimeSplitBrainZombie(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := Run(ctx, Options{Scenario: "split-brain-zombie", Eras: []string{"zk", "classic"},
		Params: spec.Params{Consumers: 2, Partitions: 2, Seed: 1}, Version: "test", Log: quietLog(), LabLog: quietLog(), Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	var scripted int64 = -1
	for i, st := range res.Script {
		if st.Action == spec.ActHeal && i > 0 && res.Script[i-1].Action == spec.ActStall {
			scripted = st.DelayMs
		}
	}
	if scripted <= 0 {
		t.Fatalf("no stall followed by a heal in the script %+v", res.Script)
	}
	tol := max(100, scripted/50)
	for _, e := range res.Eras {
		var begin *timeline.Record
		var lasted int64 = -1
		for i := range e.Records {
			r := &e.Records[i]
			if r.Kind != timeline.Fault {
				continue
			}
			if begin == nil && r.Action == "stall" {
				begin = r
				continue
			}
			if begin != nil && r.Target == begin.Target {
				lasted = r.TsMs - begin.TsMs
				break
			}
		}
		if begin == nil || lasted < 0 {
			t.Errorf("%s: no stall with an end among the fault records", e.Era)
			continue
		}
		t.Logf("%s: %s stalled %d ms (scripted %d); duplicates %d", e.Era, begin.Target, lasted, scripted, e.Result.Totals.Duplicates)
		if d := lasted - scripted; d > tol || d < -tol {
			t.Errorf("%s: %s stalled %d ms by its records; scripted %d ms (|Δ| %d > %d)", e.Era, begin.Target, lasted, scripted, max(d, -d), tol)
		}
		// The era's fault windows are those records': one stall, begin to end.
		if f := e.Result.Faults; len(f) != 1 || f[0].Action != "stall" || f[0].Target != begin.Target || f[0].Open ||
			f[0].DurationMs != lasted || f[0].StartMs != begin.TsMs-e.Records[0].TsMs {
			t.Errorf("%s: fault windows %+v; want one stall of %s from %d ms lasting %d ms", e.Era, f, begin.Target,
				begin.TsMs-e.Records[0].TsMs, lasted)
		}
	}
}
