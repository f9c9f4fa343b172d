package scenarios

// The runner: a lab (real ZooKeeper, one broker), then for each era a fresh topic and group, a producer
// (one record per tick, acks=all), the scenario's members and its script; at the end the producer stops,
// the members drain what was produced and stop gracefully, and the figures are computed from the merged
// timeline (Compute).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/broker"
	"github.com/rebalancelab/rebalancelab/internal/poll"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/env"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/members"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
	"github.com/rebalancelab/rebalancelab/zkconsumer"
)

// Options configures Run.
type Options struct {
	Scenario string
	// Eras to run, in this order; nil or {"all"}: every implemented era (Eras).
	Eras          []string
	Params        spec.Params // zero fields: the scenario's defaults
	KafkaDefaults bool        // Kafka's own timing instead of the lab's (KafkaTiming)
	// BrokerConfig: server.properties keys for the lab's broker over the lab's own (lab.Options.
	// BrokerConfig), e.g. message.max.bytes raised for a group record of 10,000 members.
	BrokerConfig map[string]string
	// ZKConfig are 0.8.2 consumer properties given to every zk-era member over the runner's and the
	// scenario's own (e.g. offsets.storage=kafka, dual.commit.enabled=false). Checked before anything
	// starts; group.id, zookeeper.connect and consumer.id are the runner's and refused here.
	ZKConfig   map[string]string
	ExternalZK string // a running ZooKeeper ("host:port,..."); "" = the lab starts one
	// Broker is the broker implementation the lab runs (lab.BrokerRebalancelab, the default, or
	// lab.BrokerKafka: a real Kafka 3.9); the result names it and, for Kafka, its version.
	Broker string
	// ReportDir gets index.html (RenderHTML) and the timelines; OutputDir only the timelines (used when
	// ReportDir is ""). Neither: the timelines stay in memory.
	ReportDir string
	OutputDir string
	Version   string        // rebalancelab's version, for the JSON
	Log       *logrus.Entry // the runner's log; nil: logrus' standard logger
	// LabLog is the lab's, the brokers' and the members' log; nil: a logger at warn level on stderr.
	LabLog   *logrus.Entry
	Progress io.Writer // a line per step (stderr in the CLI); nil: none
	// Definition, when set, is run instead of the catalog's scenario named Scenario (benchmarks build
	// their own scripts; its Relations are checked as usual).
	Definition *catalog.Scenario
	// MembersAs is how members run: MembersAsGoroutines, MembersAsProcesses, or "": goroutines up to
	// MaxInProcessMembers, member pools above (PoolMembers). MembersAsProcesses runs one
	// `MemberBinary member ...` process per member incarnation (members.NewProcess): a crash is a kill -9, a
	// restart a new process.
	MembersAs    string
	MemberBinary string // the rebalancelab binary, for MembersAsProcesses
	// MembersPerProcess, above 1, runs members K to a `rebalancelab member-pool` process (members.Pools)
	// instead of one per process (it implies MembersAsProcesses): each process's file descriptors
	// (RLIMIT_NOFILE) then hold K members' connections, which is how 10,000 members fit on one
	// machine. A pooled member crashes as a goroutine member does (its links cut at the runner's
	// proxies, then its consumer stopped without a goodbye), not by a kill -9 of its pool. Not with
	// test hosts (Params.Hosts).
	MembersPerProcess int
	// MemberHosts are the addresses ("host:port") of `rebalancelab member-pool --listen` servers on
	// other machines (members/agent.go): the members run there, in pools of MembersPerProcess (0: the
	// consumers spread evenly over the hosts), placed round-robin by pool. Each host's clock offset
	// is measured at the start (the result's hosts, agent1...), and its members' records carry its
	// name. The brokers and ZooKeeper the run uses must be reachable from there; scripts with crashes
	// or link faults are refused (the runner's fault proxies listen on loopback).
	MemberHosts []string
	// BrokersAs is how the lab's brokers run: lab.BrokersInProcess ("" too: in this process, unless
	// the script kills one) or lab.BrokersProcess (`MemberBinary broker` processes, whose descriptors
	// and CPU are not this process's).
	BrokersAs string
	// Members is whose consumers the coordinator eras run: MembersRebalancelab ("" too: newconsumer),
	// MembersKafka (Kafka 3.9's VerifiableConsumer JVMs, members.Kafka) or MembersMixed (one group of
	// both). The zk era's members are always ours here.
	Members string
	// Bootstrap, when set, is an existing Kafka cluster ("host:port,...") the run uses instead of a
	// lab: nothing is started; ExternalZK is then that cluster's ZooKeeper (needed by the zk era: a
	// cluster in ZooKeeper mode). Topics and groups are named rebalancelab.<run id>.<scenario>.<era> and
	// removed after each era (DeleteTopics, DeleteGroups, and /consumers/<group> in ZooKeeper) unless
	// Keep. Scenarios that stop ZooKeeper nodes or brokers are refused: they need the lab's processes.
	Bootstrap string
	Keep      bool
	// OnStep, when set, is called before and after every scripted step, on the runner's goroutine:
	// the script waits while it runs. Cancelling Run's context from it stops the era as Ctrl-C does
	// (members crash-stopped, the figures of what ran so far kept).
	OnStep func(ctx context.Context, s StepInfo)
}

// StepInfo is what Options.OnStep sees of an era's run around one scripted step.
type StepInfo struct {
	Era, Group, Topic string
	Bootstrap         string   // the lab's brokers, comma-joined host:port
	ZKAddrs           []string // the lab's ZooKeeper nodes, host:port
	Index             int      // 0-based position of Step in the script
	Step              spec.Step
	Done              bool // false: before the step; true: after it
	// Settled: after a settle step, whether the group settled (false: timed out or cancelled);
	// true otherwise (before any step, after other steps).
	Settled bool
	// Records returns the era's timeline so far, merged by ts_ms.
	Records func() []timeline.Record
	// ZKWatchers runs the wchp half of the zk cross-check now: the sessions the server has watching
	// /consumers/<group>/ids against the live members' current sessions. nil outside the zk era.
	ZKWatchers func(ctx context.Context) *report.ZKCrosscheck
	// Processes lists the member pools and the lab's broker processes running now (for their
	// resources: /proc/<pid>); none when members and brokers run in this process.
	Processes func() []members.ChildProcess
}

// ResolveEras expands names ("all" = Eras) and checks them: spec.ParseEras, as names.
func ResolveEras(names []string) ([]string, error) {
	eras, err := spec.ParseEras(names)
	if err != nil {
		return nil, err
	}
	return spec.Names(eras), nil
}

// checkZKConfig refuses Options.ZKConfig that no zk member could start with (zkconsumer.FromProperties'
// errors: unknown key, a number outside its type or range, a bad value) and the keys the runner sets.
func checkZKConfig(props map[string]string) error {
	check := map[string]string{"group.id": "g", "zookeeper.connect": "127.0.0.1:2181"}
	for k, v := range props {
		switch k {
		case "group.id", "zookeeper.connect", "consumer.id":
			return fmt.Errorf("zk config %s: set by the scenario runner (each member's group, ZooKeeper and name)", k)
		}
		check[k] = v
	}
	if _, err := zkconsumer.FromProperties(check); err != nil {
		return fmt.Errorf("zk config: %w", err)
	}
	return nil
}

// withDefaults fills the options every runner shares (env.Defaults: Log, LabLog, Broker) and returns
// the members' timing (the lab's, or Kafka's with KafkaDefaults).
func (o *Options) withDefaults() spec.Timing {
	d := env.Defaults{Log: o.Log, LabLog: o.LabLog, Broker: o.Broker, KafkaDefaults: o.KafkaDefaults}
	t := d.Fill()
	o.Log, o.LabLog, o.Broker = d.Log, d.LabLog, d.Broker
	return t
}

// envOptions is the cluster o asks for (env.Options; its Lab is filled by runEras).
func (o *Options) envOptions(runID string) env.Options {
	return env.Options{Bootstrap: o.Bootstrap, ExternalZK: o.ExternalZK, Keep: o.Keep, RunID: runID}
}

// Run runs a scenario on every requested era and returns the figures and relations. With ctx cancelled
// (Ctrl-C) the members, the producer and the lab are stopped and the error is ctx's; the result then
// holds what was measured so far. Other errors: an unknown scenario or era, bad params, a lab that does
// not start, a topic that cannot be created, output that cannot be written.
func Run(ctx context.Context, o Options) (*RunResult, error) {
	sc := o.Definition
	if sc == nil {
		var err error
		if sc, err = catalog.Lookup(o.Scenario); err != nil {
			return nil, err
		}
	}
	p, err := sc.ParamsFor(o.Params)
	if err != nil {
		return nil, err
	}
	if sc.MaxConsumers == 0 { // the catalogue's bound; a definition with its own (bench storm) chooses itself
		if o.MembersPerProcess, o.MembersAs, err = PoolMembers(p, o); err != nil {
			return nil, err
		}
	}
	t := o.withDefaults()
	if sc.Streams != nil {
		return runStreams(ctx, o, sc, p, t)
	}
	eras, err := ResolveEras(o.Eras)
	if err != nil {
		return nil, err
	}
	if err := checkZKConfig(o.ZKConfig); err != nil {
		return nil, err
	}
	if o.MembersPerProcess < 0 {
		return nil, fmt.Errorf("members per process %d: want 0 or more", o.MembersPerProcess)
	}
	if len(o.MemberHosts) > 0 && o.MembersAs == MembersAsGoroutines {
		return nil, fmt.Errorf("member hosts: members run there, not as %s of this process", o.MembersAs)
	}
	if o.MembersPerProcess > 1 || len(o.MemberHosts) > 0 {
		if o.MembersAs == MembersAsGoroutines {
			return nil, fmt.Errorf("members per process %d: members run as processes then, not as %s", o.MembersPerProcess, o.MembersAs)
		}
		if p.Hosts > 0 {
			return nil, errors.New("member pools (--members-per-process, --member-hosts): not with test hosts (--hosts), whose members run one per process")
		}
		o.MembersAs = MembersAsProcesses
	}
	switch o.BrokersAs {
	case "", lab.BrokersInProcess:
	case lab.BrokersProcess:
		if o.Bootstrap != "" {
			return nil, fmt.Errorf("brokers as processes: the lab's brokers, not an existing cluster's (--bootstrap)")
		}
		if err := checkMemberBinary(o.MemberBinary); err != nil {
			return nil, fmt.Errorf("brokers as processes: %w", err)
		}
	default:
		return nil, fmt.Errorf("brokers as %q: want %q or %q", o.BrokersAs, lab.BrokersInProcess, lab.BrokersProcess)
	}
	switch o.MembersAs {
	case "":
		o.MembersAs = MembersAsGoroutines
	case MembersAsGoroutines:
	case MembersAsProcesses:
		if err := checkMemberBinary(o.MemberBinary); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("members as %q: want %q or %q", o.MembersAs, MembersAsGoroutines, MembersAsProcesses)
	}
	if err := checkHosts(o, p); err != nil {
		return nil, err
	}
	switch o.Members {
	case "":
		o.Members = MembersRebalancelab
	case MembersRebalancelab, MembersKafka, MembersMixed:
		if o.Members != MembersRebalancelab && p.Hosts > 0 {
			return nil, fmt.Errorf("members %s: Kafka's members do not run inside test hosts (--hosts)", o.Members)
		}
	default:
		return nil, fmt.Errorf("members %q: want one of %s", o.Members, strings.Join(MemberImplementations, ", "))
	}
	res := &RunResult{Scenario: sc.Name, Description: sc.Description, Seed: p.Seed, Params: p, Timing: t,
		KafkaDefaults: o.KafkaDefaults, ZKConfig: o.ZKConfig, Broker: o.Broker, MembersAs: o.MembersAs,
		Members: o.Members, RunID: env.NewRunID(),
		Versions: map[string]string{"rebalancelab": o.Version},
		Script:   sc.Script(p, t, spec.NewRand(p.Seed, sc.Name))}
	if err := checkMemberHosts(o, p, res.Script); err != nil {
		return nil, err
	}
	if len(o.MemberHosts) > 0 && o.MembersPerProcess < 1 {
		o.MembersPerProcess = (p.Consumers + len(o.MemberHosts) - 1) / len(o.MemberHosts)
	}
	if o.Bootstrap != "" {
		res.Broker, res.Cluster = BrokerExternal, o.Bootstrap
		if err := checkExternal(o.envOptions(res.RunID), sc, res.Script, eras); err != nil {
			return nil, err
		}
	} else if catalog.KillsBroker(res.Script) && o.Broker == lab.BrokerRebalancelab {
		if err := checkMemberBinary(o.MemberBinary); err != nil {
			return nil, fmt.Errorf("%s kills brokers with SIGKILL, so its brokers run as processes: %w", sc.Name, err)
		}
	}
	var toRun []*EraRun
	for _, era := range eras {
		e := &EraRun{Era: era, Applies: true}
		switch {
		case sc.NotApplicable[spec.Era(era)] != "":
			e.Applies, e.Reason = false, sc.NotApplicable[spec.Era(era)]
		case sc.StopsZKNode && o.ExternalZK != "":
			e.Applies, e.Reason = false, "stops ZooKeeper nodes: needs the 3-node ensemble the lab starts, not an external one (--zk)"
		case o.Members != MembersRebalancelab:
			var props map[string]string
			if sc.MemberProps != nil {
				props = sc.MemberProps(era, t)
			}
			e.Applies, e.Reason = kafkaMembersApply(era, o.Members, res.Script, sc.ZKNodes, props)
		}
		res.Eras = append(res.Eras, e)
		if e.Applies {
			toRun = append(toRun, e)
		}
	}
	if len(toRun) > 0 {
		if err := runEras(ctx, o, sc, res, toRun); err != nil {
			res.Interrupted = ctx.Err() != nil
			return res, err
		}
	}
	checkRelations(res, sc)
	switch {
	case o.ReportDir != "":
		if err := res.WriteReport(o.ReportDir); err != nil {
			return res, fmt.Errorf("report: %w", err)
		}
	case o.OutputDir != "":
		if err := res.WriteTimelines(o.OutputDir); err != nil {
			return res, fmt.Errorf("timelines: %w", err)
		}
	}
	return res, nil
}

func runEras(ctx context.Context, o Options, sc *catalog.Scenario, res *RunResult, eras []*EraRun) error {
	progress := func(format string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", a...)
		}
	}
	for _, e := range eras {
		e.NotRun = true // until its runner starts it (a lab that does not start, an interrupt before it)
	}
	var hs *lab.Hosts
	if res.Params.Hosts > 0 {
		var err error
		if hs, err = startHosts(ctx, o, res, progress); err != nil {
			return err
		}
		defer hs.Close() // after the lab's processes have stopped (deferred below)
	}
	if len(o.MemberHosts) > 0 {
		infos, err := members.MeasureHosts(ctx, o.MemberHosts, clockSamples, progress)
		if err != nil {
			return err
		}
		res.Hosts = append(res.Hosts, infos...)
	}
	var km *members.Kafka
	if o.Members != MembersRebalancelab {
		var err error
		if km, err = members.NewKafka(); err != nil {
			return err
		}
		if v, err := km.KafkaVersion(); err == nil {
			res.Versions["kafka_members"] = v
		}
		for _, e := range eras {
			if v := km.OldConnectorVersion(); spec.Era(e.Era).UsesZooKeeper() && v != "" {
				res.Versions["kafka_members_zk"] = v // the zk era's: the 0.8.2.2 connector
			}
		}
	}
	eo := o.envOptions(res.RunID)
	if o.Bootstrap == "" {
		lo := lab.Options{ZK: lab.ZKOptions{Nodes: sc.ZKNodes, Log: o.LabLog},
			Brokers: sc.BrokerCount(), KafkaDefaults: o.KafkaDefaults, BrokerConfig: o.BrokerConfig, Broker: o.Broker, Log: o.LabLog}
		if catalog.KillsBroker(res.Script) || o.BrokersAs == lab.BrokersProcess {
			lo.BrokersAs, lo.BrokerBinary = lab.BrokersProcess, o.MemberBinary
		}
		if sc.BrokerCount() > 1 && o.Broker == lab.BrokerRebalancelab {
			// Topic creation spreads replicas from a start drawn from the run's seed (AdminUtils'
			// random start, made deterministic), so that two runs of one seed lead alike.
			lo.BrokerConfig = maps.Clone(o.BrokerConfig)
			if lo.BrokerConfig == nil {
				lo.BrokerConfig = map[string]string{}
			}
			if _, set := lo.BrokerConfig[broker.ReplicaAssignmentSeedKey]; !set {
				lo.BrokerConfig[broker.ReplicaAssignmentSeedKey] = strconv.FormatInt(res.Params.Seed&math.MaxInt64, 10)
			}
		}
		if km != nil && o.Broker == lab.BrokerRebalancelab { // rebalance_begin of Kafka members (members/kafka.go)
			lo.BrokerOptions = append(lo.BrokerOptions, broker.WithGroupObserver(km.Observe))
		}
		where := ""
		if hs != nil {
			lo.Host, lo.BrokerBinary = hs.Host(1), o.MemberBinary
			where = " on test host h1"
		}
		eo.Lab = lo
		zkDesc := fmt.Sprintf("ZooKeeper %d node(s)", sc.ZKNodes)
		if o.ExternalZK != "" {
			zkDesc = "ZooKeeper at --zk " + o.ExternalZK
		}
		progress("%s: starting the lab (%s, %d %s broker(s)%s)", sc.Name, zkDesc, lo.Brokers, o.Broker, where)
	} else {
		progress("%s: an existing cluster (no lab): bootstrap %s, ZooKeeper %s, run id %s", sc.Name, o.Bootstrap,
			map[bool]string{true: o.ExternalZK, false: "none"}[o.ExternalZK != ""], res.RunID)
	}
	cluster, err := env.Start(ctx, eo)
	if err != nil {
		return err
	}
	defer cluster.Close()
	maps.Copy(res.Versions, cluster.Versions(ctx))
	for _, e := range eras {
		r := &eraRunner{o: o, sc: sc, res: res, e: e, env: cluster, lab: cluster.Lab(), hosts: hs, kafka: km,
			bootstrap: cluster.Bootstrap(), zkConnect: cluster.ZKConnect(), zkAddrs: cluster.ZKAddrs(),
			t: res.Timing, p: res.Params, progress: progress, log: o.Log.WithField("era", e.Era)}
		e.NotRun = false
		err := r.run(ctx)
		if e.Topic != "" {
			r.cleanup()
		}
		if err != nil {
			e.Interrupted = ctx.Err() != nil
			return err
		}
	}
	return nil
}

// eraRunner runs one era.
type eraRunner struct {
	o   Options
	sc  *catalog.Scenario
	res *RunResult
	e   *EraRun
	// env is the cluster the run uses (the lab or an existing cluster); lab is env.Lab(), for faults on
	// the lab's nodes: nil on an existing cluster (Options.Bootstrap).
	env env.Env
	lab *lab.Lab
	// hosts are the run's test hosts (Params.Hosts), nil without.
	hosts *lab.Hosts
	// kafka: Kafka's members (Options.Members), nil when every member is ours.
	kafka *members.Kafka
	// bootstrap and zkConnect are the brokers' and ZooKeeper's addresses (the lab's or the cluster's);
	// brokerAddrs every address a member may dial a broker at (bootstrap and advertised), for the
	// routes of member processes.
	bootstrap   string
	zkConnect   string
	brokerAddrs []string
	zkAddrs     []string
	t           spec.Timing
	p           spec.Params
	progress    func(format string, a ...any)
	log         *logrus.Entry

	start   time.Time
	col     *timeline.Collector
	rec     *timeline.Recorder // the runner's own records (trigger, fault)
	opts    figures.FigureOptions
	ctx     context.Context // the era's: cancelled at its end (members' contexts derive from it)
	mu      sync.Mutex
	members map[string]*member // current incarnation by name
	links   map[string]*lab.MemberLinks
	// hostNet: each test host's delay and loss now in force (host-delay, host-loss), by host index.
	hostNet map[int]hostNet
	// retired are the links of crashed incarnations: cut for good (the zombie must not reach anything);
	// a restart gets new links, as a new process gets new connections. Closed with the others.
	retired []*lab.MemberLinks
	zombies sync.WaitGroup // crashed members' stops
	// down are the lab brokers the script stopped or killed and has not started since, oldest first
	// (brokerStep; used only by the step goroutine).
	down []downBroker
	// side is the durability scenario's side topic and its producers (nil in other scenarios).
	side *sideTopic
	// pools are the member pools (Options.MembersPerProcess, MemberHosts), made with the first
	// pooled member (memberPools).
	pools *members.Pools
}

func (r *eraRunner) errorf(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	r.mu.Lock()
	r.e.Errors = append(r.e.Errors, msg)
	r.mu.Unlock()
	r.log.Warn(msg)
	r.rec.Emit(timeline.Record{Kind: timeline.Error, Text: msg})
}

// gaveUp records a member's giving up that the scenario expects (Scenario.GivesUp): in the era's
// GaveUp and, as an error would be, on the timeline; it does not fail the run.
func (r *eraRunner) gaveUp(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	r.mu.Lock()
	r.e.GaveUp = append(r.e.GaveUp, msg)
	r.mu.Unlock()
	r.rec.Emit(timeline.Record{Kind: timeline.Error, Text: msg})
}

func (r *eraRunner) stepf(format string, a ...any) {
	r.progress("[%s %s %5.1fs] %s", r.sc.Name, r.e.Era, time.Since(r.start).Seconds(), fmt.Sprintf(format, a...))
}

func (r *eraRunner) run(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	r.ctx = ctx
	r.start = time.Now()
	e := r.e
	e.Group = r.env.Name(r.sc.Name, e.Era)
	e.Topic = e.Group
	parts := make([]int32, r.p.Partitions)
	for i := range parts {
		parts[i] = int32(i)
	}
	r.opts = figures.FigureOptions{Partitions: map[string][]int32{e.Topic: parts}}
	if r.kafka != nil && spec.Era(e.Era).UsesZooKeeper() {
		r.opts.NotMeasured = notMeasuredOld
	}
	if r.kafka != nil && !spec.Era(e.Era).UsesZooKeeper() {
		r.kafka.SetGroup(e.Group)
		defer r.kafka.SetGroup("")
		r.opts.NotMeasured = notMeasuredKafka
		var extra map[string]string
		if r.sc.MemberProps != nil {
			extra = r.sc.MemberProps(e.Era, r.t)
		}
		if members.AutoCommits(extra) {
			r.opts.NotMeasured = append(slices.Clone(notMeasuredKafka), notMeasuredAutoCommit...)
		}
	}
	e.Options = r.opts
	r.col = &timeline.Collector{}
	r.rec = &timeline.Recorder{Sink: r.col, Era: e.Era, Member: "runner"}
	r.members = map[string]*member{}
	r.links = map[string]*lab.MemberLinks{}
	defer r.closePools(false) // an era that ended early (its topic could not be made)
	r.stepf("topic %s, %d partitions", e.Topic, r.p.Partitions)
	if err := r.createTopic(ctx); err != nil {
		return err
	}
	var before report.ZKCounters
	if spec.Era(e.Era).UsesZooKeeper() {
		before = SnapshotZK(ctx, r.zkAddrs)
	}

	prodCtx, stopProducer := context.WithCancel(ctx)
	prodDone := make(chan struct{})
	go func() {
		defer close(prodDone)
		r.produce(prodCtx)
	}()
	defer func() { stopProducer(); <-prodDone }()
	if r.sc.Durability != nil {
		side, err := r.startDurability(ctx, prodCtx)
		if err != nil {
			return err
		}
		r.side = side
		defer func() { stopProducer(); side.wg.Wait() }()
	}

	for i, st := range r.res.Script {
		if !poll.Sleep(ctx, time.Duration(st.DelayMs)*time.Millisecond) {
			break
		}
		r.stepf("step %d/%d: %s", i+1, len(r.res.Script), st)
		r.onStep(ctx, i, st, false, true)
		settled := r.do(ctx, st)
		r.onStep(ctx, i, st, true, settled)
	}
	stopProducer()
	<-prodDone
	if r.side != nil && parent.Err() == nil {
		r.stepf("durability: reading %s back", r.side.topic)
		checks, err := r.side.check(ctx)
		if err != nil {
			r.errorf("%v", err)
		}
		e.Durability = checks
	}
	if parent.Err() != nil { // Ctrl-C: stop everything at once, keep what was measured
		r.stopAll(false)
		r.zombies.Wait()
		r.closeLinks()
		r.closePools(false)
		e.Records = r.col.TakeSorted()
		e.Result = figures.Compute(e.Records, e.Era, r.opts)
		return parent.Err()
	}
	r.healAll()
	r.healHosts(ctx)
	r.stepf("draining")
	e.Drained = r.drain(ctx, time.Duration(r.t.SettleTimeoutMs())*time.Millisecond)
	owned := r.opts
	owned.OwnsRecords = true // this copy is only for the owners: Compute may redate it in place
	e.EndOwners = figures.Compute(r.sortedRecords(), e.Era, owned).FinalOwners
	if spec.Era(e.Era).UsesZooKeeper() {
		e.ZKCrosscheck = r.watchCheck(ctx)
	}
	r.rec.Emit(timeline.Record{Kind: timeline.Trigger, Name: report.ScriptEndTrigger})
	r.stepf("stopping the members")
	r.stopAll(true)
	r.zombies.Wait()
	r.closeLinks()
	r.closePools(true)
	all := r.col.TakeSorted() // every member has stopped: the collector's copy is not kept beside this one
	e.Records, e.ShutdownRecords = splitAtShutdown(all)
	e.Result = figures.Compute(e.Records, e.Era, r.opts)
	if spec.Era(e.Era).UsesZooKeeper() {
		after := SnapshotZK(ctx, r.zkAddrs)
		for _, rec := range all { // the server counted the shutdown too
			switch rec.Kind {
			case timeline.ZKOp:
				e.ZKCrosscheck.TimelineZKOps++
			case timeline.ZKWatch:
				e.ZKCrosscheck.TimelineWatchEvents++
			}
		}
		e.ZKCrosscheck.DiffCounters(r.zkAddrs, before, after)
	}
	if r.sc.Extra != nil {
		e.Extra = r.sc.Extra(e)
	}
	r.stepf("done: %d records", len(e.Records))
	return parent.Err()
}

// splitAtShutdown splits a sorted timeline before its shutdown trigger.
func splitAtShutdown(recs []timeline.Record) (scenario, shutdown []timeline.Record) {
	for i, rec := range recs {
		if rec.Kind == timeline.Trigger && rec.Name == report.ScriptEndTrigger {
			return recs[:i:i], recs[i:]
		}
	}
	return recs, nil
}

// sortedRecords is the timeline so far, merged by ts_ms (stable: one goroutine's records keep their
// order within a millisecond).
func (r *eraRunner) sortedRecords() []timeline.Record {
	return r.col.Sorted(0)
}

// topics are the era's topics: its group's and, for a durability scenario, the side topic.
func (r *eraRunner) topics() []string {
	if r.sc.Durability != nil {
		return []string{r.e.Topic, durabilityTopic(r.e.Topic)}
	}
	return []string{r.e.Topic}
}

// createNamedTopic creates topic with the run's partitions and configs, and the environment's
// replication factor (min(3, brokers) in the lab, or the scenario's; 1 on an existing cluster).
func (r *eraRunner) createNamedTopic(ctx context.Context, topic string, configs map[string]string) error {
	rf := r.env.ReplicationFactor()
	if r.lab != nil && r.sc.TopicReplicationFactor > 0 {
		rf = r.sc.TopicReplicationFactor
	}
	return r.env.CreateTopic(ctx, env.Topic{Name: topic, Partitions: r.p.Partitions, ReplicationFactor: rf, Configs: configs})
}

// createTopic creates the era's topic and learns every broker's advertised address.
func (r *eraRunner) createTopic(ctx context.Context) error {
	if err := r.createNamedTopic(ctx, r.e.Topic, nil); err != nil {
		return err
	}
	addrs, err := r.env.BrokerAddrs(ctx)
	r.brokerAddrs = addrs
	if err != nil && r.o.MembersAs == MembersAsProcesses {
		return fmt.Errorf("metadata (the brokers' advertised addresses, for the member processes' routes): %w", err)
	}
	return nil
}

// produce sends one record per tick, round robin over the partitions, acks=all, one at a time; each
// acknowledged record is a produce{topic, partition, offset} record. Values are sequence numbers.
func (r *eraRunner) produce(ctx context.Context) {
	rec := &timeline.Recorder{Sink: r.col, Era: r.e.Era, Member: "producer"}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(r.bootstrap, ",")...),
		kgo.DefaultProduceTopic(r.e.Topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.MaxProduceRequestsInflightPerBroker(1),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // Kafka's compression.type default (franz-go's is snappy)
	if err != nil {
		r.errorf("producer: %v", err)
		return
	}
	defer cl.Close()
	tick := time.NewTicker(time.Duration(r.t.ProduceIntervalMs) * time.Millisecond)
	defer tick.Stop()
	failing := false
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		kr := &kgo.Record{Topic: r.e.Topic, Partition: int32(seq % r.p.Partitions), Value: []byte(strconv.Itoa(seq))}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := cl.ProduceSync(pctx, kr).FirstErr()
		cancel()
		switch {
		case err == nil:
			failing = false
			rec.Emit(timeline.Record{Kind: timeline.Produce, Topic: kr.Topic, Partition: timeline.I32(kr.Partition), Offset: timeline.I64(kr.Offset)})
		case ctx.Err() != nil:
			return
		case !failing: // once per streak of failures (a broker down)
			failing = true
			rec.Emit(timeline.Record{Kind: timeline.Error, Text: "produce: " + err.Error()})
		}
	}
}

// linksOf returns the member's links, created on first use and kept across its restarts. Only the
// links its script faults go through proxies (faultedLinks); the others dial directly.
func (r *eraRunner) linksOf(name string) *lab.MemberLinks {
	faulted := r.faultedLinks(name)
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.links[name]
	if l == nil {
		l = lab.NewMemberLinksFor(r.e.Era+"/"+name, faulted...)
		if r.hosts != nil { // members inside test hosts reach this process at the bridge address
			l.ListenOn(r.hosts.BridgeAddr())
		}
		l.OnFault(func(ev lab.FaultEvent) { r.linkFault(name, ev) })
		r.links[name] = l
	}
	return l
}

// faultedLinks are the links of member name that the script faults: those of its stall, latency,
// cut and heal steps, and all of them if it is ever crashed (a crash cuts every link).
func (r *eraRunner) faultedLinks(name string) []lab.Link {
	seen := map[lab.Link]bool{}
	var out []lab.Link
	add := func(l lab.Link) {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	if r.kafka != nil && isKafkaMember(r.o.Members, r.e.Era, name) {
		return nil // Kafka's member dials the brokers itself; a crash is its kill -9
	}
	if r.hostNetViaProxies(name) { // netem missing: the host's delay and loss go on every link
		for _, l := range crashLinks {
			add(l)
		}
	}
	for _, st := range r.res.Script {
		if st.Member != name {
			continue
		}
		switch st.Action {
		case spec.ActStall, spec.ActLatency, spec.ActCut, spec.ActHeal:
			add(r.resolveLink(st.Link))
		case spec.ActCrash:
			if r.o.MembersAs == MembersAsProcesses && !r.pooled() {
				continue // a kill -9: the kernel closes the process's connections
			}
			for _, l := range crashLinks {
				add(l)
			}
		}
	}
	return out
}

// crashLinks are the links a crash cuts: all of a member's.
var crashLinks = []lab.Link{lab.LinkZooKeeper, lab.LinkCoordinator, lab.LinkFetch}

// linkFault records a link fault's actual begin or end, as the member's proxies report it:
// fault{action, target: "<member>/<link>", phase} stamped with the time it took effect there.
func (r *eraRunner) linkFault(member string, ev lab.FaultEvent) {
	action := ev.Fault
	switch ev.Fault {
	case lab.FaultLatency:
		action = fmt.Sprintf("latency %dms", ev.Latency.Milliseconds())
	case lab.FaultLoss:
		action = fmt.Sprintf("loss %s%%", strconv.FormatFloat(ev.LossPct, 'f', -1, 64))
	}
	phase := timeline.FaultEnd
	if ev.Begin {
		phase = timeline.FaultBegin
	}
	r.rec.Emit(timeline.Record{TsMs: ev.At.UnixMilli(), Kind: timeline.Fault, Action: action,
		Target: member + "/" + string(ev.Link), Phase: phase})
}

func (r *eraRunner) current(name string) *member {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.members[name]
}

// resolveLink maps the script's link names to the era's (catalog.CoordinationLink → zookeeper|coordinator).
func (r *eraRunner) resolveLink(l string) lab.Link {
	if l == catalog.CoordinationLink {
		return spec.Era(r.e.Era).CoordinationLink()
	}
	return lab.Link(l)
}

// checkLink refuses a link the era's members do not have: a name that is no lab link, or the
// ZooKeeper link in a coordinator era (its members talk to brokers only). A fault on it would take
// effect on nothing.
func (r *eraRunner) checkLink(l lab.Link) error {
	if !slices.Contains(crashLinks, l) {
		return fmt.Errorf("no such link %q (want %s, %s, %s or %s)", l, catalog.CoordinationLink, lab.LinkZooKeeper, lab.LinkCoordinator, lab.LinkFetch)
	}
	if l == lab.LinkZooKeeper && !spec.Era(r.e.Era).UsesZooKeeper() {
		return fmt.Errorf("the %s era's members have no %s link (they talk to brokers only)", r.e.Era, l)
	}
	return nil
}

func (r *eraRunner) fault(action, target string) {
	r.rec.Emit(timeline.Record{Kind: timeline.Fault, Action: action, Target: target})
}

// nodeFault records a stopped node as a fault: fault{action: zk-stop|broker-stop, target, phase: begin}
// when its stop has completed, and the same with phase end when its restart has completed (it serves
// again), so that the window is the time the node was really down.
func (r *eraRunner) nodeFault(stopped bool, action, target string) {
	phase := timeline.FaultEnd
	if stopped {
		phase = timeline.FaultBegin
	}
	r.rec.Emit(timeline.Record{Kind: timeline.Fault, Action: action, Target: target, Phase: phase})
}

// onStep calls Options.OnStep, if any.
func (r *eraRunner) onStep(ctx context.Context, i int, st spec.Step, done, settled bool) {
	if r.o.OnStep == nil {
		return
	}
	info := StepInfo{Era: r.e.Era, Group: r.e.Group, Topic: r.e.Topic, Bootstrap: r.bootstrap,
		ZKAddrs: r.zkAddrs, Index: i, Step: st, Done: done, Settled: settled, Records: r.sortedRecords,
		Processes: r.childProcesses}
	if spec.Era(r.e.Era).UsesZooKeeper() {
		info.ZKWatchers = r.watchCheck
	}
	r.o.OnStep(ctx, info)
}

// do performs one step. Failures are recorded (errorf) and the script goes on. It returns false only
// for a settle that did not settle.
func (r *eraRunner) do(ctx context.Context, st spec.Step) bool {
	switch st.Action {
	case spec.ActTrigger:
		r.rec.Emit(timeline.Record{Kind: timeline.Trigger, Name: st.Name})
	case spec.ActStart:
		r.startMember(st.Member, st.As)
	case spec.ActStop:
		r.stopMember(st.Member)
	case spec.ActCrash:
		r.crashMember(st.Member)
	case spec.ActStall, spec.ActLatency, spec.ActCut, spec.ActHeal:
		link := r.resolveLink(st.Link)
		if err := r.checkLink(link); err != nil {
			r.errorf("%s: %v", st, err)
			return true
		}
		if m := r.current(st.Member); m == nil || m.isEnded() {
			// a fault on the links of a member that is not running reaches nobody
			r.errorf("%s: %s is not running", st, st.Member)
			return true
		}
		links := r.linksOf(st.Member)
		var err error
		switch st.Action {
		case spec.ActStall:
			err = links.Stall(link)
		case spec.ActLatency:
			err = links.Latency(link, time.Duration(st.LatencyMs)*time.Millisecond)
		case spec.ActCut:
			err = links.Cut(link)
		case spec.ActHeal:
			err = links.Heal(link)
		}
		// The fault's records (linkFault) come from the proxies, when it took effect.
		if err != nil {
			r.errorf("%s: %v", st, err)
		}
	case spec.ActZKStop, spec.ActZKStart:
		if r.lab == nil {
			r.errorf("%s: %s", st, errNeedsLab)
			return true
		}
		z := r.lab.ZooKeeper()
		if z == nil || st.Node < 0 || st.Node >= len(z.Nodes()) {
			r.errorf("%s: no such lab ZooKeeper node", st)
			return true
		}
		// Stopping a stopped node or starting a running one is a no-op in the lab: here it is a fault
		// that did not take effect (the node was not up to be stopped), so the run records it and fails.
		if node := z.Nodes()[st.Node]; node.Running() == (st.Action == spec.ActZKStart) {
			r.errorf("%s: zookeeper/%d is %s", st, st.Node, map[bool]string{true: "already running", false: "not running (already stopped)"}[node.Running()])
			return true
		}
		sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		var err error
		if st.Action == spec.ActZKStop {
			err = z.Nodes()[st.Node].Stop(sctx) // returns once the process has exited
		} else {
			err = z.Nodes()[st.Node].Start(sctx) // returns once the node serves
		}
		if err != nil {
			r.errorf("%s: %v", st, err)
			return true
		}
		r.nodeFault(st.Action == spec.ActZKStop, string(spec.ActZKStop), fmt.Sprintf("zookeeper/%d", st.Node))
	case spec.ActBrokerStop, spec.ActBrokerStart, spec.ActBrokerKill:
		r.brokerStep(ctx, st)
	case spec.ActHostDown, spec.ActHostUp, spec.ActPartition, spec.ActPartitionHeal, spec.ActHostDelay, spec.ActHostLoss:
		r.hostStep(ctx, st)
	case spec.ActSettle:
		start := time.Now()
		if r.settle(ctx, time.Duration(st.QuietMs)*time.Millisecond, time.Duration(st.TimeoutMs)*time.Millisecond) {
			r.stepf("stable after %.1fs", time.Since(start).Seconds())
			return true
		}
		if ctx.Err() == nil {
			r.stepf("NOT stable after %.1fs; going on", time.Since(start).Seconds())
		}
		return false
	default:
		r.errorf("unknown step action %q", st.Action)
	}
	return true
}

// startMember records member_start and runs a new incarnation of the member in the background, under
// the identity of member as when as is not "" (ActStart).
func (r *eraRunner) startMember(name, as string) {
	if m := r.current(name); m != nil && !m.isEnded() {
		r.errorf("start %s: already running", name)
		return
	}
	g := &gate{next: r.col}
	m := &member{name: name, gate: g, rec: &timeline.Recorder{Sink: g, Era: r.e.Era, Member: name}, done: make(chan struct{})}
	connect := r.zkConnect
	if !spec.Era(r.e.Era).UsesZooKeeper() {
		connect = r.bootstrap
	}
	var extra map[string]string
	if r.sc.MemberProps != nil {
		extra = r.sc.MemberProps(r.e.Era, r.t)
	}
	identity := name
	if as != "" {
		identity = as
	}
	props := members.Props(r.e.Era, identity, r.e.Group, connect, r.t, r.o.KafkaDefaults, extra)
	if spec.Era(r.e.Era).UsesZooKeeper() {
		for k, v := range r.o.ZKConfig {
			props[k] = v
		}
	}
	rt, err := r.runtimeFor(members.Member{Era: r.e.Era, Name: name, Topic: r.e.Topic, Props: props, Rec: m.rec,
		Log: r.o.LabLog.WithField("member", name)})
	if err != nil {
		r.errorf("start %s: %v", name, err)
		return
	}
	m.rt = rt
	ctx, cancel := context.WithCancel(r.ctx)
	m.cancel = cancel
	r.mu.Lock()
	r.members[name] = m
	r.mu.Unlock()
	m.rec.Emit(timeline.Record{Kind: timeline.MemberStart})
	go func() {
		defer close(m.done)
		err := rt.Run(ctx)
		if err == nil || m.isEnded() || ctx.Err() != nil {
			return
		}
		// The application gives up (Kafka 0.8: createMessageStreams threw; a fatal poll error) and
		// closes its consumer: the run's error, unless the scenario measures it (Scenario.GivesUp).
		if slices.Contains(r.sc.GivesUp, name) {
			r.gaveUp("%s gives up: %v", name, err)
		} else {
			r.errorf("%s gives up: %v", name, err)
		}
		rt.Stop(true)
		m.end("graceful")
	}()
}

// stopMember stops the member gracefully and records member_stop once it has stopped.
func (r *eraRunner) stopMember(name string) {
	m := r.current(name)
	if m == nil || m.isEnded() {
		r.errorf("stop %s: not running", name)
		return
	}
	m.rt.Stop(true)
	m.cancel()
	<-m.done
	m.end("graceful")
}

// crashMember cuts every link of the member, records member_stop{crash}, and drops it without a
// goodbye; it says nothing more (its records are gated off).
func (r *eraRunner) crashMember(name string) {
	m := r.current(name)
	if m == nil || m.isEnded() {
		r.errorf("crash %s: not running", name)
		return
	}
	if m.rt.OwnProcess() {
		// A real crash: kill -9, and member_stop{crash} once the process is dead and what it wrote
		// before has been read (so every record of it precedes its stop).
		m.rt.Stop(false)
		r.fault("crash", name)
		m.end("crash")
		m.gate.close()
		m.cancel()
		<-m.done
		return
	}
	links := r.linksOf(name)
	links.OnFault(nil) // these cuts are the crash, recorded as one instant below; the links are retired
	for _, l := range crashLinks {
		if err := links.Cut(l); err != nil {
			r.errorf("crash %s: cut %s: %v", name, l, err)
		}
	}
	r.fault("crash", name)
	r.mu.Lock()
	r.retired = append(r.retired, links)
	delete(r.links, name)
	r.mu.Unlock()
	m.end("crash")
	m.gate.close()
	r.zombies.Add(1)
	go func() {
		defer r.zombies.Done()
		m.rt.Stop(false)
		m.cancel()
		<-m.done
	}()
}

// stopAll stops every running member at once (graceful or not).
func (r *eraRunner) stopAll(graceful bool) {
	r.mu.Lock()
	var ms []*member
	for _, m := range r.members {
		if !m.isEnded() {
			ms = append(ms, m)
		}
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if graceful {
				m.rt.Stop(true)
			} else {
				m.gate.close()
				m.rt.Stop(false)
			}
			m.cancel()
			<-m.done
			m.end(map[bool]string{true: "graceful", false: "crash"}[graceful])
		}()
	}
	wg.Wait()
}

// healAll removes every fault from the links of the members still running, so that they can drain
// and say goodbye.
func (r *eraRunner) healAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, l := range r.links {
		if m := r.members[name]; m == nil || m.isEnded() {
			continue
		}
		for _, link := range []lab.Link{lab.LinkZooKeeper, lab.LinkCoordinator, lab.LinkFetch} {
			_ = l.Heal(link)
		}
	}
}

func (r *eraRunner) closeLinks() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.links {
		_ = l.Close()
	}
	for _, l := range r.retired {
		_ = l.Close()
	}
}

// settle waits until the group is stable (Compute's definition) and no membership or rebalance record
// came for quiet, or until timeout; it reports whether the group settled.
//
// The full check (stableAt: a Compute over every record so far) is made only once no membership or
// rebalance record has come for quiet (Collector.Latest, O(1)): until then the group cannot have been
// stable for quiet anyway. And after a full check that failed the next waits at least twice as long as
// it took, so that the runner's replays stay a small share of the CPU the members and the broker need
// (at N=1,000 the 100 ms polls were a third of the run's CPU, and they grow with the records).
func (r *eraRunner) settle(ctx context.Context, quiet, timeout time.Duration) bool {
	var nextFull time.Time // no full check before: twice the last failed one's duration after it
	every100ms := poll.Backoff{First: 100 * time.Millisecond, Max: 100 * time.Millisecond}
	// max: a timeout of 0 is one try (poll's 0 would be no deadline).
	err := every100ms.Until(ctx, max(timeout, time.Nanosecond), "the group stable and quiet", func() bool {
		now := time.Now()
		if now.Before(nextFull) || now.UnixMilli()-r.col.Latest(changeKinds...) < quiet.Milliseconds() {
			return false
		}
		// Sorted(1): room for stableAt's probe, so that a timeline of millions is not copied again
		stable, lastChange := stableAt(r.col.Sorted(1), r.e.Era, r.opts, now.UnixMilli())
		if stable && now.UnixMilli()-lastChange >= quiet.Milliseconds() {
			return true
		}
		nextFull = now.Add(max(100*time.Millisecond, 2*time.Since(now)))
		return false
	})
	return err == nil
}

// changeKinds are the membership and rebalance records: a settle's quiet period counts from the last.
var changeKinds = []timeline.Kind{timeline.MemberStart, timeline.MemberStop, timeline.RebalanceBegin,
	timeline.RebalanceEnd, timeline.Assigned, timeline.Revoked}

// stableAt reports whether the group described by recs is stable at nowMs (a trigger appended at nowMs
// opens a window that Compute finds never unstable), and the time of the last membership or rebalance
// record. It appends its probe to recs and lets Compute redate them in place: recs must be the caller's
// own copy, best with room for one more.
func stableAt(recs []timeline.Record, era string, opts figures.FigureOptions, nowMs int64) (bool, int64) {
	var last int64
	for _, rec := range recs {
		if slices.Contains(changeKinds, rec.Kind) {
			last = rec.TsMs
		}
	}
	if n := len(recs); n > 0 && recs[n-1].TsMs > nowMs {
		nowMs = recs[n-1].TsMs
	}
	probe := append(recs, timeline.Record{TsMs: nowMs, Era: era, Kind: timeline.Trigger, Name: "probe"})
	opts.OwnsRecords = true // the probe is this call's: Compute may redate it in place
	res := figures.Compute(probe, era, opts)
	if len(res.Events) == 0 {
		return false, last
	}
	ev := res.Events[len(res.Events)-1]
	return ev.Figures.TimeToStableMs == 0 && ev.End == figures.EndOfRun, last
}

// drain waits until every produced record has been delivered, or timeout. Each poll reads only the
// records that came since the last one (a timeline of millions of records is not copied ten times a
// second).
func (r *eraRunner) drain(ctx context.Context, timeout time.Duration) bool {
	var d drainCount
	every100ms := poll.Backoff{First: 100 * time.Millisecond, Max: 100 * time.Millisecond}
	err := every100ms.Until(ctx, max(timeout, time.Nanosecond), "every produced record delivered", func() bool {
		mark := r.col.Mark()
		d.add(r.col.Since(d.mark))
		d.mark = mark
		return d.undelivered() == 0
	})
	if err != nil {
		r.stepf("drain incomplete: %d produced records not delivered", d.undelivered())
		return false
	}
	return true
}

// drainCount follows which produced records were delivered, a batch of records at a time.
type drainCount struct {
	mark      int // Collector position read up to
	produced  map[drainKey]bool
	delivered map[drainKey]bool
}

type drainKey struct {
	topic string
	p     int32
	off   int64
}

func (d *drainCount) add(recs []timeline.Record) {
	if d.produced == nil {
		d.produced, d.delivered = map[drainKey]bool{}, map[drainKey]bool{}
	}
	for _, rec := range recs {
		if rec.Partition == nil || rec.Offset == nil {
			continue
		}
		k := drainKey{rec.Topic, *rec.Partition, *rec.Offset}
		switch rec.Kind {
		case timeline.Produce:
			if !d.delivered[k] {
				d.produced[k] = true
			}
		case timeline.Deliver:
			delete(d.produced, k)
			d.delivered[k] = true
		}
	}
}

// undelivered is the number of produced records no member delivered so far.
func (d *drainCount) undelivered() int { return len(d.produced) }

// watchCheck starts the zk cross-check at the end of the script: the sessions watching the group's
// ids path (wchp) against the live members' current sessions.
func (r *eraRunner) watchCheck(ctx context.Context) *report.ZKCrosscheck {
	c := &report.ZKCrosscheck{IdsPath: "/consumers/" + r.e.Group + "/ids"}
	watchers, err := watchersOf(ctx, r.zkAddrs, c.IdsPath)
	if err != nil {
		c.Notes = append(c.Notes, err.Error())
		return c
	}
	c.IdsWatchersServer = len(watchers)
	r.mu.Lock()
	live := map[string]*member{}
	var names []string
	for name, m := range r.members {
		if !m.isEnded() {
			names = append(names, name)
			live[name] = m
		}
	}
	r.mu.Unlock() // a member process answers zkSession over its pipe: not under the lock
	sort.Strings(names)
	for _, name := range names {
		c.IdsWatchersExpected++
		if sid := live[name].rt.ZKSession(); sid == 0 || !watchers[sid] {
			c.MembersWithoutWatch = append(c.MembersWithoutWatch, name)
		}
	}
	return c
}
