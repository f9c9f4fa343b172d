package scenarios

// The replay-equality test (issue #31): every recorded timeline under docs/figures/ is replayed through
// the figure code and compared with a committed golden (testdata/replay.golden.json), as are the
// verdict's inputs (testdata/verdict.golden.json: chapter 4's recorded sweep → FigureCells and
// Verdict). The golden is what the figure code gave when it was written; a refactoring of the figure
// code (moving it between packages, renaming its types) must leave every value equal.
//
// Regenerate after a deliberate change of the figures, with the code under test:
//
//	go test ./scenarios/ -run 'TestReplayGolden|TestVerdictGolden' -update
//
// and after a recorded timeline changed, with the figure code that wrote the goldens
// (goldenFigureCommit), over this checkout's timelines:
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

	"github.com/rebalancelab/rebalancelab/timeline"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/replay.golden.json and testdata/verdict.golden.json from the current figure code")

const (
	replayGoldenPath  = "testdata/replay.golden.json"
	verdictGoldenPath = "testdata/verdict.golden.json"
	figuresDir        = "../docs/figures"
	// goldenFigureCommit is the commit whose figure code wrote the goldens: a changed recorded
	// timeline needs goldens from that code (scripts/replay-golden.sh goldenFigureCommit), not from
	// the code under test.
	goldenFigureCommit = "3c2f627"
)

// goldenTimeline is one recorded timeline's figures as the figure code gave them.
type goldenTimeline struct {
	File   string `json:"file"`   // relative to docs/figures
	SHA256 string `json:"sha256"` // of the file's bytes
	Era    string `json:"era"`
	// Scenario is the run's scenario (result.json), "" for a chapter's excerpt (docs/gen).
	Scenario string `json:"scenario,omitempty"`
	Records  int    `json:"records"` // replayed: up to the shutdown trigger
	Result   Result `json:"result"`
	// Trace is the sha256 of the replay's trace (what the HTML page draws), printed with %v.
	Trace string `json:"trace"`
	// Extra: the scenario's extra counters (Scenario.Extra); Relations: its relations (and the
	// invariant and fault relations) checked on the run rebuilt from result.json.
	Extra     map[string]int64 `json:"extra,omitempty"`
	Relations []RelationResult `json:"relations,omitempty"`
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

// traceDigest is the sha256 of tr printed with %v (maps print sorted; no type or field names, so a
// move of the trace's type to another package keeps the digest).
func traceDigest(tr *trace) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%v", *tr)))
	return hex.EncodeToString(sum[:])
}

// replayRecorded replays every recorded timeline under docs/figures: each scenario directory's
// timeline-<era>.jsonl with its result.json (the scenario, params, timing and script the run used;
// the figures cover the records up to the shutdown trigger, as the runner's do), and the chapters'
// excerpts (ch2-rebalance-c1.jsonl, ch3-timeline.jsonl: no options, the era their records carry).
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
			res, tr := compute(e.Records, e.Era, e.Options)
			e.Result = res
			if sc.Extra != nil {
				e.Extra = sc.Extra(e)
			}
			run.Eras = append(run.Eras, e)
			rel, _ := filepath.Rel(figuresDir, path)
			out = append(out, goldenTimeline{File: filepath.ToSlash(rel), SHA256: sum, Era: e.Era, Scenario: rr.Scenario,
				Records: len(scen), Result: res, Trace: traceDigest(tr), Extra: e.Extra})
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
	for _, name := range []string{"ch2-rebalance-c1.jsonl", "ch3-timeline.jsonl"} {
		path := filepath.Join(figuresDir, name)
		sum, b := fileSHA256(t, path)
		recs := parseTimeline(t, path, b)
		if len(recs) == 0 {
			t.Fatalf("%s: no records", path)
		}
		era := recs[0].Era
		res, tr := compute(recs, era, FigureOptions{})
		out = append(out, goldenTimeline{File: name, SHA256: sum, Era: era, Records: len(recs), Result: res, Trace: traceDigest(tr)})
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

// TestReplayGolden: every recorded timeline under docs/figures replays to the golden's figures (events,
// start, totals, not-applicable figures, final owners, fault windows, warnings), trace, extra counters
// and relation results. A timeline whose bytes changed since the golden was written is named, with the
// way to regenerate the golden.
func TestReplayGolden(t *testing.T) {
	got := replayRecorded(t)
	if *updateGolden {
		if err := os.WriteFile(replayGoldenPath, marshalGolden(t, got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d timelines", replayGoldenPath, len(got))
		return
	}
	var want []goldenTimeline
	readJSON(t, replayGoldenPath, &want)
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
			t.Errorf("timeline %s (era %s): the figures differ from the golden:\n%s", g.File, g.Era, firstDiff(string(wb), string(gb)))
		}
	}
	for _, w := range want {
		if !gotFiles[w.File] {
			t.Errorf("timeline %s is in the golden but no longer under docs/figures: regenerate the golden with the figure code of commit %s: scripts/replay-golden.sh %s", w.File, goldenFigureCommit, goldenFigureCommit)
		}
	}
	if len(got) < 29 {
		t.Errorf("replayed %d timelines, want every recorded one (29 at the golden's writing)", len(got))
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
