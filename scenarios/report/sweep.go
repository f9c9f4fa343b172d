package report

// Sweeps: the result of one scenario run at several sizes N (SweepResult), its tables, plots and JSON;
// the zk era's ZooKeeper reads fitted to a·N² + b·N + c (or their log–log slopes), beside the model's
// count (sweep_model.go).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/sweep"
)

// SweepSize is one size of a sweep.
type SweepSize struct {
	N       int
	Runs    []*RunResult // Repeat runs, in order; a stopped size keeps what finished
	Stopped string       // why the size did not complete ("" when it did)
}

// SweepResult is a whole sweep.
type SweepResult struct {
	Scenario string
	Trigger  string // the measured event: the scenario's first trigger
	Sizes    []*SweepSize
	// BudgetSpent: the sweep ended because SweepOptions.Budget was spent before the next size or
	// the next run of its last size.
	BudgetSpent bool
	// EraMaxN is SweepOptions.EraMaxN: the eras cut above a size.
	EraMaxN map[string]int
	// Timings names the timings the runs ran with (TimingName), for every timing the sweep prints.
	Timings string
}

// cut reports whether era was left out at size n (SweepOptions.EraMaxN).
func (s *SweepResult) cut(era string, n int) bool {
	m, ok := s.EraMaxN[era]
	return ok && n > m
}

// sweepFigures are the figures a sweep plots and tabulates, of the measured event.
var sweepFigures = []string{figures.FigZKReads, figures.FigZKWatchEvents, figures.FigGroupRequests, figures.FigTimeToStableMs,
	figures.FigRebalanceParticipants, figures.FigPausedMemberMs, figures.FigUnownedPartitionMs}

// eras returns the eras that ran (applied) in the sweep, in table order.
func (s *SweepResult) eras() []string {
	seen := map[string]bool{}
	for _, z := range s.Sizes {
		for _, r := range z.Runs {
			for _, e := range r.Eras {
				if e.Applies {
					seen[e.Era] = true
				}
			}
		}
	}
	var out []string
	for _, e := range spec.Names(spec.Eras()) { // table order
		if seen[e] {
			out = append(out, e)
		}
	}
	return out
}

// Median returns the median over size z's runs of era's figure fig in the measured event (its Cell's;
// NeverStable when the median run never reached it); ok=false when no run has it, or when the figure
// does not apply to the era.
func (s *SweepResult) Median(z *SweepSize, era, fig string) (float64, bool) {
	c, ok := s.Cell(z, era, fig)
	if !ok {
		return 0, false
	}
	if c.Never() {
		return float64(figures.NeverStable), true
	}
	return c.Median(), true
}

// points returns era's (N, median) points of fig over the completed sizes, a `never` median as +Inf,
// and the min–max range of each (Hi +Inf where a run never reached the figure).
func (s *SweepResult) points(era, fig string) ([]sweep.Point, []sweep.Range) {
	var out []sweep.Point
	var rs []sweep.Range
	for _, z := range s.Sizes {
		if c, ok := s.Cell(z, era, fig); ok {
			out = append(out, sweep.Point{X: float64(z.N), Y: c.Median()})
			if c.Runs() > 1 {
				rs = append(rs, sweep.Range{X: float64(z.N), Lo: c.Min(), Hi: c.Max()})
			}
		}
	}
	return out, rs
}

// finitePoints are points' finite medians.
func (s *SweepResult) finitePoints(era, fig string) []sweep.Point {
	pts, _ := s.points(era, fig)
	var out []sweep.Point
	for _, p := range pts {
		if !math.IsInf(p.Y, 1) {
			out = append(out, p)
		}
	}
	return out
}

// ZKReadsFit is the zk era's ZooKeeper reads of the measured event over N, under the fit rule
// (sweep.FitAllowed): a quadratic fitted only over five sizes or more, else the log–log slopes.
type ZKReadsFit struct {
	Fitted  bool    // the quadratic was fitted (five sizes or more)
	A, B, C float64 // zk_reads ≈ A·N² + B·N + C when Fitted (else 0, 0, 0)
	// Exponent is the growth exponent where the sweep ends: with a fit, its curve's log-log slope
	// d ln(reads)/d ln(N) at the largest size (2: quadratic, 1: linear); without, the slope between
	// the last two sizes.
	Exponent float64
	Growth   sweep.Growth // the fit or the slopes between consecutive sizes
	Points   []sweep.Point
}

// FitZKReads applies the fit rule to the zk era's zk_reads (medians) over N; ok=false with fewer
// than two sizes.
func (s *SweepResult) FitZKReads() (ZKReadsFit, bool) {
	zk := string(spec.ZK)
	pts := s.finitePoints(zk, figures.FigZKReads)
	f := ZKReadsFit{Points: pts, Growth: sweep.GrowthOf(zk, pts, 2)}
	if len(pts) < 2 {
		return f, false
	}
	_, e, err := sweep.FitPowerLaw(pts[len(pts)-2:])
	if err != nil {
		return f, false
	}
	f.Exponent = e
	if c := f.Growth.Fit; c != nil {
		f.Fitted = true
		f.C, f.B, f.A = c[0], c[1], c[2]
		n := pts[len(pts)-1].X
		if y := sweep.Eval(c, n); y > 0 {
			f.Exponent = n * (2*f.A*n + f.B) / y // the fitted curve's elasticity at the largest N
		}
	}
	return f, true
}

// Crossover returns the smallest size at which every coordinator era that ran has a lower median
// time_to_stable_ms than the zk era; ok=false when none has (up to the largest completed size).
func (s *SweepResult) Crossover() (n int, ok bool) {
	for _, z := range s.Sizes {
		if len(z.Runs) == 0 {
			continue
		}
		zk, okz := s.Median(z, string(spec.ZK), figures.FigTimeToStableMs)
		if !okz {
			continue
		}
		if zk < 0 { // never stable: every era that did stabilise wins
			zk = math.Inf(1)
		}
		all, some := true, false
		for _, era := range spec.Eras() {
			if !era.Coordinated() {
				continue
			}
			v, ok := s.Median(z, string(era), figures.FigTimeToStableMs)
			if !ok {
				continue
			}
			some = true
			all = all && v >= 0 && v < zk
		}
		if some && all {
			return z.N, true
		}
	}
	return 0, false
}

// WriteTable prints, per figure of the measured event, one row per era with its cell at each size
// (the median, [min–max] over two runs or more, the number of runs when fewer than three), then the
// zk reads' growth (the fit rule), the model of the reads (WriteModel), and last the verdict (Verdict).
func (s *SweepResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	head := []string{"figure (" + s.Trigger + ")", "era"}
	for _, z := range s.Sizes {
		head = append(head, fmt.Sprintf("N=%d", z.N))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, fig := range sweepFigures {
		for _, era := range s.eras() {
			row := []string{fig, era}
			na := false
			for _, z := range s.Sizes {
				c, ok := s.Cell(z, era, fig)
				switch {
				case ok:
					row = append(row, c.String())
				case len(z.Runs) == 0:
					row = append(row, "stopped")
				case s.cut(era, z.N):
					row = append(row, "cut")
				default:
					row = append(row, "n/a")
					na = true
				}
			}
			if na && fig != figures.FigTimeToStableMs && allNA(row[2:]) {
				continue // a figure that does not apply to this era at any size: no row
			}
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, z := range s.Sizes {
		if z.Stopped != "" {
			fmt.Fprintf(w, "stopped: %s\n", z.Stopped)
		}
	}
	if s.BudgetSpent {
		last := s.Sizes[len(s.Sizes)-1]
		fmt.Fprintf(w, "stopped: the time budget ended the sweep after N=%d (%d run(s) of it)\n", last.N, len(last.Runs))
	}
	var reached []string
	for _, era := range s.eras() {
		for i := len(s.Sizes) - 1; i >= 0; i-- {
			if c, ok := s.Cell(s.Sizes[i], era, figures.FigTimeToStableMs); ok {
				reached = append(reached, fmt.Sprintf("%s N=%d (%d run(s))", era, s.Sizes[i].N, c.Runs()))
				break
			}
		}
	}
	if len(reached) > 0 {
		fmt.Fprintf(w, "reached: %s\n", strings.Join(reached, ", "))
	}
	for _, era := range s.eras() {
		if m, ok := s.EraMaxN[era]; ok && len(s.Sizes) > 0 && s.Sizes[len(s.Sizes)-1].N > m {
			fmt.Fprintf(w, "stopped: %s at N=%d, cut above it (--era-max-consumers)\n", era, m)
		}
	}
	if f, ok := s.FitZKReads(); ok {
		// the growth only: the model of the reads (WriteModel, below) gives the expected count per size
		fmt.Fprintf(w, "zk reads per %s: %s\n", s.Trigger, f.Growth)
	}
	if err := s.WriteModel(w); err != nil { // the measured counts beside the models' (sweep_model.go)
		return err
	}
	for _, l := range s.Verdict().Lines {
		fmt.Fprintln(w, l)
	}
	return nil
}

func allNA(cells []string) bool {
	for _, c := range cells {
		if c != "n/a" && c != "cut" {
			return false
		}
	}
	return true
}

// WriteSVG draws the sweep with its verdict (Verdict): one log-log panel per plotted figure with every
// era on the same axes, medians joined, min–max bars, the N¹ and N² reference slopes, each crossover's
// interval of N shaded and the figure's verdict under it; the coordination panel puts the zk era's
// ZooKeeper reads and watch events beside the coordinator eras' group requests, the zk reads' fitted
// curve dashed where the fit rule allows one.
func (s *SweepResult) WriteSVG(w io.Writer) error {
	eras := s.eras()
	v := s.Verdict()
	ch := sweep.Chart{Title: fmt.Sprintf("rebalancelab %s: the %q event's figures against N (log-log; medians, min–max bars)", s.Scenario, s.Trigger),
		Columns: 2}
	if s.Timings != "" { // every timing drawn names the timings it ran with (their values: the verdict's header)
		short, _, _ := strings.Cut(s.Timings, ":")
		ch.Title += "; timings: " + short
	}
	for i, era := range eras {
		ch.Legend = append(ch.Legend, sweep.Series{Label: era, Colour: EraColour(era, i)})
	}
	verdictOf := func(p *sweep.Panel, fig string) {
		for _, fv := range v.Figures {
			if fv.Figure != fig {
				continue
			}
			for _, x := range fv.Crossovers {
				p.Bands = append(p.Bands, sweep.Band{From: float64(x.FromN), To: float64(x.ToN),
					Label: fmt.Sprintf("%s overtakes %s", x.After, x.Before)})
				p.Notes = append(p.Notes, fmt.Sprintf("%s: crossover between N=%d and N=%d (%s before %s, then after)",
					fig, x.FromN, x.ToN, x.Before, x.After))
			}
			if len(fv.Eras) > 1 && fv.NoCrossover != "" {
				p.Notes = append(p.Notes, fmt.Sprintf("%s: no crossover in %s", fig, fv.NoCrossover))
			}
		}
	}
	coord := sweep.Panel{Title: "zk reads, zk watch events (dotted) / group requests per " + s.Trigger,
		Attrs: map[string]string{"figure": "coordination"}, RefSlopes: true}
	for i, era := range eras {
		if pts, rs := s.points(era, figures.FigZKReads); len(pts) > 0 {
			coord.Series = append(coord.Series, sweep.Series{Label: era + " zk_reads", Colour: EraColour(era, i), Points: pts, Ranges: rs,
				Attrs: map[string]string{"era": era, "figure": figures.FigZKReads}})
		}
		if pts, rs := s.points(era, figures.FigZKWatchEvents); len(pts) > 0 {
			coord.Series = append(coord.Series, sweep.Series{Label: era + " zk_watch_events", Colour: EraColour(era, i), Points: pts, Ranges: rs,
				Dotted: true, Attrs: map[string]string{"era": era, "figure": figures.FigZKWatchEvents}})
		}
		if pts, rs := s.points(era, figures.FigGroupRequests); len(pts) > 0 {
			coord.Series = append(coord.Series, sweep.Series{Label: era + " group_requests", Colour: EraColour(era, i), Points: pts, Ranges: rs,
				Attrs: map[string]string{"era": era, "figure": figures.FigGroupRequests}})
		}
	}
	if f, ok := s.FitZKReads(); ok {
		if f.Fitted {
			lo, hi := f.Points[0].X, f.Points[len(f.Points)-1].X
			coord.Series = append(coord.Series, sweep.Series{Label: "zk_reads fit", Colour: EraColour(string(spec.ZK), 0), Dashed: true,
				Points: sweep.Curve([]float64{f.C, f.B, f.A}, lo, hi, 24), Attrs: map[string]string{"era": string(spec.ZK), "fit": "quadratic"}})
			coord.Notes = append(coord.Notes, "dashed: zk reads "+f.Growth.String())
		} else {
			coord.Notes = append(coord.Notes, "zk reads: "+f.Growth.String())
		}
	}
	verdictOf(&coord, figures.FigGroupRequests)
	ch.Panels = append(ch.Panels, coord)
	for _, fig := range []string{figures.FigTimeToStableMs, figures.FigRebalanceParticipants, figures.FigPausedMemberMs, figures.FigUnownedPartitionMs} {
		p := sweep.Panel{Title: fig + " per " + s.Trigger, Attrs: map[string]string{"figure": fig}, RefSlopes: true}
		for i, era := range eras {
			pts, rs := s.points(era, fig)
			p.Series = append(p.Series, sweep.Series{Label: era, Colour: EraColour(era, i), Points: pts, Ranges: rs,
				Attrs: map[string]string{"era": era, "figure": fig}})
		}
		verdictOf(&p, fig)
		ch.Panels = append(ch.Panels, p)
	}
	return ch.WriteSVG(w)
}

// WriteJSON writes {"scenario", "trigger", "runs": [<the result JSON of every run, as a single-size run
// writes it>, ...], "stopped", "verdict"}: each run carrying its params.consumers, "stopped" naming the
// sizes that did not complete, "verdict" the sweep's verdict (sweep.Verdict).
func (s *SweepResult) WriteJSON(w io.Writer) error {
	var runs []json.RawMessage
	var stopped []string
	for _, z := range s.Sizes {
		for _, r := range z.Runs {
			var b bytes.Buffer
			if err := r.WriteJSON(&b); err != nil {
				return err
			}
			runs = append(runs, json.RawMessage(bytes.TrimSpace(b.Bytes())))
		}
		if z.Stopped != "" {
			stopped = append(stopped, z.Stopped)
		}
	}
	doc := struct {
		Scenario string            `json:"scenario"`
		Trigger  string            `json:"trigger"`
		Runs     []json.RawMessage `json:"runs"`
		Stopped  []string          `json:"stopped,omitempty"`
		Verdict  sweep.Verdict     `json:"verdict"`
	}{s.Scenario, s.Trigger, runs, stopped, s.Verdict()}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
