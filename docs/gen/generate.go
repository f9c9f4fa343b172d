package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rebalancelab/rebalancelab/scenarios"
)

// sizes are the knobs -small changes.
type sizes struct {
	herd, zombie, divergent, rolling scenarios.Params
	growth                           []int // members N of the herd-growth runs (zk and classic eras)
	ch1Messages                      int
}

func sizesFor(small bool) sizes {
	if small {
		return sizes{
			herd: scenarios.Params{Consumers: 2, Partitions: 4}, zombie: scenarios.Params{Consumers: 2, Partitions: 4},
			divergent: scenarios.Params{Consumers: 2, Partitions: 4}, rolling: scenarios.Params{Consumers: 2, Partitions: 4},
			growth: []int{2, 3}, ch1Messages: 12,
		}
	}
	// The scenarios' own defaults (scenarios.Catalog), and a herd growing 2 → 4 → 8 → 16.
	return sizes{
		herd: scenarios.Params{Consumers: 4, Partitions: 8}, zombie: scenarios.Params{Consumers: 2, Partitions: 4},
		divergent: scenarios.Params{Consumers: 4, Partitions: 8}, rolling: scenarios.Params{Consumers: 4, Partitions: 8},
		growth: []int{2, 4, 8, 16}, ch1Messages: 12,
	}
}

// scenarioRun is one scenarios.Run the selected chapters need.
type scenarioRun struct {
	key        string // results key
	name       string // scenario
	eras       []string
	consumers  int
	partitions int
	report     bool // write the HTML report, timelines, result.json and table.txt under figures/<name>/
}

// Keys of the scenario runs.
const (
	runHerd      = "herd-effect"
	runZombie    = "split-brain-zombie"
	runDivergent = "split-brain-divergent-views"
	runRolling   = "rolling-restart"
)

func growthKey(n int) string { return fmt.Sprintf("herd-growth-%d", n) }

var allEras = []string{"zk", "classic", "cooperative", "static"}

// scenarioRuns lists the runs for the selected chapters, in the order they run.
func (s sizes) scenarioRuns(only map[string]bool) []scenarioRun {
	var runs []scenarioRun
	add := func(key, name string, eras []string, p scenarios.Params, report bool) {
		runs = append(runs, scenarioRun{key: key, name: name, eras: eras, consumers: p.Consumers, partitions: p.Partitions, report: report})
	}
	if only["ch4"] {
		add(runHerd, "herd-effect", allEras, s.herd, true)
		for _, n := range s.growth {
			if n != s.herd.Consumers { // the main run gives that row
				add(growthKey(n), "herd-effect", []string{"zk", "classic"}, scenarios.Params{Consumers: n, Partitions: s.herd.Partitions}, false)
			}
		}
	}
	switch {
	case only["ch5"]:
		add(runZombie, "split-brain-zombie", allEras, s.zombie, true)
	case only["ch3"]: // the fencing excerpt alone
		add(runZombie, "split-brain-zombie", []string{"classic"}, s.zombie, false)
	}
	if only["ch5"] {
		add(runDivergent, "split-brain-divergent-views", allEras, s.divergent, true)
	}
	if only["ch6"] {
		add(runRolling, "rolling-restart", allEras, s.rolling, true)
	}
	return runs
}

// generator runs the selected chapters.
type generator struct {
	cfg      config
	out      *output
	sz       sizes
	progress io.Writer

	mu      sync.Mutex // progress lines and results
	results map[string]*scenarios.RunResult
}

func (g *generator) logf(format string, a ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fmt.Fprintf(g.progress, "gen: "+format+"\n", a...)
}

// lockedWriter serializes the scenario runner's progress lines with ours.
type lockedWriter struct{ g *generator }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	return w.g.progress.Write(p)
}

func (g *generator) result(key string) *scenarios.RunResult {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.results[key]
}

// generate runs the lab chapters (1, 2, 3, 7: their own labs, the consumers driven directly) and the
// scenario runs (chapters 3's fencing, 4, 5, 6), then writes the chapters that read scenario
// results. With -small three of these run at a time (each scenario has its own lab; the runs mostly
// wait on sessions and settles); otherwise one after the other, so that the committed figures are
// measured on a machine doing nothing else of ours.
func (g *generator) generate(ctx context.Context) error {
	g.results = map[string]*scenarios.RunResult{}
	labChapters := func(ctx context.Context) error {
		steps := []struct {
			ch string
			fn func(context.Context) error
		}{{"ch1", g.ch1}, {"ch2", g.ch2}, {"ch3", g.ch3}, {"ch7", g.ch7}}
		for _, st := range steps {
			if !g.cfg.only[st.ch] {
				continue
			}
			t := time.Now()
			if err := st.fn(ctx); err != nil {
				return fmt.Errorf("%s: %w", st.ch, err)
			}
			g.logf("%s done in %s", st.ch, time.Since(t).Round(100*time.Millisecond))
		}
		return nil
	}
	tasks := []func(context.Context) error{labChapters}
	runs := g.sz.scenarioRuns(g.cfg.only)
	if g.cfg.small { // longest first, so that the pool finishes together
		sort.SliceStable(runs, func(i, j int) bool { return smallRunCost[runs[i].name] > smallRunCost[runs[j].name] })
	}
	for _, r := range runs {
		tasks = append(tasks, func(ctx context.Context) error { return g.runScenario(ctx, r) })
	}
	workers := 1
	if g.cfg.small {
		workers = 3
	}
	if err := runPool(ctx, workers, tasks); err != nil {
		return err
	}
	if g.cfg.only["ch3"] {
		if err := g.ch3Fencing(); err != nil {
			return fmt.Errorf("ch3: %w", err)
		}
	}
	for _, st := range []struct {
		ch string
		fn func() error
	}{{"ch4", g.ch4}, {"ch5", g.ch5}, {"ch6", g.ch6}} {
		if g.cfg.only[st.ch] {
			if err := st.fn(); err != nil {
				return fmt.Errorf("%s: %w", st.ch, err)
			}
		}
	}
	return nil
}

// smallRunCost orders the -small runs, longest first (seconds measured on 2 cores; only the order matters).
var smallRunCost = map[string]int{"split-brain-zombie": 38, "split-brain-divergent-views": 26, "herd-effect": 23, "rolling-restart": 20}

// runPool runs tasks on workers goroutines; the first error cancels the others and is returned.
func runPool(ctx context.Context, workers int, tasks []func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan func(context.Context) error)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range next {
				if err := t(ctx); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
				}
			}
		}()
	}
	for _, t := range tasks {
		if ctx.Err() != nil {
			break
		}
		next <- t
	}
	close(next)
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}

// runScenario runs r through the scenario runner, as `rebalancelab scenario run` does, and keeps
// the result; with r.report it writes figures/<name>/ (index.html, timeline-<era>.jsonl,
// result.json, table.txt).
func (g *generator) runScenario(ctx context.Context, r scenarioRun) error {
	start := time.Now()
	g.logf("scenario %s --era %s --consumers %d --partitions %d", r.name, joinComma(r.eras), r.consumers, r.partitions)
	o := scenarios.Options{
		Scenario: r.name, Eras: r.eras,
		Params:  scenarios.Params{Consumers: r.consumers, Partitions: r.partitions, Seed: g.cfg.seed},
		Version: g.cfg.version, Progress: lockedWriter{g},
	}
	if r.report {
		o.ReportDir = g.out.path(r.name)
	}
	res, err := scenarios.Run(ctx, o)
	if err != nil {
		return fmt.Errorf("scenario %s: %w", r.name, err)
	}
	for _, e := range res.Eras {
		for _, msg := range e.Errors {
			g.logf("scenario %s, era %s: runner error: %s", r.name, e.Era, msg)
		}
	}
	if r.report {
		for _, e := range res.Eras {
			if e.Timeline != "" {
				g.out.noteWritten(r.name + "/" + e.Timeline)
			}
		}
		g.out.noteWritten(r.name + "/index.html")
		var js, table bytes.Buffer
		if err := res.WriteJSON(&js); err != nil {
			return err
		}
		if err := g.out.write(r.name+"/result.json", js.Bytes()); err != nil {
			return err
		}
		if err := res.WriteTable(&table); err != nil {
			return err
		}
		if err := g.out.write(r.name+"/table.txt", table.Bytes()); err != nil {
			return err
		}
	}
	g.mu.Lock()
	g.results[r.key] = res
	g.mu.Unlock()
	g.logf("scenario %s done in %s (relations hold: %v)", r.name, time.Since(start).Round(100*time.Millisecond), res.Passed())
	return nil
}

func joinComma(s []string) string { return strings.Join(s, ",") }

// eraOf returns the era's run, nil when it did not run or does not apply.
func eraOf(res *scenarios.RunResult, era string) *scenarios.EraRun {
	if res == nil {
		return nil
	}
	for _, e := range res.Eras {
		if e.Era == era && e.Applies {
			return e
		}
	}
	return nil
}

// erasRun lists the eras of res that ran, in table order.
func erasRun(res *scenarios.RunResult) []string {
	var out []string
	for _, e := range res.Eras {
		if e.Applies {
			out = append(out, e.Era)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return slices.Index(allEras, a) - slices.Index(allEras, b) })
	return out
}
