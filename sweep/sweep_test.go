package sweep

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// TestFitPolynomialExact: points on 3N² + 2N + 7 give back exactly those coefficients.
func TestFitPolynomialExact(t *testing.T) {
	var pts []Point
	for _, n := range []float64{4, 16, 64, 256} {
		pts = append(pts, Point{n, 3*n*n + 2*n + 7})
	}
	c, err := FitPolynomial(pts, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{7, 2, 3} {
		if !near(c[i], want, 1e-6) {
			t.Errorf("c[%d] = %g, want %g (all: %v)", i, c[i], want, c)
		}
	}
	if got := Eval(c, 10); !near(got, 327, 1e-6) {
		t.Errorf("Eval(10) = %g, want 327", got)
	}
}

// TestFitPolynomialLeastSquares: the line through (0,0) (1,1) (2,1) (3,2) minimising squared error is
// y = 0.1 + 0.6x.
func TestFitPolynomialLeastSquares(t *testing.T) {
	c, err := FitPolynomial([]Point{{0, 0}, {1, 1}, {2, 1}, {3, 2}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !near(c[0], 0.1, 1e-9) || !near(c[1], 0.6, 1e-9) {
		t.Errorf("c = %v, want [0.1 0.6]", c)
	}
}

func TestFitTooFewPoints(t *testing.T) {
	if _, err := FitPolynomial([]Point{{1, 1}, {1, 2}, {2, 3}}, 2); !errors.Is(err, ErrTooFewPoints) {
		t.Errorf("two distinct x for a quadratic: err %v, want ErrTooFewPoints", err)
	}
	if _, _, err := FitPowerLaw([]Point{{4, 0}, {16, 10}}); !errors.Is(err, ErrTooFewPoints) {
		t.Errorf("one positive point: err %v, want ErrTooFewPoints", err)
	}
}

// TestFitPowerLaw: y = 5·x^2 has exponent 2; linear growth has exponent 1.
func TestFitPowerLaw(t *testing.T) {
	var sq, lin []Point
	for _, n := range []float64{4, 16, 64} {
		sq = append(sq, Point{n, 5 * n * n})
		lin = append(lin, Point{n, 3 * n})
	}
	k, e, err := FitPowerLaw(sq)
	if err != nil || !near(k, 5, 1e-9) || !near(e, 2, 1e-9) {
		t.Errorf("square: k=%g e=%g err=%v, want 5, 2", k, e, err)
	}
	if _, e, _ := FitPowerLaw(lin); !near(e, 1, 1e-9) {
		t.Errorf("linear: e=%g, want 1", e)
	}
}

// TestChartSVG: valid XML with one polyline per series carrying its data attributes, a dot per point
// (none for a dashed fit), zero values on the 0 line and negative ones left out.
func TestChartSVG(t *testing.T) {
	ch := Chart{Title: "t", Columns: 2, Legend: []Series{{Label: "zk"}, {Label: "classic"}},
		Panels: []Panel{
			{Title: "zk_reads", Notes: []string{"fit: 2N²"}, Attrs: map[string]string{"figure": "zk_reads"}, Series: []Series{
				{Label: "zk", Points: []Point{{4, 40}, {16, 500}, {64, 8000}}, Attrs: map[string]string{"era": "zk"}},
				{Label: "fit", Dashed: true, Points: Curve([]float64{0, 0, 2}, 4, 64, 5), Attrs: map[string]string{"era": "zk", "fit": "quadratic"}},
			}},
			{Title: "time", Series: []Series{{Label: "classic", Points: []Point{{4, 0}, {16, -1}, {64, 300}}, Attrs: map[string]string{"era": "classic"}}}},
		}}
	var buf bytes.Buffer
	if err := ch.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	lines, circles := map[string]int{}, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "polyline":
			var era, fit, points string
			for _, a := range se.Attr {
				switch a.Name.Local {
				case "data-era":
					era = a.Value
				case "data-fit":
					fit = a.Value
				case "points":
					points = a.Value
				}
			}
			lines[era+"/"+fit] = len(strings.Fields(points))
		case "circle":
			circles++
		}
	}
	want := map[string]int{"zk/": 3, "zk/quadratic": 5, "classic/": 2}
	for k, n := range want {
		if lines[k] != n {
			t.Errorf("polyline %s: %d points, want %d (all: %v)", k, lines[k], n, lines)
		}
	}
	if circles != 5 { // 3 zk points + 2 classic (the -1 is left out; the fit has none)
		t.Errorf("%d dots, want 5", circles)
	}
}
