package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rebalancelab/rebalancelab/scenarios"
	"github.com/rebalancelab/rebalancelab/scenarios/connect"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/scenarios/streams"
)

// sizes are the knobs -small changes.
type sizes struct {
	herd, zombie, divergent, rolling spec.Params
	// sweep is chapter 4's herd-join sweep under make demo's rules (scripts/demo.sh): every era, P = 2·N,
	// three runs per size in rotated era order, the brokers' ZooKeeper session at Kafka's default.
	sweep       sweepSizes
	ch1Messages int
	// connect is chapter 7's connect-workers runs: one per protocol, each through these layouts.
	connect connectSizes
	// cluster is chapter 8's three-broker runs (broker-failure, coordinator-failover, durability) and
	// clusterEras the eras each runs (coordinator-failover: only those with a coordinator).
	cluster     spec.Params
	clusterEras []string
}

// connectSizes are the connect-workers knobs: the Connect protocols to run (one run each, in this
// order) and the layouts each run goes through (connect.Layout: workers, tasks.max).
type connectSizes struct {
	protocols []string
	layouts   []connect.Layout
}

// sweepSizes is a herd-join sweep's knobs (scenarios.SweepOptions').
type sweepSizes struct {
	sizes  []int
	repeat int
	// partitionsPerMember k gives size N a topic of k·N partitions (SweepOptions.PartitionsPerMember):
	// with 2, a join moves partitions at every N, and the cooperative era's second round happens.
	partitionsPerMember int
	// eraMaxN: era → the largest N it runs at (SweepOptions.EraMaxN; its cells above print "cut").
	eraMaxN map[string]int
	// brokerConfig: server.properties over the lab's (Options.BrokerConfig).
	brokerConfig map[string]string
}

// maxN is the largest size.
func (s sweepSizes) maxN() int { return slices.Max(append([]int{0}, s.sizes...)) }

// flags are the sweep's `scenario run` flags beyond --consumers and --repeat, as make demo passes them.
func (s sweepSizes) flags() string {
	var b strings.Builder
	if s.partitionsPerMember > 0 {
		fmt.Fprintf(&b, " --partitions-per-member %d", s.partitionsPerMember)
	}
	keys := slices.Sorted(maps.Keys(s.brokerConfig))
	for _, k := range keys {
		fmt.Fprintf(&b, " --broker-config %s=%s", k, s.brokerConfig[k])
	}
	if len(s.eraMaxN) > 0 {
		var parts []string
		for _, era := range allEras {
			if m, ok := s.eraMaxN[era]; ok {
				parts = append(parts, fmt.Sprintf("%s=%d", era, m))
			}
		}
		b.WriteString(" --era-max-consumers " + strings.Join(parts, ","))
	}
	return b.String()
}

// sweepBrokerConfig is make demo's broker setting for its sweeps (scripts/demo.sh): the brokers' own
// ZooKeeper session at Kafka's default, 18 s, instead of the lab's 2 s, so that the zk era's herd at
// N=256 (tens of thousands of reads for one join) does not hold the ZooKeeper server past the broker's
// session. The members keep the lab's short sessions.
var sweepBrokerConfig = map[string]string{"zookeeper.session.timeout.ms": "18000"}

func (s sweepSizes) consumers() string {
	parts := make([]string, len(s.sizes))
	for i, n := range s.sizes {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ",")
}

func sizesFor(small bool) sizes {
	if small {
		return sizes{
			herd: spec.Params{Consumers: 2, Partitions: 4}, zombie: spec.Params{Consumers: 2, Partitions: 4},
			divergent: spec.Params{Consumers: 2, Partitions: 4}, rolling: spec.Params{Consumers: 2, Partitions: 4},
			sweep: sweepSizes{sizes: []int{2, 3, 4}, repeat: 1, partitionsPerMember: 2, brokerConfig: sweepBrokerConfig}, ch1Messages: 12,
			// The least connect-workers allows: its last layout's last worker is killed, so two workers
			// (started together, before the connectors), one source and one sink task; sessioned only.
			connect: connectSizes{protocols: []string{connect.Sessioned}, layouts: []connect.Layout{{Workers: 2, SourceTasks: 1, SinkTasks: 1}}},
			cluster: spec.Params{Consumers: 2, Partitions: 6}, clusterEras: spec.Names([]spec.Era{spec.Classic}),
		}
	}
	// The scenarios' own defaults (catalog.Catalog), and the herd-join sweep under make demo's rules:
	// N = 4, 16, 64, 256 with P = 2·N, 3 runs per size, zk and classic at every size, cooperative and
	// static up to N=64 (about 9 minutes in all on 2 cores); connect-workers as `make connect-workers`
	// runs it (the four layouts, sessioned then eager).
	return sizes{
		herd: spec.Params{Consumers: 4, Partitions: 8}, zombie: spec.Params{Consumers: 2, Partitions: 4},
		divergent: spec.Params{Consumers: 4, Partitions: 8}, rolling: spec.Params{Consumers: 4, Partitions: 8},
		sweep: sweepSizes{sizes: []int{4, 16, 64, 256}, repeat: 3, partitionsPerMember: 2,
			eraMaxN: map[string]int{string(spec.Cooperative): 64, string(spec.Static): 64}, brokerConfig: sweepBrokerConfig},
		ch1Messages: 12,
		connect:     connectSizes{protocols: []string{connect.Sessioned, connect.Eager}, layouts: connect.Layouts},
		cluster:     spec.Params{Consumers: 3, Partitions: 6}, clusterEras: allEras,
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
	// sweep, when it has sizes, makes this run a sweep over them (consumers is unused): the result is
	// in sweeps[key], its table, plot and JSON in figures/ch4-herd-sweep.*.
	sweep sweepSizes
	// connectProtocol, when set, makes this run a connect-workers run (connect.Run) with that
	// protocol through connectLayouts (eras, consumers and partitions are unused): the result is in
	// connects[key].
	connectProtocol string
	connectLayouts  []connect.Layout
	// cluster: a three-broker scenario whose brokers run as processes of config.bin, with chapter 8's
	// state snapshots around its broker kill (snapshots.onStep).
	cluster bool
}

// connectKey is the results key of the connect-workers run with protocol p.
func connectKey(p string) string { return connect.Scenario + "-" + p }

// describe is the run as the plan lists it.
func (r scenarioRun) describe() string {
	switch {
	case len(r.sweep.sizes) > 0:
		return fmt.Sprintf("%s --era %s --consumers %s%s --repeat %d", r.name, strings.Join(r.eras, ","),
			r.sweep.consumers(), r.sweep.flags(), r.sweep.repeat)
	case r.connectProtocol != "":
		var ls []string
		for _, l := range r.connectLayouts {
			ls = append(ls, fmt.Sprintf("%dw/%d+%d", l.Workers, l.SourceTasks, l.SinkTasks))
		}
		return fmt.Sprintf("%s --connect-protocol %s (layouts workers/source+sink tasks: %s)", r.name, r.connectProtocol, strings.Join(ls, " "))
	}
	return fmt.Sprintf("%s --era %s --consumers %d --partitions %d", r.name, strings.Join(r.eras, ","), r.consumers, r.partitions)
}

// Keys of the scenario runs.
const (
	runHerd      = "herd-effect"
	runZombie    = "split-brain-zombie"
	runDivergent = "split-brain-divergent-views"
	runRolling   = "rolling-restart"
	runHerdSweep = "herd-sweep"
	runStreams   = "streams-threads"
)

var allEras = spec.Names(spec.Eras())

// scenarioRuns lists the runs for the selected chapters, in the order they run.
func (s sizes) scenarioRuns(only map[string]bool) []scenarioRun {
	var runs []scenarioRun
	add := func(key, name string, eras []string, p spec.Params, report bool) {
		runs = append(runs, scenarioRun{key: key, name: name, eras: eras, consumers: p.Consumers, partitions: p.Partitions, report: report})
	}
	if only["ch4"] {
		add(runHerd, "herd-effect", allEras, s.herd, true)
		runs = append(runs, scenarioRun{key: runHerdSweep, name: "herd-join", eras: allEras, sweep: s.sweep})
	}
	switch {
	case only["ch5"]:
		add(runZombie, "split-brain-zombie", allEras, s.zombie, true)
	case only["ch3"]: // the fencing excerpt alone
		add(runZombie, "split-brain-zombie", []string{string(spec.Classic)}, s.zombie, false)
	}
	if only["ch5"] {
		add(runDivergent, "split-brain-divergent-views", allEras, s.divergent, true)
	}
	if only["ch6"] {
		add(runRolling, "rolling-restart", allEras, s.rolling, true)
	}
	if only["ch8"] {
		for _, name := range []string{runBrokerFailure, runCoordFailover, runDurability} {
			eras := s.clusterEras
			if name == runCoordFailover { // the zk era has no coordinator
				eras = slices.DeleteFunc(slices.Clone(eras), func(e string) bool { return spec.Era(e).UsesZooKeeper() })
			}
			runs = append(runs, scenarioRun{key: name, name: name, eras: eras, consumers: s.cluster.Consumers,
				partitions: s.cluster.Partitions, report: true, cluster: true})
		}
	}
	if only["ch7"] { // Kafka Streams instances: one size (2 instances, 6 partitions), small or not
		add(runStreams, "streams-threads", []string{streams.Era}, spec.Params{Consumers: 2, Partitions: 6}, false)
		for _, p := range s.connect.protocols { // Kafka Connect workers
			runs = append(runs, scenarioRun{key: connectKey(p), name: connect.Scenario, connectProtocol: p, connectLayouts: s.connect.layouts})
		}
	}
	return runs
}

// generator runs the selected chapters.
type generator struct {
	cfg      config
	out      *output
	sz       sizes
	progress io.Writer

	mu       sync.Mutex // progress lines and results
	results  map[string]*scenarios.RunResult
	sweeps   map[string]*report.SweepResult
	connects map[string]*connect.Result
	snaps    snapshots // chapter 8's state znodes around its broker kills
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

func (g *generator) sweepResult(key string) *report.SweepResult {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sweeps[key]
}

func (g *generator) connectResult(key string) *connect.Result {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.connects[key]
}

func (g *generator) result(key string) *scenarios.RunResult {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.results[key]
}

// generate runs the lab chapters (1, 2, 3, 7: their own labs, the consumers driven directly) and the
// scenario runs (chapters 3's fencing, 4, 5, 6, and 7's streams-threads and connect-workers), then writes the chapters that read scenario
// results. With -small three of these run at a time (each scenario has its own lab; the runs mostly
// wait on sessions and settles); otherwise one after the other, so that the committed figures are
// measured on a machine doing nothing else of ours.
func (g *generator) generate(ctx context.Context) error {
	g.results = map[string]*scenarios.RunResult{}
	g.sweeps = map[string]*report.SweepResult{}
	g.connects = map[string]*connect.Result{}
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
		sort.SliceStable(runs, func(i, j int) bool { return runs[i].smallCost() > runs[j].smallCost() })
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
	}{{"ch4", g.ch4}, {"ch5", g.ch5}, {"ch6", g.ch6}, {"ch7", g.ch7Streams}, {"ch7", g.ch7Connect}, {"ch8", g.ch8}} {
		if g.cfg.only[st.ch] {
			if err := st.fn(); err != nil {
				return fmt.Errorf("%s: %w", st.ch, err)
			}
		}
	}
	return nil
}

// smallRunCost orders the -small runs, longest first (seconds measured on 2 cores; only the order matters).
var smallRunCost = map[string]int{"split-brain-zombie": 38, "split-brain-divergent-views": 26, "herd-effect": 23, "rolling-restart": 20,
	"streams-threads": 25, connect.Scenario: 50, runBrokerFailure: 35, runCoordFailover: 35, runDurability: 30}

// smallCost is r's place in that order; a sweep costs about a herd-join run (≈15 s) per size and run.
func (r scenarioRun) smallCost() int {
	if len(r.sweep.sizes) > 0 {
		return 15 * len(r.sweep.sizes) * max(r.sweep.repeat, 1)
	}
	return smallRunCost[r.name]
}

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
	if len(r.sweep.sizes) > 0 {
		return g.runSweep(ctx, r)
	}
	if r.connectProtocol != "" {
		return g.runConnect(ctx, r)
	}
	start := time.Now()
	g.logf("scenario %s --era %s --consumers %d --partitions %d", r.name, joinComma(r.eras), r.consumers, r.partitions)
	o := scenarios.Options{
		Scenario: r.name, Eras: r.eras,
		Params:  spec.Params{Consumers: r.consumers, Partitions: r.partitions, Seed: g.cfg.seed},
		Version: g.cfg.version, Progress: lockedWriter{g},
	}
	if r.report {
		o.ReportDir = g.out.path(r.name)
	}
	if r.cluster {
		o.MemberBinary = g.cfg.bin
		o.OnStep = g.snaps.onStep(r.key)
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
	g.logf("scenario %s done in %s (passed: %v%s)", r.name, time.Since(start).Round(100*time.Millisecond), res.Passed(), failuresNote(res.Failures()))
	return nil
}

// runConnect runs connect-workers with r's protocol and layouts, as `rebalancelab scenario run
// connect-workers --connect-protocol P` does (real Connect 3.9 worker JVMs on a lab of its own), and
// keeps the result; ch7Connect writes its table. A relation that does not hold is reported by the
// chapter, not an error.
func (g *generator) runConnect(ctx context.Context, r scenarioRun) error {
	start := time.Now()
	g.logf("scenario %s", r.describe())
	res, err := connect.Run(ctx, connect.Options{Protocol: r.connectProtocol, Layouts: r.connectLayouts,
		Progress: lockedWriter{g}, Log: quietLog()})
	if err != nil {
		if res != nil {
			var b bytes.Buffer
			_ = res.WriteTable(&b)
			g.logf("scenario %s (%s) so far:\n%s", r.name, r.connectProtocol, b.String())
		}
		return fmt.Errorf("scenario %s (%s): %w", r.name, r.connectProtocol, err)
	}
	g.mu.Lock()
	g.connects[r.key] = res
	g.mu.Unlock()
	g.logf("scenario %s (%s) done in %s (passed: %v%s)", r.name, r.connectProtocol, time.Since(start).Round(100*time.Millisecond), res.Passed(), failuresNote(res.Errors))
	return nil
}

// sweepRunDeadline bounds each run of a sweep (one repeat of a size, its eras one after the other: at
// N=256 zk and classic take about 40 s together); a size that misses it ends the sweep, and the
// chapter says so (report.SweepSize.Stopped).
const sweepRunDeadline = 4 * time.Minute

// runSweep runs r's sweep as `rebalancelab scenario run herd-join --era all --consumers 4,16,64,256
// --partitions-per-member 2 --broker-config zookeeper.session.timeout.ms=18000 --era-max-consumers
// cooperative=64,static=64 --repeat 3` does (make demo's rules, without its time budget: the chapter
// shows every size it plans), and writes figures/ch4-herd-sweep.svg (the plot), .txt (the table, the
// models' counts and the verdict) and .json. Above scenarios.MaxInProcessMembers the members run in
// member pools, processes of the rebalancelab binary (-bin).
func (g *generator) runSweep(ctx context.Context, r scenarioRun) error {
	start := time.Now()
	g.logf("scenario %s (a sweep)", r.describe())
	res, err := scenarios.RunSweep(ctx, scenarios.SweepOptions{
		Options: scenarios.Options{Scenario: r.name, Eras: r.eras,
			Params:       spec.Params{Partitions: r.partitions, Seed: g.cfg.seed},
			BrokerConfig: maps.Clone(r.sweep.brokerConfig), MemberBinary: g.cfg.bin,
			Version: g.cfg.version, Progress: lockedWriter{g}},
		Sizes: r.sweep.sizes, Repeat: r.sweep.repeat, Deadline: sweepRunDeadline,
		PartitionsPerMember: r.sweep.partitionsPerMember, EraMaxN: maps.Clone(r.sweep.eraMaxN),
	})
	if err != nil {
		return fmt.Errorf("sweep %s: %w", r.name, err)
	}
	var svg, table, js bytes.Buffer
	if err := res.WriteSVG(&svg); err != nil {
		return err
	}
	if err := res.WriteTable(&table); err != nil {
		return err
	}
	if err := res.WriteJSON(&js); err != nil {
		return err
	}
	for name, b := range map[string][]byte{sweepFile + ".svg": svg.Bytes(), sweepFile + ".txt": table.Bytes(), sweepFile + ".json": js.Bytes()} {
		if err := g.out.write(name, b); err != nil {
			return err
		}
	}
	g.mu.Lock()
	g.sweeps[r.key] = res
	g.mu.Unlock()
	for _, e := range sweepErrors(res) { // the chapter lists them under its tables
		g.logf("sweep %s: runner error: %s", r.name, e)
	}
	g.logf("sweep %s done in %s", r.name, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// sweepFile is the figures' name of chapter 4's sweep, without its extension.
const sweepFile = "ch4-herd-sweep"

func joinComma(s []string) string { return strings.Join(s, ",") }

// eraOf returns the era's run (era compared as spec.Era), nil when it did not run or does not apply.
func eraOf(res *scenarios.RunResult, era spec.Era) *report.EraRun {
	if res == nil {
		return nil
	}
	for _, e := range res.Eras {
		if spec.Era(e.Era) == era && e.Applies {
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

// failuresNote is "; failed: <what>" for a run that did not pass (its errors and failed relations).
func failuresNote(f []string) string {
	if len(f) == 0 {
		return ""
	}
	return "; failed: " + strings.Join(f, "; ")
}
