package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/benchmark"
	"github.com/rebalancelab/rebalancelab/lab"
)

var benchCmd = &cobra.Command{Use: "bench", Short: "Benchmarks, each beside a peer measured in the same run"}

func init() {
	var (
		jsonFile   string
		sizes      string
		megabytes  int
		partitions int32
		runs       int
		brokerImpl string
	)
	throughput := &cobra.Command{
		Use:   "throughput",
		Short: "Produce and fetch MB/s and records/s: this broker vs franz-go's kfake, same client, same run",
		Long: `Starts a lab (real ZooKeeper + one broker) and a kfake cluster with a data dir (both write
segments through the page cache, no fsync: Kafka's default log.flush.interval.messages). One franz-go
client produces uncompressed random records with acks=all, then a direct consumer fetches them all back.
The table shows each target and the ratio rebalancelab/kfake (above 1: faster than the peer).`,
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
			dir, err := os.MkdirTemp("", "rebalancelab-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)

			l, err := lab.Start(ctx, lab.Options{Brokers: 1, Dir: dir + "/lab", Broker: brokerImpl})
			if err != nil {
				return err
			}
			defer l.Close()
			fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dir+"/kfake"))
			if err != nil {
				return fmt.Errorf("kfake: %w", err)
			}
			defer fake.Close()

			targets := []struct{ name, bootstrap string }{
				{brokerImpl, l.Bootstrap()},
				{"kfake", strings.Join(fake.ListenAddrs(), ",")},
			}
			if runs < 1 {
				return fmt.Errorf("--runs must be at least 1")
			}
			var results []benchmark.ThroughputResult
			for _, size := range recSizes {
				records := megabytes * 1_000_000 / size
				for run := 0; run < runs; run++ {
					// Alternate which target goes first: the second runs on a warmer page cache.
					order := []int{0, 1}
					if run%2 == 1 {
						order = []int{1, 0}
					}
					for _, i := range order {
						tg := targets[i]
						topic := fmt.Sprintf("bench-%d-%d", size, run)
						if err := createTopic(cmd, tg.bootstrap, topic, partitions); err != nil {
							return fmt.Errorf("%s: %w", tg.name, err)
						}
						logrus.WithField("target", tg.name).Infof("throughput run %d/%d: %d records of %d bytes", run+1, runs, records, size)
						r, err := benchmark.MeasureThroughput(ctx, tg.name, tg.bootstrap, benchmark.ThroughputOptions{
							Topic: topic, Partitions: partitions, RecordBytes: size, Records: records,
						})
						if err != nil {
							return err
						}
						results = append(results, r)
					}
				}
			}
			summary := benchmark.SummarizeThroughput(results)
			printThroughput(summary, runs, brokerImpl)
			if jsonFile != "" {
				b, _ := json.MarshalIndent(map[string]any{
					"params":  map[string]any{"sizes": recSizes, "megabytes_per_run": megabytes, "partitions": partitions, "runs": runs, "broker": brokerImpl, "kafka": l.KafkaVersion()},
					"summary": summary,
					"runs":    results,
				}, "", "  ")
				return os.WriteFile(jsonFile, append(b, '\n'), 0o644)
			}
			return nil
		},
	}
	throughput.Flags().StringVar(&jsonFile, "json", "", "also write the results as JSON to this file")
	throughput.Flags().StringVar(&sizes, "sizes", "1024,100", "record value sizes in bytes, comma-separated")
	throughput.Flags().IntVar(&megabytes, "mb", 100, "MB (10^6 bytes) of record values per run, size and target")
	throughput.Flags().IntVar(&runs, "runs", 3, "runs per size and target (medians are reported, with the min-max spread)")
	addBrokerFlag(throughput, &brokerImpl)
	throughput.Flags().Int32Var(&partitions, "partitions", 6, "partitions of the benchmark topic")
	benchCmd.AddCommand(throughput)
	rootCmd.AddCommand(benchCmd)
}

func createTopic(cmd *cobra.Command, bootstrap, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(cmd.Context(), partitions, 1, nil, topic)
	if err != nil {
		return err
	}
	return resp.Err
}

// printThroughput prints the medians per size and target, and the ratio of the lab's broker (target
// name labBroker: rebalancelab or kafka) to kfake.
func printThroughput(sum []benchmark.ThroughputSummary, runs int, labBroker string) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "record bytes\ttarget\tproduce MB/s\t(min-max)\tproduce rec/s\tfetch MB/s\t(min-max)\tfetch rec/s\t\n")
	byKey := map[string]benchmark.ThroughputSummary{}
	for _, r := range sum {
		byKey[fmt.Sprint(r.RecordBytes, r.Target)] = r
		fmt.Fprintf(w, "%d\t%s\t%.1f\t%.0f-%.0f\t%.0f\t%.1f\t%.0f-%.0f\t%.0f\t\n", r.RecordBytes, r.Target,
			r.ProduceMBps.Median, r.ProduceMBps.Min, r.ProduceMBps.Max, r.ProduceRecordsPerS.Median,
			r.FetchMBps.Median, r.FetchMBps.Min, r.FetchMBps.Max, r.FetchRecordsPerS.Median)
		if r.Target != "kfake" {
			continue
		}
		a, ok := byKey[fmt.Sprint(r.RecordBytes, labBroker)]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "%d\t%s/kfake\t%.2fx\t\t%.2fx\t%.2fx\t\t%.2fx\t\n", r.RecordBytes, labBroker,
			a.ProduceMBps.Median/r.ProduceMBps.Median, a.ProduceRecordsPerS.Median/r.ProduceRecordsPerS.Median,
			a.FetchMBps.Median/r.FetchMBps.Median, a.FetchRecordsPerS.Median/r.FetchRecordsPerS.Median)
	}
	w.Flush()
	fmt.Printf("medians of %d runs each; ratios of medians (above 1: %s is faster)\n", runs, labBroker)
}
