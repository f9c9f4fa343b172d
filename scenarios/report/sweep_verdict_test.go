package report

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
)

// recordedSweep is ReadSweep of the file at path.
func recordedSweep(t *testing.T, path string) *SweepResult {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ReadSweep(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// TestSweepVerdictRecorded: the verdict of a recorded sweep (testdata/herd-join-p64-sweep.json:
// herd-join, four eras, N=4, 16, 64 on 64 partitions, three runs each): a crossover found (unowned_partition_ms: static before cooperative at N=4, after
// it at N=64, the two tied at 16), none found (time_to_stable_ms, where every era's range overlaps at
// N=64: a four-way tie), cooperative winning paused_member_ms at every size; then the same sweep with
// cooperative never stable at N=64 (ranked last, `never`) and a size cut to one run (no tie, the run
// count printed). The verdict heads the report page, beside the plot.
func TestSweepVerdictRecorded(t *testing.T) {
	s := recordedSweep(t, filepath.Join("testdata", "herd-join-p64-sweep.json"))
	v := s.Verdict()
	lines := v.Lines
	t.Logf("\n%s", strings.Join(lines, "\n"))
	want := []string{
		"unowned_partition_ms: crossover between N=4 and N=64: static ranks before cooperative at N=4, after it at N=64",
		"time_to_stable_ms: no crossover in N=4..64",
		"time_to_stable_ms: zk ≈ static ≈ classic tie for best at N=4, 16; static ≈ classic ≈ cooperative ≈ zk tie for best at N=64",
		"paused_member_ms: cooperative ranks best at N=4, 16, 64",
		"zk_reads: only zk has this figure; no crossover in N=4..64",
		"zk_reads growth, log–log slope between consecutive N: zk 0.951 (N=4→16), 1.58 (N=16→64)",
		"cooperative wins paused_member_ms at N=4, 16, 64; unowned_partition_ms at N=64",
		"cooperative loses group_requests at N=4, 16; time_to_stable_ms at N=4, 16",
	}
	for _, w := range want {
		if !slices.Contains(lines, w) {
			t.Errorf("no line %q", w)
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "time_to_stable_ms (ms): ") &&
			!strings.Contains(l, "N=64: static 262 [250–536] ≈ classic 428 [364–685] ≈ cooperative 453 [270–733] ≈ zk 546 [319–841]") {
			t.Errorf("time_to_stable_ms at 64: want the four-way tie, got %q", l)
		}
		for _, era := range []string{"zk", "classic", "static"} {
			if strings.HasPrefix(l, era+" wins") || strings.HasPrefix(l, era+" loses") {
				t.Errorf("%s never ranks strictly first or last, yet: %q", era, l)
			}
		}
	}

	// cooperative never stable at N=64; N=16 cut to its first run.
	for _, r := range s.Sizes[2].Runs {
		for _, e := range r.Eras {
			if e.Era == "cooperative" {
				e.Result.Events[0].Figures.TimeToStableMs = figures.NeverStable
			}
		}
	}
	s.Sizes[1].Runs = s.Sizes[1].Runs[:1]
	lines = s.Verdict().Lines
	var stable string
	for _, l := range lines {
		if strings.HasPrefix(l, "time_to_stable_ms (ms): ") {
			stable = l
		}
	}
	if !strings.HasSuffix(stable, "≈ zk 546 [319–841] < cooperative never") {
		t.Errorf("cooperative never stable at 64: want it last as never, got %q", stable)
	}
	if !strings.Contains(stable, "; N=16: zk 180 (1 run) < static 282 (1 run) < classic 354 (1 run) < cooperative 799 (1 run); ") {
		t.Errorf("N=16 with one run: %q", stable)
	}
	if strings.Contains(stable, "(1 run) ≈") {
		t.Errorf("a 1-run cell ties: %q", stable)
	}
	if !slices.Contains(lines, "cooperative loses group_requests at N=4, 16; time_to_stable_ms at N=4, 16, 64") {
		t.Errorf("cooperative never stable at 64 does not lose there:\n%s", strings.Join(lines, "\n"))
	}

	v = s.Verdict()
	if !slices.Equal(v.Lines, append(append([]string{v.Lines[0]}, v.Rankings...), v.Conclusions...)) {
		t.Errorf("Lines are not the header, the rankings and the conclusions")
	}
	var page bytes.Buffer
	if err := RenderHTML(&page, Report{Scenario: s.Scenario, Verdict: append([]string{v.Lines[0]}, v.Conclusions...),
		VerdictRankings: v.Rankings,
		Plots:           []Plot{{Title: "sweep", File: SweepPlotFile, SVG: []byte(`<svg xmlns="http://www.w3.org/2000/svg"></svg>`)}}}); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	iv, ip, ir, is := strings.Index(html, `<ul class="verdict" id="verdict">`), strings.Index(html, `<figure class="plot">`),
		strings.Index(html, `<details id="verdict-rankings">`), strings.Index(html, `id="showed"`)
	if iv < 0 || iv > ip || ip > ir || ir > is {
		t.Errorf("page order: verdict %d, plot %d, rankings %d, summary %d; want in that order", iv, ip, ir, is)
	}
	if !strings.Contains(html, "<li>cooperative loses group_requests at N=4, 16; time_to_stable_ms at N=4, 16, 64</li>") {
		t.Errorf("the page lacks the verdict's lines")
	}
}
