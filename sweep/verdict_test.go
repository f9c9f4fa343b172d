package sweep

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"testing"
)

// fig builds one figure's cells: vals[era] holds, per size of sizes, the values of that cell's runs
// (nil: no cell).
func fig(name string, sizes []int, eras []string, vals map[string][][]float64) FigureCells {
	f := FigureCells{Figure: name, Sizes: sizes, Eras: eras, Cells: map[string]map[int]Cell{}}
	for era, rows := range vals {
		f.Cells[era] = map[int]Cell{}
		for i, v := range rows {
			if v != nil {
				f.Cells[era][sizes[i]] = Cell{Values: v}
			}
		}
	}
	return f
}

func lineWith(lines []string, prefix string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

func hasLine(t *testing.T, lines []string, want string) {
	t.Helper()
	for _, l := range lines {
		if l == want {
			return
		}
	}
	t.Errorf("no line %q in the verdict:\n%s", want, strings.Join(lines, "\n"))
}

// TestVerdictCrossover: zk stabilises fastest at N=4, static and classic overtake it by N=64. The
// crossover with classic is between N=16 and N=64 (still strictly ordered at 16); with static, whose
// range overlaps zk's at 16 (a tie), between N=4 and N=64.
func TestVerdictCrossover(t *testing.T) {
	sizes := []int{4, 16, 64}
	f := fig("time_to_stable_ms", sizes, []string{"zk", "classic", "static"}, map[string][][]float64{
		"zk":      {{80, 85, 90}, {150, 160, 170}, {900, 1000, 1300}},
		"classic": {{500, 550, 600}, {600, 650, 700}, {400, 420, 450}},
		"static":  {{300, 320, 340}, {160, 180, 200}, {250, 260, 270}},
	})
	f.Unit = "ms"
	v := Judge([]FigureCells{f})
	if len(v.Figures) != 1 {
		t.Fatalf("figures %d, want 1", len(v.Figures))
	}
	got := v.Figures[0].Crossovers
	want := []Crossover{
		{Figure: "time_to_stable_ms", Before: "zk", After: "classic", FromN: 16, ToN: 64},
		{Figure: "time_to_stable_ms", Before: "zk", After: "static", FromN: 4, ToN: 64}, // tie at 16: 150–170 vs 160–200
	}
	if len(got) != len(want) {
		t.Fatalf("crossovers %+v, want %+v", got, want)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("crossover %+v missing from %+v", w, got)
		}
	}
	if v.Figures[0].NoCrossover != "" {
		t.Errorf("NoCrossover %q with crossovers", v.Figures[0].NoCrossover)
	}
	hasLine(t, v.Lines, "time_to_stable_ms: crossover between N=16 and N=64: zk ranks before classic at N=16, after it at N=64")
	hasLine(t, v.Lines, "time_to_stable_ms: crossover between N=4 and N=64: zk ranks before static at N=4, after it at N=64")
	hasLine(t, v.Lines, "time_to_stable_ms (ms): N=4: zk 85 [80–90] < static 320 [300–340] < classic 550 [500–600]; "+
		"N=16: zk 160 [150–170] ≈ static 180 [160–200] < classic 650 [600–700]; "+
		"N=64: static 260 [250–270] < classic 420 [400–450] < zk 1000 [900–1300]")
	hasLine(t, v.Lines, "time_to_stable_ms: zk ranks best at N=4; zk ≈ static tie for best at N=16; static ranks best at N=64")
	hasLine(t, v.Lines, "zk wins time_to_stable_ms at N=4")
	hasLine(t, v.Lines, "zk loses time_to_stable_ms at N=64")
	hasLine(t, v.Lines, "classic loses time_to_stable_ms at N=4, 16")
	if l := lineWith(v.Lines, "time_to_stable_ms: no crossover"); l != nil {
		t.Errorf("a 'no crossover' line beside crossovers: %q", l)
	}
}

// TestVerdictNoCrossover: one era below the other at every size: "no crossover in N=4..256", naming the
// figure, and the winner has no "loses" line.
func TestVerdictNoCrossover(t *testing.T) {
	sizes := []int{4, 16, 64, 256}
	f := fig("group_requests", sizes, []string{"classic", "cooperative"}, map[string][][]float64{
		"classic":     {{20, 21, 21}, {72, 73, 74}, {280, 282, 285}, {1100, 1110, 1120}},
		"cooperative": {{34, 34, 34}, {133, 135, 135}, {540, 550, 560}, {2200, 2210, 2300}},
	})
	v := Judge([]FigureCells{f})
	hasLine(t, v.Lines, "group_requests: no crossover in N=4..256")
	hasLine(t, v.Lines, "group_requests: classic ranks best at N=4, 16, 64, 256")
	hasLine(t, v.Lines, "classic wins group_requests at N=4, 16, 64, 256")
	hasLine(t, v.Lines, "cooperative loses group_requests at N=4, 16, 64, 256")
	if l := lineWith(v.Lines, "classic loses"); l != nil {
		t.Errorf("the era that wins everything has a loses line: %q", l)
	}
	if l := lineWith(v.Lines, "cooperative wins"); l != nil {
		t.Errorf("the era that loses everything has a wins line: %q", l)
	}
	// The legend names only the notation used: no tie, no never here.
	if want := "verdict over N=4, 16, 64, 256 (lower is better; a cell: the median of its runs [min–max]):"; v.Lines[0] != want {
		t.Errorf("header %q, want %q", v.Lines[0], want)
	}
	if got := v.Figures[0].NoCrossover; got != "N=4..256" {
		t.Errorf("NoCrossover %q, want N=4..256", got)
	}
}

// TestVerdictOneEraWinsEverything: over three figures the zk era ranks best at every size; no line says
// it loses, and no sentence is about an era or figure the sweep did not have.
func TestVerdictOneEraWinsEverything(t *testing.T) {
	sizes := []int{4, 16}
	eras := []string{"zk", "classic", "static"}
	var figs []FigureCells
	for _, name := range []string{"time_to_stable_ms", "paused_member_ms", "unowned_partition_ms"} {
		figs = append(figs, fig(name, sizes, eras, map[string][][]float64{
			"zk":      {{10, 11, 12}, {20, 21, 22}},
			"classic": {{100, 110, 120}, {200, 210, 220}},
			"static":  {{50, 55, 60}, {500, 510, 520}},
		}))
	}
	v := Judge(figs)
	hasLine(t, v.Lines, "zk wins time_to_stable_ms at N=4, 16; paused_member_ms at N=4, 16; unowned_partition_ms at N=4, 16")
	if l := lineWith(v.Lines, "zk loses"); l != nil {
		t.Errorf("zk wins everything, yet: %q", l)
	}
	// static is last at 16, classic at 4: a crossover between them in every figure.
	hasLine(t, v.Lines, "classic loses time_to_stable_ms at N=4; paused_member_ms at N=4; unowned_partition_ms at N=4")
	hasLine(t, v.Lines, "static loses time_to_stable_ms at N=16; paused_member_ms at N=16; unowned_partition_ms at N=16")
	hasLine(t, v.Lines, "paused_member_ms: crossover between N=4 and N=16: static ranks before classic at N=4, after it at N=16")
	for _, l := range v.Lines {
		for _, absent := range []string{"cooperative", "kip848", "zk_reads", "N=64"} {
			if strings.Contains(l, absent) {
				t.Errorf("line %q names %s, which the sweep did not have", l, absent)
			}
		}
	}
	if len(v.Eras) != 3 || v.Eras[0].Era != "zk" || v.Eras[0].Loses != nil {
		t.Errorf("eras %+v: want zk first with no losses", v.Eras)
	}
}

// TestVerdictTieByOverlap: overlapping min–max ranges tie (no winner, no crossover, "≈"); the same
// medians from one run each do not (a 1-run cell ties with nothing) and print their run count.
func TestVerdictTieByOverlap(t *testing.T) {
	sizes := []int{4, 16}
	f := fig("time_to_stable_ms", sizes, []string{"zk", "classic"}, map[string][][]float64{
		"zk":      {{100, 300, 500}, {300, 600, 900}},
		"classic": {{200, 400, 450}, {350, 500, 700}}, // below zk at 16, above at 4: ranges overlap both times
	})
	v := Judge([]FigureCells{f})
	if x := v.Figures[0].Crossovers; len(x) != 0 {
		t.Errorf("crossovers %+v through tied cells", x)
	}
	hasLine(t, v.Lines, "time_to_stable_ms: N=4: zk 300 [100–500] ≈ classic 400 [200–450]; N=16: classic 500 [350–700] ≈ zk 600 [300–900]")
	hasLine(t, v.Lines, "time_to_stable_ms: zk ≈ classic tie for best at N=4; classic ≈ zk tie for best at N=16")
	hasLine(t, v.Lines, "time_to_stable_ms: no crossover in N=4..16")
	if len(v.Eras) != 0 {
		t.Errorf("wins/loses %+v from tied cells", v.Eras)
	}
	if !Tie(Cell{[]float64{1, 5}}, Cell{[]float64{5, 9}}) {
		t.Errorf("ranges [1–5] and [5–9] touch: want a tie")
	}

	one := fig("time_to_stable_ms", sizes, []string{"zk", "classic"}, map[string][][]float64{
		"zk":      {{300}, {600}},
		"classic": {{400, 200, 450}, {500}},
	})
	v = Judge([]FigureCells{one})
	hasLine(t, v.Lines, "time_to_stable_ms: N=4: zk 300 (1 run) < classic 400 [200–450]; N=16: classic 500 (1 run) < zk 600 (1 run)")
	hasLine(t, v.Lines, "time_to_stable_ms: crossover between N=4 and N=16: zk ranks before classic at N=4, after it at N=16")
	// Equal values tie even from one run each: neither is better.
	if !Tie(Cell{[]float64{5}}, Cell{[]float64{5}}) || Tie(Cell{[]float64{5}}, Cell{[]float64{4, 7}}) {
		t.Errorf("Tie: equal 1-run cells tie, a 1-run cell inside another's range does not")
	}
	if got := (Cell{[]float64{3, 7}}).String(); got != "5 [3–7] (2 runs)" {
		t.Errorf("2-run cell %q", got)
	}
}

// TestVerdictNever: a cell whose median run never stabilised ranks last as `never` (even behind a
// large value), prints how many runs never did, and two never cells are equal.
func TestVerdictNever(t *testing.T) {
	sizes := []int{16, 64}
	f := fig("time_to_stable_ms", sizes, []string{"zk", "classic", "cooperative"}, map[string][][]float64{
		"zk":          {{100, 110, 120}, {-1, -1, 90000}},
		"classic":     {{300, 310, 320}, {400, 410, 420}},
		"cooperative": {{500, 510, 520}, {-1, -1, -1}},
	})
	f.Unit = "ms"
	v := Judge([]FigureCells{f})
	hasLine(t, v.Lines, "time_to_stable_ms (ms): N=16: zk 110 [100–120] < classic 310 [300–320] < cooperative 510 [500–520]; "+
		"N=64: classic 410 [400–420] < zk never (2 of 3 runs; min 90000) = cooperative never")
	hasLine(t, v.Lines, "time_to_stable_ms: crossover between N=16 and N=64: zk ranks before classic at N=16, after it at N=64")
	hasLine(t, v.Lines, "verdict over N=16, 64 (lower is better; a cell: the median of its runs [min–max]; =: equal medians; never: did not stabilise, ranks last):")
	r := v.Figures[0].Rankings[1]
	if r.Order[0].Era != "classic" || r.Order[1].Median != -1 || r.Order[2].Median != -1 || r.Order[2].NeverRuns != 3 {
		t.Errorf("ranking at 64: %+v", r.Order)
	}
	// zk and cooperative are both never at 64: neither loses strictly there.
	hasLine(t, v.Lines, "cooperative loses time_to_stable_ms at N=16")
	if l := lineWith(v.Lines, "zk loses"); l != nil {
		t.Errorf("zk ties cooperative as never at 64, yet: %q", l)
	}
	// The growth leaves the never cells out.
	for _, g := range v.Figures[0].Growth {
		if g.Era == "cooperative" && (g.Points != 1 || g.Slopes != nil) {
			t.Errorf("cooperative growth %+v: want one finite point, no slope", g)
		}
	}
}

// TestFitRule: a quadratic needs five sizes (two more than its three coefficients); with fewer the
// growth is the log–log slope between consecutive sizes, exactly 2 on a pure N².
func TestFitRule(t *testing.T) {
	var pts []Point
	for _, n := range []float64{4, 16, 64} {
		pts = append(pts, Point{X: n, Y: n * n})
	}
	g := GrowthOf("zk", pts, 2)
	if g.Fit != nil || len(g.Slopes) != 2 {
		t.Fatalf("three sizes: %+v, want slopes, no fit", g)
	}
	for _, s := range g.Slopes {
		if math.Abs(s.Slope-2) > 1e-12 {
			t.Errorf("slope %+v, want 2", s)
		}
	}
	if got := g.String(); got != "log–log slope 2 (N=4→16), 2 (N=16→64)" {
		t.Errorf("growth %q", got)
	}
	for _, n := range []float64{256, 1024} {
		pts = append(pts, Point{X: n, Y: n * n})
	}
	g = GrowthOf("zk", pts, 2)
	if g.Fit == nil || math.Abs(g.Fit[2]-1) > 1e-6 {
		t.Fatalf("five sizes: %+v, want the quadratic fitted", g)
	}
	if !FitAllowed(5, 3) || FitAllowed(4, 3) || FitAllowed(3, 3) {
		t.Errorf("FitAllowed: want points ≥ params+2")
	}
	if got := GrowthOf("coop", []Point{{X: 4, Y: 0}, {X: 16, Y: 0}}, 0).slopes(); got != "none (0 at N=4, 16)" {
		t.Errorf("zero medians: %q", got)
	}
}

// TestSig: three significant digits, never "0.00" for a value that is not zero.
func TestSig(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.004: "0.004", 0.00004: "4.00e-05", 0.0123456: "0.0123",
		0.95: "0.95", 1: "1", 14.94: "14.9", 85: "85", 85.5: "85.5", 1314: "1314", 11606: "11606", -0.444: "-0.444",
		math.Inf(1): "never"} {
		if got := Sig(v); got != want {
			t.Errorf("Sig(%g) = %q, want %q", v, got, want)
		}
	}
	zero := regexp.MustCompile(`(^|[^0-9.])0\.0+([^0-9]|$)`)
	for _, v := range []float64{1e-9, 3e-4, 0.001, 0.0049, -2e-7} {
		if s := Sig(v); zero.MatchString(s) || s == "0" {
			t.Errorf("Sig(%g) = %q prints as zero", v, s)
		}
	}
}

// TestPlotCarriesVerdict: the SVG has the min–max bars, the N¹ and N² reference slopes, the crossover
// band between its sizes, and a never row for an infinite median.
func TestPlotCarriesVerdict(t *testing.T) {
	p := Panel{Title: "time_to_stable_ms", RefSlopes: true, Bands: []Band{{From: 16, To: 64, Label: "classic overtakes zk"}},
		Series: []Series{
			{Label: "zk", Points: []Point{{X: 4, Y: 85}, {X: 16, Y: 160}, {X: 64, Y: math.Inf(1)}},
				Ranges: []Range{{X: 4, Lo: 80, Hi: 90}, {X: 16, Lo: 150, Hi: 170}, {X: 64, Lo: 900, Hi: math.Inf(1)}}},
			{Label: "classic", Points: []Point{{X: 4, Y: 550}, {X: 16, Y: 650}, {X: 64, Y: 420}}},
		}}
	var b bytes.Buffer
	if err := (Chart{Title: "t", Panels: []Panel{p}}).WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{`class="range"`, `data-slope="1"`, `data-slope="2"`, `∝N¹`, `∝N²`,
		`class="crossover" data-from-n="16" data-to-n="64"`, `classic overtakes zk`, `>never</text>`, `zk N=64: never`} {
		if !strings.Contains(svg, want) {
			t.Errorf("the SVG has no %s", want)
		}
	}
	if n := strings.Count(svg, `class="range"`); n != 3 {
		t.Errorf("%d min–max bars, want 3", n)
	}
	if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
		t.Errorf("the SVG has a NaN or Inf coordinate")
	}
}
