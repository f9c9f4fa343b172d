package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// RenderBrokerComparison writes the figures of one scenario run on several brokers or with several
// kinds of members (runs, in the order given: e.g. rebalancelab then kafka) as one table, figure by era: a cell holds the value when
// every broker has the same, else the values of each broker joined by " / " in run order, so a figure
// that differs between the brokers shows both. Eras that did not apply on every run are left out.
// Errors: fewer than two runs, runs of different scenarios, or the writer's.
func RenderBrokerComparison(w io.Writer, runs ...*RunResult) error {
	if len(runs) < 2 {
		return fmt.Errorf("scenarios: comparing brokers needs two runs or more, got %d", len(runs))
	}
	var names []string
	for _, r := range runs {
		if r.Scenario != runs[0].Scenario {
			return fmt.Errorf("scenarios: runs of %s and %s cannot be compared", runs[0].Scenario, r.Scenario)
		}
		name := r.BrokerName()
		if r.Members != "" && r.Members != spec.MembersRebalancelab {
			name += " with " + r.Members + " members"
		}
		names = append(names, name)
	}
	// The eras every run has, in the first run's order, and each run's results by era.
	byEra := make([]map[string]figures.Result, len(runs))
	for i, r := range runs {
		byEra[i] = map[string]figures.Result{}
		for _, e := range r.Eras {
			if e.Applies {
				byEra[i][e.Era] = e.Result
			}
		}
	}
	var eras []string
	for _, e := range runs[0].Eras {
		all := true
		for _, m := range byEra {
			_, ok := m[e.Era]
			all = all && ok
		}
		if all {
			eras = append(eras, e.Era)
		}
	}
	tables := make([][]figRow, len(runs))
	for i := range runs {
		var rs []figures.Result
		for _, e := range eras {
			rs = append(rs, byEra[i][e])
		}
		tables[i] = figureTable(rs)
	}
	lines := [][]string{append([]string{"figure"}, eras...)}
	for row := range tables[0] {
		line := []string{tables[0][row].Name}
		for col := range eras {
			var vals []string
			same := true
			for i := range runs {
				v := tables[i][row].Cells[col].Text
				same = same && v == tables[0][row].Cells[col].Text
				vals = append(vals, v)
			}
			if same {
				line = append(line, vals[0])
			} else {
				line = append(line, strings.Join(vals, " / "))
			}
		}
		lines = append(lines, line)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %s (a / b: the figure differs between the runs, in that order)\n",
		runs[0].Scenario, strings.Join(names, " / "))
	writeAligned(&b, lines)
	_, err := io.WriteString(w, b.String())
	return err
}
