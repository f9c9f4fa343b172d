package main

// The command tree as built by the constructors (newRootCmd): trees independent of each other, every
// command's --help as before the constructors (testdata/help), and the flags → options conversions of
// scenario run and bench storm on real argument lists. Fast: nothing starts, nothing connects.

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/benchmark"
	"github.com/rebalancelab/rebalancelab/scenarios"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// subcommand is the command at path under root (path []: root itself); the test fails without one.
func subcommand(t *testing.T, root *cobra.Command, path ...string) *cobra.Command {
	t.Helper()
	c := root
	for _, name := range path {
		i := slices.IndexFunc(c.Commands(), func(s *cobra.Command) bool { return s.Name() == name })
		if i < 0 {
			t.Fatalf("no command %q under %q", name, c.CommandPath())
		}
		c = c.Commands()[i]
	}
	return c
}

// TestNewRootCmdTreesAreIndependent: two trees built by newRootCmd share no command and no flag: flags
// given to one tree (a --help run parses them) leave the other's at their defaults.
func TestNewRootCmdTreesAreIndependent(t *testing.T) {
	a, b := newRootCmd(), newRootCmd()
	var out bytes.Buffer
	a.SetOut(&out)
	a.SetArgs([]string{"scenario", "run", "--seed", "7", "--consumers", "4,8", "--log-level", "debug", "--help"})
	if err := a.Execute(); err != nil {
		t.Fatalf("scenario run --help: %v", err)
	}
	a.SetArgs([]string{"bench", "storm", "--deadline", "9s", "--era", "zk", "--help"})
	if err := a.Execute(); err != nil {
		t.Fatalf("bench storm --help: %v", err)
	}
	for _, c := range []struct {
		path       []string
		flag       string
		inA, inB   string
		persistent bool
	}{
		{[]string{"scenario", "run"}, "seed", "7", "1", false},
		{[]string{"scenario", "run"}, "consumers", "4,8", "", false},
		{[]string{"scenario", "run"}, "log-level", "debug", "info", true},
		{[]string{"bench", "storm"}, "deadline", "9s", benchmark.DefaultStormDeadline.String(), false},
		{[]string{"bench", "storm"}, "era", "[zk]", "[all]", false},
	} {
		for _, tree := range []struct {
			root *cobra.Command
			want string
		}{{a, c.inA}, {b, c.inB}} {
			cmd := subcommand(t, tree.root, c.path...)
			fl := cmd.Flags().Lookup(c.flag)
			if c.persistent {
				fl = tree.root.PersistentFlags().Lookup(c.flag)
			}
			if got := fl.Value.String(); got != tree.want {
				t.Errorf("%s --%s: %q, want %q", cmd.CommandPath(), c.flag, got, tree.want)
			}
		}
	}
	for _, path := range [][]string{{}, {"scenario"}, {"scenario", "run"}, {"bench", "storm"}, {"topic", "create"}} {
		if ca, cb := subcommand(t, a, path...), subcommand(t, b, path...); ca == cb || ca.Flags() == cb.Flags() {
			t.Errorf("%q: both trees hold the same command or flag set", path)
		}
	}
}

// updateHelp rewrites testdata/help from the commands (after a deliberate change of the CLI contract).
var updateHelp = flag.Bool("update-help", false, "TestHelpUnchanged: rewrite testdata/help/*.txt from the commands' --help")

// TestHelpUnchanged: every command's --help (hidden ones, help and completion included) is the one
// testdata/help holds, first written by the binary before the commands were built by constructors:
// same commands, flags, defaults and texts. testdata/help/rebalancelab_scenario_run.txt is
// `rebalancelab scenario run --help`. A deliberate change of a flag or help text rewrites them:
// go test ./cmd/rebalancelab/ -run TestHelpUnchanged -update-help (then review the diff).
func TestHelpUnchanged(t *testing.T) {
	root := newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetArgs([]string{"--help"}) // Execute adds the help and completion commands
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var paths []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		paths = append(paths, c.CommandPath())
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if *updateHelp {
		old, _ := filepath.Glob("testdata/help/*.txt")
		for _, g := range old {
			if err := os.Remove(g); err != nil {
				t.Fatal(err)
			}
		}
		for _, path := range paths {
			root := newRootCmd()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetArgs(append(strings.Fields(path)[1:], "--help"))
			if err := root.Execute(); err != nil {
				t.Fatalf("%s --help: %v", path, err)
			}
			if err := os.WriteFile(filepath.Join("testdata/help", strings.ReplaceAll(path, " ", "_")+".txt"), out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	golden, err := filepath.Glob("testdata/help/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, g := range golden {
		want = append(want, strings.ReplaceAll(strings.TrimSuffix(filepath.Base(g), ".txt"), "_", " "))
	}
	slices.Sort(paths)
	slices.Sort(want)
	if !slices.Equal(paths, want) {
		t.Errorf("commands:\n%s\nwant (testdata/help):\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
	for _, path := range want {
		wantHelp, err := os.ReadFile(filepath.Join("testdata/help", strings.ReplaceAll(path, " ", "_")+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append(strings.Fields(path)[1:], "--help"))
		if err := root.Execute(); err != nil {
			t.Errorf("%s --help: %v", path, err)
		}
		if out.String() != string(wantHelp) {
			t.Errorf("%s --help:\n%s\nwant (testdata/help):\n%s", path, out.String(), wantHelp)
		}
	}
}

// executeIn runs argv (from the root: "scenario", "run", ...) on a tree built by newRootCmd whose
// command at path is replaced by cmd, with run as cmd's RunE: the root's persistent flags, cmd's
// argument check and PreRunE (--broker) run as in the binary, then run instead of the command's work.
func executeIn(t *testing.T, path []string, cmd *cobra.Command, run func(*cobra.Command, []string) error, argv ...string) error {
	t.Helper()
	root := newRootCmd()
	parent := subcommand(t, root, path[:len(path)-1]...)
	parent.RemoveCommand(subcommand(t, parent, path[len(path)-1]))
	cmd.RunE = run
	parent.AddCommand(cmd)
	root.SetArgs(argv)
	root.SetOut(&bytes.Buffer{})
	return root.Execute()
}

// keepLogLevel restores logrus' level after the test (--log-level sets it).
func keepLogLevel(t *testing.T) {
	lvl := logrus.GetLevel()
	t.Cleanup(func() { logrus.SetLevel(lvl) })
}

// scenarioRunOf converts argv as `scenario run` does; progress is the command's stderr.
func scenarioRunOf(t *testing.T, progress *bytes.Buffer, argv ...string) (*scenarioRun, error) {
	t.Helper()
	f := new(scenarioRunFlags)
	cmd := f.command()
	cmd.SetErr(progress)
	var r *scenarioRun
	err := executeIn(t, []string{"scenario", "run"}, cmd, func(cmd *cobra.Command, args []string) error {
		var err error
		r, err = f.options(cmd, args)
		return err
	}, append([]string{"scenario", "run"}, argv...)...)
	return r, err
}

// TestScenarioRunOptions: `scenario run`'s flags converted into the run's options, field by field: one
// run, a sweep, a comparison of brokers (a scenario that needs test hosts: members as processes), and
// connect-workers; and each refusal's exact error.
func TestScenarioRunOptions(t *testing.T) {
	keepLogLevel(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var progress bytes.Buffer
	// base is the options every run below shares unless it says otherwise.
	base := func(o scenarios.Options) scenarios.Options {
		o.Version, o.Progress, o.MemberBinary = version, &progress, exe
		if o.Broker == "" {
			o.Broker = "rebalancelab"
		}
		if o.Members == "" {
			o.Members = "rebalancelab"
		}
		if o.ZKConfig == nil {
			o.ZKConfig = map[string]string{}
		}
		if o.Eras == nil {
			o.Eras = []string{"all"}
		}
		return o
	}
	for _, c := range []struct {
		name string
		argv []string
		want scenarioRun
	}{
		{"one run", []string{"herd-join", "--era", "zk,classic", "--consumers", "8", "--seed", "3", "--partitions", "16",
			"--json", filepath.Join(dir, "out.json"), "--zk-config", "offsets.storage=kafka", "--down-ms", "500"},
			scenarioRun{name: "herd-join", brokers: []string{"rebalancelab"}, members: []string{"rebalancelab"},
				jsonFile: filepath.Join(dir, "out.json"),
				run: base(scenarios.Options{Scenario: "herd-join", Eras: []string{"zk", "classic"},
					Params:   spec.Params{Consumers: 8, Partitions: 16, Seed: 3, DownMs: 500},
					ZKConfig: map[string]string{"offsets.storage": "kafka"}, OutputDir: dir})}},
		{"sweep", []string{"herd-join", "--consumers", "4,16", "--repeat", "3", "--deadline", "2m", "--partitions-per-member", "2",
			"--broker-config", "message.max.bytes=8388608", "--report", filepath.Join(dir, "report"), "--kafka-defaults", "--until-crossover"},
			scenarioRun{name: "herd-join", brokers: []string{"rebalancelab"}, members: []string{"rebalancelab"},
				reportDir: filepath.Join(dir, "report"),
				run: base(scenarios.Options{Scenario: "herd-join", Params: spec.Params{Consumers: 4, Seed: 1},
					KafkaDefaults: true, BrokerConfig: map[string]string{"message.max.bytes": "8388608"}, ReportDir: filepath.Join(dir, "report")}),
				sweep: &scenarios.SweepOptions{Sizes: []int{4, 16}, Repeat: 3, Deadline: 2 * time.Minute, UntilCrossover: true, PartitionsPerMember: 2,
					Options: base(scenarios.Options{Scenario: "herd-join", Params: spec.Params{Consumers: 4, Seed: 1},
						KafkaDefaults: true, BrokerConfig: map[string]string{"message.max.bytes": "8388608"}})}}},
		{"brokers compared, test hosts", []string{"host-link-down", "--broker", "rebalancelab,kafka", "--json", filepath.Join(dir, "r.json")},
			scenarioRun{name: "host-link-down", brokers: []string{"rebalancelab", "kafka"}, members: []string{"rebalancelab"},
				jsonFile: filepath.Join(dir, "r.json"),
				run: base(scenarios.Options{Scenario: "host-link-down", Broker: "rebalancelab,kafka", Params: spec.Params{Seed: 1},
					MembersAs: scenarios.MembersAsProcesses, OutputDir: dir})}},
		{"connect-workers", []string{"connect-workers", "--connect-protocol", "eager", "--json", "c.json"},
			scenarioRun{name: "connect-workers", connect: true, connectProtocols: []string{"eager"}, jsonFile: "c.json"}},
	} {
		progress.Reset()
		r, err := scenarioRunOf(t, &progress, c.argv...)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		for _, o := range []*scenarios.Options{&r.run, sweepOptions(r.sweep)} {
			if o != nil && o.Log != nil && o.Log.Logger == logrus.StandardLogger() {
				o.Log = nil // the runner's log: logrus' standard logger
			} else if o != nil && !c.want.connect {
				t.Errorf("%s: Log %v, want an entry of logrus' standard logger", c.name, o.Log)
			}
		}
		if !reflect.DeepEqual(*r, c.want) {
			t.Errorf("%s: %s\n got %+v\nwant %+v", c.name, strings.Join(c.argv, " "), *r, c.want)
		}
	}

	r, err := scenarioRunOf(t, &progress, "host-link-down", "--broker", "rebalancelab,kafka", "--json", filepath.Join(dir, "r.json"), "--report", "R")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.compared(), []comparedRun{{"rebalancelab", "rebalancelab", "rebalancelab"}, {"kafka", "rebalancelab", "kafka"}}; !slices.Equal(got, want) {
		t.Errorf("compared brokers: %v, want %v", got, want)
	}
	if o := r.optionsFor("kafka", "rebalancelab", "d/kafka/r.json", ""); o.Broker != "kafka" || o.ReportDir != "" || o.OutputDir != "d/kafka" {
		t.Errorf("optionsFor kafka: Broker %q ReportDir %q OutputDir %q, want kafka, \"\", d/kafka", o.Broker, o.ReportDir, o.OutputDir)
	}
	r, err = scenarioRunOf(t, &progress, "herd-join", "--members", "rebalancelab,mixed", "--log-level", "debug")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.compared(), []comparedRun{{"rebalancelab", "rebalancelab", "members-rebalancelab"}, {"rebalancelab", "mixed", "members-mixed"}}; !slices.Equal(got, want) {
		t.Errorf("compared members: %v, want %v", got, want)
	}
	if r.run.LabLog == nil {
		t.Errorf("--log-level debug: no LabLog")
	}

	for argv, want := range map[string]string{
		"herd-join --consumers 4,x":                                   `--consumers: "x" is not a member count >= 1`,
		"herd-join --consumers 4,16 --repeat 101":                     "--repeat 101: want 1..100",
		"herd-join --repeat 2":                                        "--plot and --repeat sweep sizes: give them with --consumers N1,N2,...",
		"herd-join --members-as threads":                              `--members-as "threads": want goroutines or processes`,
		"herd-join --members-per-process 4 --members-as goroutines":   "--members-per-process 4: members run as processes then, not as goroutines",
		"herd-join --members-per-process -1":                          "--members-per-process -1: want 0 or more (0 or 1: one member per process)",
		"herd-join --keep":                                            "--keep: only with --bootstrap (a lab's topics and groups go with the lab)",
		"herd-join --bootstrap h:9092 --broker kafka":                 "--broker: the lab's broker implementation; with --bootstrap the cluster's brokers run",
		"herd-join --broker zookeeper":                                `--broker "zookeeper": want one of rebalancelab, kafka, or several of them comma-separated, each once`,
		"herd-join --members java":                                    `--members "java": want rebalancelab, kafka, mixed (or a comma-separated list)`,
		"herd-join --zk-config offsets.storage":                       `--zk-config "offsets.storage": want key=value`,
		"herd-join --broker-config =1":                                `--broker-config "=1": want KEY=VALUE (e.g. message.max.bytes=8388608)`,
		"herd-join --broker rebalancelab,kafka --members kafka,mixed": "--broker rebalancelab,kafka --members kafka,mixed: compare brokers or members, one list at a time",
		"herd-join --broker rebalancelab,kafka --consumers 4,8":       "--broker rebalancelab,kafka --members rebalancelab: a sweep runs on one broker and one kind of member at a time",
		"connect-workers --seed 2 --era zk":                           "connect-workers takes only --connect-protocol and --json (its workers, layouts and lab are its own): --era, --seed given",
		"--consumers 4":                                               "scenario run: give a scenario NAME (scenario list) or --script FILE",
		"herd-join --steps " + filepath.Join(dir, "none"):             "--steps: open " + filepath.Join(dir, "none") + ": no such file or directory",
	} {
		if _, err := scenarioRunOf(t, &progress, strings.Fields(argv)...); err == nil || err.Error() != want {
			t.Errorf("scenario run %s: error %v, want %q", argv, err, want)
		}
	}
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"herd-join", "--era", ""}, `--era "": an empty era name: want zk, classic, cooperative, static, or all (comma-separated or repeated)`},
		{[]string{"herd-join", "--era="}, `--era "": an empty era name: want zk, classic, cooperative, static, or all (comma-separated or repeated)`},
		{[]string{"herd-join", "--era", "zk,"}, `--era "zk,": an empty era name: want zk, classic, cooperative, static, or all (comma-separated or repeated)`},
		{[]string{"herd-join", "--era", "zk", "--era", " "}, `--era "zk, ": an empty era name: want zk, classic, cooperative, static, or all (comma-separated or repeated)`},
	} {
		if _, err := scenarioRunOf(t, &progress, c.argv...); err == nil || err.Error() != c.want {
			t.Errorf("scenario run %q: error %v, want %q", c.argv, err, c.want)
		}
	}
}

// sweepOptions is &s.Options, nil for no sweep.
func sweepOptions(s *scenarios.SweepOptions) *scenarios.Options {
	if s == nil {
		return nil
	}
	return &s.Options
}

// stormOptionsOf converts argv as `bench storm` does; the command's stderr is progress.
func stormOptionsOf(t *testing.T, progress *bytes.Buffer, argv ...string) (benchmark.StormOptions, error) {
	t.Helper()
	f := new(benchStormFlags)
	cmd := f.command()
	cmd.SetErr(progress)
	var o benchmark.StormOptions
	err := executeIn(t, []string{"bench", "storm"}, cmd, func(cmd *cobra.Command, _ []string) error {
		var err error
		o, err = f.options(cmd)
		return err
	}, append([]string{"bench", "storm"}, argv...)...)
	return o, err
}

// TestBenchStormOptions: `bench storm`'s flags converted into the storm's options, field by field
// (defaults; a local lab's settings; an existing cluster with member pools; debug logs), and each
// refusal's exact error.
func TestBenchStormOptions(t *testing.T) {
	keepLogLevel(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	for _, c := range []struct {
		name string
		argv []string
		want benchmark.StormOptions
	}{
		{"defaults", nil, benchmark.StormOptions{Eras: []string{"all"}, Consumers: []int{10, 100, 1000},
			Deadline: benchmark.DefaultStormDeadline, Seed: 1, Peer: true, Version: version, Broker: "rebalancelab", Brokers: 1}},
		{"a lab", []string{"--era", "zk", "--era", "classic", "--consumers", "10,100", "--partitions", "50", "--deadline", "90s", "--seed", "4",
			"--no-peer", "--max-rss", "16GiB", "--brokers", "3", "--replication-factor", "1", "--broker-config", "message.max.bytes=8388608",
			"--broker", "kafka", "--kafka-defaults"},
			benchmark.StormOptions{Eras: []string{"zk", "classic"}, Consumers: []int{10, 100}, Partitions: 50, Deadline: 90 * time.Second,
				Seed: 4, Peer: false, Version: version, Broker: "kafka", KafkaDefaults: true, Brokers: 3, ReplicationFactor: 1,
				BrokerConfig: map[string]string{"message.max.bytes": "8388608"}, MaxRSS: 16 << 30}},
		{"an existing cluster, member pools", []string{"--consumers", "1000", "--bootstrap", "h:9092", "--zk", "z:2181", "--keep",
			"--max-rss", "none", "--members-per-process", "64"},
			benchmark.StormOptions{Eras: []string{"all"}, Consumers: []int{1000}, Deadline: benchmark.DefaultStormDeadline, Seed: 1, Peer: true,
				Version: version, Broker: "rebalancelab", Bootstrap: "h:9092", ExternalZK: "z:2181", Keep: true, Brokers: 1,
				MaxRSS: -1, MembersPerProcess: 64, MemberBinary: exe}},
		{"debug logs", []string{"--consumers", "2", "--max-rss", "1.5", "--log-level", "debug"},
			benchmark.StormOptions{Eras: []string{"all"}, Consumers: []int{2}, Deadline: benchmark.DefaultStormDeadline, Seed: 1, Peer: true,
				Version: version, Broker: "rebalancelab", Brokers: 1, MaxRSS: 3 << 29, RunnerProgress: &progress,
				LabLog: logrus.NewEntry(logrus.StandardLogger())}},
	} {
		logrus.SetLevel(logrus.InfoLevel)
		got, err := stormOptionsOf(t, &progress, c.argv...)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: bench storm %s\n got %+v\nwant %+v", c.name, strings.Join(c.argv, " "), got, c.want)
		}
	}

	for argv, want := range map[string]string{
		"--deadline 0s":                     "--deadline 0s: want a positive duration (e.g. 120s)",
		"--deadline -5s":                    "--deadline -5s: want a positive duration (e.g. 120s)",
		"--max-rss 0":                       `--max-rss "0": want GiB (e.g. 16 or 16GiB), auto (3/4 of the machine's memory) or none`,
		"--max-rss 16GB":                    `--max-rss "16GB": want GiB (e.g. 16 or 16GiB), auto (3/4 of the machine's memory) or none`,
		"--zk z:2181":                       "--zk: with --bootstrap (the existing cluster's ZooKeeper); bench storm starts its own lab otherwise",
		"--consumers 10,10":                 "--consumers: 10 is given twice",
		"--consumers 0":                     `--consumers: "0" is not a member count >= 1`,
		"--keep":                            "--keep: only with --bootstrap (a lab's topics and groups go with the lab)",
		"--bootstrap h:9092 --broker kafka": "--broker: the lab's broker implementation; with --bootstrap the cluster's brokers run",
		"--broker rebalancelab,kafka":       `--broker "rebalancelab,kafka": want one of rebalancelab, kafka`,
		"--broker-config max":               `--broker-config "max": want KEY=VALUE (e.g. message.max.bytes=8388608)`,
		"--log-level loud":                  `--log-level: not a valid logrus Level: "loud"`,
	} {
		if _, err := stormOptionsOf(t, &progress, strings.Fields(argv)...); err == nil || err.Error() != want {
			t.Errorf("bench storm %s: error %v, want %q", argv, err, want)
		}
	}
	if _, err := stormOptionsOf(t, &progress, "--era", ""); err == nil || err.Error() != `--era "": an empty era name: want zk, classic, cooperative, static, or all (comma-separated or repeated)` {
		t.Errorf("bench storm --era '': error %v", err)
	}
}
