package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/rebalancelab/rebalancelab/benchmark"
	"github.com/rebalancelab/rebalancelab/lab"
)

// throughputTarget is one broker the throughput bench measures.
type throughputTarget struct{ name, bootstrap string }

// benchThroughputFlags are `bench throughput`'s flags, as given; check converts and checks them.
type benchThroughputFlags struct {
	jsonFile, history string        // "": not written
	sizes             string        // --sizes: record value sizes in bytes, comma-separated
	window, warmup    time.Duration // --duration of each produce and fetch window; --warmup
	partitions        int32
	runs              int
	brokers           string // --broker: the implementations, comma-separated
	markdown          bool
	rf                int16 // --replication-factor, and brokers per target
}

// check converts --sizes into the record sizes (bytes) and checks the other flags. Errors: a size
// that is no positive byte count; --runs below 1; a --duration under 100ms; a negative --warmup; a
// --replication-factor outside 1..5.
func (f *benchThroughputFlags) check() (recSizes []int, err error) {
	for _, s := range strings.Split(f.sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--sizes: %q is not a positive byte count", s)
		}
		recSizes = append(recSizes, n)
	}
	if f.runs < 1 {
		return nil, fmt.Errorf("--runs must be at least 1")
	}
	if f.window < 100*time.Millisecond {
		return nil, fmt.Errorf("--duration %v: a window must last at least 100ms (a few seconds to measure a rate)", f.window)
	}
	if f.warmup < 0 {
		return nil, fmt.Errorf("--warmup %v: must not be negative", f.warmup)
	}
	if f.rf < 1 || f.rf > 5 {
		return nil, fmt.Errorf("--replication-factor %d: must be 1 to 5 (the labs get that many brokers)", f.rf)
	}
	return recSizes, nil
}

// newBenchThroughputCmd builds `bench throughput`: produce and fetch rates of this broker and its peers.
func newBenchThroughputCmd() *cobra.Command {
	var f benchThroughputFlags
	throughput := &cobra.Command{
		Use:   "throughput",
		Short: "Produce and fetch MB/s and records/s: this broker, Kafka 3.9 and franz-go's kfake, same client, same run",
		Long: `Starts one lab per --broker implementation (real ZooKeeper + one broker: this project's, and real
Kafka 3.9 from ` + "`make deps`" + ` with the lab's reduced heap and threads) and a kfake cluster with a data dir
(all write segments through the page cache, no fsync: Kafka's default log.flush.interval.messages).
With --replication-factor N each lab and kfake have N brokers and the topic N replicas (acks=all then
waits for the followers of this broker and of Kafka; kfake accepts the factor but keeps one copy, so
it is no replication peer). Per record size and target, one franz-go producer (uncompressed random
records, acks=all) and one direct consumer are started first and warmed up for --warmup (producing,
then fetching; discarded). Then --runs windows per target: each window produces for --duration and
then fetches for --duration (from where the last fetch stopped, reading the topic again from offset 0
when it reaches the end), the order of the targets rotating from window to window. Every fetched
record is checked (its partition's next offset, its size) and at the end every partition's end offset
is checked against the acknowledged records. The table gives each figure's median over the windows
with its min-max, the ratios of rebalancelab's medians to each peer's (above 1: rebalancelab is
faster), and under it the settings of every target (Kafka's heap and threads beside its defaults),
the machine and its load average. With --history FILE each invocation appends the medians, spreads
and settings to FILE (commit, machine, peer versions); none by default.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			recSizes, err := f.check()
			if err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "rebalancelab-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)

			loadBefore := benchmark.LoadAverage()
			var targets []throughputTarget
			peers := map[string]string{}
			settings := map[string]string{}
			for _, impl := range strings.Split(f.brokers, ",") {
				l, err := lab.Start(ctx, lab.Options{Brokers: int(f.rf), Dir: filepath.Join(dir, "lab-"+impl), Broker: impl})
				if err != nil {
					return err
				}
				defer l.Close()
				targets = append(targets, throughputTarget{impl, l.Bootstrap()})
				props := l.Brokers()[0].Properties()
				if impl == lab.BrokerKafka {
					peers["kafka"] = l.KafkaVersion()
					settings["kafka"] = lab.KafkaSettingsSummary(props)
				} else {
					settings[impl] = benchmark.RebalancelabSettings(props, true)
				}
			}
			fake, err := kfake.NewCluster(kfake.NumBrokers(int(f.rf)), kfake.DataDir(filepath.Join(dir, "kfake")))
			if err != nil {
				return fmt.Errorf("kfake: %w", err)
			}
			defer fake.Close()
			targets = append(targets, throughputTarget{"kfake", strings.Join(fake.ListenAddrs(), ",")})
			peers["kfake"] = benchmark.ModuleVersion("github.com/twmb/franz-go/pkg/kfake")
			peers["franz-go (client)"] = benchmark.ModuleVersion("github.com/twmb/franz-go")
			settings["kfake"] = benchmark.KfakeSettings(int(f.rf), true)

			var results []benchmark.ThroughputResult
			for _, size := range recSizes {
				rs, err := throughputSize(cmd, targets, size, f.partitions, f.rf, f.runs, f.window, f.warmup)
				if err != nil {
					return err
				}
				results = append(results, rs...)
			}
			summary := benchmark.SummarizeThroughput(results)
			params := map[string]any{"sizes": recSizes, "window_s": f.window.Seconds(), "warmup_s": f.warmup.Seconds(),
				"partitions": f.partitions, "runs": f.runs, "brokers": f.brokers, "replication_factor": f.rf}
			conditions := map[string]string{"loadavg_before": loadBefore, "loadavg_after": benchmark.LoadAverage()}
			if err := benchmark.WriteThroughputTable(os.Stdout, summary, f.markdown); err != nil {
				return err
			}
			fmt.Printf("medians of %d windows of %v (produce, then fetch) per target after %v of discarded warm-up; replication factor %d on %d broker(s) per target; ratios of medians (above 1: rebalancelab is faster)\n",
				f.runs, f.window, f.warmup, f.rf, f.rf)
			benchmark.WriteConditions(os.Stdout, f.markdown, benchmark.ThisMachine(), peers, settings, conditions)
			if f.history != "" {
				e := benchmark.HistoryEntry{Bench: "throughput", Time: time.Now().UTC(), Commit: version,
					Machine: benchmark.ThisMachine(), Peers: peers, Params: params, Medians: throughputMedians(summary),
					Spreads: throughputSpreads(summary), Settings: settings, Conditions: conditions}
				if err := benchmark.AppendHistory(f.history, e); err != nil {
					fmt.Fprintf(os.Stderr, "history not appended: %v (--history FILE)\n", err)
				} else {
					fmt.Fprintf(os.Stderr, "medians appended to %s\n", f.history)
				}
			}
			if f.jsonFile != "" {
				b, _ := json.MarshalIndent(map[string]any{"params": params, "peers": peers, "settings": settings,
					"machine": benchmark.ThisMachine(), "conditions": conditions, "summary": summary, "runs": results}, "", "  ")
				return os.WriteFile(f.jsonFile, append(b, '\n'), 0o644)
			}
			return nil
		},
	}
	throughput.Flags().StringVar(&f.jsonFile, "json", "", "also write the results as JSON to this file")
	throughput.Flags().StringVar(&f.history, "history", "", "append the medians as one JSON line to this file (the repository's: benchmark/history.jsonl; default none)")
	throughput.Flags().StringVar(&f.sizes, "sizes", "1024,100", "record value sizes in bytes, comma-separated")
	throughput.Flags().DurationVar(&f.window, "duration", 3*time.Second, "length of each produce window and of each fetch window")
	throughput.Flags().IntVar(&f.runs, "runs", 5, "measured windows per size and target (medians are reported, with the min-max spread)")
	throughput.Flags().DurationVar(&f.warmup, "warmup", 3*time.Second, "per size and target, produce and then fetch for this long, discarded, before the first window (clients started, JIT and page cache warm)")
	throughput.Flags().BoolVar(&f.markdown, "markdown", false, "print the table as Markdown (docs/reference/performance.md's)")
	addBrokerListFlag(throughput, &f.brokers)
	throughput.Flags().Lookup("broker").DefValue = lab.BrokerRebalancelab + "," + lab.BrokerKafka
	_ = throughput.Flags().Set("broker", lab.BrokerRebalancelab+","+lab.BrokerKafka)
	throughput.Flags().Int32Var(&f.partitions, "partitions", 6, "partitions of the benchmark topic")
	throughput.Flags().Int16Var(&f.rf, "replication-factor", 1, "replicas of the benchmark topic, and brokers per target (1 to 5)")
	return throughput
}

// throughputSize measures one record size on every target: the topic created (and its replicas in
// sync), each target's clients opened and warmed for warmup, then runs windows of d per target in
// rotating order, every target's records verified, the clients closed and the topic deleted (its
// disk freed before the next size).
func throughputSize(cmd *cobra.Command, targets []throughputTarget, size int, partitions int32, rf int16, runs int, d, warmup time.Duration) ([]benchmark.ThroughputResult, error) {
	ctx := cmd.Context()
	topic := fmt.Sprintf("bench-%d", size)
	clients := make([]*benchmark.ThroughputClients, len(targets))
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i, tg := range targets {
		if err := createTopicRF(cmd, tg.bootstrap, topic, partitions, rf); err != nil {
			return nil, fmt.Errorf("%s: %w", tg.name, err)
		}
		if rf > 1 && tg.name != "kfake" {
			if err := waitFullISR(cmd, tg.bootstrap, topic, int(rf)); err != nil {
				return nil, fmt.Errorf("%s: %w", tg.name, err)
			}
		}
		c, err := benchmark.OpenThroughput(tg.name, tg.bootstrap, benchmark.ThroughputOptions{Topic: topic, Partitions: partitions, RecordBytes: size})
		if err != nil {
			return nil, err
		}
		clients[i] = c
		if warmup > 0 {
			logrus.WithField("target", tg.name).Infof("throughput warm-up: %d-byte records, produce then fetch for %v each (discarded)", size, warmup)
			if _, err := c.Window(ctx, -1, warmup); err != nil {
				return nil, fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	var results []benchmark.ThroughputResult
	for w := 0; w < runs; w++ {
		for k := range targets {
			// Rotate which target goes first: a later one runs on a warmer page cache.
			i := (k + w) % len(targets)
			logrus.WithField("target", targets[i].name).Infof("throughput window %d/%d: %d-byte records, produce then fetch for %v each", w+1, runs, size, d)
			r, err := clients[i].Window(ctx, w, d)
			if err != nil {
				return nil, err
			}
			results = append(results, r)
		}
	}
	for i, c := range clients {
		if err := c.Verify(ctx); err != nil {
			return nil, err
		}
		c.Close()
		clients[i] = nil
		if err := deleteTopic(cmd, targets[i].bootstrap, topic); err != nil {
			return nil, fmt.Errorf("%s: %w", targets[i].name, err)
		}
	}
	return results, nil
}

// throughputMedians flattens a summary into history figures: "<size>/<target>/<figure>" → median.
func throughputMedians(sum []benchmark.ThroughputSummary) map[string]float64 {
	out := map[string]float64{}
	for _, r := range sum {
		k := fmt.Sprintf("%d/%s/", r.RecordBytes, r.Target)
		out[k+"produce_mb_per_s"] = r.ProduceMBps.Median
		out[k+"produce_records_per_s"] = r.ProduceRecordsPerS.Median
		out[k+"fetch_mb_per_s"] = r.FetchMBps.Median
		out[k+"fetch_records_per_s"] = r.FetchRecordsPerS.Median
	}
	return out
}

// throughputSpreads flattens a summary's min-max into history spreads, keyed as throughputMedians.
func throughputSpreads(sum []benchmark.ThroughputSummary) map[string]benchmark.Spread {
	out := map[string]benchmark.Spread{}
	for _, r := range sum {
		k := fmt.Sprintf("%d/%s/", r.RecordBytes, r.Target)
		out[k+"produce_mb_per_s"] = r.ProduceMBps
		out[k+"produce_records_per_s"] = r.ProduceRecordsPerS
		out[k+"fetch_mb_per_s"] = r.FetchMBps
		out[k+"fetch_records_per_s"] = r.FetchRecordsPerS
	}
	return out
}
