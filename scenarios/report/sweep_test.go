package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// fakeRun is a run with one event of the given figures per era.
func fakeRun(n int, figs map[string]figures.Figures) *RunResult {
	r := &RunResult{Scenario: "herd-effect", Params: spec.Params{Consumers: n}}
	for _, era := range spec.Names(spec.Eras()) {
		f, ok := figs[era]
		if !ok {
			continue
		}
		r.Eras = append(r.Eras, &EraRun{Era: era, Applies: true, Result: figures.Result{Era: era,
			NotApplicable: figures.NotApplicable(era), Events: []figures.Event{{Trigger: "join", Figures: f}}}})
	}
	return r
}

// TestSweepMediansFitCrossover: medians per size; with three sizes no fit of the zk reads (the fit rule:
// two more points than coefficients) but the log–log slopes, with five the quadratic; the crossover
// where every coordinator era stabilises before the zk era, and the verdict's, printed last, in the
// JSON and drawn as a band on the plot.
func TestSweepMediansFitCrossover(t *testing.T) {
	s := &SweepResult{Scenario: "herd-effect", Trigger: "join"}
	for _, n := range []int{4, 16, 64} {
		z := &SweepSize{N: n}
		for i, jitter := range []int64{0, 10, -5} {
			zkReads := int64(2*n*n+3*n+1) + int64(i) // medians: the middle one
			z.Runs = append(z.Runs, fakeRun(n, map[string]figures.Figures{
				"zk":      {ZKReads: zkReads, TimeToStableMs: int64(10*n) + jitter},
				"classic": {GroupRequests: int64(6 * n), TimeToStableMs: 300 + jitter},
			}))
		}
		s.Sizes = append(s.Sizes, z)
	}
	if v, ok := s.Median(s.Sizes[1], "zk", figures.FigZKReads); !ok || v != 2*16*16+3*16+1+1 {
		t.Errorf("median zk reads at 16: %v %v", v, ok)
	}
	if _, ok := s.Median(s.Sizes[1], "classic", figures.FigZKReads); ok {
		t.Errorf("zk reads of the classic era: want not applicable")
	}
	f, ok := s.FitZKReads()
	if !ok || f.Fitted || f.A != 0 || len(f.Growth.Slopes) != 2 || f.Exponent <= 1.5 {
		t.Errorf("fit %+v ok=%v: want no fit over three sizes, two slopes, an exponent above 1.5", f, ok)
	}
	// zk: 40, 160, 640 ms; classic 300: the coordinator era wins from N=64.
	if n, ok := s.Crossover(); !ok || n != 64 {
		t.Errorf("crossover %d %v, want 64", n, ok)
	}
	var tbl bytes.Buffer
	if err := s.WriteTable(&tbl); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"zk reads per join: log–log slope 1.",
		"  40 [35–50]", "  300 [295–310]"} {
		if !strings.Contains(tbl.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tbl.String())
		}
	}
	lines := strings.Split(strings.TrimSpace(tbl.String()), "\n")
	if last := lines[len(lines)-1]; last != "classic loses time_to_stable_ms at N=4, 16" {
		t.Errorf("the table's last line %q, want the verdict's", last)
	}
	if !strings.Contains(tbl.String(), "\ntime_to_stable_ms: crossover between N=16 and N=64: zk ranks before classic at N=16, after it at N=64\n") {
		t.Errorf("no crossover in the verdict:\n%s", tbl.String())
	}
	var js bytes.Buffer
	if err := s.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []struct {
			Params struct {
				Consumers int `json:"consumers"`
			} `json:"params"`
		} `json:"runs"`
		Verdict struct {
			Sizes   []int `json:"sizes"`
			Figures []struct {
				Figure     string `json:"figure"`
				Crossovers []struct {
					Before, After string
					FromN         int `json:"from_n"`
					ToN           int `json:"to_n"`
				} `json:"crossovers"`
			} `json:"figures"`
			Lines []string `json:"lines"`
		} `json:"verdict"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || len(doc.Runs) != 9 || doc.Runs[8].Params.Consumers != 64 {
		t.Errorf("JSON runs: %d, err %v", len(doc.Runs), err)
	}
	crossed := false
	for _, f := range doc.Verdict.Figures {
		if f.Figure == figures.FigTimeToStableMs {
			crossed = len(f.Crossovers) == 1 && f.Crossovers[0].Before == "zk" && f.Crossovers[0].After == "classic" &&
				f.Crossovers[0].FromN == 16 && f.Crossovers[0].ToN == 64
		}
	}
	if !crossed || len(doc.Verdict.Lines) == 0 || len(doc.Verdict.Sizes) != 3 {
		t.Errorf("JSON verdict %+v: want the time crossover zk→classic between 16 and 64", doc.Verdict)
	}
	var svg bytes.Buffer
	if err := s.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(svg.String(), `data-fit="quadratic"`) || strings.Count(svg.String(), `class="panel"`) != 5 ||
		!strings.Contains(svg.String(), `class="crossover" data-from-n="16" data-to-n="64"`) ||
		!strings.Contains(svg.String(), `class="range"`) || !strings.Contains(svg.String(), `data-slope="2"`) {
		t.Errorf("svg: want 5 panels, no fitted curve, the crossover band, min–max bars, reference slopes")
	}

	// Five sizes: the quadratic is fitted.
	s5 := &SweepResult{Scenario: "herd-effect", Trigger: "join"}
	for _, n := range []int{4, 8, 16, 32, 64} {
		s5.Sizes = append(s5.Sizes, &SweepSize{N: n, Runs: []*RunResult{fakeRun(n, map[string]figures.Figures{
			"zk": {ZKReads: int64(2*n*n + 3*n + 1), TimeToStableMs: 100}})}})
	}
	f, ok = s5.FitZKReads()
	if !ok || !f.Fitted || f.A < 1.99 || f.A > 2.01 || f.Exponent <= 1.5 {
		t.Errorf("five sizes: fit %+v ok=%v, want A≈2", f, ok)
	}
	svg.Reset()
	if err := s5.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), `data-fit="quadratic"`) {
		t.Errorf("five sizes: no fitted curve on the plot")
	}
}
