package connect

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/broker"
	"github.com/rebalancelab/rebalancelab/internal/poll"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/env"
)

// Scenario is the scenario's name for `rebalancelab scenario run`.
const Scenario = "connect-workers"

// ScenarioDescription is its line in `scenario list`.
const ScenarioDescription = "Kafka Connect 3.9 workers on the lab's broker: layouts of 1-3 workers, a worker killed (-9); sessioned (delayed reassignment) vs eager (every worker stops its tasks)"

// Connect's rebalance protocols (connect.protocol; the group's protocol name).
const (
	Sessioned = "sessioned" // Kafka 3.9's default: incremental cooperative, with session keys
	Eager     = "eager"     // the protocol before KIP-415 (the group's protocol is "default")
)

// Layout is one layout of the scenario: how many workers run, and the tasks.max of the source and of
// the sink connector.
type Layout struct {
	Workers     int `json:"workers"`
	SourceTasks int `json:"source_tasks"`
	SinkTasks   int `json:"sink_tasks"`
}

// Layouts are the four layouts.
var Layouts = []Layout{{1, 1, 1}, {1, 2, 2}, {2, 2, 2}, {3, 2, 2}}

// Options configures Run.
type Options struct {
	Protocol string   // Sessioned (default) or Eager
	Layouts  []Layout // default Layouts; workers only grow from one layout to the next
	// DelayMs is scheduled.rebalance.max.delay.ms (default 3000).
	DelayMs    int
	Throughput int    // records per second per source task (default 20)
	Dir        string // the workers' dirs and the tasks' event files; default a temp dir removed after
	Log        *logrus.Entry
	LabLog     *logrus.Entry
	Progress   io.Writer
}

// fill sets the defaults (env.Defaults for the logs: the broker is ours, for its group observer, and
// the timing Connect's own); the error names a protocol that is neither Sessioned nor Eager.
func (o *Options) fill() error {
	if o.Protocol == "" {
		o.Protocol = Sessioned
	}
	if o.Protocol != Sessioned && o.Protocol != Eager {
		return fmt.Errorf("connect-workers: protocol %q: want %q or %q", o.Protocol, Sessioned, Eager)
	}
	if len(o.Layouts) == 0 {
		o.Layouts = Layouts
	}
	if o.DelayMs == 0 {
		o.DelayMs = 3000
	}
	if o.Throughput == 0 {
		o.Throughput = 20
	}
	d := env.Defaults{Log: o.Log, LabLog: o.LabLog}
	d.Fill()
	o.Log, o.LabLog = d.Log, d.LabLog
	return nil
}

const (
	connectGroup  = "connect-lab"
	connectTopic  = "connect-verifiable"
	connectSource = "verifiable-source"
	connectSink   = "verifiable-sink"
)

// run is one Run: its environment, its workers and what the group observer saw. The observer's
// fields (held, names, phase and res.Generations) are guarded by mu: the broker calls observe on its
// own goroutines.
type run struct {
	o         Options
	res       *Result
	events    string // the tasks' event files
	classpath string
	env       env.Env
	kc        *kgo.Client
	adm       *kadm.Client
	workers   []*lab.ConnectWorker // in start order; the last is killed
	victim    *lab.ConnectWorker
	stoppedMs int64 // when the drain stopped the source

	mu    sync.Mutex
	held  map[string]Holding // member id → holding (sessioned accumulation)
	names map[string]string  // REST URL → worker name
	phase string
}

// Run runs connect-workers: the lab (ZooKeeper, one rebalancelab broker with the group observer), the
// layouts one after the other (a worker started, or the connectors' tasks.max changed, each waited
// until the observer shows the layout held), then the last worker killed with -9 and the run waited
// until its tasks are held again; then the source stopped (PUT /connectors/{name}/stop) and the sink
// waited until it has consumed every acknowledged record. The relations are checked into the result.
// Errors are a protocol neither Sessioned nor Eager, the lab's, a worker's that does not start, or a
// layout, a reassignment or the drain not reached in time (poll.ErrTimeout wrapped); with an error
// after the lab started, the result so far is returned too.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
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
	r := &run{o: o, classpath: cp, events: filepath.Join(o.Dir, "events"), held: map[string]Holding{}, names: map[string]string{},
		res: &Result{Protocol: o.Protocol, DelayMs: o.DelayMs, Versions: map[string]string{"connect": "3.9.2"}}}
	defer r.resolve() // after close: no more observations
	defer r.close()
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	for _, phase := range []func(context.Context) error{r.layouts, r.internalTopics, r.kill, r.drain} {
		if err := phase(ctx); err != nil {
			return r.res, err
		}
	}
	r.res.checkRelations()
	return r.res, nil
}

// progress writes one line to Options.Progress, if set, prefixed with the scenario and protocol.
func (r *run) progress(f string, a ...any) {
	if r.o.Progress != nil {
		fmt.Fprintf(r.o.Progress, "[%s %s] "+f+"\n", append([]any{Scenario, r.o.Protocol}, a...)...)
	}
}

// setPhase names the generations the observer sees from now on (Generation.Phase).
func (r *run) setPhase(p string) {
	r.mu.Lock()
	r.phase = p
	r.mu.Unlock()
}

// start is the first phase: the events dir, the lab with the group observer, a client and the topic.
func (r *run) start(ctx context.Context) error {
	if err := os.MkdirAll(r.events, 0o755); err != nil {
		return err
	}
	r.progress("starting the lab (ZooKeeper, 1 rebalancelab broker with the group observer)")
	e, err := env.Start(ctx, env.Options{Lab: lab.Options{ZK: lab.ZKOptions{Nodes: 1, Log: r.o.LabLog}, Brokers: 1, Log: r.o.LabLog,
		Dir: filepath.Join(r.o.Dir, "lab"), BrokerOptions: []broker.Option{broker.WithGroupObserver(r.observe)}}})
	if err != nil {
		return err
	}
	r.env = e
	if r.kc, err = kgo.NewClient(kgo.SeedBrokers(strings.Split(e.Bootstrap(), ",")...)); err != nil {
		return err
	}
	r.adm = kadm.NewClient(r.kc)
	if err := e.CreateTopic(ctx, env.Topic{Name: connectTopic, Partitions: 4, ReplicationFactor: 1}); err != nil {
		return fmt.Errorf("connect-workers: %w", err)
	}
	return nil
}

// close kills the workers still running, then closes the client and the lab (each if started).
func (r *run) close() {
	for _, w := range r.workers {
		if !w.Exited() {
			w.Kill()
		}
	}
	if r.kc != nil {
		r.kc.Close()
	}
	if r.env != nil {
		r.env.Close()
	}
}

// layouts is the second phase: each layout in turn, waited until the group holds it.
func (r *run) layouts(ctx context.Context) error {
	var prev Layout
	for i, ly := range r.o.Layouts {
		phase := fmt.Sprintf("layout %d: %d worker(s), %d source and %d sink task(s)", i+1, ly.Workers, ly.SourceTasks, ly.SinkTasks)
		r.setPhase(phase)
		r.progress("%s", phase)
		for len(r.workers) < ly.Workers {
			if err := r.startWorker(ctx); err != nil {
				return err
			}
		}
		if i == 0 || ly.SourceTasks != prev.SourceTasks || ly.SinkTasks != prev.SinkTasks {
			if err := r.putConnectors(ctx, ly); err != nil {
				return err
			}
		}
		prev = ly
		var got Generation
		if err := waitUntil(ctx, 90*time.Second, phase+" held by the group", func() bool {
			g, ok := r.last()
			got = g
			return ok && wantHeld(g, r.live(), ly)
		}); err != nil {
			return fmt.Errorf("%w; last generation %+v", err, got)
		}
		r.res.Layouts = append(r.res.Layouts, got)
		r.progress("generation %d: %s", got.Generation, formatHoldings(got.Workers))
	}
	return nil
}

// startWorker starts the next worker ("worker-<n>") in the group, with the run's protocol and delay.
func (r *run) startWorker(ctx context.Context) error {
	name := fmt.Sprintf("worker-%d", len(r.workers)+1)
	cfg := map[string]string{"scheduled.rebalance.max.delay.ms": strconv.Itoa(r.o.DelayMs)}
	if r.o.Protocol == Eager {
		cfg["connect.protocol"] = "eager"
	}
	sctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	w, err := lab.StartConnectWorker(sctx, lab.ConnectWorkerOptions{Name: name, Dir: filepath.Join(r.o.Dir, name), Bootstrap: r.env.Bootstrap(),
		GroupID: connectGroup, Config: cfg, Classpath: r.classpath, Log: r.o.LabLog})
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.names[w.URL] = name
	r.mu.Unlock()
	r.workers = append(r.workers, w)
	return nil
}

// live returns the names of the workers that have not exited.
func (r *run) live() []string {
	var out []string
	for _, w := range r.workers {
		if !w.Exited() {
			out = append(out, w.Name)
		}
	}
	return out
}

// putConnectors configures the source and the sink with the layout's tasks.max, through the first
// worker's REST API.
func (r *run) putConnectors(ctx context.Context, l Layout) error {
	src := map[string]string{"connector.class": lab.VerifiableSourceConnector, "tasks.max": strconv.Itoa(l.SourceTasks),
		"topic": connectTopic, "throughput": strconv.Itoa(r.o.Throughput), "events.dir": r.events}
	sink := map[string]string{"connector.class": lab.VerifiableSinkConnector, "tasks.max": strconv.Itoa(l.SinkTasks),
		"topics": connectTopic, "events.dir": r.events}
	for _, x := range []struct {
		name string
		cfg  map[string]string
	}{{connectSource, src}, {connectSink, sink}} {
		// 409 while the group rebalances, 404/500 before the herder has joined: retry.
		var last error
		if err := waitUntil(ctx, 60*time.Second, "PUT /connectors/"+x.name+"/config", func() bool {
			rest := lab.ConnectREST{URL: r.workers[0].URL}
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

// internalTopics records the cleanup.policy of Connect's three internal topics (DescribeConfigs).
func (r *run) internalTopics(ctx context.Context) error {
	r.res.InternalTopics = map[string]string{}
	topics := []string{connectGroup + lab.ConnectConfigTopicSuffix, connectGroup + lab.ConnectOffsetTopicSuffix, connectGroup + lab.ConnectStatusTopicSuffix}
	rcs, err := r.adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return fmt.Errorf("connect-workers: DescribeConfigs: %w", err)
	}
	for _, rc := range rcs {
		for _, kv := range rc.Configs {
			if kv.Key == "cleanup.policy" {
				r.res.InternalTopics[rc.Name] = kv.MaybeValue()
			}
		}
	}
	return nil
}

// kill is the third phase: the last worker killed with -9 once every task of the last layout runs,
// then waited until the group holds the last layout again without it.
func (r *run) kill(ctx context.Context) error {
	// The last layout's tasks running before the kill: the observer shows an assignment as soon as the
	// group is Stable, a task starts on its worker a moment later, and a task not started at the kill
	// would count neither as stopped nor as down (a layout reached in the last generation before the
	// kill, as when the layouts are one, would lose its surviving workers' tasks from the figures).
	g, _ := r.last()
	if err := waitUntil(ctx, 30*time.Second, "every task of the last layout started on its worker", func() bool {
		ev, err := readEvents(r.events)
		return err == nil && ev.running(g.Workers)
	}); err != nil {
		return err
	}
	r.victim = r.workers[len(r.workers)-1]
	g, _ = r.last()
	for _, h := range g.Workers {
		if h.Worker == r.victim.Name {
			r.res.KilledTasks = append(slices.Clone(h.Connectors), h.Tasks...)
		}
	}
	r.setPhase("after " + r.victim.Name + " was killed (-9)")
	r.progress("kill -9 %s (it held %s)", r.victim.Name, strings.Join(r.res.KilledTasks, " "))
	r.res.Killed, r.res.KilledAtMs = r.victim.Name, time.Now().UnixMilli()
	if r.victim.Exited() { // the kill would do nothing: the fault is not the run's
		r.res.Errors = append(r.res.Errors, fmt.Sprintf("kill -9 %s: it had already exited", r.victim.Name))
	}
	r.victim.Kill()
	final := r.o.Layouts[len(r.o.Layouts)-1]
	if err := waitUntil(ctx, 60*time.Second, "the killed worker's tasks held again", func() bool {
		g, ok := r.last()
		return ok && g.TsMs > r.res.KilledAtMs && wantHeld(g, r.live(), final)
	}); err != nil {
		return err
	}
	r.departure()
	g, _ = r.last()
	r.progress("generation %d: %s", g.Generation, formatHoldings(g.Workers))
	return nil
}

// departure fills the kill's figures from the generations after it: the rebalances, the first one's
// time and scheduled delay (DepartureSeenMs, DepartureDelay) and the last one's (ReassignedMs).
func (r *run) departure() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.res.Generations {
		if g.TsMs <= r.res.KilledAtMs {
			continue
		}
		r.res.Rebalances++
		if r.res.DepartureSeenMs == 0 {
			r.res.DepartureSeenMs = g.TsMs
			for _, h := range g.Workers {
				r.res.DepartureDelay = max(r.res.DepartureDelay, h.DelayMs)
			}
		}
		r.res.ReassignedMs = g.TsMs
	}
}

// drain is the last phase: the source stopped, the run waits until the sink has consumed every
// acknowledged record, then fills the end-to-end counts and the task downtime from the event files.
func (r *run) drain(ctx context.Context) error {
	// The moved tasks produce and consume for a second before the source stops: a window of work, not
	// a wait for a condition.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Second):
	}
	r.setPhase("drain: the source connector stopped")
	rest := lab.ConnectREST{URL: r.workers[0].URL}
	r.stoppedMs = time.Now().UnixMilli()
	if err := waitUntil(ctx, 30*time.Second, "PUT /connectors/"+connectSource+"/stop", func() bool {
		return rest.StopConnector(ctx, connectSource) == nil
	}); err != nil {
		return err
	}
	final := r.o.Layouts[len(r.o.Layouts)-1]
	var ev *events
	if err := waitUntil(ctx, 60*time.Second, "the sink consumed every acknowledged source record", func() bool {
		var err error
		ev, err = readEvents(r.events)
		return err == nil && ev.missing() == 0 && ev.tasksStopped(connectSource, final.SourceTasks)
	}); err != nil {
		if ev != nil {
			r.res.Produced, r.res.Consumed, r.res.Missing = int64(len(ev.produced)), int64(len(ev.consumed)), ev.missing()
		}
		return err
	}
	// The records acknowledged after the stop was asked for are drained too: read once more.
	ev, err := readEvents(r.events)
	if err != nil {
		return err
	}
	r.res.Produced, r.res.Consumed, r.res.Missing, r.res.Duplicates = int64(len(ev.produced)), int64(len(ev.consumed)), ev.missing(), ev.duplicates
	r.res.TaskDowntimeMs, r.res.TasksStopped = ev.downtime(r.res.KilledAtMs, r.victim.Name, r.stoppedMs)
	return nil
}

// waitUntil tries cond every 100 ms until it holds, for at most d (poll.Until); the error is
// "connect-workers: " and poll's (what, how long, the tries; ErrTimeout or ctx's error wrapped).
func waitUntil(ctx context.Context, d time.Duration, what string, cond func() bool) error {
	if err := (poll.Backoff{First: 100 * time.Millisecond, Max: 100 * time.Millisecond}).Until(ctx, d, what, cond); err != nil {
		return fmt.Errorf("connect-workers: %w", err)
	}
	return nil
}
