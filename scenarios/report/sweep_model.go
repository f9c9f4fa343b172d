package report

// A sweep's measured coordination counts beside the model's (model.go), per era and size.

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// ModelCell is one era's figure at one size of a sweep: per run, the measured count of the measured
// event and the model's count evaluated on that run's measured inputs (attempts, members, owned
// partitions, revokers).
type ModelCell struct {
	Era      string
	N        int
	Figure   string  // FigZKReads, FigZKWatchEvents or FigGroupRequests
	Measured []int64 // per run
	Model    []int64 // per run, the same order
	// Lo, Hi bound measured − model for zk_reads over the runs (ZKReadsResidualBound: the widest);
	// both 0 for the other figures, whose bound is stated with the model.
	Lo, Hi int64
	// Inputs says where the inputs came from: "timeline" (the run's records) or "figures" (a result
	// without records: ZKChangeFromFigures); Detail is the last run's model by API for group_requests.
	Inputs, Detail string
	// Note: the window held several membership changes (a storm): the zk model counts each change
	// apart, with every attempt listing the final members, while overlapping changes share one-shot
	// watches and early attempts list fewer members — the model is then no prediction.
	Note string
}

// Residuals are measured − model per run.
func (c ModelCell) Residuals() []int64 {
	out := make([]int64, len(c.Measured))
	for i := range c.Measured {
		out[i] = c.Measured[i] - c.Model[i]
	}
	return out
}

// ModelCells evaluates the models on every completed run of the sweep: zk_reads and zk_watch_events for
// the zk era, group_requests for the coordinator eras; one cell per era, figure and size, in size then
// era order. A run whose inputs cannot be measured (a zk result without records whose attempts differ
// from its participants) is left out of its cell.
func (s *SweepResult) ModelCells() []ModelCell {
	var out []ModelCell
	for _, z := range s.Sizes {
		for _, era := range s.eras() {
			figs := []string{figures.FigGroupRequests}
			if spec.Era(era).UsesZooKeeper() {
				figs = []string{figures.FigZKReads, figures.FigZKWatchEvents}
			}
			cells := make([]ModelCell, len(figs))
			for i, fig := range figs {
				cells[i] = ModelCell{Era: era, N: z.N, Figure: fig, Inputs: "timeline"}
			}
			for _, r := range z.Runs {
				e := r.era(era)
				if e == nil || !e.Applies {
					continue
				}
				ev, ok := e.EventNamed(s.Trigger)
				if !ok {
					continue
				}
				if !spec.Era(era).UsesZooKeeper() {
					c, _ := figures.GroupChangeOf(e.Records, era, ev)
					g, ok := figures.GroupRequests(c)
					if !ok || len(e.Records) == 0 {
						continue
					}
					cells[0].Measured = append(cells[0].Measured, ev.Figures.GroupRequests)
					cells[0].Model = append(cells[0].Model, g.Total())
					cells[0].Detail = g.String()
					continue
				}
				c := figures.ZKChangeOf(e.Records, ev, r.Params.Partitions)
				if len(e.Records) == 0 {
					joined, left := changedMembers(r.Script, s.Trigger)
					owners := map[string]bool{}
					for _, o := range e.EndOwners {
						if o != "" {
							owners[o] = true
						}
					}
					if c, ok = figures.ZKChangeFromFigures(ev.Figures, r.Params.Consumers, joined, left, len(owners), r.Params.Partitions); !ok {
						continue
					}
					cells[0].Inputs, cells[1].Inputs = "figures", "figures"
				}
				if c.Joined+c.Left+c.Crashed > 1 {
					cells[0].Note = "several changes in the window: the model counts one change at a time"
					cells[1].Note = cells[0].Note
				}
				lo, hi := figures.ZKReadsResidualBound(c)
				if len(cells[0].Measured) == 0 || lo < cells[0].Lo {
					cells[0].Lo = lo
				}
				cells[0].Hi = max(cells[0].Hi, hi)
				cells[0].Measured = append(cells[0].Measured, ev.Figures.ZKReads)
				cells[0].Model = append(cells[0].Model, figures.ZKReads(c))
				cells[1].Measured = append(cells[1].Measured, ev.Figures.ZKWatchEvents)
				cells[1].Model = append(cells[1].Model, figures.ZKWatchEvents(c))
			}
			for _, c := range cells {
				if len(c.Measured) > 0 {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// ModelCellFor is ModelCells' cell of era's figure fig at size n; ok=false when there is none.
func (s *SweepResult) ModelCellFor(n int, era, fig string) (ModelCell, bool) {
	for _, c := range s.ModelCells() {
		if c.N == n && c.Era == era && c.Figure == fig {
			return c, true
		}
	}
	return ModelCell{}, false
}

// WriteModel prints every ModelCell: the measured median (min–max, runs), the model's, and the
// residuals, with the zk reads' bound; then what the models leave out.
func (s *SweepResult) WriteModel(w io.Writer) error {
	cells := s.ModelCells()
	if len(cells) == 0 {
		return nil
	}
	fmt.Fprintf(w, "measured counts per %s beside the model's, evaluated on each run's measured attempts, members and owned partitions (residual = measured − model):\n", s.Trigger)
	for _, c := range cells {
		line := fmt.Sprintf("  %-11s N=%-4d %-16s measured %s  model %s  residual %s",
			c.Era, c.N, c.Figure, spread(c.Measured, true), spread(c.Model, false), signedList(c.Residuals()))
		if c.Figure == figures.FigZKReads {
			line += fmt.Sprintf(" (bound %+d..%+d)", c.Lo, c.Hi)
		}
		if c.Inputs == "figures" {
			line += " [inputs from the figures]"
		}
		if c.Detail != "" {
			line += " [model: " + c.Detail + "]"
		}
		if c.Note != "" {
			line += " [" + c.Note + "]"
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w, "  zk: 0.8.2's ZookeeperConsumerConnector per attempt (figures.ZKReads); its reads' bound is the fetchers' leader lookups that may fall after the window.")
	fmt.Fprintln(w, "  coordinator eras: the group protocol's JoinGroup/SyncGroup per member per round, the Heartbeat that announces a round, the commit before each rejoin (figures.GroupRequests); the residual is the periodic heartbeats and auto-commits of the window.")
	return nil
}

// spread prints the median with min–max, and with runs the number of runs.
func spread(v []int64, runs bool) string {
	s := append([]int64(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	med := float64(s[len(s)/2])
	if len(s)%2 == 0 {
		med = float64(s[len(s)/2-1]+s[len(s)/2]) / 2
	}
	out := fmt.Sprintf("%g", med)
	var in []string
	if s[0] != s[len(s)-1] {
		in = append(in, fmt.Sprintf("%d–%d", s[0], s[len(s)-1]))
	}
	switch {
	case !runs:
	case len(s) == 1:
		in = append(in, "1 run")
	default:
		in = append(in, fmt.Sprintf("%d runs", len(s)))
	}
	if len(in) > 0 {
		out += " (" + strings.Join(in, ", ") + ")"
	}
	return out
}

func signedList(v []int64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%+d", x)
	}
	return strings.Join(parts, ",")
}

// changedMembers counts the script's start and stop steps between the trigger named trigger and the
// next trigger: the members that joined and left in the change.
func changedMembers(steps []spec.Step, trigger string) (joined, left int) {
	in := false
	for _, s := range steps {
		if s.Action == spec.ActTrigger {
			if in {
				break
			}
			in = s.Name == trigger
			continue
		}
		if in {
			switch s.Action {
			case spec.ActStart:
				joined++
			case spec.ActStop:
				left++
			}
		}
	}
	return joined, left
}
