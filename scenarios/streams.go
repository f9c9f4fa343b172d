package scenarios

// Streams scenarios (issue 17): a scenario kind whose members are Kafka Streams 3.9 instances, JVM
// processes of the interop build's application (lab.StreamsMainClass), run against this project's broker.
// The group's generations and assignments come from the coordinator itself (broker.WithGroupObserver,
// decoded by groupview: the active tasks inside Streams' AssignmentInfo), the records from the
// application's own lines (each record processed) and from the output topic read back at the end.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/broker"
	"github.com/rebalancelab/rebalancelab/broker/coordinator"
	"github.com/rebalancelab/rebalancelab/internal/groupview"
	"github.com/rebalancelab/rebalancelab/internal/poll"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/env"
)

// StreamsEra is the name the result gives the one "era" of a Streams scenario (its members are Streams
// instances, not one of the consumer eras).
const StreamsEra = "streams"

// StreamsRun is what a Streams scenario's run measured (RunResult.Streams, the JSON's "streams").
type StreamsRun struct {
	Application string            `json:"application_id"`
	Inputs      []string          `json:"inputs"`
	Output      string            `json:"output"`
	Config      map[string]string `json:"config"` // the StreamsConfig every instance was given
	Threads     int               `json:"threads_per_instance"`
	// Generations is the coordinator's view of the application's group, every transition
	// (groupview.Generation); Lanes its Stable generations, member by member.
	Generations []groupview.Generation `json:"-"`
	Lanes       []StreamsLane          `json:"lanes"`
	Events      []StreamsEvent         `json:"events"`
	Totals      StreamsTotals          `json:"totals"`
	Instances   []MemberProcess        `json:"instances"`
	// App is every line the instances printed (in order of arrival); written as streams-app.jsonl.
	App []StreamsAppEvent `json:"-"`
	// Observed: the group's transitions were seen by the broker's group observer (the rebalancelab
	// broker). On Kafka's broker they were not: Generations, Lanes and the events' group figures are
	// not measured (the group is settled on DescribeGroups instead), and the relations on them skip.
	Observed    bool   `json:"observed"`
	AppFile     string `json:"app_events,omitempty"`
	ObserverLog string `json:"group_log,omitempty"`
}

// StreamsLane is one Stable generation of the group as the coordinator saw it.
type StreamsLane struct {
	TsMs       int64               `json:"ts_ms"`
	Generation int32               `json:"generation"`
	Members    []StreamsLaneMember `json:"members"`
}

// StreamsLaneMember is one stream thread's consumer in a generation.
type StreamsLaneMember struct {
	Thread     string             `json:"thread"`   // the consumer's client id without "-consumer": s1-StreamThread-2
	Instance   string             `json:"instance"` // s1
	MemberID   string             `json:"member_id"`
	Tasks      []string           `json:"active_tasks"`
	Partitions map[string][]int32 `json:"partitions"`
}

// StreamsEvent is one scripted trigger's window: from the trigger to the next one.
type StreamsEvent struct {
	Trigger string `json:"trigger"`
	AtMs    int64  `json:"at_ms"` // Unix ms
	// TimeToStableMs: trigger → the window's last group transition, when that is a Stable generation
	// with every task assigned once to the live threads (0: no transition; -1: never stable).
	TimeToStableMs int64 `json:"time_to_stable_ms"`
	Rebalances     int   `json:"rebalances"`  // PreparingRebalance transitions in the window
	Generations    int   `json:"generations"` // Stable generations in the window
	// TasksMoved: tasks whose thread differs between the stable generation before the trigger and the
	// window's stable one; Moves lists them ("0_1 s1-StreamThread-1 -> s1-StreamThread-2").
	TasksMoved int      `json:"tasks_moved"`
	Moves      []string `json:"moves"`
	// RecordsReprocessed: records processed in the window that an instance had processed before
	// (at least once: what the last committed offsets did not cover).
	RecordsReprocessed int64        `json:"records_reprocessed"`
	Stable             *StreamsLane `json:"stable,omitempty"` // the window's stable generation
}

// StreamsTotals are the run's record counts.
type StreamsTotals struct {
	RecordsIn          int64 `json:"records_in"`          // acknowledged produce to the inputs
	RecordsOut         int64 `json:"records_out"`         // records of the output topic, read back at the end
	DistinctOut        int64 `json:"distinct_out"`        // distinct inputs they name
	Duplicates         int64 `json:"duplicates"`          // RecordsOut - DistinctOut
	Lost               int64 `json:"lost"`                // inputs no output record names
	RecordsProcessed   int64 `json:"records_processed"`   // processed lines of all instances
	RecordsReprocessed int64 `json:"records_reprocessed"` // those of an input processed before
	Rebalances         int   `json:"rebalances"`
	Generations        int   `json:"generations"`
}

// streamsRunner runs one Streams scenario.
type streamsRunner struct {
	o    Options
	sc   *Scenario
	spec *StreamsSpec
	res  *RunResult
	run  *StreamsRun
	t    Timing
	p    Params

	java, classpath, dir, bootstrap string
	progress                        func(string, ...any)

	mu        sync.Mutex
	gens      []groupview.Generation
	app       []StreamsAppEvent
	produced  map[string]bool // "topic/partition/offset" of every acknowledged input
	instances map[string]*streamsInstance
	threads   map[string]int // live stream threads per instance, as the script made them
	triggers  []StreamsEvent
	errs      []string
	// describer, described and describedAt: the group seen on DescribeGroups when nothing observes it
	// (Kafka's broker): the last view (state and member ids) and since when (Unix ms).
	describer   *kadm.Client
	described   string
	describedAt int64
}

func (r *streamsRunner) errorf(format string, a ...any) {
	r.mu.Lock()
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
	r.mu.Unlock()
}

// runStreams is Run for a Streams scenario.
func runStreams(ctx context.Context, o Options, sc *Scenario, p Params, t Timing) (*RunResult, error) {
	for _, e := range o.Eras {
		for _, x := range strings.Split(e, ",") {
			if x = strings.TrimSpace(x); x != "all" && x != StreamsEra {
				return nil, fmt.Errorf("--era %s: its members are Kafka Streams instances, not consumers of an era (give --era all or %s)", x, StreamsEra)
			}
		}
	}
	switch {
	case o.Bootstrap != "":
		return nil, errors.New("runs on the lab's own brokers only, not on an existing cluster (--bootstrap)")
	case o.Broker != lab.BrokerRebalancelab && o.Broker != lab.BrokerKafka:
		return nil, fmt.Errorf("--broker %s: want %s or %s", o.Broker, lab.BrokerRebalancelab, lab.BrokerKafka)
	}
	java, err := lab.FindJava()
	if err != nil {
		return nil, err
	}
	cp, err := lab.FindStreamsClasspath()
	if err != nil {
		return nil, err
	}
	spec := sc.Streams
	app := "rebalancelab-" + sc.Name
	res := &RunResult{Scenario: sc.Name, Description: sc.Description, Seed: p.Seed, Params: p, Timing: t,
		KafkaDefaults: o.KafkaDefaults, Broker: o.Broker, MembersAs: MembersAsProcesses, RunID: env.NewRunID(),
		Versions: map[string]string{"rebalancelab": o.Version, "kafka-streams": "3.9.2"},
		Script:   sc.Script(p, t, newRandSource(p.Seed, sc.Name))}
	era := &EraRun{Era: StreamsEra, Applies: true, Group: app, Topic: app + ".in-a," + app + ".in-b"}
	res.Eras = []*EraRun{era}
	run := &StreamsRun{Application: app, Inputs: []string{app + ".in-a", app + ".in-b"}, Output: app + ".out", Threads: spec.Threads,
		Config: map[string]string{
			"num.stream.threads": strconv.Itoa(spec.Threads), "processing.guarantee": "at_least_once",
			"session.timeout.ms": strconv.FormatInt(t.SessionTimeoutMs, 10), "heartbeat.interval.ms": strconv.FormatInt(t.HeartbeatIntervalMs, 10),
			"commit.interval.ms": strconv.FormatInt(spec.CommitIntervalMs, 10),
		}}
	// The group's transitions come from the rebalancelab broker's coordinator (its group observer);
	// Kafka's broker has none, and the relations that read them are skipped there (not measured).
	run.Observed = o.Broker == lab.BrokerRebalancelab
	res.Streams = run
	dir, err := os.MkdirTemp("", "rebalancelab-streams-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	r := &streamsRunner{o: o, sc: sc, spec: spec, res: res, run: run, t: t, p: p, java: java, classpath: cp, dir: dir,
		produced: map[string]bool{}, instances: map[string]*streamsInstance{}, threads: map[string]int{},
		progress: func(format string, a ...any) {
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, format+"\n", a...)
			}
		}}
	runErr := r.runLab(ctx)
	r.compute()
	era.Errors = r.errs
	res.checkRelations(sc)
	// The instances' stderr (Streams' own warnings) beside the report or the timelines: streams-<name>.log.
	out := o.ReportDir
	if out == "" {
		out = o.OutputDir
	}
	if out != "" {
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, l := range logs {
			if b, err := os.ReadFile(l); err == nil && os.MkdirAll(out, 0o755) == nil {
				_ = os.WriteFile(filepath.Join(out, "streams-"+filepath.Base(l)), b, 0o644)
			}
		}
	}
	switch {
	case o.ReportDir != "":
		if err := res.WriteReport(o.ReportDir); err != nil && runErr == nil {
			runErr = fmt.Errorf("report: %w", err)
		}
	case o.OutputDir != "":
		if err := res.Report().WriteTimelines(o.OutputDir); err != nil && runErr == nil {
			runErr = fmt.Errorf("timelines: %w", err)
		}
	}
	return res, runErr
}

// observe is the broker's group observer: the application's group only.
func (r *streamsRunner) observe(ev coordinator.GroupChanged) {
	if ev.Group != r.run.Application {
		return
	}
	g := groupview.Decode(ev)
	r.mu.Lock()
	r.gens = append(r.gens, g)
	r.mu.Unlock()
}

func (r *streamsRunner) runLab(ctx context.Context) error {
	lo := lab.Options{ZK: lab.ZKOptions{Nodes: 1, Log: r.o.LabLog}, Brokers: 1,
		KafkaDefaults: r.o.KafkaDefaults, Log: r.o.LabLog, Broker: r.o.Broker}
	if r.run.Observed {
		lo.BrokerOptions = []broker.Option{broker.WithGroupObserver(r.observe)}
		r.progress("%s: starting the lab (ZooKeeper, 1 rebalancelab broker with its group observer)", r.sc.Name)
	} else {
		r.progress("%s: starting the lab (ZooKeeper, 1 %s broker: no group observer, the group's generations not measured)", r.sc.Name, r.o.Broker)
	}
	cluster, err := env.Start(ctx, env.Options{ExternalZK: r.o.ExternalZK, Lab: lo})
	if err != nil {
		return err
	}
	defer cluster.Close()
	if v := cluster.Lab().KafkaVersion(); v != "" {
		r.res.Versions["kafka"] = v
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

	for i, st := range r.res.Script {
		if !sleepCtx(ctx, time.Duration(st.DelayMs)*time.Millisecond) {
			return ctx.Err()
		}
		r.progress("[%s] step %d: %s", r.sc.Name, i+1, st)
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
	r.triggers = append(r.triggers, StreamsEvent{Trigger: scriptEndTrigger, AtMs: time.Now().UnixMilli()})
	r.mu.Unlock()
	r.stopAll()
	return r.readOutput(ctx)
}

func (r *streamsRunner) do(ctx context.Context, st Step) error {
	switch st.Action {
	case ActTrigger:
		r.mu.Lock()
		r.triggers = append(r.triggers, StreamsEvent{Trigger: st.Name, AtMs: time.Now().UnixMilli()})
		r.mu.Unlock()
	case ActStart:
		args := []string{"--bootstrap", r.bootstrap, "--application-id", r.run.Application, "--client-id", st.Member,
			"--state-dir", filepath.Join(r.dir, st.Member+"-state"), "--input", strings.Join(r.run.Inputs, ","),
			"--output", r.run.Output, "--threads", strconv.Itoa(r.spec.Threads)}
		for _, k := range slices.Sorted(maps.Keys(r.run.Config)) {
			if k != "num.stream.threads" {
				args = append(args, "--config", k+"="+r.run.Config[k])
			}
		}
		si, err := startStreamsInstance(st.Member, r.java, r.classpath, r.dir, args, r.onApp, func(mp MemberProcess) {
			r.mu.Lock()
			r.run.Instances = append(r.run.Instances, mp)
			r.mu.Unlock()
		})
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.instances[st.Member] = si
		r.threads[st.Member] = r.spec.Threads
		r.mu.Unlock()
	case ActRemoveThread, ActAddThread:
		si := r.instance(st.Member)
		if si == nil {
			return fmt.Errorf("%s: no instance %s", st, st.Member)
		}
		if err := si.command(string(st.Action)); err != nil {
			r.errorf("%s: %v", st, err)
		}
		r.mu.Lock()
		if st.Action == ActRemoveThread {
			r.threads[st.Member]--
		} else {
			r.threads[st.Member]++
		}
		r.mu.Unlock()
	case ActCrash:
		si := r.instance(st.Member)
		if si == nil {
			return fmt.Errorf("%s: no instance %s", st, st.Member)
		}
		si.kill()
		r.mu.Lock()
		delete(r.instances, st.Member)
		delete(r.threads, st.Member)
		r.mu.Unlock()
	case ActSettle:
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

func (r *streamsRunner) instance(name string) *streamsInstance {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.instances[name]
}

func (r *streamsRunner) onApp(ev StreamsAppEvent) {
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
func (r *streamsRunner) stable(ctx context.Context, quietMs int64) bool {
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
	return fullyAssigned(g, want, r.p.Partitions) && time.Now().UnixMilli()-g.TsMs >= quietMs
}

// describedStable is stable on DescribeGroups (Kafka's broker, no group observer).
func (r *streamsRunner) describedStable(ctx context.Context, quietMs int64) bool {
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
	assigned := len(owners) == len(r.run.Inputs)*r.p.Partitions
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

func (r *streamsRunner) unprocessed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.produced) < r.spec.Records {
		return r.spec.Records - len(r.produced)
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

func (r *streamsRunner) stopAll() {
	r.mu.Lock()
	var live []*streamsInstance
	for _, name := range slices.Sorted(maps.Keys(r.instances)) {
		live = append(live, r.instances[name])
	}
	r.instances = map[string]*streamsInstance{}
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
func (r *streamsRunner) createTopics(ctx context.Context, cluster env.Env) error {
	for _, topic := range append(slices.Clone(r.run.Inputs), r.run.Output) {
		if err := cluster.CreateTopic(ctx, env.Topic{Name: topic, Partitions: r.p.Partitions, ReplicationFactor: 1}); err != nil {
			return err
		}
	}
	return nil
}

// produce writes spec.Records records, alternately to each input, pair n (records 2n and 2n+1) to
// partition n mod P of both with the same key, acks=all, at spec.RatePerSec in ticks of 50 ms.
func (r *streamsRunner) produce(ctx context.Context) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(r.bootstrap, ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		r.errorf("producer: %v", err)
		return
	}
	defer cl.Close()
	perTick := max(1, r.spec.RatePerSec/20)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for n := 0; n < r.spec.Records; {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var batch []*kgo.Record
		for ; n < r.spec.Records && len(batch) < perTick; n++ {
			pair := n / 2
			batch = append(batch, &kgo.Record{Topic: r.run.Inputs[n%2], Partition: int32(pair % r.p.Partitions),
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
func (r *streamsRunner) readOutput(ctx context.Context) error {
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
func (r *streamsRunner) compute() {
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
		if tr.Trigger == scriptEndTrigger {
			continue
		}
		end := int64(1<<62 - 1)
		if i+1 < len(r.triggers) {
			end = r.triggers[i+1].AtMs
		}
		ev := tr
		ev.Moves = []string{}
		var before *StreamsLane
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
		case last.State == "Stable" && fullyAssigned(*last, len(last.Members), r.p.Partitions):
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

// laneOf is a Stable generation, member by member (sorted by thread).
func laneOf(g groupview.Generation) StreamsLane {
	l := StreamsLane{TsMs: g.TsMs, Generation: g.Generation}
	for _, m := range g.Members {
		thread := strings.TrimSuffix(m.ClientID, "-consumer")
		inst, _, _ := strings.Cut(thread, "-StreamThread-")
		l.Members = append(l.Members, StreamsLaneMember{Thread: thread, Instance: inst, MemberID: m.MemberID,
			Tasks: append([]string{}, m.ActiveTasks...), Partitions: m.Partitions})
	}
	sort.Slice(l.Members, func(i, j int) bool { return threadLess(l.Members[i].Thread, l.Members[j].Thread) })
	return l
}

// threadLess orders s1-StreamThread-2 before s1-StreamThread-10.
func threadLess(a, b string) bool {
	ai, an, _ := strings.Cut(a, "-StreamThread-")
	bi, bn, _ := strings.Cut(b, "-StreamThread-")
	if ai != bi {
		return ai < bi
	}
	x, errA := strconv.Atoi(an)
	y, errB := strconv.Atoi(bn)
	if errA != nil || errB != nil {
		return an < bn
	}
	return x < y
}

// owners maps each active task to its thread.
func (l StreamsLane) owners() map[string]string {
	out := map[string]string{}
	for _, m := range l.Members {
		for _, t := range m.Tasks {
			out[t] = m.Thread
		}
	}
	return out
}

// threadsOf counts the lane's members per instance.
func (l StreamsLane) threadsOf(inst string) int {
	n := 0
	for _, m := range l.Members {
		if m.Instance == inst {
			n++
		}
	}
	return n
}

// coPartitioned: every member's partitions of each input are exactly the partitions of its tasks
// (task 0_i reads partition i of both inputs).
func (l StreamsLane) coPartitioned(inputs []string) error {
	for _, m := range l.Members {
		var want []int32
		for _, t := range m.Tasks {
			_, p, ok := strings.Cut(t, "_")
			n, err := strconv.Atoi(p)
			if !ok || err != nil {
				return fmt.Errorf("%s: task %q", m.Thread, t)
			}
			want = append(want, int32(n))
		}
		slices.Sort(want)
		for _, in := range inputs {
			if got := m.Partitions[in]; !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				return fmt.Errorf("generation %d, %s: tasks %v but %s partitions %v", l.Generation, m.Thread, m.Tasks, in, got)
			}
		}
	}
	return nil
}

var errNoStreams = errors.New("not a Streams run")

// streamsEvent returns the run's event named trigger.
func (r *RunResult) streamsEvent(trigger string) (StreamsEvent, error) {
	if r.Streams == nil {
		return StreamsEvent{}, errNoStreams
	}
	for _, ev := range r.Streams.Events {
		if ev.Trigger == trigger {
			return ev, nil
		}
	}
	return StreamsEvent{}, fmt.Errorf("no %s event", trigger)
}
