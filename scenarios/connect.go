package scenarios

// connect-workers (issue 17): Kafka Connect 3.9 distributed workers (lab.StartConnectWorker, real
// ConnectDistributed JVMs) on the lab's broker, a verifiable source and sink whose task count follows
// tasks.max, configured over the REST API. The coordinator's group observer (broker.WithGroupObserver,
// decoded by groupview) is the source of the generations and of each worker's connectors and tasks; the
// tasks' own event files (start, stop, every record produced and consumed) are the source of the task
// downtime and of the end-to-end counts. It does not fit the era runner (its members are not the
// project's and there are no eras: its comparison is Connect's protocols), so it runs on its own:
// RunConnect.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/broker"
	"github.com/rebalancelab/rebalancelab/broker/coordinator"
	"github.com/rebalancelab/rebalancelab/internal/groupview"
	"github.com/rebalancelab/rebalancelab/internal/poll"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/env"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
)

// ConnectScenario is the scenario's name for `rebalancelab scenario run`.
const ConnectScenario = "connect-workers"

// ConnectScenarioDescription is its line in `scenario list`.
const ConnectScenarioDescription = "Kafka Connect 3.9 workers on the lab's broker: layouts of 1-3 workers, a worker killed (-9); sessioned (delayed reassignment) vs eager (every worker stops its tasks)"

// Connect's rebalance protocols (connect.protocol; the group's protocol name).
const (
	ConnectSessioned = "sessioned" // Kafka 3.9's default: incremental cooperative, with session keys
	ConnectEager     = "eager"     // the protocol before KIP-415 (the group's protocol is "default")
)

// ConnectLayout is one layout of the scenario: how many workers run, and the tasks.max of the source
// and of the sink connector.
type ConnectLayout struct {
	Workers     int `json:"workers"`
	SourceTasks int `json:"source_tasks"`
	SinkTasks   int `json:"sink_tasks"`
}

// ConnectLayouts are the four layouts.
var ConnectLayouts = []ConnectLayout{{1, 1, 1}, {1, 2, 2}, {2, 2, 2}, {3, 2, 2}}

// ConnectOptions configures RunConnect.
type ConnectOptions struct {
	Protocol string          // ConnectSessioned (default) or ConnectEager
	Layouts  []ConnectLayout // default ConnectLayouts; workers only grow from one layout to the next
	// DelayMs is scheduled.rebalance.max.delay.ms (default 3000).
	DelayMs    int
	Throughput int    // records per second per source task (default 20)
	Dir        string // the workers' dirs and the tasks' event files; default a temp dir removed after
	Log        *logrus.Entry
	LabLog     *logrus.Entry
	Progress   io.Writer
}

// ConnectHolding is one worker's connectors and tasks in one generation.
type ConnectHolding struct {
	Worker     string   `json:"worker"`
	Connectors []string `json:"connectors"`
	Tasks      []string `json:"tasks"`
	DelayMs    int32    `json:"delay_ms,omitempty"` // the assignment's scheduled delay
}

// ConnectGeneration is a Stable generation of the Connect group as the coordinator saw it, with what
// each worker holds: for the eager protocol its assignment; for sessioned, whose assignments are
// incremental, what it held before less what is revoked plus what is assigned.
type ConnectGeneration struct {
	TsMs       int64            `json:"ts_ms"`
	Generation int32            `json:"generation"`
	Protocol   string           `json:"protocol"`
	Workers    []ConnectHolding `json:"workers"`
	Phase      string           `json:"phase"` // the layout or step it belongs to
}

// ConnectResult is a run of connect-workers.
type ConnectResult struct {
	Protocol    string              `json:"protocol"`
	DelayMs     int                 `json:"scheduled_rebalance_max_delay_ms"`
	Generations []ConnectGeneration `json:"generations"`
	// Layouts: the generation each layout settled in.
	Layouts []ConnectGeneration `json:"layouts"`
	// InternalTopics: the cleanup.policy of each of Connect's internal topics (DescribeConfigs).
	InternalTopics map[string]string `json:"internal_topics"`
	Killed         string            `json:"killed"`
	KilledAtMs     int64             `json:"killed_at_ms"`
	KilledTasks    []string          `json:"killed_tasks"` // its connectors and tasks when killed
	// DepartureSeenMs: the first generation without the killed worker, after KilledAtMs; its delay as
	// the leader set it; ReassignedMs: the generation in which the killed worker's tasks were held again.
	DepartureSeenMs int64 `json:"departure_seen_ms"`
	DepartureDelay  int32 `json:"departure_delay_ms"`
	ReassignedMs    int64 `json:"reassigned_ms"`
	// TaskDowntimeMs: per worker, the sum over the tasks it ran when the worker was killed of the time
	// from the kill (or the task's stop on that worker, when later) to the task's next start.
	TaskDowntimeMs map[string]int64 `json:"task_downtime_ms"`
	// TasksStopped: per surviving worker, how many of its tasks stopped after the kill.
	TasksStopped map[string]int `json:"tasks_stopped"`
	// Rebalances: generations from the kill until the group was stable with every task held.
	Rebalances int `json:"rebalances"`
	// End to end: distinct source records acknowledged, distinct of them the sink consumed, the ones
	// missing, and the records consumed more than once.
	Produced   int64                   `json:"produced"`
	Consumed   int64                   `json:"consumed"`
	Missing    int64                   `json:"missing"`
	Duplicates int64                   `json:"duplicates"`
	Relations  []report.RelationResult `json:"relations"`
	// Errors: what the run could not do and went on without (the worker to kill had already exited);
	// any fails it (Passed).
	Errors   []string `json:"errors,omitempty"`
	Versions map[string]string
}

// Passed reports whether the run earned its result: it recorded no error (Errors: the kill -9 that
// found its worker already gone...) and every relation checked held (skipped ones count neither way),
// and some were checked.
func (r *ConnectResult) Passed() bool {
	if len(r.Errors) > 0 {
		return false
	}
	var c RelationCounts
	c.Add(r.Relations)
	return c.Failed == 0 && c.Held > 0
}

const (
	connectGroup  = "connect-lab"
	connectTopic  = "connect-verifiable"
	connectSource = "verifiable-source"
	connectSink   = "verifiable-sink"
)

type connectRun struct {
	o        ConnectOptions
	res      *ConnectResult
	progress func(string, ...any)
	events   string

	mu      sync.Mutex
	gens    []groupview.Generation
	held    map[string]ConnectHolding // member id → holding (sessioned accumulation)
	workers map[string]string         // REST URL → worker name
	phase   string
}

func (c *connectRun) observe(ev coordinator.GroupChanged) {
	if ev.Group != connectGroup || ev.State != coordinator.Stable {
		return
	}
	g := groupview.Decode(ev)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gens = append(c.gens, g)
	next := map[string]ConnectHolding{}
	cg := ConnectGeneration{TsMs: g.TsMs, Generation: g.Generation, Protocol: g.Protocol, Phase: c.phase}
	for _, m := range g.Members {
		h := c.held[m.MemberID]
		if m.ConnectVersion == 0 {
			h = ConnectHolding{}
		}
		h.Worker = strings.TrimSuffix(m.ConnectURL, "/") // the worker's name once known: resolveLocked
		h.Connectors = union(minus(h.Connectors, m.RevokedConnectors), m.Connectors)
		h.Tasks = union(minus(h.Tasks, m.RevokedTasks), m.Tasks)
		h.DelayMs = m.ConnectDelayMs
		next[m.MemberID] = h
		cg.Workers = append(cg.Workers, h)
	}
	c.held = next
	c.res.Generations = append(c.res.Generations, cg)
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// resolveLocked names the workers of every generation by their REST URL (a worker joins the group
// before StartConnectWorker returns its URL).
func (c *connectRun) resolveLocked() {
	for _, g := range c.res.Generations {
		for i, h := range g.Workers {
			if n, ok := c.workers[h.Worker]; ok {
				g.Workers[i].Worker = n
			}
		}
		sort.Slice(g.Workers, func(i, j int) bool { return g.Workers[i].Worker < g.Workers[j].Worker })
	}
}

// last returns the latest generation, if any.
func (c *connectRun) last() (ConnectGeneration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resolveLocked()
	if len(c.res.Generations) == 0 {
		return ConnectGeneration{}, false
	}
	return c.res.Generations[len(c.res.Generations)-1], true
}

// wantHeld reports whether g has exactly workers members, holds every connector and task of l once,
// and spreads them as Connect's assignors do (connectors and tasks each within one of even).
func wantHeld(g ConnectGeneration, workers []string, l ConnectLayout) bool {
	if len(g.Workers) != len(workers) {
		return false
	}
	var conns, tasks []string
	minC, maxC, minT, maxT := 1<<30, 0, 1<<30, 0
	for _, w := range g.Workers {
		if !slices.Contains(workers, w.Worker) {
			return false
		}
		conns, tasks = append(conns, w.Connectors...), append(tasks, w.Tasks...)
		minC, maxC = min(minC, len(w.Connectors)), max(maxC, len(w.Connectors))
		minT, maxT = min(minT, len(w.Tasks)), max(maxT, len(w.Tasks))
	}
	want := []string{}
	for i := range l.SourceTasks {
		want = append(want, fmt.Sprintf("%s-%d", connectSource, i))
	}
	for i := range l.SinkTasks {
		want = append(want, fmt.Sprintf("%s-%d", connectSink, i))
	}
	slices.Sort(want)
	slices.Sort(tasks)
	slices.Sort(conns)
	return slices.Equal(tasks, want) && slices.Equal(conns, []string{connectSink, connectSource}) && maxC-minC <= 1 && maxT-minT <= 1
}

// waitUntil tries cond every 100 ms until it holds, for at most d (poll.Until); the error is
// "connect-workers: " and poll's (what, how long, the tries; ErrTimeout or ctx's error wrapped).
func waitUntil(ctx context.Context, d time.Duration, what string, cond func() bool) error {
	if err := (poll.Backoff{First: 100 * time.Millisecond, Max: 100 * time.Millisecond}).Until(ctx, d, what, cond); err != nil {
		return fmt.Errorf("connect-workers: %w", err)
	}
	return nil
}

// RunConnect runs connect-workers: the lab (ZooKeeper, one rebalancelab broker with the group
// observer), the layouts one after the other (a worker started, or the connectors' tasks.max changed,
// each waited until the observer shows the layout held), then the last worker killed with -9 and the
// run waited until its tasks are held again; then the source paused and the sink waited until it has
// consumed every acknowledged record (the source stopped first: PUT /connectors/{name}/stop). The
// relations are checked into the result; errors are the lab's, a worker's that does not start, or a
// layout not reached in time.
func RunConnect(ctx context.Context, o ConnectOptions) (*ConnectResult, error) {
	if o.Protocol == "" {
		o.Protocol = ConnectSessioned
	}
	if o.Protocol != ConnectSessioned && o.Protocol != ConnectEager {
		return nil, fmt.Errorf("connect-workers: protocol %q: want %q or %q", o.Protocol, ConnectSessioned, ConnectEager)
	}
	if len(o.Layouts) == 0 {
		o.Layouts = ConnectLayouts
	}
	if o.DelayMs == 0 {
		o.DelayMs = 3000
	}
	if o.Throughput == 0 {
		o.Throughput = 20
	}
	d := env.Defaults{Log: o.Log, LabLog: o.LabLog}
	d.Fill() // the broker is ours (its group observer) and the timing Connect's own
	o.Log, o.LabLog = d.Log, d.LabLog
	cp, err := lab.FindConnectClasspath()
	if err != nil {
		return nil, err
	}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "rebalancelab-connect-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		o.Dir = d
	}
	c := &connectRun{o: o, res: &ConnectResult{Protocol: o.Protocol, DelayMs: o.DelayMs, Versions: map[string]string{"connect": "3.9.2"}},
		events: filepath.Join(o.Dir, "events"), held: map[string]ConnectHolding{}, workers: map[string]string{}}
	defer func() { // after the lab is closed: no more observations
		c.mu.Lock()
		c.resolveLocked()
		c.mu.Unlock()
	}()
	c.progress = func(f string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "[%s %s] "+f+"\n", append([]any{ConnectScenario, o.Protocol}, a...)...)
		}
	}
	if err := os.MkdirAll(c.events, 0o755); err != nil {
		return nil, err
	}
	c.progress("starting the lab (ZooKeeper, 1 rebalancelab broker with the group observer)")
	l, err := env.Start(ctx, env.Options{Lab: lab.Options{ZK: lab.ZKOptions{Nodes: 1, Log: o.LabLog}, Brokers: 1, Log: o.LabLog,
		Dir: filepath.Join(o.Dir, "lab"), BrokerOptions: []broker.Option{broker.WithGroupObserver(c.observe)}}})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	kc, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(l.Bootstrap(), ",")...))
	if err != nil {
		return nil, err
	}
	defer kc.Close()
	adm := kadm.NewClient(kc)
	if err := l.CreateTopic(ctx, env.Topic{Name: connectTopic, Partitions: 4, ReplicationFactor: 1}); err != nil {
		return nil, fmt.Errorf("connect-workers: %w", err)
	}

	var workers []*lab.ConnectWorker
	defer func() {
		for _, w := range workers {
			if !w.Exited() {
				w.Kill()
			}
		}
	}()
	startWorker := func() error {
		name := fmt.Sprintf("worker-%d", len(workers)+1)
		cfg := map[string]string{"scheduled.rebalance.max.delay.ms": strconv.Itoa(o.DelayMs)}
		if o.Protocol == ConnectEager {
			cfg["connect.protocol"] = "eager"
		}
		sctx, cancel := context.WithTimeout(ctx, 120*time.Second)
		defer cancel()
		w, err := lab.StartConnectWorker(sctx, lab.ConnectWorkerOptions{Name: name, Dir: filepath.Join(o.Dir, name), Bootstrap: l.Bootstrap(),
			GroupID: connectGroup, Config: cfg, Classpath: cp, Log: o.LabLog})
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.workers[w.URL] = name
		c.mu.Unlock()
		workers = append(workers, w)
		return nil
	}
	names := func() []string {
		var out []string
		for _, w := range workers {
			if !w.Exited() {
				out = append(out, w.Name)
			}
		}
		return out
	}
	put := func(l ConnectLayout) error {
		src := map[string]string{"connector.class": lab.VerifiableSourceConnector, "tasks.max": strconv.Itoa(l.SourceTasks),
			"topic": connectTopic, "throughput": strconv.Itoa(o.Throughput), "events.dir": c.events}
		sink := map[string]string{"connector.class": lab.VerifiableSinkConnector, "tasks.max": strconv.Itoa(l.SinkTasks),
			"topics": connectTopic, "events.dir": c.events}
		for _, x := range []struct {
			name string
			cfg  map[string]string
		}{{connectSource, src}, {connectSink, sink}} {
			// 409 while the group rebalances, 404/500 before the herder has joined: retry.
			var last error
			if err := waitUntil(ctx, 60*time.Second, "PUT /connectors/"+x.name+"/config", func() bool {
				rest := lab.ConnectREST{URL: workers[0].URL}
				rc, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				last = rest.PutConnector(rc, x.name, x.cfg)
				return last == nil
			}); err != nil {
				return fmt.Errorf("%w (last: %v)", err, last)
			}
		}
		return nil
	}

	var prev ConnectLayout
	for i, ly := range o.Layouts {
		c.mu.Lock()
		c.phase = fmt.Sprintf("layout %d: %d worker(s), %d source and %d sink task(s)", i+1, ly.Workers, ly.SourceTasks, ly.SinkTasks)
		c.mu.Unlock()
		c.progress("%s", c.phase)
		for len(workers) < ly.Workers {
			if err := startWorker(); err != nil {
				return c.res, err
			}
		}
		if i == 0 || ly.SourceTasks != prev.SourceTasks || ly.SinkTasks != prev.SinkTasks {
			if err := put(ly); err != nil {
				return c.res, err
			}
		}
		prev = ly
		var got ConnectGeneration
		if err := waitUntil(ctx, 90*time.Second, c.phase+" held by the group", func() bool {
			g, ok := c.last()
			got = g
			return ok && wantHeld(g, names(), ly)
		}); err != nil {
			return c.res, fmt.Errorf("%w; last generation %+v", err, got)
		}
		c.res.Layouts = append(c.res.Layouts, got)
		c.progress("generation %d: %s", got.Generation, formatHoldings(got.Workers))
	}
	c.res.InternalTopics = map[string]string{}
	topics := []string{connectGroup + lab.ConnectConfigTopicSuffix, connectGroup + lab.ConnectOffsetTopicSuffix, connectGroup + lab.ConnectStatusTopicSuffix}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return c.res, fmt.Errorf("connect-workers: DescribeConfigs: %w", err)
	}
	for _, rc := range rcs {
		for _, kv := range rc.Configs {
			if kv.Key == "cleanup.policy" {
				c.res.InternalTopics[rc.Name] = kv.MaybeValue()
			}
		}
	}

	// The last layout's tasks running before the kill: the observer shows an assignment as soon as the
	// group is Stable, a task starts on its worker a moment later, and a task not started at the kill
	// would count neither as stopped nor as down (a layout reached in the last generation before the
	// kill, as when the layouts are one, would lose its surviving workers' tasks from the figures).
	g, _ := c.last()
	if err := waitUntil(ctx, 30*time.Second, "every task of the last layout started on its worker", func() bool {
		ev, err := readConnectEvents(c.events)
		return err == nil && ev.running(g.Workers)
	}); err != nil {
		return c.res, err
	}

	// The last worker leaves: kill -9.
	victim := workers[len(workers)-1]
	g, _ = c.last()
	for _, h := range g.Workers {
		if h.Worker == victim.Name {
			c.res.KilledTasks = append(slices.Clone(h.Connectors), h.Tasks...)
		}
	}
	c.mu.Lock()
	c.phase = "after " + victim.Name + " was killed (-9)"
	c.mu.Unlock()
	c.progress("kill -9 %s (it held %s)", victim.Name, strings.Join(c.res.KilledTasks, " "))
	c.res.Killed, c.res.KilledAtMs = victim.Name, time.Now().UnixMilli()
	if victim.Exited() { // the kill would do nothing: the fault is not the run's
		c.res.Errors = append(c.res.Errors, fmt.Sprintf("kill -9 %s: it had already exited", victim.Name))
	}
	victim.Kill()
	final := o.Layouts[len(o.Layouts)-1]
	if err := waitUntil(ctx, 60*time.Second, "the killed worker's tasks held again", func() bool {
		g, ok := c.last()
		return ok && g.TsMs > c.res.KilledAtMs && wantHeld(g, names(), final)
	}); err != nil {
		return c.res, err
	}
	c.mu.Lock()
	for _, g := range c.res.Generations {
		if g.TsMs <= c.res.KilledAtMs {
			continue
		}
		c.res.Rebalances++
		if c.res.DepartureSeenMs == 0 {
			c.res.DepartureSeenMs = g.TsMs
			for _, h := range g.Workers {
				c.res.DepartureDelay = max(c.res.DepartureDelay, h.DelayMs)
			}
		}
		c.res.ReassignedMs = g.TsMs
	}
	c.mu.Unlock()
	g, _ = c.last()
	c.progress("generation %d: %s", g.Generation, formatHoldings(g.Workers))

	// Drain: the source stopped, the sink consumes what was acknowledged.
	time.Sleep(time.Second) // let the moved tasks produce and consume
	c.mu.Lock()
	c.phase = "drain: the source connector stopped"
	c.mu.Unlock()
	rest := lab.ConnectREST{URL: workers[0].URL}
	stoppedMs := time.Now().UnixMilli()
	if err := waitUntil(ctx, 30*time.Second, "PUT /connectors/"+connectSource+"/stop", func() bool {
		return rest.StopConnector(ctx, connectSource) == nil
	}); err != nil {
		return c.res, err
	}
	var ev *connectEvents
	if err := waitUntil(ctx, 60*time.Second, "the sink consumed every acknowledged source record", func() bool {
		var err error
		ev, err = readConnectEvents(c.events)
		return err == nil && ev.missing() == 0 && ev.tasksStopped(connectSource, final.SourceTasks)
	}); err != nil {
		if ev != nil {
			c.res.Produced, c.res.Consumed, c.res.Missing = int64(len(ev.produced)), int64(len(ev.consumed)), ev.missing()
		}
		return c.res, err
	}
	// The records acknowledged after the pause was asked for are drained too: read once more.
	ev, err = readConnectEvents(c.events)
	if err != nil {
		return c.res, err
	}
	c.res.Produced, c.res.Consumed, c.res.Missing, c.res.Duplicates = int64(len(ev.produced)), int64(len(ev.consumed)), ev.missing(), ev.duplicates
	c.res.TaskDowntimeMs, c.res.TasksStopped = ev.downtime(c.res.KilledAtMs, victim.Name, stoppedMs)
	c.res.checkRelations()
	return c.res, nil
}

func formatHoldings(ws []ConnectHolding) string {
	var parts []string
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("%s{%s | %s}", w.Worker, strings.Join(w.Connectors, " "), strings.Join(w.Tasks, " ")))
	}
	return strings.Join(parts, "  ")
}

// connectEvents are the tasks' event files, read.
type connectEvents struct {
	produced   map[string]bool // "task:seqno" the broker acknowledged
	consumed   map[string]int  // value → times consumed
	duplicates int64
	// per task ("<connector>-<n>"): its start and stop events in order
	lifecycle map[string][]taskEvent
}

type taskEvent struct {
	Event     string `json:"event"`
	Worker    string `json:"worker"`
	Connector string `json:"connector"`
	Task      int    `json:"task"`
	Ms        int64  `json:"ms"`
	Seqno     int64  `json:"seqno"`
	Value     string `json:"value"`
}

func readConnectEvents(dir string) (*connectEvents, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	ev := &connectEvents{produced: map[string]bool{}, consumed: map[string]int{}, lifecycle: map[string][]taskEvent{}}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var e taskEvent
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue // a line cut by kill -9
			}
			id := fmt.Sprintf("%s-%d", e.Connector, e.Task)
			switch e.Event {
			case "produced":
				ev.produced[fmt.Sprintf("%d:%d", e.Task, e.Seqno)] = true
			case "consumed":
				ev.consumed[e.Value]++
			case "start", "stop":
				ev.lifecycle[id] = append(ev.lifecycle[id], e)
			}
		}
		fh.Close()
	}
	for _, n := range ev.consumed {
		if n > 1 {
			ev.duplicates += int64(n - 1)
		}
	}
	for _, l := range ev.lifecycle {
		sort.SliceStable(l, func(i, j int) bool { return l[i].Ms < l[j].Ms })
	}
	return ev, nil
}

func (ev *connectEvents) missing() int64 {
	var n int64
	for v := range ev.produced {
		if ev.consumed[v] == 0 {
			n++
		}
	}
	return n
}

// tasksStopped: every task of the connector has a stop event after its last start (a stopped
// connector's tasks stop), so nothing more is produced.
func (ev *connectEvents) tasksStopped(connector string, tasks int) bool {
	for i := range tasks {
		l := ev.lifecycle[fmt.Sprintf("%s-%d", connector, i)]
		if len(l) == 0 || l[len(l)-1].Event != "stop" {
			return false
		}
	}
	return true
}

// running: every task of the holdings has started on its worker (its last lifecycle event is a start
// there).
func (ev *connectEvents) running(hs []ConnectHolding) bool {
	for _, h := range hs {
		for _, t := range h.Tasks {
			l := ev.lifecycle[t]
			if len(l) == 0 || l[len(l)-1].Event != "start" || l[len(l)-1].Worker != h.Worker {
				return false
			}
		}
	}
	return true
}

// downtime: for every worker that ran tasks at the kill, the sum over those tasks of the time from
// the kill (or the task's stop on that worker after it) to the task's next start; and per worker how
// many of its tasks stopped in that window. Only events before untilMs count (later stops are the
// drain's).
func (ev *connectEvents) downtime(killedMs int64, victim string, untilMs int64) (map[string]int64, map[string]int) {
	down, stopped := map[string]int64{}, map[string]int{}
	for _, l := range ev.lifecycle {
		// the worker running the task at the kill: its last start before it
		var at *taskEvent
		for i := range l {
			if l[i].Event == "start" && l[i].Ms <= killedMs {
				at = &l[i]
			}
		}
		if at == nil {
			continue
		}
		down[at.Worker] += 0
		from := int64(-1)
		if at.Worker == victim {
			from = killedMs
		}
		for _, e := range l {
			if e.Ms <= killedMs || e.Ms >= untilMs {
				continue
			}
			if e.Event == "stop" && from < 0 && e.Worker == at.Worker {
				from = e.Ms
				stopped[at.Worker]++
			}
			if e.Event == "start" && from >= 0 {
				down[at.Worker] += e.Ms - from
				break
			}
		}
	}
	for w := range down {
		if _, ok := stopped[w]; !ok && w != victim {
			stopped[w] = 0
		}
	}
	return down, stopped
}

// checkRelations fills r.Relations.
func (r *ConnectResult) checkRelations() {
	add := func(text string, ok bool, got string) {
		r.Relations = append(r.Relations, report.RelationResult{Era: r.Protocol, Relation: text, OK: ok, Got: got})
	}
	compact := true
	for _, p := range r.InternalTopics {
		compact = compact && p == "compact"
	}
	add("Connect's 3 internal topics are created compacted (DescribeConfigs cleanup.policy)", compact && len(r.InternalTopics) == 3,
		fmt.Sprint(r.InternalTopics))
	for i, l := range r.Layouts {
		add(fmt.Sprintf("layout %d: the observer shows %d worker(s) holding both connectors and every task, evenly", i+1, len(l.Workers)),
			true, formatHoldings(l.Workers))
	}
	add("end to end: every record the source produced (acknowledged) is consumed by the sink", r.Missing == 0 && r.Produced > 0,
		fmt.Sprintf("produced %d, consumed %d, missing %d, duplicates %d", r.Produced, r.Consumed, r.Missing, r.Duplicates))
	moved := r.ReassignedMs - r.DepartureSeenMs
	tol := int64(1500)
	switch r.Protocol {
	case ConnectSessioned:
		add(fmt.Sprintf("sessioned: the departure's generation holds the killed worker's tasks back for scheduled.rebalance.max.delay.ms (0 < delay <= %d)", r.DelayMs),
			r.DepartureDelay > 0 && int(r.DepartureDelay) <= r.DelayMs, fmt.Sprintf("delay %d ms", r.DepartureDelay))
		add(fmt.Sprintf("sessioned: the killed worker's tasks are reassigned after the delay (delay - 250 ms <= reassigned - departure seen <= delay + %d ms)", tol),
			moved >= int64(r.DepartureDelay)-250 && moved <= int64(r.DepartureDelay)+tol, fmt.Sprintf("%d ms after the departure was seen (%d ms after the kill)", moved, r.ReassignedMs-r.KilledAtMs))
		ok := true
		for w, n := range r.TasksStopped {
			ok = ok && (w == r.Killed || n == 0)
		}
		add("sessioned: no surviving worker stops a task", ok && len(r.TasksStopped) > 0, fmt.Sprint(r.TasksStopped))
	case ConnectEager:
		ok := true
		for w, n := range r.TasksStopped {
			ok = ok && (w == r.Killed || n > 0)
		}
		add("eager: every surviving worker stops its tasks at the rebalance", ok && len(r.TasksStopped) > 0, fmt.Sprint(r.TasksStopped))
		add("eager: no scheduled delay (the killed worker's tasks move in the first rebalance after its session expires)",
			r.DepartureDelay == 0 && moved < int64(r.DelayMs), fmt.Sprintf("delay %d ms, reassigned %d ms after the departure was seen", r.DepartureDelay, moved))
	}
}

// WriteConnectTable prints the run: each layout's and the post-kill generations' holdings, the
// figures and the relations.
func (r *ConnectResult) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (connect.protocol=%s, scheduled.rebalance.max.delay.ms=%d)\n", ConnectScenario, r.Protocol, r.DelayMs)
	for _, g := range r.Generations {
		fmt.Fprintf(&b, "  generation %3d  %-9s  %s\n      %s\n", g.Generation, g.Protocol, g.Phase, formatHoldings(g.Workers))
	}
	fmt.Fprintf(&b, "killed %s (-9) holding %s; departure seen +%d ms (delay %d ms), tasks held again +%d ms; rebalances %d\n",
		r.Killed, strings.Join(r.KilledTasks, " "), r.DepartureSeenMs-r.KilledAtMs, r.DepartureDelay, r.ReassignedMs-r.KilledAtMs, r.Rebalances)
	for _, wk := range slices.Sorted(maps.Keys(r.TaskDowntimeMs)) {
		fmt.Fprintf(&b, "  task downtime %s: %d ms (%d task(s) stopped)\n", wk, r.TaskDowntimeMs[wk], r.TasksStopped[wk])
	}
	fmt.Fprintf(&b, "records: produced %d, consumed %d, missing %d, duplicates %d\n", r.Produced, r.Consumed, r.Missing, r.Duplicates)
	var c RelationCounts
	c.Add(r.Relations)
	for _, rel := range r.Relations {
		mark := map[bool]string{true: "ok  ", false: "FAIL"}[rel.OK]
		if rel.Skipped {
			mark = "skip"
		}
		fmt.Fprintf(&b, "  %s  %s: %s\n", mark, rel.Relation, rel.Got)
	}
	for _, msg := range r.Errors {
		fmt.Fprintf(&b, "  error: %s\n", msg)
	}
	b.WriteString(report.VerdictLine(c, len(r.Errors)) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}
