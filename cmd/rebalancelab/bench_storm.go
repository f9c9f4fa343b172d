package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/benchmark"
)

// benchStormFlags are `bench storm`'s flags, as given; options converts them into the storm's options.
type benchStormFlags struct {
	eras                   []string
	consumers              string // --consumers: the member counts N, comma-separated
	partitions             int
	jsonFile, plotFile     string // "": not written
	history                string // "": not appended
	deadline               time.Duration
	seed                   int64
	noPeer                 bool
	markdown               bool
	broker                 string // --broker: the lab's broker implementation
	bootstrap, zk          string // an existing cluster and its ZooKeeper instead of a lab
	keep                   bool
	kafkaDefaults          bool
	brokerConfig           []string // --broker-config KEY=VALUE (repeatable)
	cpuProfile, memProfile string
	brokers                int
	membersPerProcess      int
	maxRSS                 string // --max-rss: GiB, "auto" or "none"
	rf                     int
}

// options converts the flags into the storm's options (cmd: the command they were parsed by, for
// which flags were given and where runner progress goes). Progress and OnCell are left to the caller,
// which owns the progress bar and the cells file. Errors, in this order: a --consumers list that is no
// member counts >= 1 or repeats one; --keep without --bootstrap, --broker with it; --zk without
// --bootstrap; a --deadline not positive; a --broker-config without '='; a --max-rss that is no
// positive GiB, auto or none; this binary's path unknown with --members-per-process above 1.
func (f *benchStormFlags) options(cmd *cobra.Command) (benchmark.StormOptions, error) {
	ns, err := parseSizes("--consumers", f.consumers)
	if err != nil {
		return benchmark.StormOptions{}, err
	}
	if err := checkExternalFlags(cmd, f.bootstrap, f.keep); err != nil {
		return benchmark.StormOptions{}, err
	}
	if f.zk != "" && f.bootstrap == "" {
		return benchmark.StormOptions{}, fmt.Errorf("--zk: with --bootstrap (the existing cluster's ZooKeeper); bench storm starts its own lab otherwise")
	}
	if err := checkEraFlag(cmd, f.eras); err != nil {
		return benchmark.StormOptions{}, err
	}
	if f.deadline <= 0 {
		return benchmark.StormOptions{}, fmt.Errorf("--deadline %s: want a positive duration (e.g. 120s)", f.deadline)
	}
	bc, err := parseBrokerConfig(f.brokerConfig)
	if err != nil {
		return benchmark.StormOptions{}, err
	}
	o := benchmark.StormOptions{Eras: f.eras, Consumers: ns, Partitions: f.partitions, Deadline: f.deadline,
		Seed: f.seed, Peer: !f.noPeer, Version: version, Broker: f.broker,
		Bootstrap: f.bootstrap, ExternalZK: f.zk, Keep: f.keep, KafkaDefaults: f.kafkaDefaults, BrokerConfig: bc,
		Brokers: f.brokers, MembersPerProcess: f.membersPerProcess, ReplicationFactor: f.rf}
	switch f.maxRSS {
	case "", "auto":
	case "none":
		o.MaxRSS = -1
	default:
		gib, perr := strconv.ParseFloat(strings.TrimSuffix(f.maxRSS, "GiB"), 64)
		if perr != nil || gib <= 0 {
			return benchmark.StormOptions{}, fmt.Errorf("--max-rss %q: want GiB (e.g. 16 or 16GiB), auto (3/4 of the machine's memory) or none", f.maxRSS)
		}
		o.MaxRSS = int64(gib * (1 << 30))
	}
	if f.membersPerProcess > 1 {
		if o.MemberBinary, err = os.Executable(); err != nil {
			return benchmark.StormOptions{}, fmt.Errorf("--members-per-process: this binary's path: %w", err)
		}
	}
	if logrus.GetLevel() >= logrus.DebugLevel {
		o.LabLog = logrus.NewEntry(logrus.StandardLogger())
		o.RunnerProgress = cmd.ErrOrStderr()
	}
	return o, nil
}

// newBenchStormCmd builds `bench storm`: rebalance storms per era and N, beside franz-go's kgo.
func newBenchStormCmd() *cobra.Command { return new(benchStormFlags).command() }

// command builds `bench storm` with its flags bound to f (newBenchStormCmd; the tests parse argument
// lists with it and read f back).
func (f *benchStormFlags) command() *cobra.Command {
	storm := &cobra.Command{
		Use:   "storm [--era all] [--consumers 10,100,1000] [--partitions P] [--json FILE] [--plot FILE.svg]",
		Short: "Rebalance storms per era and N: N start at once, one joins, one leaves; beside franz-go's kgo",
		Long: `For each N (smallest first) and era, starts a lab (real ZooKeeper, one broker), a topic of P partitions
(default N) and a producer, then measures three cells on one group, with the lab's short timings:
  storm  N members start at once, until the group is stable;
  join   one member joins the stable group of N;
  leave  one of the N members leaves (the group had N+1).
Each cell gets docs/design.md's figures from its timeline window plus peak_rss_bytes and goroutines_peak
(sampled in this process, which runs the members, the broker and the proxies; not the ZooKeeper JVM)
and cpu_ms (getrusage). A cell must be stable within --deadline; one that is not (or whose steps block:
ZooKeeper refusing sessions, file descriptors) records where and why it stopped in stopped_reason, and
the cells after it in that (era, N) are not run. In classic and cooperative, N franz-go kgo members run
the same storm first on the same broker (K to a member-pool --client kgo process with
--members-per-process K); both groups' time to stable is measured from the broker
(DescribeGroups until Stable with N members and every partition assigned once), with the ratio.
In the zk era the join cell checks zk_watch_events >= N against the server's own watch count (mntr)
and wchp. The table goes to stdout, a progress bar to stderr. Exit status 1 when a check fails.
--bootstrap B [--zk Z] runs every cell on that existing cluster instead of a lab (see scenario run;
peak_rss_bytes and cpu_ms then cover the members and proxies only).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd)
			if err != nil {
				return err
			}
			if f.cpuProfile != "" {
				pf, err := os.Create(f.cpuProfile)
				if err != nil {
					return err
				}
				defer pf.Close()
				if err := pprof.StartCPUProfile(pf); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			if f.memProfile != "" {
				pctx, stopProfile := context.WithCancel(cmd.Context())
				wait := benchmark.PeakHeapProfile(pctx, f.memProfile, time.Second)
				defer func() {
					stopProfile()
					if perr := wait(); perr != nil {
						fmt.Fprintln(cmd.ErrOrStderr(), "bench storm:", perr)
					}
				}()
			}
			if f.jsonFile != "" { // FILE.cells.jsonl: each cell as it ends (a killed run keeps them)
				partial, err := os.Create(f.jsonFile + ".cells.jsonl")
				if err != nil {
					return err
				}
				defer partial.Close()
				var mu sync.Mutex
				o.OnCell = func(c *benchmark.StormCell) {
					mu.Lock()
					defer mu.Unlock()
					if b, err := json.Marshal(c); err == nil {
						partial.Write(append(b, '\n'))
						partial.Sync()
					}
				}
			}
			bar := newProgressBar(cmd.ErrOrStderr()) // after the last return before bar.stop
			o.Progress = bar.update
			start := time.Now()
			loadBefore := benchmark.LoadAverage()
			res, err := benchmark.RunStorm(cmd.Context(), o)
			bar.stop()
			if res == nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "bench storm: %d cells in %s\n", len(res.Cells), time.Since(start).Round(time.Second))
			if werr := res.WriteTable(cmd.OutOrStdout(), f.markdown); werr != nil {
				return werr
			}
			if f.jsonFile != "" {
				if werr := writeFileWith(f.jsonFile, res.WriteJSON); werr != nil {
					return werr
				}
			}
			if f.plotFile != "" {
				if werr := writeFileWith(f.plotFile, res.WriteSVG); werr != nil {
					return werr
				}
			}
			// The conditions every ratio is read with: the machine, its load, the versions, the settings.
			e, herr := benchmark.StormHistoryEntry(res, version, map[string]string{"loadavg_before": loadBefore, "loadavg_after": benchmark.LoadAverage()})
			if herr == nil {
				fmt.Fprintln(cmd.OutOrStdout())
				herr = benchmark.WriteConditions(cmd.OutOrStdout(), f.markdown, e.Machine, e.Peers, e.Settings, e.Conditions)
			}
			if herr != nil {
				return herr
			}
			if f.history != "" {
				herr := benchmark.AppendHistory(f.history, e)
				if herr != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "history not appended: %v (--history FILE)\n", herr)
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "bench storm: appended to %s; its tables: rebalancelab bench table --at %s\n", f.history, benchmark.HistoryKey(e))
				}
			}
			if err != nil {
				return fmt.Errorf("bench storm: %w", err)
			}
			for _, c := range res.Cells {
				for _, ch := range c.Checks {
					if !ch.OK {
						return fmt.Errorf("bench storm: a check does not hold (FAIL lines above)")
					}
				}
			}
			return nil
		},
	}
	fs := storm.Flags()
	fs.StringSliceVar(&f.eras, "era", []string{"all"}, "eras: zk, classic, cooperative, static, or all (comma-separated or repeated)")
	fs.StringVar(&f.consumers, "consumers", "10,100,1000", "member counts N, comma-separated")
	fs.StringVar(&f.history, "history", "", "append the run (every cell, as the JSON) as one line to this file, which bench table --at makes the performance tables from (the repository's: benchmark/history.jsonl; default none)")
	fs.IntVar(&f.partitions, "partitions", 0, "partitions P of each run's topic (0: N, one per member, at most 1000; at most 10000)")
	fs.StringVar(&f.jsonFile, "json", "", "write the bench JSON to FILE (and each cell as it ends to FILE.cells.jsonl, kept if the run is killed)")
	fs.StringVar(&f.plotFile, "plot", "", "write a log-log SVG plot to FILE.svg (one line per era per figure)")
	fs.DurationVar(&f.deadline, "deadline", benchmark.DefaultStormDeadline, "per-cell deadline: the group must be stable within it")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the scripted events (start order, who leaves)")
	addBrokerFlag(storm, &f.broker)
	addExternalFlags(storm, &f.bootstrap, &f.keep)
	fs.StringVar(&f.zk, "zk", "", "with --bootstrap: the cluster's ZooKeeper (host:port,...), which the zk era needs (a cluster in ZooKeeper mode)")
	fs.BoolVar(&f.noPeer, "no-peer", false, "skip the franz-go kgo peer storms")
	fs.BoolVar(&f.kafkaDefaults, "kafka-defaults", false, "Kafka's own timing (session.timeout.ms 45000, heartbeat.interval.ms 3000, max.poll.interval.ms 300000; zk era: 0.8.2's zookeeper.session.timeout.ms 6000, rebalance.backoff.ms 2000) instead of the lab's short settings; give --deadline above the 300 s rebalance timeout")
	fs.StringArrayVar(&f.brokerConfig, "broker-config", nil, "KEY=VALUE server.properties setting for the lab's broker (repeatable), e.g. message.max.bytes=8388608 so that a 10,000-member group record fits")
	fs.StringVar(&f.maxRSS, "max-rss", "auto", "bound on the resident memory of this process and its member and broker processes, in GiB: a cell past it stops with the reason (zk era: and the ZooKeeper server's counters) instead of the machine killing the run; auto: 3/4 of MemTotal; none")
	fs.IntVar(&f.brokers, "brokers", 1, "the lab's brokers (1..5); above 1 the topic and __consumer_offsets get replication factor min(3, brokers) and the members' metadata connections spread over them")
	fs.IntVar(&f.rf, "replication-factor", 0, "replication factor of the storm's topic (0: min(3, brokers)); 1 lets 10,000 partitions fit the brokers' descriptors")
	fs.IntVar(&f.membersPerProcess, "members-per-process", 0, "run the members K to a rebalancelab member-pool process, and the brokers as processes (0: every member and the broker in this process); with --brokers 3, how 10,000 members fit under a per-process descriptor limit of 20,000")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (members, broker, runner) to FILE")
	fs.StringVar(&f.memProfile, "memprofile", "", "write a heap profile of this process (the runner: the timeline's records and the figures) to FILE, rewritten each time the live heap grows by a quarter, so that it shows the peak")
	fs.BoolVar(&f.markdown, "markdown", false, "print the tables as Markdown (for the README)")
	return storm
}

// writeFileWith creates path and fills it with write.
func writeFileWith(path string, write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// progressBar draws "[#####.....] 5/24 cells  classic N=100 join  1m02s" on stderr: redrawn in
// place every second on a terminal, one line per cell otherwise.
type progressBar struct {
	w     io.Writer
	tty   bool
	start time.Time
	mu    sync.Mutex
	last  benchmark.StormProgress
	quit  chan struct{}
	done  chan struct{}
}

func newProgressBar(w io.Writer) *progressBar {
	p := &progressBar{w: w, start: time.Now(), quit: make(chan struct{}), done: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-t.C:
				if p.tty {
					p.mu.Lock()
					p.draw()
					p.mu.Unlock()
				}
			}
		}
	}()
	return p
}

func (p *progressBar) update(ev benchmark.StormProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = ev
	if p.tty {
		p.draw()
		return
	}
	fmt.Fprintln(p.w, p.line())
}

func (p *progressBar) line() string {
	ev := p.last
	const width = 30
	filled := 0
	if ev.Total > 0 {
		filled = ev.Done * width / ev.Total
	}
	what := "done"
	if ev.Case != "" {
		what = fmt.Sprintf("%s N=%d %s", ev.Era, ev.N, ev.Case)
		if ev.Note != "" {
			what += " (" + ev.Note + ")"
		}
	}
	return fmt.Sprintf("[%s%s] %d/%d cells  %s  %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		ev.Done, ev.Total, what, time.Since(p.start).Round(time.Second))
}

func (p *progressBar) draw() {
	if p.last.Total == 0 {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s", p.line())
}

func (p *progressBar) stop() {
	close(p.quit)
	<-p.done
	if p.tty {
		fmt.Fprintln(p.w)
	}
}

// parseBrokerConfig reads --broker-config's KEY=VALUE settings (server.properties keys for the lab's
// brokers) into a map; nil when there are none. Errors: a setting without '=' or with an empty key.
func parseBrokerConfig(settings []string) (map[string]string, error) {
	if len(settings) == 0 {
		return nil, nil
	}
	bc := map[string]string{}
	for _, kv := range settings {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--broker-config %q: want KEY=VALUE (e.g. message.max.bytes=8388608)", kv)
		}
		bc[k] = v
	}
	return bc, nil
}
