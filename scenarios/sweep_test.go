package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// fakeRun is a run with one event of the given figures per era.
func fakeRun(n int, figs map[string]Figures) *RunResult {
	r := &RunResult{Scenario: "herd-effect", Params: Params{Consumers: n}}
	for _, era := range Eras {
		f, ok := figs[era]
		if !ok {
			continue
		}
		r.Eras = append(r.Eras, &EraRun{Era: era, Applies: true, Result: Result{Era: era,
			NotApplicable: NotApplicable(era), Events: []Event{{Trigger: "join", Figures: f}}}})
	}
	return r
}

// TestSweepMediansFitCrossover: medians per size, the quadratic fit of the zk reads and its exponent,
// and the crossover where every coordinator era stabilises before the zk era.
func TestSweepMediansFitCrossover(t *testing.T) {
	s := &SweepResult{Scenario: "herd-effect", Trigger: "join"}
	for _, n := range []int{4, 16, 64} {
		z := &SweepSize{N: n}
		for i, jitter := range []int64{0, 10, -5} {
			zkReads := int64(2*n*n+3*n+1) + int64(i) // medians: the middle one
			z.Runs = append(z.Runs, fakeRun(n, map[string]Figures{
				"zk":      {ZKReads: zkReads, TimeToStableMs: int64(10*n) + jitter},
				"classic": {GroupRequests: int64(6 * n), TimeToStableMs: 300 + jitter},
			}))
		}
		s.Sizes = append(s.Sizes, z)
	}
	if v, ok := s.Median(s.Sizes[1], "zk", FigZKReads); !ok || v != 2*16*16+3*16+1+1 {
		t.Errorf("median zk reads at 16: %v %v", v, ok)
	}
	if _, ok := s.Median(s.Sizes[1], "classic", FigZKReads); ok {
		t.Errorf("zk reads of the classic era: want not applicable")
	}
	f, ok := s.FitZKReads()
	if !ok || f.A < 1.9 || f.A > 2.1 || f.Exponent <= 1.5 {
		t.Errorf("fit %+v ok=%v: want A≈2 and an exponent above 1.5", f, ok)
	}
	// zk: 40, 160, 640 ms; classic 300: the coordinator era wins from N=64.
	if n, ok := s.Crossover(); !ok || n != 64 {
		t.Errorf("crossover %d %v, want 64", n, ok)
	}
	var tbl bytes.Buffer
	if err := s.WriteTable(&tbl); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"crossover: from N=64", "(N+1)(N+2)", "N=64: 4290"} {
		if !strings.Contains(tbl.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tbl.String())
		}
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
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || len(doc.Runs) != 9 || doc.Runs[8].Params.Consumers != 64 {
		t.Errorf("JSON runs: %d, err %v", len(doc.Runs), err)
	}
	var svg bytes.Buffer
	if err := s.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), `data-fit="quadratic"`) || strings.Count(svg.String(), `class="panel"`) != 5 {
		t.Errorf("svg: want 5 panels and the fitted curve")
	}
}

// TestHerdSweep runs herd-effect at N = 4, 16, 64 for real: the zk era's reads per join grow faster
// than linearly (the growth exponent between the two largest sizes above 1.5) and reach at least N+1 per woken member; the coordinator
// era's ZooKeeper figures are not applicable.
func TestHerdSweep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	s, err := RunSweep(ctx, SweepOptions{Options: Options{Scenario: "herd-effect", Eras: []string{"zk", "classic"},
		Params: Params{Partitions: 64, Seed: 1}, Version: "test", Log: quietLog(), LabLog: quietLog()},
		Sizes: []int{4, 16, 64}, Deadline: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var tbl bytes.Buffer
	_ = s.WriteTable(&tbl)
	t.Logf("\n%s", tbl.String())
	for _, z := range s.Sizes {
		if z.Stopped != "" || len(z.Runs) != 1 {
			t.Fatalf("N=%d: stopped %q", z.N, z.Stopped)
		}
		reads, _ := s.Median(z, "zk", FigZKReads)
		woken, _ := s.Median(z, "zk", FigRebalanceParticipants)
		if woken != float64(z.N+1) || reads < woken*float64(z.N+1) {
			t.Errorf("N=%d: %v zk reads over %v woken members: want N+1 woken, at least N+1 reads each", z.N, reads, woken)
		}
		if _, ok := s.Median(z, "classic", FigZKReads); ok {
			t.Errorf("N=%d: classic has zk_reads; want n/a", z.N)
		}
		if _, ok := s.Median(z, "classic", FigGroupRequests); !ok {
			t.Errorf("N=%d: classic has no group_requests", z.N)
		}
	}
	f, ok := s.FitZKReads()
	if !ok || f.Exponent <= 1.5 {
		t.Errorf("zk reads per join: fit %+v ok=%v, want an exponent above 1.5", f, ok)
	}
}
