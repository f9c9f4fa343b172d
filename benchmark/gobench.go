package benchmark

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// GoBenchSummary is one benchmark of `go test -bench` output (its full name without "Benchmark" and the GOMAXPROCS
// suffix) summarised over its runs (-count) as benchstat does: for each unit, the median and its 95%
// confidence interval (benchmath.AssumeNothing; 6 runs or more give a finite interval), and the
// min-max of the runs.
type GoBenchSummary struct {
	Name    string        `json:"name"`
	Runs    int           `json:"runs"`
	Metrics []MetricStats `json:"metrics"` // in the order the output first gave the units
}

// MetricStats is one unit of a GoBenchSummary.
type MetricStats struct {
	Unit   string  `json:"unit"` // as the benchmark printed it: ns/op, B/op, ms-kgo/op, x-rebalancelab-vs-kgo
	Median float64 `json:"median"`
	Lo     float64 `json:"lo"` // the 95% confidence interval of the median; ±Inf with fewer than 6 runs
	Hi     float64 `json:"hi"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Cell is how a table shows m: the median, the min-max of the runs in brackets, and the 95%
// confidence interval of the median relative to it as benchstat prints it ("±3%") where the runs
// give one (6 or more). The three numbers share the median's precision (three significant digits,
// none after the point for integers).
func (m MetricStats) Cell() string {
	d := decimals(m.Median)
	if m.Median == math.Trunc(m.Median) && m.Min == math.Trunc(m.Min) && m.Max == math.Trunc(m.Max) {
		d = 0
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', d, 64) }
	c := f(m.Median)
	if m.Min != m.Max {
		c += " (" + f(m.Min) + "-" + f(m.Max) + ")"
		if !math.IsInf(m.Lo, 0) && !math.IsInf(m.Hi, 0) {
			c += " ±" + benchmath.Summary{Center: m.Median, Lo: m.Lo, Hi: m.Hi}.PctRangeString()
		}
	}
	return c
}

// decimals is how many digits after the point give v three significant digits (0 from 100 up).
func decimals(v float64) int {
	a := math.Abs(v)
	switch {
	case a == 0 || a >= 100:
		return 0
	case a >= 10:
		return 1
	case a >= 1:
		return 2
	default:
		return min(2-int(math.Floor(math.Log10(a))), 9)
	}
}

// GoBenchConfig is the header of `go test -bench` output: goos, goarch, pkg, cpu (the last value of
// each key read).
type GoBenchConfig map[string]string

// ReadGoBench parses `go test -bench` output (any number of packages and -count runs; other lines
// are skipped) with golang.org/x/perf/benchfmt and summarises each benchmark. Values keep the unit
// the benchmark printed (benchfmt's tidying to seconds is undone). Errors: a read error, or no
// benchmark line at all.
func ReadGoBench(r io.Reader, name string) ([]GoBenchSummary, GoBenchConfig, error) {
	type acc struct {
		units  []string
		values map[string][]float64
		runs   int
	}
	byName := map[string]*acc{}
	var order []string
	cfg := GoBenchConfig{}
	br := benchfmt.NewReader(r, name)
	for br.Scan() {
		res, ok := br.Result().(*benchfmt.Result)
		if !ok {
			continue // unit metadata and lines benchfmt could not parse
		}
		for _, c := range res.Config {
			if c.File {
				cfg[c.Key] = string(c.Value)
			}
		}
		base, parts := res.Name.Parts()
		full := string(base)
		for _, p := range parts {
			if !strings.HasPrefix(string(p), "-") { // drop the GOMAXPROCS suffix
				full += string(p)
			}
		}
		a := byName[full]
		if a == nil {
			a = &acc{values: map[string][]float64{}}
			byName[full] = a
			order = append(order, full)
		}
		a.runs++
		for _, v := range res.Values {
			unit, val := v.Unit, v.Value
			if v.OrigUnit != "" {
				unit, val = v.OrigUnit, v.OrigValue
			}
			if _, seen := a.values[unit]; !seen {
				a.units = append(a.units, unit)
			}
			a.values[unit] = append(a.values[unit], val)
		}
	}
	if err := br.Err(); err != nil {
		return nil, nil, err
	}
	if len(order) == 0 {
		return nil, nil, fmt.Errorf("benchmark report: no benchmark results in %s", name)
	}
	out := make([]GoBenchSummary, 0, len(order))
	for _, n := range order {
		a := byName[n]
		s := GoBenchSummary{Name: n, Runs: a.runs}
		for _, u := range a.units {
			vals := append([]float64(nil), a.values[u]...)
			sample := benchmath.NewSample(vals, &benchmath.DefaultThresholds)
			sum := benchmath.AssumeNothing.Summary(sample, 0.95)
			s.Metrics = append(s.Metrics, MetricStats{Unit: u, Median: sum.Center, Lo: sum.Lo, Hi: sum.Hi,
				Min: sample.Values[0], Max: sample.Values[len(sample.Values)-1]})
		}
		out = append(out, s)
	}
	return out, cfg, nil
}

// WriteGoBenchTables writes one table per benchmark function (the name before the first "/"): a row
// per sub-benchmark, a column per unit (MetricStats.Cell), ns/op left out where the benchmarks report
// their own per-target times (ms-<target>/op), as it then sums all targets. Markdown when markdown
// is set, aligned plain text otherwise.
func WriteGoBenchTables(w io.Writer, sums []GoBenchSummary, markdown bool) error {
	var groups []string
	byGroup := map[string][]GoBenchSummary{}
	for _, s := range sums {
		g, _, _ := strings.Cut(s.Name, "/")
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], s)
	}
	for gi, g := range groups {
		var units []string
		seen := map[string]bool{}
		perTarget := false // the benchmarks time each target themselves (ms-<target>/op)
		for _, s := range byGroup[g] {
			for _, m := range s.Metrics {
				if !seen[m.Unit] {
					seen[m.Unit] = true
					units = append(units, m.Unit)
				}
				perTarget = perTarget || (strings.HasPrefix(m.Unit, "ms-") && strings.HasSuffix(m.Unit, "/op"))
			}
		}
		if perTarget { // ns/op is then every target's time together: no figure to read
			units = slices.DeleteFunc(units, func(u string) bool { return u == "ns/op" })
		}
		header := append([]string{g, "runs"}, units...)
		var rows [][]string
		for _, s := range byGroup[g] {
			name := strings.TrimPrefix(strings.TrimPrefix(s.Name, g), "/")
			if name == "" {
				name = "-"
			}
			runs := fmt.Sprint(s.Runs)
			if s.Runs == 0 { // a summary rebuilt from a history line that did not keep the count
				runs = "not recorded"
			}
			row := []string{name, runs}
			cells := map[string]string{}
			for _, m := range s.Metrics {
				cells[m.Unit] = m.Cell()
			}
			for _, u := range units {
				c := cells[u]
				if c == "" {
					c = "n/a"
				}
				row = append(row, c)
			}
			rows = append(rows, row)
		}
		if gi > 0 {
			fmt.Fprintln(w)
		}
		if err := writeRows(w, markdown, header, rows); err != nil {
			return err
		}
	}
	return nil
}

// GoBenchMedians is the history line's medians: "name unit" → median.
func GoBenchMedians(sums []GoBenchSummary) map[string]float64 {
	m := map[string]float64{}
	for _, s := range sums {
		for _, x := range s.Metrics {
			m[s.Name+" "+x.Unit] = x.Median
		}
	}
	return m
}

// GoBenchSpreads is the history line's spreads, keyed as GoBenchMedians: the runs' min-max and the
// median's 95% interval (Lo and Hi zero where it is infinite, below 6 runs).
func GoBenchSpreads(sums []GoBenchSummary) map[string]Spread {
	m := map[string]Spread{}
	for _, s := range sums {
		for _, x := range s.Metrics {
			sp := Spread{Median: x.Median, Min: x.Min, Max: x.Max}
			if !math.IsInf(x.Lo, 0) && !math.IsInf(x.Hi, 0) {
				sp.Lo, sp.Hi = x.Lo, x.Hi
			}
			m[s.Name+" "+x.Unit] = sp
		}
	}
	return m
}
