package scenarios

// The replay-equality test's scenario half (issue #31): the scenarios' extra counters and relations
// checked on every recorded run under docs/figures/ (the run rebuilt from its result.json and its
// timelines, the figures computed by scenarios/figures, whose own golden test covers them), against
// testdata/relations.golden.json; and the verdict's inputs (testdata/verdict.golden.json: chapter 4's
// recorded sweep → FigureCells and Verdict). The goldens are what the code of goldenFigureCommit gave,
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
//	scripts/replay-golden.sh <goldenFigureCommit>

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/timeline"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/relations.golden.json and testdata/verdict.golden.json from the current code")

const (
	relationsGoldenPath = "testdata/relations.golden.json"
	verdictGoldenPath   = "testdata/verdict.golden.json"
	figuresDir          = "../docs/figures"
	// goldenFigureCommit is the commit whose figure code wrote the goldens: a changed recorded
	// timeline needs goldens from that code (scripts/replay-golden.sh goldenFigureCommit), not from
	// the code under test.
	goldenFigureCommit = "3c2f627"
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
	Script   []Step         `json:"script"`
	Eras     []struct {
		Era          string            `json:"era"`
		Applies      bool              `json:"applies"`
		Topic        string            `json:"topic"`
		Timeline     string            `json:"timeline"`
		EndOwners    map[string]string `json:"end_owners"`
		Durability   []ProducerCheck   `json:"durability"`
		ZKCrosscheck *ZKCrosscheck     `json:"zk_crosscheck"`
		GaveUp       []string          `json:"gave_up"`
		Drained      bool              `json:"drained"`
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
func (r recordedResult) timing(t *testing.T) Timing {
	tm := LabTiming()
	if kd, _ := r.Params["kafka_defaults"].(bool); kd {
		tm = KafkaTiming()
	}
	tm.ZKSessionTimeoutMs = r.intParam(t, "zookeeper.session.timeout.ms")
	tm.RebalanceBackoffMs = r.intParam(t, "rebalance.backoff.ms")
	tm.SessionTimeoutMs = r.intParam(t, "session.timeout.ms")
	tm.HeartbeatIntervalMs = r.intParam(t, "heartbeat.interval.ms")
	tm.ProduceIntervalMs = r.intParam(t, "produce_interval_ms")
	return tm
}

func fileSHA256(t *testing.T, path string) (string, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), b
}

func parseTimeline(t *testing.T, path string, b []byte) []timeline.Record {
	t.Helper()
	recs, err := timeline.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return recs
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
		readJSON(t, resPath, &rr)
		sc, err := Lookup(rr.Scenario)
		if err != nil {
			t.Fatalf("%s: %v", resPath, err)
		}
		p := Params{Consumers: int(rr.intParam(t, "consumers")), Partitions: int(rr.intParam(t, "partitions")), Seed: rr.Seed}
		if h, ok := rr.Params["hosts"].(float64); ok {
			p.Hosts = int(h)
		}
		run := &RunResult{Scenario: rr.Scenario, Seed: rr.Seed, Params: p, Timing: rr.timing(t), Script: rr.Script}
		for _, re := range rr.Eras {
			if !re.Applies {
				continue
			}
			path := filepath.Join(dir, re.Timeline)
			sum, b := fileSHA256(t, path)
			scen, _ := splitAtShutdown(parseTimeline(t, path, b))
			parts := make([]int32, p.Partitions)
			for i := range parts {
				parts[i] = int32(i)
			}
			e := &EraRun{Era: re.Era, Applies: true, Topic: re.Topic, Records: scen,
				Options: FigureOptions{Partitions: map[string][]int32{re.Topic: parts}}, EndOwners: re.EndOwners,
				Durability: re.Durability, ZKCrosscheck: re.ZKCrosscheck, GaveUp: re.GaveUp, Drained: re.Drained}
			e.Result = Compute(e.Records, e.Era, e.Options)
			if sc.Extra != nil {
				e.Extra = sc.Extra(e)
			}
			run.Eras = append(run.Eras, e)
			rel, _ := filepath.Rel(figuresDir, path)
			out = append(out, goldenTimeline{File: filepath.ToSlash(rel), SHA256: sum, Era: e.Era, Scenario: rr.Scenario,
				Extra: e.Extra})
		}
		run.checkRelations(sc)
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

func marshalGolden(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestRelationsGolden: every recorded run under docs/figures gives the golden's extra counters and
// relation results, era by era. A timeline whose bytes changed since the golden was written is named,
// with the way to regenerate the golden.
func TestRelationsGolden(t *testing.T) {
	got := replayRecorded(t)
	if *updateGolden {
		if err := os.WriteFile(relationsGoldenPath, marshalGolden(t, got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d timelines", relationsGoldenPath, len(got))
		return
	}
	var want []goldenTimeline
	readJSON(t, relationsGoldenPath, &want)
	wantBy := map[string]goldenTimeline{}
	for _, w := range want {
		wantBy[w.File] = w
	}
	gotFiles := map[string]bool{}
	for _, g := range got {
		gotFiles[g.File] = true
		w, ok := wantBy[g.File]
		if !ok {
			t.Errorf("timeline %s is not in the golden: regenerate the golden with the figure code of commit %s: scripts/replay-golden.sh %s", g.File, goldenFigureCommit, goldenFigureCommit)
			continue
		}
		if w.SHA256 != g.SHA256 {
			t.Errorf("timeline %s changed since the golden (sha256 %s, golden %s): regenerate the golden with the figure code of commit %s: scripts/replay-golden.sh %s",
				g.File, g.SHA256[:12], w.SHA256[:12], goldenFigureCommit, goldenFigureCommit)
			continue
		}
		gb, wb := marshalGolden(t, g), marshalGolden(t, w)
		if !bytes.Equal(gb, wb) {
			t.Errorf("timeline %s (era %s): the extra counters or relations differ from the golden:\n%s", g.File, g.Era, firstDiff(string(wb), string(gb)))
		}
	}
	for _, w := range want {
		if !gotFiles[w.File] && w.Scenario != "" { // the chapters' excerpts are the figures' only
			t.Errorf("timeline %s is in the golden but no longer under docs/figures: regenerate the golden with the figure code of commit %s: scripts/replay-golden.sh %s", w.File, goldenFigureCommit, goldenFigureCommit)
		}
	}
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
	sum, _ := fileSHA256(t, path)
	s := recordedSweep(t, path)
	v := s.Verdict()
	got := goldenVerdict{File: name, SHA256: sum, Cells: s.FigureCells(), Verdict: v, Lines: v.Lines}
	gb := marshalGolden(t, got)
	if *updateGolden {
		if err := os.WriteFile(verdictGoldenPath, gb, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var want goldenVerdict
	readJSON(t, verdictGoldenPath, &want)
	if want.SHA256 != sum {
		t.Fatalf("sweep %s changed since the golden (sha256 %s, golden %s): regenerate the golden with the figure code of commit %s: scripts/replay-golden.sh %s",
			name, sum[:12], want.SHA256[:12], goldenFigureCommit, goldenFigureCommit)
	}
	// Compare through JSON: the golden's any fields decode as maps.
	var gotAny, wantAny any
	if err := json.Unmarshal(gb, &gotAny); err != nil {
		t.Fatal(err)
	}
	readJSON(t, verdictGoldenPath, &wantAny)
	if g, w := marshalGolden(t, gotAny), marshalGolden(t, wantAny); !bytes.Equal(g, w) {
		t.Errorf("sweep %s: cells or verdict differ from the golden:\n%s", name, firstDiff(string(w), string(g)))
	}
}

// firstDiff shows the first differing line of want and got, with a few lines of context.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			lo := max(0, i-3)
			return fmt.Sprintf("line %d:\n  golden: %s\n  got:    %s\ncontext (golden):\n%s", i+1, w, g, strings.Join(wl[lo:min(len(wl), i+3)], "\n"))
		}
	}
	return "(equal line by line)"
}
