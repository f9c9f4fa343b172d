package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rebalancelab/rebalancelab/scenarios"
	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/connect"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// newScenarioCmd builds `scenario` and its subcommands: list, run (this file) and show
// (scenario_script.go).
func newScenarioCmd() *cobra.Command {
	scenarioCmd := &cobra.Command{Use: "scenario", Short: "Scripted comparisons of the eras: herd effect, crashes, split brain, restarts, storms"}
	scenarioCmd.AddCommand(newScenarioListCmd(), newScenarioRunCmd(), newScenarioShowCmd())
	return scenarioCmd
}

// newScenarioListCmd builds `scenario list`: the catalogue, as lines or as JSON (--json).
func newScenarioListCmd() *cobra.Command {
	var listJSON bool
	list := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the scenarios, one line each (--json: with each one's small size and what it needs)",
		Long: `Lists the scenarios of the catalogue, one line each, then connect-workers. --json writes a JSON list
instead, one object per scenario: name, description, its default size, its small size (the one its test
runs and make kafka-scenarios runs: consumers, partitions, test hosts), its ZooKeeper nodes and brokers,
the test hosts it needs (network namespaces: root and iproute2), whether its members are Kafka Streams
instances, the eras it does not apply to, and "driver": true for connect-workers, a driver scenario
without a script (its phases are fixed, its sizes are its own and 0 here; make connect-workers runs it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if listJSON {
				return writeCatalogJSON(cmd.OutOrStdout())
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, s := range catalog.Catalog() {
				fmt.Fprintf(w, "%s\t%s\n", s.Name, s.Description)
			}
			fmt.Fprintf(w, "%s\t%s\n", connect.Scenario, connect.ScenarioDescription)
			return w.Flush()
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "a JSON list: each scenario's name, description, default and small sizes, ZooKeeper nodes, brokers, test hosts needed, kind")
	return list
}

// scenarioRunFlags are `scenario run`'s flags, as given; options converts them into the runs.
type scenarioRunFlags struct {
	script, steps                 string // --script FILE (a scenario file), --steps FILE (JSON lines of steps)
	eras                          []string
	consumers                     string // --consumers: N, or sizes N1,N2,... to sweep ("": the scenario's)
	partitions                    int
	seed, downMs                  int64
	hosts                         int
	jsonFile, reportDir, plotFile string // "": not written
	zk                            string
	zkConfig                      []string // --zk-config k=v (repeatable)
	kafkaDefaults                 bool
	brokerConfig                  []string // --broker-config KEY=VALUE (repeatable)
	broker, members               string   // one implementation, or a comma-separated list to compare
	membersAs                     string
	membersPerProcess             int
	memberHosts                   []string
	bootstrap                     string
	keep                          bool
	repeat                        int // sweep: runs per size
	deadline, budget              time.Duration
	untilCrossover                bool
	partitionsPerMember           int
	eraMaxN                       map[string]int
	connectProtocols              []string
}

// scenarioRun is a `scenario run` command line converted (scenarioRunFlags.options): connect-workers'
// runs, a sweep, one run, or a comparison of brokers or of members (one run each).
type scenarioRun struct {
	name string // the scenario: NAME, or the one --script's file defines
	// connect: NAME is connect-workers, run once per Connect protocol in connectProtocols (runConnect);
	// nothing but jsonFile is set then.
	connect          bool
	connectProtocols []string
	// run: the run's options; a comparison runs them once per broker or kind of member (compared).
	run scenarios.Options
	// sweep is set for a sweep (--consumers N1,N2,..., --plot, --repeat...): it runs instead of run.
	sweep *scenarios.SweepOptions
	// brokers and members: --broker and --members split; more than one in one of them is a comparison.
	brokers, members              []string
	jsonFile, reportDir, plotFile string
}

// options converts the flags and NAME (args) into the runs (cmd: the command they were parsed by, for
// which flags were given; its stderr gets the runs' progress). Files are read here: --script's
// scenario file and --steps's steps. Errors, in this order: NAME and --script both or neither, a
// scenario file that cannot be read or is malformed (FILE:LINE: field X: ...); --script with --steps;
// connect-workers with any flag but --connect-protocol and --json; a negative --members-per-process;
// --members-per-process or --member-hosts with --members-as goroutines; a --members-as other than
// goroutines or processes; --keep without --bootstrap, --broker with it; a --consumers list that is
// no member counts >= 1 or repeats one; a --zk-config that is no key=value or repeats a key; a --steps
// file that cannot be read or holds no step; a scenario file whose script does not check at a size; a
// --broker-config without '='; an unknown --members; lists of brokers and of members together; a sweep
// on several brokers or members, with --repeat outside 1..100, or without sizes.
func (f *scenarioRunFlags) options(cmd *cobra.Command, args []string) (*scenarioRun, error) {
	name, sf, err := scenarioTarget("run", args, f.script)
	if err != nil {
		return nil, err
	}
	if sf != nil && f.steps != "" {
		return nil, fmt.Errorf("--script %s and --steps %s: a scenario file has its own steps; --steps replays steps on a catalogue scenario NAME", f.script, f.steps)
	}
	if name == connect.Scenario {
		var other []string // connect-workers runs Connect workers on a lab of its own: nothing else applies
		cmd.Flags().Visit(func(fl *pflag.Flag) {
			if fl.Name != "connect-protocol" && fl.Name != "json" {
				other = append(other, "--"+fl.Name)
			}
		})
		if len(other) > 0 {
			return nil, fmt.Errorf("%s takes only --connect-protocol and --json (its workers, layouts and lab are its own): %s given", name, strings.Join(other, ", "))
		}
		return &scenarioRun{name: name, connect: true, connectProtocols: f.connectProtocols, jsonFile: f.jsonFile}, nil
	}
	membersAs := f.membersAs
	if !cmd.Flags().Changed("members-as") {
		needs := f.hosts > 0
		if sf != nil {
			needs = needs || sf.Scenario.Defaults.Hosts > 0
		} else if sc, err := catalog.Lookup(name); err == nil && sc.Defaults.Hosts > 0 {
			needs = true
		}
		if needs { // members run inside their test hosts, as processes
			membersAs = scenarios.MembersAsProcesses
		} else { // goroutines, or member pools above scenarios.MaxInProcessMembers (PoolMembers)
			membersAs = ""
		}
	}
	if err := checkEraFlag(cmd, f.eras); err != nil {
		return nil, err
	}
	if f.membersPerProcess < 0 {
		return nil, fmt.Errorf("--members-per-process %d: want 0 or more (0 or 1: one member per process)", f.membersPerProcess)
	}
	if f.membersPerProcess > 1 || len(f.memberHosts) > 0 {
		if cmd.Flags().Changed("members-as") && membersAs != scenarios.MembersAsProcesses {
			return nil, fmt.Errorf("--members-per-process %d: members run as processes then, not as %s", f.membersPerProcess, membersAs)
		}
		membersAs = scenarios.MembersAsProcesses
	}
	// This binary runs member processes (--members-as processes) and the broker processes of
	// scenarios that kill brokers with SIGKILL.
	memberBin, binErr := os.Executable()
	switch membersAs {
	case scenarios.MembersAsGoroutines, "": // "": pools above 200 members use memberBin
	case scenarios.MembersAsProcesses:
		if binErr != nil {
			return nil, fmt.Errorf("--members-as processes: this binary's path: %w", binErr)
		}
	default:
		return nil, fmt.Errorf("--members-as %q: want goroutines or processes", membersAs)
	}
	if err := checkExternalFlags(cmd, f.bootstrap, f.keep); err != nil {
		return nil, err
	}
	sizes := []int{0} // 0: the scenario's default
	if f.consumers != "" {
		if sizes, err = parseSizes("--consumers", f.consumers); err != nil {
			return nil, err
		}
	}
	zkConfig, err := parseConfigs("zk-config", f.zkConfig)
	if err != nil {
		return nil, err
	}
	var definition *catalog.Scenario
	if f.steps != "" {
		if definition, err = scriptDefinition(name, f.steps); err != nil {
			return nil, err
		}
	}
	params := spec.Params{Consumers: sizes[0], Partitions: f.partitions, Seed: f.seed, DownMs: f.downMs, Hosts: f.hosts}
	if sf != nil {
		definition = sf.Scenario
		for _, n := range sizes { // the file's script at every size, before anything starts
			p := params
			p.Consumers = n
			if err := sf.Check(p); err != nil {
				return nil, fmt.Errorf("--script %s: %w", f.script, err)
			}
		}
	}
	brokerConfig, err := parseBrokerConfig(f.brokerConfig)
	if err != nil {
		return nil, err
	}
	r := &scenarioRun{name: name, brokers: strings.Split(f.broker, ","), members: strings.Split(f.members, ","),
		jsonFile: f.jsonFile, reportDir: f.reportDir, plotFile: f.plotFile}
	for _, m := range r.members {
		if !slices.Contains(scenarios.MemberImplementations, m) {
			return nil, fmt.Errorf("--members %q: want %s (or a comma-separated list)", m, strings.Join(scenarios.MemberImplementations, ", "))
		}
	}
	if len(r.brokers) > 1 && len(r.members) > 1 {
		return nil, fmt.Errorf("--broker %s --members %s: compare brokers or members, one list at a time", f.broker, f.members)
	}
	r.run = scenarios.Options{BrokerConfig: brokerConfig,
		Scenario: name, Eras: f.eras, KafkaDefaults: f.kafkaDefaults, ExternalZK: f.zk, ZKConfig: zkConfig,
		MembersAs: membersAs, MembersPerProcess: f.membersPerProcess, MemberHosts: f.memberHosts, MemberBinary: memberBin,
		Bootstrap: f.bootstrap, Keep: f.keep, Params: params, Version: version, Progress: cmd.ErrOrStderr(),
		Definition: definition, Log: logrus.NewEntry(logrus.StandardLogger()),
	}
	if logrus.GetLevel() >= logrus.DebugLevel {
		r.run.LabLog = logrus.NewEntry(logrus.StandardLogger())
	}
	if len(sizes) > 1 || f.plotFile != "" || f.repeat > 1 || f.partitionsPerMember > 0 || len(f.eraMaxN) > 0 {
		if len(r.brokers) > 1 || len(r.members) > 1 {
			return nil, fmt.Errorf("--broker %s --members %s: a sweep runs on one broker and one kind of member at a time", f.broker, f.members)
		}
		if f.repeat < 1 || f.repeat > 100 {
			return nil, fmt.Errorf("--repeat %d: want 1..100", f.repeat)
		}
		if sizes[0] == 0 {
			return nil, fmt.Errorf("--plot and --repeat sweep sizes: give them with --consumers N1,N2,...")
		}
		// A sweep keeps its timelines in memory: no report or timeline directory.
		r.sweep = &scenarios.SweepOptions{Options: r.optionsFor(f.broker, f.members, "", ""), Sizes: sizes,
			Repeat: f.repeat, Deadline: f.deadline, Budget: f.budget, UntilCrossover: f.untilCrossover,
			PartitionsPerMember: f.partitionsPerMember, EraMaxN: f.eraMaxN}
	}
	r.run = r.optionsFor(f.broker, f.members, f.jsonFile, f.reportDir)
	return r, nil
}

// optionsFor is r.run on broker with members (one implementation each), writing the report to
// reportDir ("": none) and, without one, the timelines next to jsonFile ("": in memory).
func (r *scenarioRun) optionsFor(broker, members, jsonFile, reportDir string) scenarios.Options {
	o := r.run
	o.Broker, o.Members, o.ReportDir, o.OutputDir = broker, members, reportDir, ""
	if jsonFile != "" && reportDir == "" {
		o.OutputDir = filepath.Dir(jsonFile) // the JSON names the timeline files next to it
	}
	return o
}

// comparedRun is one run of a comparison: a broker (dir: the broker) or a kind of member (dir:
// members-<kind>); its JSON and report go to <--json's dir>/<dir>/<--json's name> and <--report>/<dir>.
type comparedRun struct{ broker, members, dir string }

// compared lists a comparison's runs: one per --broker, or one per --members.
func (r *scenarioRun) compared() []comparedRun {
	var runs []comparedRun
	if len(r.members) > 1 {
		for _, m := range r.members {
			runs = append(runs, comparedRun{r.run.Broker, m, "members-" + m})
		}
		return runs
	}
	for _, b := range r.brokers {
		runs = append(runs, comparedRun{b, r.run.Members, b})
	}
	return runs
}

// newScenarioRunCmd builds `scenario run`: a scenario on one or more eras, the figures side by side.
func newScenarioRunCmd() *cobra.Command { return new(scenarioRunFlags).command() }

// command builds `scenario run` with its flags bound to f (newScenarioRunCmd; the tests parse argument
// lists with it and read f back).
func (f *scenarioRunFlags) command() *cobra.Command {
	run := &cobra.Command{
		Use:   "run NAME|--script FILE [--steps FILE] [--era all] [--broker rebalancelab|kafka|rebalancelab,kafka] [--consumers N|N1,N2,...] [--partitions P] [--json FILE] [--report DIR] [--plot FILE.svg] [--seed S] [--zk ADDRS] [--zk-config k=v ...] [--members-as goroutines|processes] [--hosts N] [--bootstrap ADDRS [--keep]]",
		Short: "Run a scenario on one or more eras and print the figures side by side",
		Long: `Starts a lab (a real ZooKeeper — three nodes for zk-quorum-loss — and one broker), then for each era a
topic, a producer (one record every 20 ms, acks=all) and the scenario's members, running as goroutines of
this process (or as processes: --members-as), each behind its own fault proxies. The scripted events are fixed by --seed. At the end the
producer stops, the members deliver what was produced and stop gracefully, and the figures are computed
from the timeline. The table goes to stdout with the relations the scenario expects (ok/FAIL); progress
goes to stderr. --zk-config k=v gives every zk-era member a Kafka 0.8.2 consumer property (e.g.
offsets.storage=kafka, dual.commit.enabled=false), checked before anything starts. --json writes the
result JSON, --report DIR an HTML page with the timelines beside it.
--broker kafka runs it on a real Kafka 3.9 broker; --broker rebalancelab,kafka runs it on each in turn
and then prints one table of both, "a / b" where a figure differs (--json FILE and --report DIR then get
one result per broker: <FILE's dir>/<broker>/FILE, DIR/<broker>).
--members-as processes runs each member as a process of its own (this binary's hidden "member"
command): a crash is a real kill -9, a restart a new process; the JSON says how each process ended.
--hosts N runs on N test hosts, Linux network namespaces on a bridge in a private 10.213.X.0/24 (root and
iproute2 needed; the run fails naming the reason when namespaces cannot be made): ZooKeeper and the broker
on h1, the members as processes (implied) round-robin over h1..hN; scripts can take a host's link down and
partition two hosts; the table and JSON give each host's measured clock offset. host-link-down needs
hosts (3 by default).
--bootstrap B runs on that existing cluster instead of a lab (--zk Z: its ZooKeeper, which the zk era
needs; the cluster must be in ZooKeeper mode): topics and groups rebalancelab.<run id>.<scenario>.<era>,
removed after each era (group, topic, /consumers/<group>) unless --keep; scenarios that stop ZooKeeper
nodes or brokers are refused.
A run passes only when it earned its result: exit status 1 when it recorded an error (a fault that could
not be injected: a ZooKeeper node or broker already down, a link that does not exist, a crash of a member
that is not running; a member that could not start; a broker step that failed), when a relation does not
hold, or when a scripted fault left no fault record showing it took effect (the relation "faults: every
scripted fault took effect", checked on every era). The table and JSON are written first; the table ends
with "result: PASS" or "result: FAIL" and the counts of relations held, failed and skipped, and the JSON
says "passed", why not ("failures") and the same counts ("relation_counts"). A skipped relation (a figure
not measured with these members or this broker) is neither held nor failed.
--script FILE runs the scenario a scenario file defines (YAML or JSON: its defaults, eras, steps and
relations; docs/reference/scenarios.md "Scenario files") instead of a catalogue scenario: no NAME then
(giving both is an error). The file is checked before anything starts, and a malformed one is refused
with its line and field (FILE:LINE: field X: what is wrong). Every other flag works as with a NAME.
--steps FILE runs the scenario NAME's members and relations on the steps of FILE instead of its script:
JSON lines, one step each, as FormatScript (and scenario show) writes them and the result JSON's
"script" holds.

With a list of sizes (--consumers 4,16,64,256) the scenario runs at each size (--repeat times, medians
reported with their min–max), every era on the same axes: a table of the measured event's figures
against N, the zk era's ZooKeeper reads fitted to a·N² + b·N + c over five sizes or more (else the
log-log slopes between consecutive sizes), the measured counts beside the models' (0.8.2's connector
counted read by read, the coordinator protocols' group requests) with their residuals, and last the verdict: per figure
which era ranks best at each N, ties (overlapping min–max ranges), crossovers as intervals of N or "no
crossover in N=a..b", what each era wins and loses. --plot FILE.svg the log-log plots, --json FILE the
single-size results as a list under "runs" and the verdict under "verdict", --report DIR the HTML page
of the largest size's run with the verdict and the plots (DIR/sweep.svg) at its top. A size that does
not finish within --deadline stops the sweep and says why (one broker at a time). The eras' order
rotates between the runs of a size (each era first in turn); --partitions-per-member K gives each size
N a topic of K·N partitions; --era-max-consumers era=N cuts an era above N. Every timing in the verdict
names the timings it ran with (the lab's short sessions, or Kafka's defaults with --kafka-defaults).
Above 200 members (--members-as not given) the members run in member pools of 64, as --members-per-process 64.

connect-workers runs real Kafka Connect 3.9 workers (interop/connect-3.9, from make deps) on a lab with the
rebalancelab broker, once per --connect-protocol (sessioned, eager): the four layouts, then a worker
killed with -9; the table shows each worker's connectors and tasks per generation (the coordinator's
group observer), task downtime per worker, rebalances, records produced and consumed, the relations.
Of the flags above only --json applies (a list of the runs).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.options(cmd, args)
			if err != nil {
				return err
			}
			return runScenario(cmd, r)
		},
	}
	fs := run.Flags()
	fs.StringSliceVar(&f.connectProtocols, "connect-protocol", []string{connect.Sessioned, connect.Eager},
		"connect-workers: the Connect protocols to run (connect.protocol: sessioned, eager)")
	fs.StringVar(&f.script, "script", "", "run the scenario FILE defines (YAML or JSON; docs/reference/scenarios.md \"Scenario files\") instead of a catalogue NAME")
	fs.StringVar(&f.steps, "steps", "", "run NAME on these steps (JSON lines, a step each, as the result JSON's script and scenario show print) instead of its script")
	fs.StringSliceVar(&f.eras, "era", []string{"all"}, "eras to run: zk, classic, cooperative, static, or all (comma-separated or repeated)")
	fs.StringVar(&f.consumers, "consumers", "", "members N, or a comma-separated list of sizes to sweep (default: the scenario's)")
	fs.IntVar(&f.partitions, "partitions", 0, "partitions P of the topic (0: the scenario's default)")
	fs.StringVar(&f.jsonFile, "json", "", "write the result JSON to FILE (timelines next to it unless --report)")
	fs.StringVar(&f.reportDir, "report", "", "write DIR/index.html and DIR/timeline-<era>.jsonl (a sweep: the largest size's run, with DIR/sweep.svg embedded)")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the scripted events (same seed, same script)")
	fs.StringVar(&f.zk, "zk", "", "use this running ZooKeeper (host:port,...) instead of starting one; with --bootstrap, the cluster's ZooKeeper (the zk era needs it)")
	addExternalFlags(run, &f.bootstrap, &f.keep)
	fs.BoolVar(&f.kafkaDefaults, "kafka-defaults", false, "Kafka's own timing (45 s sessions...) instead of the lab's short settings")
	fs.StringArrayVar(&f.brokerConfig, "broker-config", nil, "KEY=VALUE server.properties setting for the lab's brokers over the lab's own (repeatable), e.g. zookeeper.session.timeout.ms=18000 (Kafka's default) so that the brokers' own ZooKeeper sessions outlive a zk-era herd of hundreds of members")
	fs.StringArrayVar(&f.zkConfig, "zk-config", nil, "Kafka 0.8.2 consumer property key=value for every zk-era member (repeatable), e.g. offsets.storage=kafka")
	addBrokerListFlag(run, &f.broker)
	fs.StringVar(&f.members, "members", scenarios.MembersRebalancelab, "the members: rebalancelab (ours: newconsumer, zkconsumer), kafka (Kafka 3.9's VerifiableConsumer JVMs in the coordinator eras, the real 0.8.2.2 ZookeeperConsumerConnector in the zk era), mixed (one group of both: m1, m3... ours, m2, m4... Kafka's), or a comma-separated list to run each and compare")
	fs.IntVar(&f.membersPerProcess, "members-per-process", 0, "with --members-as processes: members per process (0 or 1: one; with --member-hosts 0 spreads the consumers evenly over them; K above 1: K members share a rebalancelab member-pool process, its file descriptors and runtime; a crash then cuts the member's links at this process's proxies and stops its consumer, as for goroutine members, not a kill -9)")
	fs.StringSliceVar(&f.memberHosts, "member-hosts", nil, "HOST:PORT,... of 'rebalancelab member-pool --listen' on other machines: the members run there in pools (--members-per-process, default the consumers spread evenly), each host's clock offset measured at the start; the brokers and ZooKeeper must be reachable from them (e.g. --bootstrap and --zk of a cluster both reach); no crash or link-fault scripts")
	fs.StringVar(&f.membersAs, "members-as", scenarios.MembersAsGoroutines, `how members run: "goroutines" of this process, or "processes": one rebalancelab process per member (a crash is a kill -9, a restart a new process); not given, above 200 members they run in member pools of 64 (--members-per-process)`)
	fs.IntVar(&f.hosts, "hosts", 0, "run on N test hosts (network namespaces): ZooKeeper and the broker on h1, members as processes round-robin over h1..hN (0: the scenario's default, none for most)")
	fs.StringVar(&f.plotFile, "plot", "", "sweep: write the log-log plots of the figures against N to FILE.svg")
	fs.IntVar(&f.repeat, "repeat", 1, "sweep: runs per size (medians are reported)")
	fs.DurationVar(&f.deadline, "deadline", 10*time.Minute, "sweep: bound on each run; a size that does not finish stops the sweep")
	fs.DurationVar(&f.budget, "budget", 0, "sweep: no size, and no repeat of a size, starts after this much time (0: no bound; a size cut so reports its runs)")
	fs.IntVar(&f.partitionsPerMember, "partitions-per-member", 0, "sweep: a topic of K·N partitions at each size N (at least --partitions), so that a join moves partitions at every N (2: P = 2·N)")
	fs.StringToIntVar(&f.eraMaxN, "era-max-consumers", nil, "sweep: era=N,...: the largest N an era runs at (sizes above it run without it, its cells \"cut\")")
	fs.BoolVar(&f.untilCrossover, "until-crossover", false, "sweep: stop after the first size where every coordinator era stabilises faster than the zk era")
	fs.Int64Var(&f.downMs, "down-ms", 0, "how long a restarted member stays down, in ms (rolling-restart, static-member-bounce; 0: half the session timeout)")

	return run
}

// runScenario performs the runs r names: connect-workers' (runConnect), a sweep (runSweep), one run,
// or a comparison (each run's table, then the table of all of them). Its error is the CLI's exit
// status 1: a run that failed to run or did not pass.
func runScenario(cmd *cobra.Command, r *scenarioRun) error {
	switch {
	case r.connect:
		return runConnect(cmd, r.connectProtocols, r.jsonFile)
	case r.sweep != nil:
		return runSweep(cmd, *r.sweep, r.jsonFile, r.plotFile, r.reportDir)
	case len(r.brokers) == 1 && len(r.members) == 1:
		res, err := runScenarioOnce(cmd, r.name, r.run, r.jsonFile)
		if err != nil {
			return err
		}
		return failed(r.name, res)
	}
	var runs []*scenarios.RunResult
	for _, c := range r.compared() {
		jf, rd := r.jsonFile, r.reportDir
		if jf != "" { // DIR/<broker>/FILE, its timelines beside it
			jf = filepath.Join(filepath.Dir(jf), c.dir, filepath.Base(jf))
			if err := os.MkdirAll(filepath.Dir(jf), 0o755); err != nil {
				return err
			}
		}
		if rd != "" {
			rd = filepath.Join(rd, c.dir)
		}
		res, err := runScenarioOnce(cmd, r.name, r.optionsFor(c.broker, c.members, jf, rd), jf)
		if err != nil {
			return err
		}
		runs = append(runs, res)
		fmt.Fprintln(cmd.OutOrStdout())
	}
	if err := report.RenderBrokerComparison(cmd.OutOrStdout(), runs...); err != nil {
		return err
	}
	var errs []error
	for _, res := range runs {
		if err := failed(r.name+" on "+res.Broker+" (members "+res.Members+")", res); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// runScenarioOnce runs the scenario name with o and writes its table (stdout) and JSON (jsonFile, ""
// for none), also when the run was interrupted after an era ran. Its error is the run's (a run that
// did not pass is no error here: failed says so).
func runScenarioOnce(cmd *cobra.Command, name string, o scenarios.Options, jsonFile string) (*scenarios.RunResult, error) {
	res, err := scenarios.Run(cmd.Context(), o)
	if res != nil && len(res.Eras) > 0 && (err == nil || cmd.Context().Err() != nil) {
		if werr := res.WriteTable(cmd.OutOrStdout()); werr != nil {
			return res, werr
		}
		if jsonFile != "" {
			f, ferr := os.Create(jsonFile)
			if ferr != nil {
				return res, ferr
			}
			if werr := res.WriteJSON(f); werr != nil {
				f.Close()
				return res, werr
			}
			if cerr := f.Close(); cerr != nil {
				return res, cerr
			}
		}
	}
	if err != nil && cmd.Context().Err() != nil {
		return res, fmt.Errorf("scenario %s: interrupted: %w", name, err)
	}
	if err != nil {
		return res, fmt.Errorf("scenario %s: %w", name, err)
	}
	if o.ReportDir != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "report: %s\n", filepath.Join(o.ReportDir, "index.html"))
	}
	return res, nil
}

// runSweep runs a sweep and writes its table (stdout), JSON, plot and report (the plot embedded in the
// page of the largest size's run).
func runSweep(cmd *cobra.Command, o scenarios.SweepOptions, jsonFile, plotFile, reportDir string) error {
	o.ReportDir, o.OutputDir = "", "" // a sweep keeps its timelines in memory
	res, err := scenarios.RunSweep(cmd.Context(), o)
	if res == nil {
		return err
	}
	if werr := res.WriteTable(cmd.OutOrStdout()); werr != nil {
		return werr
	}
	for name, write := range map[string]func(f *os.File) error{
		jsonFile: func(f *os.File) error { return res.WriteJSON(f) },
		plotFile: func(f *os.File) error { return res.WriteSVG(f) },
	} {
		if name == "" {
			continue
		}
		f, ferr := os.Create(name)
		if ferr != nil {
			return ferr
		}
		if werr := write(f); werr != nil {
			f.Close()
			return werr
		}
		if cerr := f.Close(); cerr != nil {
			return cerr
		}
	}
	if reportDir != "" {
		if rerr := res.WriteReport(reportDir); rerr != nil {
			return rerr
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "report: %s (the sweep plot embedded: %s)\n", filepath.Join(reportDir, "index.html"),
			filepath.Join(reportDir, report.SweepPlotFile))
	}
	if err != nil {
		return fmt.Errorf("scenario %s: %w", o.Scenario, err)
	}
	// A size's run that recorded an error (a fault that could not be injected, a member that could not
	// start) fails the sweep, after its figures were written: its figures are in the medians. (A sweep
	// measures figures against N; its relations, sized for the scenario's small runs, do not fail it.)
	var errs []error
	for _, z := range res.Sizes {
		for i, r := range z.Runs {
			for _, e := range r.Eras {
				for _, msg := range e.Errors {
					fmt.Fprintf(cmd.OutOrStdout(), "FAIL N=%d run %d: %s: error: %s\n", z.N, i+1, e.Era, msg)
					errs = append(errs, fmt.Errorf("scenario %s N=%d run %d failed: %s: error: %s", o.Scenario, z.N, i+1, e.Era, msg))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// failed is nil when res passed (scenarios.RunResult.Passed), else an error naming what failed: the
// errors the run recorded and the relations that did not hold (the CLI's exit status 1).
func failed(what string, res *scenarios.RunResult) error {
	if res.Passed() {
		return nil
	}
	f := res.Failures()
	const show = 5
	more := ""
	if len(f) > show {
		f, more = f[:show], fmt.Sprintf("; and %d more", len(f)-show)
	}
	return fmt.Errorf("scenario %s failed: %s%s", what, strings.Join(f, "; "), more)
}

// scriptDefinition is the scenario name with its script replaced by the steps in file (JSON lines, as
// spec.FormatScript writes them). Errors: an unknown scenario, an unreadable file, a line that is
// no step or names no action, no step at all.
func scriptDefinition(name, file string) (*catalog.Scenario, error) {
	sc, err := catalog.Lookup(name)
	if err != nil {
		return nil, err
	}
	if sc.Streams != nil {
		return nil, fmt.Errorf("--steps: %s's members are Kafka Streams instances; its script is its own", name)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("--steps: %w", err)
	}
	defer f.Close()
	steps, err := readSteps(f)
	if err != nil {
		return nil, fmt.Errorf("--steps %s: %w", file, err)
	}
	def := *sc
	def.Script = func(spec.Params, spec.Timing, *rand.Rand) []spec.Step {
		return append([]spec.Step(nil), steps...)
	}
	return &def, nil
}

// readSteps reads JSON lines of spec.Step (blank lines skipped).
func readSteps(r io.Reader) ([]spec.Step, error) {
	var steps []spec.Step
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var st spec.Step
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil {
			if len(steps) == 0 && (strings.HasPrefix(line, "#") || strings.HasPrefix(line, "name:") || strings.HasPrefix(line, "---")) {
				return nil, fmt.Errorf("line %d: %w (this looks like a scenario file: run it with --script FILE; --steps reads JSON lines, one step each)", n, err)
			}
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if st.Action == "" {
			return nil, fmt.Errorf("line %d: no action", n)
		}
		if !st.Action.Known() {
			return nil, fmt.Errorf("line %d: unknown action %q (actions: %s)", n, st.Action, strings.Join(spec.Actions(), ", "))
		}
		steps = append(steps, st)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		return nil, errors.New("no step")
	}
	return steps, nil
}

// catalogEntry is one scenario of `scenario list --json`.
type catalogEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Defaults: the size a run takes without --consumers/--partitions; Small: the one its test and
	// make kafka-scenarios run (catalog.Scenario.Small).
	Defaults      spec.Params         `json:"defaults"`
	Small         spec.Params         `json:"small"`
	ZKNodes       int                 `json:"zookeeper_nodes"`
	Brokers       int                 `json:"brokers"`
	Hosts         int                 `json:"hosts"`   // test hosts it needs (network namespaces: root, iproute2); 0: none
	Streams       bool                `json:"streams"` // its members are Kafka Streams instances (one "streams" era)
	NotApplicable map[spec.Era]string `json:"not_applicable,omitempty"`
	// Driver: a scenario without a script (connect-workers: its phases are fixed in Go, its lab and
	// sizes its own, Defaults and Small zero); scenario show has no script to print for it.
	Driver bool `json:"driver"`
}

func writeCatalogJSON(w io.Writer) error {
	var out []catalogEntry
	for _, s := range catalog.Catalog() {
		out = append(out, catalogEntry{Name: s.Name, Description: s.Description, Defaults: s.Defaults, Small: s.Small,
			ZKNodes: s.ZKNodes, Brokers: max(1, s.Brokers), Hosts: max(s.MinHosts, s.Defaults.Hosts), Streams: s.Streams != nil,
			NotApplicable: s.NotApplicable})
	}
	out = append(out, catalogEntry{Name: connect.Scenario, Description: connect.ScenarioDescription, Driver: true})
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// checkEraFlag refuses an --era given empty (--era ”, which pflag reads as no eras and the runner
// would take for every era) or with an empty name in its list (--era zk,): "--era "zk,": an empty era
// name: want ...".
func checkEraFlag(cmd *cobra.Command, eras []string) error {
	if !cmd.Flags().Changed("era") {
		return nil
	}
	if len(eras) == 0 || slices.ContainsFunc(eras, func(e string) bool { return strings.TrimSpace(e) == "" }) {
		return fmt.Errorf("--era %q: an empty era name: want zk, classic, cooperative, static, or all (comma-separated or repeated)", strings.Join(eras, ","))
	}
	return nil
}
