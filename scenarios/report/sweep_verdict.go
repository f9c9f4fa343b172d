package report

// A sweep's verdict (sweep.Judge) over its figures: the cells are every era's values of a figure in
// each run of a size, as the measured event gave them.

import (
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/sweep"
)

// Cell returns era's values of fig in the measured event over size z's runs (a run's -1, NeverStable,
// kept: the cell's `never`); ok=false when no run has it or the figure does not apply to the era.
func (s *SweepResult) Cell(z *SweepSize, era, fig string) (sweep.Cell, bool) {
	var c sweep.Cell
	for _, r := range z.Runs {
		e := r.era(era)
		if e == nil || !e.Applies {
			continue
		}
		for _, na := range e.Result.NotApplicable {
			if na == fig {
				return sweep.Cell{}, false
			}
		}
		ev, ok := e.EventNamed(s.Trigger)
		if !ok {
			continue
		}
		v, ok := ev.Figures.Get(fig)
		if !ok {
			continue
		}
		c.Values = append(c.Values, float64(v))
	}
	return c, len(c.Values) > 0
}

// FigureCells returns the sweep's figures (sweepFigures) as the verdict reads them: every era's cell
// at every size with runs; the zk era's zk_reads have a quadratic growth (FitZKReads).
func (s *SweepResult) FigureCells() []sweep.FigureCells {
	eras := s.eras()
	var out []sweep.FigureCells
	for _, fig := range sweepFigures {
		f := sweep.FigureCells{Figure: fig, Eras: eras, Cells: map[string]map[int]sweep.Cell{}}
		if strings.HasSuffix(fig, "_ms") {
			f.Unit = "ms"
		}
		if fig == figures.FigZKReads {
			f.FitDegree = map[string]int{string(spec.ZK): 2}
		}
		for _, z := range s.Sizes {
			if len(z.Runs) == 0 {
				continue
			}
			f.Sizes = append(f.Sizes, z.N)
			for _, era := range eras {
				if c, ok := s.Cell(z, era, fig); ok {
					if f.Cells[era] == nil {
						f.Cells[era] = map[int]sweep.Cell{}
					}
					f.Cells[era][z.N] = c
				}
			}
		}
		out = append(out, f)
	}
	return out
}

// Verdict is the sweep's verdict (sweep.Judge over FigureCells), every timing in it naming the
// timings the runs ran with (SweepResult.Timings): the header with their values, each sentence on an
// _ms figure with their name ("time_to_stable_ms [the lab's short sessions] (ms): ...").
func (s *SweepResult) Verdict() sweep.Verdict {
	v := sweep.Judge(s.FigureCells())
	if s.Timings == "" || len(v.Lines) == 0 {
		return v
	}
	short, _, _ := strings.Cut(s.Timings, ":") // "the lab's short sessions"; the header gives the values
	named := func(lines []string) []string {
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i] = l
			fig, rest, _ := strings.Cut(l, " ")
			name := strings.TrimSuffix(fig, ":")
			switch {
			case strings.HasSuffix(name, "_ms"): // "time_to_stable_ms [timings]: ..."
				out[i] = name + " [" + short + "]" + fig[len(name):] + " " + rest
			case strings.Contains(l, "_ms "): // an era's wins or losses on an _ms figure
				out[i] = l + " [" + short + "]"
			}
		}
		return out
	}
	v.Rankings, v.Conclusions = named(v.Rankings), named(v.Conclusions)
	header := strings.TrimSuffix(v.Lines[0], ":") + ", timings: " + s.Timings + ":"
	v.Lines = append(append([]string{header}, v.Rankings...), v.Conclusions...)
	return v
}
