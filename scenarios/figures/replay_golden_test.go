package figures

// The replay-equality test (issue #31): every recorded timeline under docs/figures/ is replayed
// through the figure code and compared with a committed golden (testdata/replay.golden.json) that
// the figure code of goldentest.Commit wrote, before the figure code moved here from scenarios/: a
// refactoring of the figure code must leave every value equal. (The scenarios' relations and extra
// counters on the same timelines, and the sweep verdict's inputs, are scenarios/replay_golden_test.go's;
// a golden may carry their fields too, which this test ignores.)
//
// Regenerate after a deliberate change of the figures, with the code under test:
//
//	go test ./scenarios/figures/ -run TestReplayGolden -update
//
// and after a recorded timeline changed, with the figure code that wrote the goldens, over this
// checkout's timelines:
//
//	scripts/replay-golden.sh <goldentest.Commit>

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/figures/goldentest"
	"github.com/rebalancelab/rebalancelab/timeline"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/replay.golden.json from the current figure code")

const (
	replayGoldenPath = "testdata/replay.golden.json"
	figuresDir       = "../../docs/figures"
	// shutdownTrigger is the trigger the runner records when the script ended (scenarios'
	// scriptEndTrigger): a run's figures cover its timeline up to it.
	shutdownTrigger = "shutdown"
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
	// Trace is the sha256 of the replay's Trace (what the HTML page draws), printed with %v.
	Trace string `json:"trace"`
}

// recordedResult is the part of a recorded result.json the replay needs.
type recordedResult struct {
	Scenario string         `json:"scenario"`
	Params   map[string]any `json:"params"`
	Eras     []struct {
		Era      string `json:"era"`
		Applies  bool   `json:"applies"`
		Topic    string `json:"topic"`
		Timeline string `json:"timeline"`
	} `json:"eras"`
}

// beforeShutdown is recs up to the shutdown trigger (all of them without one).
func beforeShutdown(recs []timeline.Record) []timeline.Record {
	for i, rec := range recs {
		if rec.Kind == timeline.Trigger && rec.Name == shutdownTrigger {
			return recs[:i:i]
		}
	}
	return recs
}

// traceDigest is the sha256 of tr printed with %v: maps print sorted, and no type or field names,
// so a move or a rename of the trace's types keeps the digest. tr is printed as an unexported field
// so that fmt calls no String method in it (as when the trace's fields were unexported: a partition
// prints as {topic 0}, not t-0), then the wrapper's braces are cut.
func traceDigest(tr *Trace) string {
	s := fmt.Sprintf("%v", struct{ t Trace }{*tr})
	sum := sha256.Sum256([]byte(s[1 : len(s)-1]))
	return hex.EncodeToString(sum[:])
}

// replayRecorded replays every recorded timeline under docs/figures: each scenario directory's
// timeline-<era>.jsonl with its result.json (its topic and partitions, as the runner's FigureOptions
// had them; the figures cover the records up to the shutdown trigger, as the runner's do), and the
// chapters' excerpts (ch2-rebalance-c1.jsonl, ch3-timeline.jsonl: no options, the era their records
// carry).
func replayRecorded(t *testing.T) []goldenTimeline {
	t.Helper()
	var out []goldenTimeline
	results, err := filepath.Glob(filepath.Join(figuresDir, "*", "result.json"))
	if err != nil || len(results) == 0 {
		t.Fatalf("no recorded results under %s (%v)", figuresDir, err)
	}
	sort.Strings(results)
	for _, resPath := range results {
		dir := filepath.Dir(resPath)
		var rr recordedResult
		goldentest.ReadJSON(t, resPath, &rr)
		np, ok := rr.Params["partitions"].(float64)
		if !ok {
			t.Fatalf("%s: params.partitions is %v, want a number", resPath, rr.Params["partitions"])
		}
		for _, re := range rr.Eras {
			if !re.Applies {
				continue
			}
			path := filepath.Join(dir, re.Timeline)
			sum, all := goldentest.ReadTimeline(t, path)
			recs := beforeShutdown(all)
			parts := make([]int32, int(np))
			for i := range parts {
				parts[i] = int32(i)
			}
			res, tr := ComputeTrace(recs, re.Era, FigureOptions{Partitions: map[string][]int32{re.Topic: parts}})
			rel, _ := filepath.Rel(figuresDir, path)
			out = append(out, goldenTimeline{File: filepath.ToSlash(rel), SHA256: sum, Era: re.Era, Scenario: rr.Scenario,
				Records: len(recs), Result: res, Trace: traceDigest(tr)})
		}
	}
	for _, name := range []string{"ch2-rebalance-c1.jsonl", "ch3-timeline.jsonl"} {
		path := filepath.Join(figuresDir, name)
		sum, recs := goldentest.ReadTimeline(t, path)
		if len(recs) == 0 {
			t.Fatalf("%s: no records", path)
		}
		era := recs[0].Era
		res, tr := ComputeTrace(recs, era, FigureOptions{})
		out = append(out, goldenTimeline{File: name, SHA256: sum, Era: era, Records: len(recs), Result: res, Trace: traceDigest(tr)})
	}
	return out
}

// TestReplayGolden: every recorded timeline under docs/figures replays to the golden's figures (events,
// start, totals, not-applicable figures, final owners, fault windows, warnings) and trace. A timeline
// whose bytes changed since the golden was written is named, with the way to regenerate the golden.
func TestReplayGolden(t *testing.T) {
	got := replayRecorded(t)
	if *updateGolden {
		if err := os.WriteFile(replayGoldenPath, goldentest.Marshal(t, got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d timelines", replayGoldenPath, len(got))
		return
	}
	var want []goldenTimeline
	goldentest.ReadJSON(t, replayGoldenPath, &want)
	goldentest.Compare(t, got, want, "the figures", nil)
	if len(got) < 29 {
		t.Errorf("replayed %d timelines, want every recorded one (29 at the golden's writing)", len(got))
	}
}

// GoldenFile and GoldenSHA256 make an entry goldentest.Compare reads.
func (g goldenTimeline) GoldenFile() string   { return g.File }
func (g goldenTimeline) GoldenSHA256() string { return g.SHA256 }
