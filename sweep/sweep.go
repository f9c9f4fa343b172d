// Package sweep draws figures against the size of a run and fits curves to them: the one plot and fit
// code that `scenario run --consumers 4,16,64` and `bench storm` share.
//
// A Chart is a grid of Panels; a Panel has log-log axes (N across, the figure up) with a decade grid,
// one polyline per Series with its min–max bars, optional N¹ and N² reference slopes and shaded bands
// (a crossover's interval of N). Zero values sit on a "0" line below the axis (a log axis has no 0);
// +Inf values on a "never" row above the plot; negative values are left out ("not measured"). Sized
// to be read at 1200 px wide with two columns. Fits are least squares:
// FitPolynomial on the values themselves (e.g. zk reads = a·N² + b·N + c), FitPowerLaw on their
// logarithms (the exponent of y ≈ k·N^e, which says how fast a figure grows).
package sweep

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Point is one measurement: X is the run's size (N), Y the figure's value.
type Point struct{ X, Y float64 }

// Series is one line of a panel.
type Series struct {
	Label  string
	Colour string // an SVG colour; "" picks one by position
	Points []Point
	Dashed bool              // drawn dashed, without dots (a fitted curve)
	Dotted bool              // drawn dotted, with its dots (a second figure of the same colour)
	Attrs  map[string]string // written on the polyline as data-<key>="<value>" (machine-readable)
	// Ranges are min–max bars (drawn at their X in the series' colour); Hi +Inf reaches the "never" row.
	Ranges []Range
}

// Range is a min–max bar at X.
type Range struct{ X, Lo, Hi float64 }

// Band marks an interval of N on a panel (a crossover: the order of two eras changed between From and
// To), shaded, with its label at the top of the plot.
type Band struct {
	From, To float64
	Label    string
}

// Panel is one log-log plot.
type Panel struct {
	Title  string
	XLabel string // default "N"
	Series []Series
	Attrs  map[string]string // written on the panel's group as data-<key>="<value>"
	// Notes are lines of text under the x axis (a fit's formula, a count beside it); three fit.
	Notes []string
	// RefSlopes draws the reference slopes N¹ and N² (grey, dashed) from the lowest value at the
	// smallest N: a series parallel to one grows as that power of N.
	RefSlopes bool
	Bands     []Band
}

// Chart is a grid of panels, Columns wide, with a title and a legend of labels to colours.
type Chart struct {
	Title   string
	Legend  []Series // Label and Colour of each legend entry
	Panels  []Panel
	Columns int // default 1
}

const (
	panelW, panelH = 520, 300
	plotW, plotH   = panelW - 20, panelH - 40
	left, top      = 70, 80
	gapX, gapY     = 60, 110
	neverRow       = 28 // the top of a plot: the "never" row, above the log scale
)

var palette = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"}

// Colour returns the palette's i-th colour (cycling).
func Colour(i int) string { return palette[i%len(palette)] }

// WriteSVG renders the chart as one SVG document.
func (c Chart) WriteSVG(w io.Writer) error {
	cols := max(c.Columns, 1)
	rows := (len(c.Panels) + cols - 1) / cols
	width := left + cols*(panelW+gapX)
	height := top + max(rows, 1)*(panelH+gapY)
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="16">%s</text>`+"\n", left, esc(c.Title))
	for i, s := range c.Legend {
		x := left + i*150
		fmt.Fprintf(&b, `<line x1="%d" y1="44" x2="%d" y2="44" stroke="%s" stroke-width="3"/><text x="%d" y="49">%s</text>`+"\n",
			x, x+20, colourOr(s.Colour, i), x+25, esc(s.Label))
	}
	for i, p := range c.Panels {
		ox := left + (i%cols)*(panelW+gapX)
		oy := top + (i/cols)*(panelH+gapY)
		writePanel(&b, p, float64(ox), float64(oy))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// decades returns the decade range [lo, hi] (log10) around the positive values of vals, at least one
// decade wide.
func decades(vals []float64) (lo, hi float64) {
	mn, mx := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if v > 0 && !math.IsInf(v, 1) {
			mn, mx = math.Min(mn, v), math.Max(mx, v)
		}
	}
	if math.IsInf(mn, 1) {
		return 0, 1
	}
	lo, hi = math.Floor(math.Log10(mn)), math.Ceil(math.Log10(mx))
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

// logSpan returns the log10 range of the positive values of vals with a margin of a tenth of their
// span on each side (at least half a decade wide); 0..1 without any.
func logSpan(vals []float64) (lo, hi float64) {
	mn, mx := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if v > 0 && !math.IsInf(v, 1) {
			mn, mx = math.Min(mn, v), math.Max(mx, v)
		}
	}
	if math.IsInf(mn, 1) {
		return 0, 1
	}
	lo, hi = math.Log10(mn), math.Log10(mx)
	pad := math.Max(hi-lo, 0.5) / 10
	if hi-lo < 0.5 {
		pad += (0.5 - (hi - lo)) / 2
	}
	return lo - pad, hi + pad
}

func writePanel(b *strings.Builder, p Panel, ox, oy float64) {
	var xs, ys []float64
	never := false
	for _, s := range p.Series {
		for _, pt := range s.Points {
			xs, ys = append(xs, pt.X), append(ys, pt.Y)
			never = never || math.IsInf(pt.Y, 1)
		}
		for _, r := range s.Ranges {
			ys = append(ys, r.Lo, r.Hi)
			never = never || math.IsInf(r.Hi, 1)
		}
	}
	for _, bd := range p.Bands {
		xs = append(xs, bd.From, bd.To)
	}
	xlo, xhi := logSpan(xs)
	ylo, yhi := decades(ys)
	x0, y0 := ox, oy+plotH // axes origin, bottom left
	scaleH := float64(plotH - neverRow)
	px := func(x float64) float64 { return x0 + (math.Log10(x)-xlo)/(xhi-xlo)*plotW }
	py := func(y float64) float64 {
		switch {
		case math.IsInf(y, 1):
			return oy + neverRow/2 - 2 // the "never" row
		case y <= 0:
			return y0 + 14 // the "0" line below the axis
		}
		return y0 - (math.Log10(y)-ylo)/(yhi-ylo)*scaleH
	}
	fmt.Fprintf(b, `<g class="panel"%s>`+"\n", attrs(p.Attrs))
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="14" font-weight="bold">%s</text>`+"\n", x0, oy-8, esc(p.Title))
	for i, n := range p.Notes {
		fmt.Fprintf(b, `<text class="note" x="%.0f" y="%.0f" fill="#333">%s</text>`+"\n", x0, y0+62+float64(16*i), esc(n))
	}
	fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", x0, oy, plotW, plotH)
	for i, bd := range p.Bands {
		if bd.From <= 0 || bd.To <= bd.From {
			continue
		}
		x1, x2 := px(bd.From), px(bd.To)
		fmt.Fprintf(b, `<rect class="crossover" data-from-n="%g" data-to-n="%g" x="%.1f" y="%.0f" width="%.1f" height="%d" fill="#f5c518" fill-opacity="0.18" stroke="#c9a000" stroke-dasharray="3 2"><title>%s</title></rect>`+"\n",
			bd.From, bd.To, x1, oy, x2-x1, plotH, esc(bd.Label))
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle" font-size="12" fill="#7a6200">%s</text>`+"\n",
			(x1+x2)/2, oy+neverRow+14+float64(14*i), esc(bd.Label))
	}
	// the x axis: the sizes measured labelled (the decades only gridded), or the decades without sizes
	sizes := map[float64]bool{}
	for _, x := range xs {
		if x > 0 {
			sizes[x] = true
		}
	}
	for d := math.Ceil(xlo); d <= xhi; d++ {
		x := x0 + (d-xlo)/(xhi-xlo)*plotW
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#eee"/>`, x, oy, x, y0)
		if len(sizes) == 0 {
			fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`, x, y0+32, decade(d))
		}
		b.WriteString("\n")
	}
	sorted := make([]float64, 0, len(sizes))
	for x := range sizes {
		sorted = append(sorted, x)
	}
	sort.Float64s(sorted)
	for _, x := range sorted {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#666"/><text class="size" x="%.1f" y="%.0f" text-anchor="middle">%g</text>`+"\n",
			px(x), y0, px(x), y0+5, px(x), y0+32, x)
	}
	for d := ylo; d <= yhi; d++ {
		y := y0 - (d-ylo)/(yhi-ylo)*scaleH
		fmt.Fprintf(b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#eee"/><text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			x0, y, x0+plotW, y, x0-4, y+4, decade(d))
	}
	xl := p.XLabel
	if xl == "" {
		xl = "N"
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="end" fill="#999">0</text>`+"\n", x0-4, y0+18)
	if never {
		fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%d" height="%d" fill="#f4f4f4"/><text x="%.0f" y="%.0f" text-anchor="end" fill="#777">never</text>`+"\n",
			x0+1, oy+1, plotW-2, neverRow-6, x0-4, oy+neverRow/2)
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", x0+plotW/2, y0+46, esc(xl))
	if p.RefSlopes {
		writeRefSlopes(b, p, px, py, xhi, yhi)
	}
	for i, s := range p.Series {
		pts := append([]Point(nil), s.Points...)
		sort.SliceStable(pts, func(a, c int) bool { return pts[a].X < pts[c].X })
		var coords []string
		var dots strings.Builder
		colour := colourOr(s.Colour, i)
		for _, r := range s.Ranges {
			if r.X <= 0 || r.Hi < r.Lo || r.Lo < 0 {
				continue
			}
			x, ylo, yhi := px(r.X), py(r.Lo), py(r.Hi)
			fmt.Fprintf(&dots, `<path class="range" d="M%.1f,%.1fV%.1fM%.1f,%.1fH%.1fM%.1f,%.1fH%.1f" stroke="%s" stroke-width="1.5" fill="none"><title>%s N=%g: %s–%s</title></path>`+"\n",
				x, ylo, yhi, x-4, ylo, x+4, x-4, yhi, x+4, colour, esc(s.Label), r.X, fmtY(r.Lo), fmtY(r.Hi))
		}
		for _, pt := range pts {
			if pt.X <= 0 || pt.Y < 0 || math.IsNaN(pt.Y) {
				continue
			}
			x, y := px(pt.X), py(pt.Y)
			if math.IsInf(pt.Y, 1) { // never: a cross on the never row, not joined to the line
				fmt.Fprintf(&dots, `<path class="never" d="M%.1f,%.1fl8,8m0,-8l-8,8" stroke="%s" stroke-width="2.5"><title>%s N=%g: never</title></path>`+"\n",
					x-4, y-4, colour, esc(s.Label), pt.X)
				continue
			}
			coords = append(coords, fmt.Sprintf("%.1f,%.1f", x, y))
			if !s.Dashed {
				fmt.Fprintf(&dots, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s N=%g: %s</title></circle>`+"\n",
					x, y, colour, esc(s.Label), pt.X, fmtY(pt.Y))
			}
		}
		dash := ""
		switch {
		case s.Dashed:
			dash = ` stroke-dasharray="6 4"`
		case s.Dotted:
			dash = ` stroke-dasharray="1 4"`
		}
		fmt.Fprintf(b, `<polyline class="series"%s points="%s" fill="none" stroke="%s" stroke-width="2"%s><title>%s</title></polyline>`+"\n",
			attrs(s.Attrs), strings.Join(coords, " "), colour, dash, esc(s.Label))
		b.WriteString(dots.String())
	}
	b.WriteString("</g>\n")
}

// writeRefSlopes draws y ∝ N and y ∝ N² through the lowest positive finite value at the smallest N,
// up to the right edge or the top of the log scale.
func writeRefSlopes(b *strings.Builder, p Panel, px, py func(float64) float64, xhi, yhi float64) {
	ax, ay := math.Inf(1), math.Inf(1)
	for _, s := range p.Series {
		for _, pt := range s.Points {
			if pt.X <= 0 || pt.Y <= 0 || math.IsInf(pt.Y, 1) {
				continue
			}
			if pt.X < ax || (pt.X == ax && pt.Y < ay) {
				ax, ay = pt.X, pt.Y
			}
		}
	}
	if math.IsInf(ax, 1) {
		return
	}
	for k := 1; k <= 2; k++ {
		ex := math.Pow(10, xhi)
		if top := ax * math.Pow(math.Pow(10, yhi)/ay, 1/float64(k)); top < ex {
			ex = top
		}
		ey := ay * math.Pow(ex/ax, float64(k))
		fmt.Fprintf(b, `<line class="ref-slope" data-slope="%d" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-width="1.2" stroke-dasharray="2 5"/><text x="%.1f" y="%.1f" fill="#666" font-size="12">∝N%s</text>`+"\n",
			k, px(ax), py(ay), px(ex), py(ey), px(ex)-30, py(ey)+(4+6*float64(2-k)), superscript(k))
	}
}

func fmtY(v float64) string {
	if math.IsInf(v, 1) {
		return "never"
	}
	return fmt.Sprintf("%g", v)
}

func attrs(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, ` data-%s="%s"`, k, esc(m[k]))
	}
	return b.String()
}

func colourOr(c string, i int) string {
	if c != "" {
		return c
	}
	return Colour(i)
}

// decade labels 10^d: 1, 10, 100, 1k, 10k, 100k, 1M, ...
func decade(d float64) string {
	v := math.Pow(10, d)
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%gG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// ErrTooFewPoints: a fit needs more distinct points than it has coefficients.
var ErrTooFewPoints = errors.New("sweep: too few points for the fit")

// FitPolynomial returns the least-squares coefficients c[0..degree] of y = Σ c[i]·x^i over pts
// (normal equations solved by Gaussian elimination with partial pivoting). Errors: ErrTooFewPoints
// when pts has no more than degree distinct x values.
func FitPolynomial(pts []Point, degree int) ([]float64, error) {
	distinct := map[float64]bool{}
	for _, p := range pts {
		distinct[p.X] = true
	}
	if degree < 0 || len(distinct) <= degree {
		return nil, ErrTooFewPoints
	}
	n := degree + 1
	// a is the augmented normal matrix [XᵀX | Xᵀy].
	a := make([][]float64, n)
	for i := range a {
		a[i] = make([]float64, n+1)
	}
	for _, p := range pts {
		pow := make([]float64, 2*n)
		pow[0] = 1
		for k := 1; k < 2*n; k++ {
			pow[k] = pow[k-1] * p.X
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				a[i][j] += pow[i+j]
			}
			a[i][n] += pow[i] * p.Y
		}
	}
	for col := 0; col < n; col++ {
		piv := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[piv][col]) {
				piv = r
			}
		}
		if a[piv][col] == 0 {
			return nil, ErrTooFewPoints
		}
		a[col], a[piv] = a[piv], a[col]
		for r := 0; r < n; r++ {
			if r == col {
				continue
			}
			f := a[r][col] / a[col][col]
			for k := col; k <= n; k++ {
				a[r][k] -= f * a[col][k]
			}
		}
	}
	c := make([]float64, n)
	for i := range c {
		c[i] = a[i][n] / a[i][i]
	}
	return c, nil
}

// Eval returns Σ c[i]·x^i.
func Eval(c []float64, x float64) float64 {
	y := 0.0
	for i := len(c) - 1; i >= 0; i-- {
		y = y*x + c[i]
	}
	return y
}

// FitPowerLaw returns k and e of y ≈ k·x^e, fitted by least squares on (log x, log y) over the points
// with x > 0 and y > 0. Errors: ErrTooFewPoints with fewer than two distinct such x values.
func FitPowerLaw(pts []Point) (k, e float64, err error) {
	var logs []Point
	for _, p := range pts {
		if p.X > 0 && p.Y > 0 {
			logs = append(logs, Point{math.Log(p.X), math.Log(p.Y)})
		}
	}
	c, err := FitPolynomial(logs, 1)
	if err != nil {
		return 0, 0, err
	}
	return math.Exp(c[0]), c[1], nil
}

// Curve samples the polynomial c at n points spread evenly in log x over [lo, hi]: a fitted curve to
// draw as a dashed Series.
func Curve(c []float64, lo, hi float64, n int) []Point {
	if lo <= 0 || hi <= lo || n < 2 {
		return nil
	}
	out := make([]Point, n)
	for i := range out {
		x := math.Exp(math.Log(lo) + float64(i)/float64(n-1)*(math.Log(hi)-math.Log(lo)))
		out[i] = Point{x, Eval(c, x)}
	}
	return out
}
