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

func init() {
	var (
		jsonFile   string
		history    string
		sizes      string
		megabytes  int
		partitions int32
		runs       int
		warmup     int
		brokers    string
		markdown   bool
		rf         int16
	)
	throughput := &cobra.Command{
		Use:   "throughput",
		Short: "Produce and fetch MB/s and records/s: this broker, Kafka 3.9 and franz-go's kfake, same client, same run",
		Long: `Starts one lab per --broker implementation (real ZooKeeper + one broker: this project's, and real
Kafka 3.9 from ` + "`make deps`" + `) and a kfake cluster with a data dir (all write segments through the page
cache, no fsync: Kafka's default log.flush.interval.messages). With --replication-factor N each lab and
kfake have N brokers and the topic N replicas (acks=all then waits for the followers of this broker and
of Kafka; kfake accepts the factor but keeps one copy, so it is no replication peer). One franz-go client produces uncompressed
random records with acks=all, then a direct consumer fetches them all back. Each target first gets
--warmup discarded runs per size (the JVM's JIT, the page cache), then --runs measured ones, the order
of the targets rotating from run to run. The table gives medians with the min-max spread and the ratios
of rebalancelab to each peer (above 1: rebalancelab is faster). Each invocation appends its medians to
--history (commit, machine, peer versions).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var recSizes []int
			for _, s := range strings.Split(sizes, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n <= 0 {
					return fmt.Errorf("--sizes: %q is not a positive byte count", s)
				}
				recSizes = append(recSizes, n)
			}
			if runs < 1 {
				return fmt.Errorf("--runs must be at least 1")
			}
			if warmup < 0 {
				return fmt.Errorf("--warmup must be at least 0")
			}
			if rf < 1 || rf > 5 {
				return fmt.Errorf("--replication-factor %d: must be 1 to 5 (the labs get that many brokers)", rf)
			}
			dir, err := os.MkdirTemp("", "rebalancelab-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)

			var targets []throughputTarget
			peers := map[string]string{}
			for _, impl := range strings.Split(brokers, ",") {
				l, err := lab.Start(ctx, lab.Options{Brokers: int(rf), Dir: filepath.Join(dir, "lab-"+impl), Broker: impl})
				if err != nil {
					return err
				}
				defer l.Close()
				targets = append(targets, throughputTarget{impl, l.Bootstrap()})
				if impl == lab.BrokerKafka {
					peers["kafka"] = l.KafkaVersion()
				}
			}
			fake, err := kfake.NewCluster(kfake.NumBrokers(int(rf)), kfake.DataDir(filepath.Join(dir, "kfake")))
			if err != nil {
				return fmt.Errorf("kfake: %w", err)
			}
			defer fake.Close()
			targets = append(targets, throughputTarget{"kfake", strings.Join(fake.ListenAddrs(), ",")})
			peers["kfake"] = benchmark.ModuleVersion("github.com/twmb/franz-go/pkg/kfake")
			peers["franz-go (client)"] = benchmark.ModuleVersion("github.com/twmb/franz-go")

			var results []benchmark.ThroughputResult
			for _, size := range recSizes {
				records := megabytes * 1_000_000 / size
				for run := -warmup; run < runs; run++ {
					for k := range targets {
						// Rotate which target goes first: a later one runs on a warmer page cache.
						tg := targets[(k+max(run, 0))%len(targets)]
						topic := fmt.Sprintf("bench-%d-%d", size, run+warmup)
						if err := createTopicRF(cmd, tg.bootstrap, topic, partitions, rf); err != nil {
							return fmt.Errorf("%s: %w", tg.name, err)
						}
						if rf > 1 && tg.name != "kfake" {
							if err := waitFullISR(cmd, tg.bootstrap, topic, int(rf)); err != nil {
								return fmt.Errorf("%s: %w", tg.name, err)
							}
						}
						what := fmt.Sprintf("run %d/%d", run+1, runs)
						if run < 0 {
							what = fmt.Sprintf("warm-up %d/%d (discarded)", run+warmup+1, warmup)
						}
						logrus.WithField("target", tg.name).Infof("throughput %s: %d records of %d bytes", what, records, size)
						r, err := benchmark.MeasureThroughput(ctx, tg.name, tg.bootstrap, benchmark.ThroughputOptions{
							Topic: topic, Partitions: partitions, RecordBytes: size, Records: records,
						})
						if err != nil {
							return err
						}
						if run >= 0 {
							results = append(results, r)
						}
					}
				}
			}
			summary := benchmark.SummarizeThroughput(results)
			params := map[string]any{"sizes": recSizes, "megabytes_per_run": megabytes, "partitions": partitions,
				"runs": runs, "warmup_runs": warmup, "brokers": brokers, "replication_factor": rf}
			if err := benchmark.WriteThroughputTable(os.Stdout, summary, markdown); err != nil {
				return err
			}
			fmt.Printf("medians of %d runs each after %d discarded warm-up run(s); replication factor %d on %d broker(s) per target; ratios of medians (above 1: rebalancelab is faster)\n", runs, warmup, rf, rf)
			if history != "" {
				e := benchmark.HistoryEntry{Bench: "throughput", Time: time.Now().UTC(), Commit: version,
					Machine: benchmark.ThisMachine(), Peers: peers, Params: params, Medians: throughputMedians(summary)}
				if err := benchmark.AppendHistory(history, e); err != nil {
					fmt.Fprintf(os.Stderr, "history not appended: %v (--history FILE, or --history '' for none)\n", err)
				} else {
					fmt.Fprintf(os.Stderr, "medians appended to %s\n", history)
				}
			}
			if jsonFile != "" {
				b, _ := json.MarshalIndent(map[string]any{"params": params, "peers": peers, "summary": summary, "runs": results}, "", "  ")
				return os.WriteFile(jsonFile, append(b, '\n'), 0o644)
			}
			return nil
		},
	}
	throughput.Flags().StringVar(&jsonFile, "json", "", "also write the results as JSON to this file")
	throughput.Flags().StringVar(&history, "history", "benchmark/history.jsonl", "append the medians as one JSON line to this file ('' for none)")
	throughput.Flags().StringVar(&sizes, "sizes", "1024,100", "record value sizes in bytes, comma-separated")
	throughput.Flags().IntVar(&megabytes, "mb", 100, "MB (10^6 bytes) of record values per run, size and target")
	throughput.Flags().IntVar(&runs, "runs", 5, "measured runs per size and target (medians are reported, with the min-max spread)")
	throughput.Flags().IntVar(&warmup, "warmup", 1, "discarded warm-up runs per size and target before the measured ones")
	throughput.Flags().BoolVar(&markdown, "markdown", false, "print the table as Markdown (README's performance table)")
	addBrokerListFlag(throughput, &brokers)
	throughput.Flags().Lookup("broker").DefValue = lab.BrokerRebalancelab + "," + lab.BrokerKafka
	_ = throughput.Flags().Set("broker", lab.BrokerRebalancelab+","+lab.BrokerKafka)
	throughput.Flags().Int32Var(&partitions, "partitions", 6, "partitions of the benchmark topic")
	throughput.Flags().Int16Var(&rf, "replication-factor", 1, "replicas of the benchmark topic, and brokers per target (1 to 5)")
	benchCmd.AddCommand(throughput)
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
