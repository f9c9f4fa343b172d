package scenarios

// The replay-equality test's scenario half (issue #31): the scenarios' extra counters and relations
// checked on every recorded run under docs/figures/ (the run rebuilt from its result.json and its
// timelines, the figures computed by scenarios/figures, whose own golden test covers them), against
// testdata/relations.golden.json; and the verdict's inputs (testdata/verdict.golden.json: chapter 4's
// recorded sweep → FigureCells and Verdict). The goldens are what the code of goldentest.Commit gave,
// before the figure code moved out of this package; they may carry the figures' fields too, which
// this test ignores.
//
// Regenerate after a deliberate change, with the code under test:
//
//	go test ./scenarios/ -run 'TestRelationsGolden|TestVerdictGolden' -update
//
// and after a recorded timeline changed, with the code that wrote the goldens, over this checkout's
// timelines:
//
//	scripts/replay-golden.sh <goldentest.Commit>

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/figures/goldentest"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/relations.golden.json and testdata/verdict.golden.json from the current code")

const (
	relationsGoldenPath = "testdata/relations.golden.json"
	verdictGoldenPath   = "testdata/verdict.golden.json"
	figuresDir          = "../docs/figures"
)

// goldenTimeline is one recorded run's era: its extra counters and relations as the code gave them.
type goldenTimeline struct {
	File     string `json:"file"`   // the era's timeline, relative to docs/figures
	SHA256   string `json:"sha256"` // of the timeline's bytes
	Era      string `json:"era"`
	Scenario string `json:"scenario,omitempty"`
	// Extra: the scenario's extra counters (Scenario.Extra); Relations: its relations (and the
	// invariant and fault relations) checked on the run rebuilt from result.json.
	Extra     map[string]int64        `json:"extra,omitempty"`
	Relations []report.RelationResult `json:"relations,omitempty"`
}

// recordedResult is the part of a recorded result.json the replay needs.
type recordedResult struct {
	Scenario string         `json:"scenario"`
	Seed     int64          `json:"seed"`
	Params   map[string]any `json:"params"`
	Script   []spec.Step    `json:"script"`
	Eras     []struct {
		Era          string                 `json:"era"`
		Applies      bool                   `json:"applies"`
		Topic        string                 `json:"topic"`
		Timeline     string                 `json:"timeline"`
		EndOwners    map[string]string      `json:"end_owners"`
		Durability   []report.ProducerCheck `json:"durability"`
		ZKCrosscheck *report.ZKCrosscheck   `json:"zk_crosscheck"`
		GaveUp       []string               `json:"gave_up"`
		Drained      bool                   `json:"drained"`
	} `json:"eras"`
}

func (r recordedResult) intParam(t *testing.T, key string) int64 {
	t.Helper()
	v, ok := r.Params[key].(float64)
	if !ok {
		t.Fatalf("%s: params[%q] is %v, want a number", r.Scenario, key, r.Params[key])
	}
	return int64(v)
}

// timing is the run's timing: the lab's or Kafka's defaults with the values the result records.
func (r recordedResult) timing(t *testing.T) spec.Timing {
	tm := spec.LabTiming()
	if kd, _ := r.Params["kafka_defaults"].(bool); kd {
		tm = spec.KafkaTiming()
	}
	tm.ZKSessionTimeoutMs = r.intParam(t, "zookeeper.session.timeout.ms")
	tm.RebalanceBackoffMs = r.intParam(t, "rebalance.backoff.ms")
	tm.SessionTimeoutMs = r.intParam(t, "session.timeout.ms")
	tm.HeartbeatIntervalMs = r.intParam(t, "heartbeat.interval.ms")
	tm.ProduceIntervalMs = r.intParam(t, "produce_interval_ms")
	return tm
}

// replayRecorded rebuilds every recorded run under docs/figures: each scenario directory's
// timeline-<era>.jsonl with its result.json (the scenario, params, timing and script the run used;
// the figures cover the records up to the shutdown trigger, as the runner's do), and checks the
// scenario's relations on it.
func replayRecorded(t *testing.T) []goldenTimeline {
	t.Helper()
	var out []goldenTimeline
	dirs, err := filepath.Glob(filepath.Join(figuresDir, "*", "result.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recorded results under %s (%v)", figuresDir, err)
	}
	sort.Strings(dirs)
	for _, resPath := range dirs {
		dir := filepath.Dir(resPath)
		var rr recordedResult
		goldentest.ReadJSON(t, resPath, &rr)
		sc, err := catalog.Lookup(rr.Scenario)
		if err != nil {
			t.Fatalf("%s: %v", resPath, err)
		}
		p := spec.Params{Consumers: int(rr.intParam(t, "consumers")), Partitions: int(rr.intParam(t, "partitions")), Seed: rr.Seed}
		if h, ok := rr.Params["hosts"].(float64); ok {
			p.Hosts = int(h)
		}
		run := &RunResult{Scenario: rr.Scenario, Seed: rr.Seed, Params: p, Timing: rr.timing(t), Script: rr.Script}
		for _, re := range rr.Eras {
			if !re.Applies {
				continue
			}
			path := filepath.Join(dir, re.Timeline)
			sum, all := goldentest.ReadTimeline(t, path)
			scen, _ := splitAtShutdown(all)
			parts := make([]int32, p.Partitions)
			for i := range parts {
				parts[i] = int32(i)
			}
			e := &EraRun{Era: re.Era, Applies: true, Topic: re.Topic, Records: scen,
				Options: figures.FigureOptions{Partitions: map[string][]int32{re.Topic: parts}}, EndOwners: re.EndOwners,
				Durability: re.Durability, ZKCrosscheck: re.ZKCrosscheck, GaveUp: re.GaveUp, Drained: re.Drained}
			e.Result = figures.Compute(e.Records, e.Era, e.Options)
			if sc.Extra != nil {
				e.Extra = sc.Extra(e)
			}
			run.Eras = append(run.Eras, e)
			rel, _ := filepath.Rel(figuresDir, path)
			out = append(out, goldenTimeline{File: filepath.ToSlash(rel), SHA256: sum, Era: e.Era, Scenario: rr.Scenario,
				Extra: e.Extra})
		}
		checkRelations(run, sc)
		for i := range out {
			if out[i].Scenario != rr.Scenario || out[i].Relations != nil {
				continue
			}
			for _, e := range run.Eras {
				if e.Era == out[i].Era {
					out[i].Relations = e.Relations
				}
			}
		}
	}
	return out
}

// TestRelationsGolden: every recorded run under docs/figures gives the golden's extra counters and
// relation results, era by era. A timeline whose bytes changed since the golden was written is named,
// with the way to regenerate the golden.
func TestRelationsGolden(t *testing.T) {
	got := replayRecorded(t)
	if *updateGolden {
		if err := os.WriteFile(relationsGoldenPath, goldentest.Marshal(t, got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d timelines", relationsGoldenPath, len(got))
		return
	}
	var want []goldenTimeline
	goldentest.ReadJSON(t, relationsGoldenPath, &want)
	goldentest.Compare(t, got, want, "the extra counters or relations", func(w goldenTimeline) bool { return w.Scenario == "" })
	if len(got) < 27 {
		t.Errorf("rebuilt %d eras, want every recorded one (27 at the golden's writing)", len(got))
	}
}

// goldenVerdict is the verdict's inputs and output for one recorded sweep.
type goldenVerdict struct {
	File    string `json:"file"`
	SHA256  string `json:"sha256"`
	Cells   any    `json:"figure_cells"`
	Verdict any    `json:"verdict"`
	Lines   []string
}

// TestVerdictGolden: chapter 4's recorded sweep (the one TestSweepVerdictRecorded reads) gives the
// golden's FigureCells and Verdict.
func TestVerdictGolden(t *testing.T) {
	const name = "ch4-herd-sweep.json"
	path := filepath.Join(figuresDir, name)
	sum, _ := goldentest.ReadTimeline(t, path)
	s := recordedSweep(t, path)
	v := s.Verdict()
	got := goldenVerdict{File: name, SHA256: sum, Cells: s.FigureCells(), Verdict: v, Lines: v.Lines}
	gb := goldentest.Marshal(t, got)
	if *updateGolden {
		if err := os.WriteFile(verdictGoldenPath, gb, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var want goldenVerdict
	goldentest.ReadJSON(t, verdictGoldenPath, &want)
	if want.SHA256 != sum {
		t.Fatalf("sweep %s changed since the golden (sha256 %s, golden %s): regenerate the golden with the figure code of commit %s: scripts/replay-golden.sh %s",
			name, sum[:12], want.SHA256[:12], goldentest.Commit, goldentest.Commit)
	}
	// Compare through JSON: the golden's any fields decode as maps.
	var gotAny, wantAny any
	if err := json.Unmarshal(gb, &gotAny); err != nil {
		t.Fatal(err)
	}
	goldentest.ReadJSON(t, verdictGoldenPath, &wantAny)
	if g, w := goldentest.Marshal(t, gotAny), goldentest.Marshal(t, wantAny); !bytes.Equal(g, w) {
		t.Errorf("sweep %s: cells or verdict differ from the golden:\n%s", name, goldentest.FirstDiff(string(w), string(g)))
	}
}

// GoldenFile and GoldenSHA256 make an entry goldentest.Compare reads.
func (g goldenTimeline) GoldenFile() string   { return g.File }
func (g goldenTimeline) GoldenSHA256() string { return g.SHA256 }
