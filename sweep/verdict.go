package sweep

// The verdict of a sweep: every sentence generated from its figures. Per figure and size the eras are
// ranked by the median of their runs (lower is better: every figure a sweep ranks is a count or a
// duration), two eras tie where both cells have at least two runs and their min–max ranges overlap (a
// cell of one run ties with nothing, except an equal value), a cell whose median run never reached the
// figure (a negative value, e.g. time_to_stable_ms of a group that never became stable) ranks last as
// `never`. A crossover is a pair of eras whose strict order at one size is reversed at a later one,
// given as the interval between the two sizes; a figure without one says "no crossover in N=a..b".
// Each figure's growth with N follows the fit rule (FitAllowed): a polynomial fit only where there are
// at least two more sizes than coefficients, else the log–log slope between consecutive sizes.

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Cell is one era's figure at one size: its value in each run. A negative value is a run that never
// reached the figure (NeverStable's -1); it counts as +Inf in the median and the range.
type Cell struct {
	Values []float64
}

func (c Cell) sorted() []float64 {
	v := make([]float64, len(c.Values))
	for i, x := range c.Values {
		if x < 0 || math.IsNaN(x) {
			x = math.Inf(1)
		}
		v[i] = x
	}
	sort.Float64s(v)
	return v
}

// Runs is the number of runs of the cell.
func (c Cell) Runs() int { return len(c.Values) }

// NeverRuns is the number of runs that never reached the figure.
func (c Cell) NeverRuns() int {
	n := 0
	for _, x := range c.Values {
		if x < 0 || math.IsNaN(x) {
			n++
		}
	}
	return n
}

// Median is the median of the runs (+Inf when the median run never reached the figure; NaN for a
// cell without runs). With an even count, the mean of the middle two.
func (c Cell) Median() float64 {
	v := c.sorted()
	if len(v) == 0 {
		return math.NaN()
	}
	m := len(v) / 2
	if len(v)%2 == 1 {
		return v[m]
	}
	return (v[m-1] + v[m]) / 2
}

// Never reports whether the cell's median is `never`.
func (c Cell) Never() bool { return math.IsInf(c.Median(), 1) }

// Min and Max are the range of the runs (+Inf for a run that never reached the figure; NaN for a cell
// without runs).
func (c Cell) Min() float64 {
	v := c.sorted()
	if len(v) == 0 {
		return math.NaN()
	}
	return v[0]
}

// Max: see Min.
func (c Cell) Max() float64 {
	v := c.sorted()
	if len(v) == 0 {
		return math.NaN()
	}
	return v[len(v)-1]
}

// String is the cell as printed: the median, its [min–max] over two or more runs (unless every run
// gave the same value), the number of runs when fewer than three, "never" for a `never` cell: "85 [80–90]", "85 (1 run)", "85 [80–90] (2 runs)",
// "never", "never (2 of 3 runs; min 90000)", "120 [100–never]".
func (c Cell) String() string {
	if len(c.Values) == 0 {
		return "no runs"
	}
	var s string
	if c.Never() {
		s = "never"
		if n := c.NeverRuns(); n < len(c.Values) {
			s += fmt.Sprintf(" (%d of %d runs; min %s)", n, len(c.Values), fmtFinite(c.Min()))
		}
	} else {
		s = Sig(c.Median())
		if len(c.Values) > 1 && c.Min() != c.Max() {
			s += " [" + fmtFinite(c.Min()) + "–" + fmtFinite(c.Max()) + "]"
		}
	}
	switch len(c.Values) {
	case 1:
		s += " (1 run)"
	case 2:
		s += " (2 runs)"
	}
	return s
}

func fmtFinite(v float64) string {
	if math.IsInf(v, 1) {
		return "never"
	}
	return Sig(v)
}

// Sig formats v with three significant digits, without exponent from 0.001 to any size (integers keep
// every digit: 1314, 11606), in scientific notation below 0.001; only 0 prints as "0".
func Sig(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.IsInf(v, 1):
		return "never"
	case math.IsNaN(v) || math.IsInf(v, -1):
		return fmt.Sprint(v)
	}
	a := math.Abs(v)
	if a < 1e-3 {
		return strconv.FormatFloat(v, 'e', 2, 64)
	}
	dec := max(0, 2-int(math.Floor(math.Log10(a))))
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// Tie reports whether a and b tie: equal medians, or both with at least two runs and overlapping
// min–max ranges.
func Tie(a, b Cell) bool {
	if a.Runs() == 0 || b.Runs() == 0 {
		return false
	}
	ma, mb := a.Median(), b.Median()
	if ma == mb {
		return true
	}
	if a.Runs() < 2 || b.Runs() < 2 {
		return false
	}
	return a.Min() <= b.Max() && b.Min() <= a.Max()
}

// FigureCells is one figure of a sweep: every era's cell at every size.
type FigureCells struct {
	Figure string
	Unit   string   // "ms", or "" for a count
	Sizes  []int    // ascending
	Eras   []string // the eras in table order (the order of equal medians)
	// Cells[era][N]; a missing cell: the era has no value at N (the figure does not apply, or the size
	// stopped before the era ran).
	Cells map[string]map[int]Cell
	// FitDegree[era] > 0: the growth of era's medians is a polynomial of that degree, when FitAllowed.
	FitDegree map[string]int
}

// FitAllowed reports whether a fit with params coefficients may be made over points sizes: at least
// two more points than parameters (with fewer the curve goes through every point and says nothing).
func FitAllowed(points, params int) bool { return points >= params+2 }

// Slope is the log–log slope d ln y / d ln N between two consecutive sizes (1: linear, 2: quadratic).
type Slope struct {
	FromN int     `json:"from_n"`
	ToN   int     `json:"to_n"`
	Slope float64 `json:"slope"`
}

// LogSlopes returns the log–log slopes between consecutive points of pts (ascending X); a pair with a
// value ≤ 0 or infinite has no slope and is left out.
func LogSlopes(pts []Point) []Slope {
	var out []Slope
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		if a.X <= 0 || b.X <= a.X || a.Y <= 0 || b.Y <= 0 || math.IsInf(a.Y, 0) || math.IsInf(b.Y, 0) {
			continue
		}
		out = append(out, Slope{FromN: int(a.X), ToN: int(b.X), Slope: math.Log(b.Y/a.Y) / math.Log(b.X/a.X)})
	}
	return out
}

// Growth is how one era's medians of a figure grow with N: Fit (coefficients c[0..d] of Σ c[i]·N^i)
// where FitAllowed, else Slopes.
type Growth struct {
	Era    string    `json:"era"`
	Fit    []float64 `json:"fit,omitempty"`
	Points int       `json:"points"` // the sizes with a finite median
	Slopes []Slope   `json:"slopes,omitempty"`
	ZeroAt []int     `json:"zero_at,omitempty"` // sizes whose median is 0 (no slope to or from them)
}

// GrowthOf applies the fit rule to pts (era's finite medians, ascending N) with a polynomial of degree
// (0: never fitted).
func GrowthOf(era string, pts []Point, degree int) Growth {
	g := Growth{Era: era, Points: len(pts)}
	if degree > 0 && FitAllowed(len(pts), degree+1) {
		if c, err := FitPolynomial(pts, degree); err == nil {
			g.Fit = c
			return g
		}
	}
	g.Slopes = LogSlopes(pts)
	for _, p := range pts {
		if p.Y == 0 {
			g.ZeroAt = append(g.ZeroAt, int(p.X))
		}
	}
	return g
}

// String: "≈ 1·N² + 14.9·N + 77 (least squares over 5 sizes)" or "slope 1.93 (N=4→16), 1.7 (N=16→64)".
func (g Growth) String() string {
	if g.Fit != nil {
		var terms []string
		for i := len(g.Fit) - 1; i >= 0; i-- {
			switch i {
			case 0:
				terms = append(terms, Sig(g.Fit[i]))
			case 1:
				terms = append(terms, Sig(g.Fit[i])+"·N")
			default:
				terms = append(terms, Sig(g.Fit[i])+"·N"+superscript(i))
			}
		}
		return fmt.Sprintf("≈ %s (least squares over %d sizes)", strings.Join(terms, " + "), g.Points)
	}
	return "log–log slope " + g.slopes()
}

// slopes: "1.93 (N=4→16), 1.7 (N=16→64)", "0 at N=64" appended for zero medians; "none (...)" without
// any.
func (g Growth) slopes() string {
	var parts []string
	for _, s := range g.Slopes {
		parts = append(parts, fmt.Sprintf("%s (N=%d→%d)", Sig(s.Slope), s.FromN, s.ToN))
	}
	if len(g.ZeroAt) > 0 {
		parts = append(parts, "0 at "+sizeList(g.ZeroAt))
	}
	if len(g.Slopes) == 0 {
		if len(g.ZeroAt) > 0 {
			return "none (" + strings.Join(parts, "; ") + ")"
		}
		return fmt.Sprintf("none (%d size(s) with a finite median)", g.Points)
	}
	return strings.Join(parts, ", ")
}

func superscript(i int) string {
	digits := []rune("⁰¹²³⁴⁵⁶⁷⁸⁹")
	var b strings.Builder
	for _, r := range strconv.Itoa(i) {
		b.WriteRune(digits[r-'0'])
	}
	return b.String()
}

// Ranked is one era's place at one size. Median, Min and Max are -1 where `never`.
type Ranked struct {
	Era       string  `json:"era"`
	Median    float64 `json:"median"`
	Min       float64 `json:"min"`
	Max       float64 `json:"max"`
	Runs      int     `json:"runs"`
	NeverRuns int     `json:"never_runs,omitempty"`
	// Rel is the relation to the era ranked before it: "<" (strictly after it), "≈" (the min–max
	// ranges overlap: a tie), "=" (equal medians); "" for the first.
	Rel  string `json:"rel,omitempty"`
	cell Cell
}

// Ranking is the eras' order at one size, best first.
type Ranking struct {
	N     int      `json:"n"`
	Order []Ranked `json:"order"`
}

// Best returns the eras that rank best at the size: the first and every era tying with it.
func (r Ranking) Best() []string {
	if len(r.Order) == 0 {
		return nil
	}
	out := []string{r.Order[0].Era}
	for _, x := range r.Order[1:] {
		if Tie(r.Order[0].cell, x.cell) {
			out = append(out, x.Era)
		}
	}
	return out
}

// Crossover is an order that changes: Before ranked strictly better than After at FromN (the last such
// size), After strictly better than Before at ToN (the next size where the two do not tie).
type Crossover struct {
	Figure string `json:"figure"`
	Before string `json:"before"` // the era that was better up to FromN
	After  string `json:"after"`  // the era that is better from ToN
	FromN  int    `json:"from_n"`
	ToN    int    `json:"to_n"`
}

// FigureVerdict is one figure's part of the verdict.
type FigureVerdict struct {
	Figure     string      `json:"figure"`
	Unit       string      `json:"unit,omitempty"`
	Eras       []string    `json:"eras"` // the eras with the figure
	Rankings   []Ranking   `json:"rankings"`
	Crossovers []Crossover `json:"crossovers"`
	// NoCrossover names the sizes over which the eras' order held ("N=4..16"); "" when there was a
	// crossover or fewer than two sizes.
	NoCrossover string   `json:"no_crossover,omitempty"`
	Growth      []Growth `json:"growth"`
}

// EraVerdict is what one era won and lost: the figure and sizes where it ranked best, strictly (no
// tie), and last, strictly.
type EraVerdict struct {
	Era   string           `json:"era"`
	Wins  map[string][]int `json:"wins,omitempty"`
	Loses map[string][]int `json:"loses,omitempty"`
}

// Verdict is a sweep's verdict: per figure, per era, and the sentences that print it.
type Verdict struct {
	Sizes   []int           `json:"sizes"`
	Figures []FigureVerdict `json:"figures"`
	Eras    []EraVerdict    `json:"eras"`
	// Lines are the sentences in print order: a header naming the sizes and the notation, Rankings,
	// then Conclusions.
	Lines []string `json:"lines"`
	// Rankings are per figure its cells in rank order and its growth; Conclusions per figure who ranks
	// best where and its crossovers (or none), then per era what it wins and loses.
	Rankings    []string `json:"-"`
	Conclusions []string `json:"-"`
}

func ranked(era string, c Cell) Ranked {
	r := Ranked{Era: era, Runs: c.Runs(), NeverRuns: c.NeverRuns(), cell: c}
	neg := func(v float64) float64 {
		if math.IsInf(v, 1) {
			return -1
		}
		return v
	}
	r.Median, r.Min, r.Max = neg(c.Median()), neg(c.Min()), neg(c.Max())
	return r
}

// rank orders the eras with a cell at n: by median (never last), equal medians in table order.
func (f FigureCells) rank(n int) Ranking {
	r := Ranking{N: n}
	for _, era := range f.Eras {
		if c, ok := f.Cells[era][n]; ok && c.Runs() > 0 {
			r.Order = append(r.Order, ranked(era, c))
		}
	}
	sort.SliceStable(r.Order, func(i, j int) bool { return r.Order[i].cell.Median() < r.Order[j].cell.Median() })
	for i := 1; i < len(r.Order); i++ {
		a, b := r.Order[i-1].cell, r.Order[i].cell
		switch {
		case a.Median() == b.Median():
			r.Order[i].Rel = "="
		case Tie(a, b):
			r.Order[i].Rel = "≈"
		default:
			r.Order[i].Rel = "<"
		}
	}
	return r
}

// crossovers finds, per pair of eras, every reversal of their strict order over the sizes.
func (f FigureCells) crossovers() []Crossover {
	var out []Crossover
	for i, a := range f.Eras {
		for _, b := range f.Eras[i+1:] {
			last, lastN := 0, 0 // -1: a better, +1: b better
			for _, n := range f.Sizes {
				ca, oka := f.Cells[a][n]
				cb, okb := f.Cells[b][n]
				if !oka || !okb || ca.Runs() == 0 || cb.Runs() == 0 || Tie(ca, cb) {
					continue
				}
				rel := 1
				if ca.Median() < cb.Median() {
					rel = -1
				}
				if last != 0 && rel != last {
					x := Crossover{Figure: f.Figure, Before: a, After: b, FromN: lastN, ToN: n}
					if rel == -1 {
						x.Before, x.After = b, a
					}
					out = append(out, x)
				}
				last, lastN = rel, n
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].FromN < out[j].FromN })
	return out
}

// medians returns era's medians that are not `never` as points, ascending N.
func (f FigureCells) medians(era string) []Point {
	var pts []Point
	for _, n := range f.Sizes {
		if c, ok := f.Cells[era][n]; ok && c.Runs() > 0 && !c.Never() {
			pts = append(pts, Point{X: float64(n), Y: c.Median()})
		}
	}
	return pts
}

// Judge builds the verdict of the figures (each over the same sweep), its sentences in Lines.
func Judge(figs []FigureCells) Verdict {
	var v Verdict
	sizes := map[int]bool{}
	eraOrder := []string{}
	eraSeen := map[string]bool{}
	wins, loses := map[string]map[string][]int{}, map[string]map[string][]int{}
	for _, f := range figs {
		fv := FigureVerdict{Figure: f.Figure, Unit: f.Unit}
		var measured []int // sizes where at least one era has the figure
		for _, era := range f.Eras {
			if hasCells(f, era) {
				fv.Eras = append(fv.Eras, era)
				if !eraSeen[era] {
					eraSeen[era] = true
					eraOrder = append(eraOrder, era)
				}
			}
		}
		if len(fv.Eras) == 0 {
			continue
		}
		for _, n := range f.Sizes {
			r := f.rank(n)
			if len(r.Order) == 0 {
				continue
			}
			sizes[n] = true
			measured = append(measured, n)
			fv.Rankings = append(fv.Rankings, r)
			if len(r.Order) < 2 {
				continue
			}
			if r.Order[1].Rel == "<" {
				addN(wins, r.Order[0].Era, f.Figure, n)
			}
			if last := r.Order[len(r.Order)-1]; last.Rel == "<" {
				addN(loses, last.Era, f.Figure, n)
			}
		}
		fv.Crossovers = f.crossovers()
		if fv.Crossovers == nil {
			fv.Crossovers = []Crossover{}
		}
		if len(fv.Crossovers) == 0 && len(measured) >= 2 {
			fv.NoCrossover = fmt.Sprintf("N=%d..%d", measured[0], measured[len(measured)-1])
		}
		for _, era := range fv.Eras {
			fv.Growth = append(fv.Growth, GrowthOf(era, f.medians(era), f.FitDegree[era]))
		}
		v.Figures = append(v.Figures, fv)
	}
	for n := range sizes {
		v.Sizes = append(v.Sizes, n)
	}
	sort.Ints(v.Sizes)
	for _, era := range eraOrder {
		if wins[era] == nil && loses[era] == nil {
			continue
		}
		v.Eras = append(v.Eras, EraVerdict{Era: era, Wins: wins[era], Loses: loses[era]})
	}
	v.sentences(figs)
	return v
}

func hasCells(f FigureCells, era string) bool {
	for _, c := range f.Cells[era] {
		if c.Runs() > 0 {
			return true
		}
	}
	return false
}

func addN(m map[string]map[string][]int, era, fig string, n int) {
	if m[era] == nil {
		m[era] = map[string][]int{}
	}
	m[era][fig] = append(m[era][fig], n)
}

// sentences writes the verdict's Rankings (per figure its rankings and growth), Conclusions (per figure
// who ranks best where and its crossovers or none; last, per era what it wins and loses) and Lines.
func (v *Verdict) sentences(figs []FigureCells) {
	if len(v.Figures) == 0 {
		return
	}
	header := "verdict over " + sizeList(v.Sizes) + " (" + strings.Join(v.legend(), "; ") + "):"
	var out []string
	for _, fv := range v.Figures {
		name := fv.Figure
		if fv.Unit != "" {
			name += " (" + fv.Unit + ")"
		}
		var cells []string
		for _, r := range fv.Rankings {
			var b strings.Builder
			fmt.Fprintf(&b, "N=%d: ", r.N)
			for i, x := range r.Order {
				if i > 0 {
					fmt.Fprintf(&b, " %s ", x.Rel)
				}
				fmt.Fprintf(&b, "%s %s", x.Era, x.cell)
			}
			cells = append(cells, b.String())
		}
		out = append(out, name+": "+strings.Join(cells, "; "))
		var gs []string
		fitted := false
		for _, g := range fv.Growth {
			fitted = fitted || g.Fit != nil
		}
		for _, g := range fv.Growth {
			if fitted {
				gs = append(gs, g.Era+" "+g.String())
			} else {
				gs = append(gs, g.Era+" "+g.slopes())
			}
		}
		if fitted {
			out = append(out, fv.Figure+" growth: "+strings.Join(gs, "; "))
		} else {
			out = append(out, fv.Figure+" growth, log–log slope between consecutive N: "+strings.Join(gs, "; "))
		}
	}
	v.Rankings, out = out, nil
	for _, fv := range v.Figures {
		if len(fv.Eras) < 2 {
			only := fmt.Sprintf("%s: only %s has this figure", fv.Figure, fv.Eras[0])
			if fv.NoCrossover != "" {
				only += "; no crossover in " + fv.NoCrossover
			}
			out = append(out, only)
			continue
		}
		out = append(out, fv.Figure+": "+bestRuns(fv.Rankings))
		for _, x := range fv.Crossovers {
			out = append(out, fmt.Sprintf("%s: crossover between N=%d and N=%d: %s ranks before %s at N=%d, after it at N=%d",
				fv.Figure, x.FromN, x.ToN, x.Before, x.After, x.FromN, x.ToN))
		}
		if fv.NoCrossover != "" {
			out = append(out, fmt.Sprintf("%s: no crossover in %s", fv.Figure, fv.NoCrossover))
		}
	}
	for _, e := range v.Eras {
		if len(e.Wins) > 0 {
			out = append(out, e.Era+" wins "+figSizes(e.Wins, figs))
		}
		if len(e.Loses) > 0 {
			out = append(out, e.Era+" loses "+figSizes(e.Loses, figs))
		}
	}
	v.Conclusions = out
	v.Lines = append(append([]string{header}, v.Rankings...), v.Conclusions...)
}

// legend explains the notation the verdict's cells use, only what they use.
func (v Verdict) legend() []string {
	var multi, ranges, tie, equal, never bool
	for _, fv := range v.Figures {
		for _, r := range fv.Rankings {
			for _, x := range r.Order {
				multi = multi || x.Runs > 1
				ranges = ranges || (x.Runs > 1 && x.cell.Min() != x.cell.Max())
				tie = tie || x.Rel == "≈"
				equal = equal || x.Rel == "="
				never = never || x.cell.NeverRuns() > 0
			}
		}
	}
	out := []string{"lower is better"}
	switch {
	case ranges:
		out = append(out, "a cell: the median of its runs [min–max]")
	case multi:
		out = append(out, "a cell: the median of its runs")
	}
	if tie {
		out = append(out, "≈: the min–max ranges overlap, a tie")
	}
	if equal {
		out = append(out, "=: equal medians")
	}
	if never {
		out = append(out, "never: did not stabilise, ranks last")
	}
	return out
}

// bestRuns says which era ranks best at each size, consecutive sizes with the same best merged:
// "zk ranks best at N=4, 16; classic ≈ static at N=64".
func bestRuns(rs []Ranking) string {
	var parts []string
	prev := ""
	var ns []int
	flush := func() {
		if prev == "" {
			return
		}
		verb := "ranks best"
		if strings.Contains(prev, " ≈ ") || strings.Contains(prev, " = ") {
			verb = "tie for best"
		}
		parts = append(parts, fmt.Sprintf("%s %s at %s", prev, verb, sizeList(ns)))
	}
	for _, r := range rs {
		best := r.Best()
		sep := " ≈ "
		if len(best) > 1 && r.Order[1].Rel == "=" {
			sep = " = "
		}
		b := strings.Join(best, sep)
		if b != prev {
			flush()
			prev, ns = b, nil
		}
		ns = append(ns, r.N)
	}
	flush()
	return strings.Join(parts, "; ")
}

func sizeList(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return "N=" + strings.Join(s, ", ")
}

func figSizes(m map[string][]int, figs []FigureCells) string {
	var parts []string
	for _, f := range figs {
		if ns, ok := m[f.Figure]; ok {
			parts = append(parts, f.Figure+" at "+sizeList(ns))
		}
	}
	return strings.Join(parts, "; ")
}
