package streams

// The Streams runner: a lab, the instances as the script makes them, the producer, the output read
// back, and the figures computed from the observer's generations and the instances' lines.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
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
	"github.com/rebalancelab/rebalancelab/broker/coordinator"
	"github.com/rebalancelab/rebalancelab/internal/groupview"
	"github.com/rebalancelab/rebalancelab/internal/poll"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/env"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// Era is the name the result gives the one "era" of a Streams scenario (its members are Streams
// instances, not one of the consumer eras); --era takes it, or "all".
const Era = "streams"

// Version is the Kafka Streams release of the interop build (interop/streams-3.9), the result's
// versions["kafka-streams"].
const Version = "3.9.2"

// Input is what a Streams run is given: the scenario's data, its script and the lab's options.
type Input struct {
	// Scenario is the scenario's name: the application id is "rebalancelab-<Scenario>", its inputs
	// "<application>.in-a" and "<application>.in-b", its output "<application>.out".
	Scenario string
	Spec     spec.Streams
	// Script is the scenario's steps (trigger, start, remove-thread, add-thread, crash, settle), each
	// after its DelayMs; the members are the instances' names (s1, s2).
	Script []spec.Step
	// Partitions of each input and of the output (the scenario's Params.Partitions): tasks 0_0..0_<P-1>.
	Partitions int
	// Timing gives every instance its session.timeout.ms and heartbeat.interval.ms.
	Timing spec.Timing
	// Eras is --era as given: nil, "all" or Era (comma-separated lists allowed); anything else is refused.
	Eras []string
	// Broker is the lab's broker (lab.BrokerRebalancelab or lab.BrokerKafka; "": the rebalancelab one).
	Broker string
	// Bootstrap, an existing cluster, is refused: a Streams run uses the lab's own broker.
	Bootstrap     string
	KafkaDefaults bool   // the lab's brokers with Kafka's own defaults
	ExternalZK    string // a running ZooKeeper ("host:port,..."); "": the lab starts one
	// LabLog is the lab's and the brokers' log; nil: env.Defaults' (warn level on stderr).
	LabLog *logrus.Entry
	// Progress gets a line per step; nil: none.
	Progress io.Writer
	// LogDir, when set, gets each instance's stderr (Streams' own warnings) as streams-<instance>.log.
	LogDir string
}

// Output is what a Streams run hands back.
type Output struct {
	Result *Result
	// KafkaVersion is the release of Kafka's broker ("3.9.2") with lab.BrokerKafka, else "".
	KafkaVersion string
	// Errors are what went wrong without ending the run (an instance's error line, a produce error,
	// records not processed, a settle that timed out): the era's errors, which fail the run.
	Errors []string
}

// Run runs a Streams scenario on a lab of its own (ZooKeeper and one broker) and returns what it
// measured. A refused input (an existing cluster, another broker, a consumer era) or a missing java or
// Streams classpath (lab.ErrNoStreams: `make deps`) returns nil and the error, before anything starts.
// Otherwise the Output is always returned, with the error that ended the run if any (ctx's when it
// was cancelled, a lab that did not start, a topic not created, an instance not started, the output
// not read back): it then holds what was measured so far.
func Run(ctx context.Context, in Input) (*Output, error) {
	for _, e := range in.Eras {
		for _, x := range strings.Split(e, ",") {
			if x = strings.TrimSpace(x); x != "all" && x != Era {
				return nil, fmt.Errorf("--era %s: its members are Kafka Streams instances, not consumers of an era (give --era all or %s)", x, Era)
			}
		}
	}
	d := env.Defaults{LabLog: in.LabLog, Broker: in.Broker, KafkaDefaults: in.KafkaDefaults}
	d.Fill()
	in.LabLog, in.Broker = d.LabLog, d.Broker
	switch {
	case in.Bootstrap != "":
		return nil, errors.New("runs on the lab's own brokers only, not on an existing cluster (--bootstrap)")
	case in.Broker != lab.BrokerRebalancelab && in.Broker != lab.BrokerKafka:
		return nil, fmt.Errorf("--broker %s: want %s or %s", in.Broker, lab.BrokerRebalancelab, lab.BrokerKafka)
	}
	java, err := lab.FindJava()
	if err != nil {
		return nil, err
	}
	cp, err := lab.FindStreamsClasspath()
	if err != nil {
		return nil, err
	}
	app := "rebalancelab-" + in.Scenario
	t := in.Timing
	run := &Result{Application: app, Inputs: []string{app + ".in-a", app + ".in-b"}, Output: app + ".out", Threads: in.Spec.Threads,
		Config: map[string]string{
			"num.stream.threads": strconv.Itoa(in.Spec.Threads), "processing.guarantee": "at_least_once",
			"session.timeout.ms": strconv.FormatInt(t.SessionTimeoutMs, 10), "heartbeat.interval.ms": strconv.FormatInt(t.HeartbeatIntervalMs, 10),
			"commit.interval.ms": strconv.FormatInt(in.Spec.CommitIntervalMs, 10),
		}}
	// The group's transitions come from the rebalancelab broker's coordinator (its group observer);
	// Kafka's broker has none, and the relations that read them are skipped there (not measured).
	run.Observed = in.Broker == lab.BrokerRebalancelab
	dir, err := os.MkdirTemp("", "rebalancelab-streams-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	r := &runner{in: in, run: run, java: java, classpath: cp, dir: dir,
		produced: map[string]bool{}, instances: map[string]*instance{}, threads: map[string]int{},
		progress: func(format string, a ...any) {
			if in.Progress != nil {
				fmt.Fprintf(in.Progress, format+"\n", a...)
			}
		}}
	runErr := r.runLab(ctx)
	r.compute()
	// The instances' stderr (Streams' own warnings) beside the report or the timelines: streams-<name>.log.
	if in.LogDir != "" {
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, l := range logs {
			if b, err := os.ReadFile(l); err == nil && os.MkdirAll(in.LogDir, 0o755) == nil {
				_ = os.WriteFile(filepath.Join(in.LogDir, "streams-"+filepath.Base(l)), b, 0o644)
			}
		}
	}
	return &Output{Result: run, KafkaVersion: r.kafkaVersion, Errors: r.errs}, runErr
}

// runner runs one Streams scenario.
type runner struct {
	in  Input
	run *Result

	java, classpath, dir, bootstrap string
	progress                        func(string, ...any)

	kafkaVersion string // set by runLab (Output.KafkaVersion)

	mu        sync.Mutex
	gens      []groupview.Generation
	app       []AppEvent
	produced  map[string]bool // "topic/partition/offset" of every acknowledged input
	instances map[string]*instance
	threads   map[string]int // live stream threads per instance, as the script made them
	triggers  []Event
	errs      []string
	// describer, described and describedAt: the group seen on DescribeGroups when nothing observes it
	// (Kafka's broker): the last view (state and member ids) and since when (Unix ms).
	describer   *kadm.Client
	described   string
	describedAt int64
}

func (r *runner) errorf(format string, a ...any) {
	r.mu.Lock()
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
	r.mu.Unlock()
}

// observe is the broker's group observer: the application's group only.
func (r *runner) observe(ev coordinator.GroupChanged) {
	if ev.Group != r.run.Application {
		return
	}
	g := groupview.Decode(ev)
	r.mu.Lock()
	r.gens = append(r.gens, g)
	r.mu.Unlock()
}

func (r *runner) runLab(ctx context.Context) error {
	lo := lab.Options{ZK: lab.ZKOptions{Nodes: 1, Log: r.in.LabLog}, Brokers: 1,
		KafkaDefaults: r.in.KafkaDefaults, Log: r.in.LabLog, Broker: r.in.Broker}
	if r.run.Observed {
		lo.BrokerOptions = []broker.Option{broker.WithGroupObserver(r.observe)}
		r.progress("%s: starting the lab (ZooKeeper, 1 rebalancelab broker with its group observer)", r.in.Scenario)
	} else {
		r.progress("%s: starting the lab (ZooKeeper, 1 %s broker: no group observer, the group's generations not measured)", r.in.Scenario, r.in.Broker)
	}
	cluster, err := env.Start(ctx, env.Options{ExternalZK: r.in.ExternalZK, Lab: lo})
	if err != nil {
		return err
	}
	defer cluster.Close()
	if v := cluster.Lab().KafkaVersion(); v != "" {
		r.kafkaVersion = v
	}
	r.bootstrap = cluster.Bootstrap()
	if !r.run.Observed {
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(r.bootstrap, ",")...))
		if err != nil {
			return err
		}
		defer cl.Close()
		r.describer = kadm.NewClient(cl)
	}
	if err := r.createTopics(ctx, cluster); err != nil {
		return err
	}
	pctx, stopProducer := context.WithCancel(ctx)
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() { defer pwg.Done(); r.produce(pctx) }()
	defer func() { stopProducer(); pwg.Wait() }()
	defer r.stopAll()

	for i, st := range r.in.Script {
		if !poll.Sleep(ctx, time.Duration(st.DelayMs)*time.Millisecond) {
			return ctx.Err()
		}
		r.progress("[%s] step %d: %s", r.in.Scenario, i+1, st)
		if err := r.do(ctx, st); err != nil {
			return err
		}
	}
	// Every record produced, then processed by someone, before the instances stop.
	pwg.Wait()
	every100ms := poll.Backoff{First: 100 * time.Millisecond, Max: 100 * time.Millisecond}
	// Not all within 60 s: reported below, with the count.
	if err := every100ms.Until(ctx, 60*time.Second, "every record processed", func() bool { return r.unprocessed() == 0 }); err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if n := r.unprocessed(); n > 0 {
		r.errorf("%d produced records not processed within 60 s of the script's end", n)
	}
	r.mu.Lock()
	r.triggers = append(r.triggers, Event{Trigger: report.ScriptEndTrigger, AtMs: time.Now().UnixMilli()})
	r.mu.Unlock()
	r.stopAll()
	return r.readOutput(ctx)
}

func (r *runner) do(ctx context.Context, st spec.Step) error {
	switch st.Action {
	case spec.ActTrigger:
		r.mu.Lock()
		r.triggers = append(r.triggers, Event{Trigger: st.Name, AtMs: time.Now().UnixMilli()})
		r.mu.Unlock()
	case spec.ActStart:
		args := []string{"--bootstrap", r.bootstrap, "--application-id", r.run.Application, "--client-id", st.Member,
			"--state-dir", filepath.Join(r.dir, st.Member+"-state"), "--input", strings.Join(r.run.Inputs, ","),
			"--output", r.run.Output, "--threads", strconv.Itoa(r.in.Spec.Threads)}
		for _, k := range slices.Sorted(maps.Keys(r.run.Config)) {
			if k != "num.stream.threads" {
				args = append(args, "--config", k+"="+r.run.Config[k])
			}
		}
		si, err := startInstance(st.Member, r.java, r.classpath, r.dir, args, r.onApp, func(mp report.MemberProcess) {
			r.mu.Lock()
			r.run.Instances = append(r.run.Instances, mp)
			r.mu.Unlock()
		})
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.instances[st.Member] = si
		r.threads[st.Member] = r.in.Spec.Threads
		r.mu.Unlock()
	case spec.ActRemoveThread, spec.ActAddThread:
		si := r.instance(st.Member)
		if si == nil {
			return fmt.Errorf("%s: no instance %s", st, st.Member)
		}
		if err := si.command(string(st.Action)); err != nil {
			r.errorf("%s: %v", st, err)
		}
		r.mu.Lock()
		if st.Action == spec.ActRemoveThread {
			r.threads[st.Member]--
		} else {
			r.threads[st.Member]++
		}
		r.mu.Unlock()
	case spec.ActCrash:
		si := r.instance(st.Member)
		if si == nil {
			return fmt.Errorf("%s: no instance %s", st, st.Member)
		}
		si.kill()
		r.mu.Lock()
		delete(r.instances, st.Member)
		delete(r.threads, st.Member)
		r.mu.Unlock()
	case spec.ActSettle:
		every50ms := poll.Backoff{First: 50 * time.Millisecond, Max: 50 * time.Millisecond}
		if err := every50ms.Until(ctx, max(time.Duration(st.TimeoutMs)*time.Millisecond, time.Nanosecond), "the group stable", func() bool {
			return r.stable(ctx, st.QuietMs)
		}); err != nil && ctx.Err() != nil {
			return ctx.Err()
		} else if err != nil {
			r.errorf("%s: the group was not stable within %d ms", st, st.TimeoutMs)
		}
	default:
		return fmt.Errorf("%s: not a Streams scenario step", st)
	}
	return nil
}

func (r *runner) instance(name string) *instance {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.instances[name]
}

func (r *runner) onApp(ev AppEvent) {
	r.mu.Lock()
	r.app = append(r.app, ev)
	r.mu.Unlock()
	if ev.Ev == "error" {
		r.errorf("instance %s: %s", ev.Instance, ev.Text)
	}
}

// stable: the group's last transition is a Stable generation with one member per live stream thread
// and every task assigned to exactly one of them, and nothing changed for quietMs since. Without the
// observer (Kafka's broker): DescribeGroups shows the group Stable with one member per live stream
// thread, each member with an assignment, and the same members for quietMs.
func (r *runner) stable(ctx context.Context, quietMs int64) bool {
	if !r.run.Observed {
		return r.describedStable(ctx, quietMs)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	want := 0
	for _, n := range r.threads {
		want += n
	}
	if len(r.gens) == 0 {
		return false
	}
	g := r.gens[len(r.gens)-1]
	return fullyAssigned(g, want, r.in.Partitions) && time.Now().UnixMilli()-g.TsMs >= quietMs
}

// describedStable is stable on DescribeGroups (Kafka's broker, no group observer).
func (r *runner) describedStable(ctx context.Context, quietMs int64) bool {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	gs, err := r.describer.DescribeGroups(dctx, r.run.Application)
	if err != nil {
		return false
	}
	g, ok := gs[r.run.Application]
	if !ok || g.Err != nil {
		return false
	}
	var ids []string
	owners := map[string]int{} // "<input>/<p>" → members assigned it
	for _, m := range g.Members {
		ids = append(ids, m.MemberID)
		if a, ok := m.Assigned.AsConsumer(); ok { // Streams' members speak the consumer protocol
			for _, tp := range a.Topics {
				if !slices.Contains(r.run.Inputs, tp.Topic) {
					continue
				}
				for _, p := range tp.Partitions {
					owners[fmt.Sprintf("%s/%d", tp.Topic, p)]++
				}
			}
		}
	}
	assigned := len(owners) == len(r.run.Inputs)*r.in.Partitions
	for _, n := range owners {
		assigned = assigned && n == 1
	}
	slices.Sort(ids)
	view := g.State + " " + strings.Join(ids, ",")
	now := time.Now().UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	if view != r.described {
		r.described, r.describedAt = view, now
	}
	want := 0
	for _, n := range r.threads {
		want += n
	}
	return g.State == "Stable" && len(g.Members) == want && assigned && now-r.describedAt >= quietMs
}

// fullyAssigned: g is Stable with members members and tasks 0_0..0_<partitions-1> each active on one.
func fullyAssigned(g groupview.Generation, members, partitions int) bool {
	if g.State != "Stable" || len(g.Members) != members {
		return false
	}
	seen := map[string]int{}
	for _, m := range g.Members {
		for _, t := range m.ActiveTasks {
			seen[t]++
		}
	}
	if len(seen) != partitions {
		return false
	}
	for i := 0; i < partitions; i++ {
		if seen["0_"+strconv.Itoa(i)] != 1 {
			return false
		}
	}
	return true
}

func (r *runner) unprocessed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.produced) < r.in.Spec.Records {
		return r.in.Spec.Records - len(r.produced)
	}
	done := map[string]bool{}
	for _, ev := range r.app {
		if ev.Ev == "processed" {
			done[ev.Out] = true
		}
	}
	n := 0
	for k := range r.produced {
		if !done[k] {
			n++
		}
	}
	return n
}

func (r *runner) stopAll() {
	r.mu.Lock()
	var live []*instance
	for _, name := range slices.Sorted(maps.Keys(r.instances)) {
		live = append(live, r.instances[name])
	}
	r.instances = map[string]*instance{}
	r.threads = map[string]int{}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, si := range live {
		wg.Add(1)
		go func() { defer wg.Done(); si.shutdown(40 * time.Second) }()
	}
	wg.Wait()
}

// createTopics creates the inputs and the output, each with the run's partitions, replication factor 1.
func (r *runner) createTopics(ctx context.Context, cluster env.Env) error {
	for _, topic := range append(slices.Clone(r.run.Inputs), r.run.Output) {
		if err := cluster.CreateTopic(ctx, env.Topic{Name: topic, Partitions: r.in.Partitions, ReplicationFactor: 1}); err != nil {
			return err
		}
	}
	return nil
}

// produce writes spec.Records records, alternately to each input, pair n (records 2n and 2n+1) to
// partition n mod P of both with the same key, acks=all, at spec.RatePerSec in ticks of 50 ms.
func (r *runner) produce(ctx context.Context) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(r.bootstrap, ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		r.errorf("producer: %v", err)
		return
	}
	defer cl.Close()
	perTick := max(1, r.in.Spec.RatePerSec/20)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for n := 0; n < r.in.Spec.Records; {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var batch []*kgo.Record
		for ; n < r.in.Spec.Records && len(batch) < perTick; n++ {
			pair := n / 2
			batch = append(batch, &kgo.Record{Topic: r.run.Inputs[n%2], Partition: int32(pair % r.in.Partitions),
				Key: []byte("key-" + strconv.Itoa(pair)), Value: []byte(strconv.Itoa(n))})
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		results := cl.ProduceSync(pctx, batch...)
		cancel()
		r.mu.Lock()
		for _, pr := range results {
			if pr.Err == nil {
				r.produced[fmt.Sprintf("%s/%d/%d", pr.Record.Topic, pr.Record.Partition, pr.Record.Offset)] = true
			}
		}
		r.mu.Unlock()
		if err := results.FirstErr(); err != nil {
			if ctx.Err() != nil {
				return
			}
			r.errorf("produce: %v", err)
			return
		}
	}
}

// readOutput reads the output topic from its start to its end offsets and counts what it names.
func (r *runner) readOutput(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(r.bootstrap, ",")...), kgo.ConsumeTopics(r.run.Output),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(cctx, r.run.Output)
	if err != nil {
		return fmt.Errorf("output end offsets: %w", err)
	}
	var want int64
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	seen := map[string]int{}
	var got int64
	for got < want {
		fs := cl.PollFetches(cctx)
		if cctx.Err() != nil {
			return fmt.Errorf("output: read %d of %d records: %w", got, want, cctx.Err())
		}
		fs.EachRecord(func(rec *kgo.Record) {
			got++
			seen[string(rec.Value)]++
		})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	tot := &r.run.Totals
	tot.RecordsIn = int64(len(r.produced))
	tot.RecordsOut = got
	tot.DistinctOut = int64(len(seen))
	tot.Duplicates = got - int64(len(seen))
	for k := range r.produced {
		if seen[k] == 0 {
			tot.Lost++
		}
	}
	return nil
}

// compute fills the run's lanes, events and the processed counts from what was collected.
func (r *runner) compute() {
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.run
	run.Generations = r.gens
	run.App = r.app
	run.Lanes = nil
	for _, g := range r.gens {
		if g.State == "Stable" {
			run.Lanes = append(run.Lanes, laneOf(g))
		}
	}
	seen := map[string]bool{}
	reprocessedAt := []int64{}
	for _, ev := range r.app {
		if ev.Ev != "processed" {
			continue
		}
		run.Totals.RecordsProcessed++
		if seen[ev.Out] {
			run.Totals.RecordsReprocessed++
			reprocessedAt = append(reprocessedAt, ev.TsMs)
		}
		seen[ev.Out] = true
	}
	for _, g := range r.gens {
		if g.State == "PreparingRebalance" {
			run.Totals.Rebalances++
		}
	}
	run.Totals.Generations = len(run.Lanes)
	run.Events = nil
	for i, tr := range r.triggers {
		if tr.Trigger == report.ScriptEndTrigger {
			continue
		}
		end := int64(1<<62 - 1)
		if i+1 < len(r.triggers) {
			end = r.triggers[i+1].AtMs
		}
		ev := tr
		ev.Moves = []string{}
		var before *Lane
		var last *groupview.Generation
		for j := range r.gens {
			g := &r.gens[j]
			switch {
			case g.TsMs < tr.AtMs:
				if g.State == "Stable" {
					l := laneOf(*g)
					before = &l
				}
			case g.TsMs < end:
				last = g
				switch g.State {
				case "PreparingRebalance":
					ev.Rebalances++
				case "Stable":
					ev.Generations++
				}
			}
		}
		switch {
		case last == nil:
			ev.TimeToStableMs = 0
			ev.Stable = before
		case last.State == "Stable" && fullyAssigned(*last, len(last.Members), r.in.Partitions):
			ev.TimeToStableMs = last.TsMs - tr.AtMs
			l := laneOf(*last)
			ev.Stable = &l
		default:
			ev.TimeToStableMs = -1
		}
		if ev.Stable != nil {
			was := map[string]string{}
			if before != nil {
				was = before.owners()
			}
			now := ev.Stable.owners()
			for _, task := range slices.Sorted(maps.Keys(now)) {
				if was[task] != now[task] {
					ev.TasksMoved++
					from := was[task]
					if from == "" {
						from = "(none)"
					}
					ev.Moves = append(ev.Moves, fmt.Sprintf("%s %s -> %s", task, from, now[task]))
				}
			}
		}
		for _, ts := range reprocessedAt {
			if ts >= tr.AtMs && ts < end {
				ev.RecordsReprocessed++
			}
		}
		run.Events = append(run.Events, ev)
	}
}
