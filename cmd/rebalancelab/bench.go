package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newBenchCmd builds `bench` and its benchmarks: report, storm, table, throughput (a file each).
func newBenchCmd() *cobra.Command {
	bench := &cobra.Command{Use: "bench", Short: "Benchmarks, each beside a peer measured in the same run"}
	bench.AddCommand(newBenchReportCmd(), newBenchStormCmd(), newBenchTableCmd(), newBenchThroughputCmd())
	return bench
}

func createTopic(cmd *cobra.Command, bootstrap, topic string, partitions int32) error {
	return createTopicRF(cmd, bootstrap, topic, partitions, 1)
}

// createTopicRF is createTopic with replication factor rf.
func createTopicRF(cmd *cobra.Command, bootstrap, topic string, partitions int32, rf int16) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(cmd.Context(), partitions, rf, nil, topic)
	if err != nil {
		return err
	}
	return resp.Err
}

// deleteTopic deletes topic (a benchmark's, once measured, so that its segments leave the disk).
func deleteTopic(cmd *cobra.Command, bootstrap, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).DeleteTopic(cmd.Context(), topic)
	if err != nil {
		return err
	}
	return resp.Err
}

// waitFullISR waits until every partition of topic has rf replicas, all in the ISR (a replicated bench
// topic measures replication only once the followers are in), for up to 30 s.
func waitFullISR(cmd *cobra.Command, bootstrap, topic string, rf int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(30 * time.Second)
	last := "no metadata"
	for backoff := 10 * time.Millisecond; ; backoff = min(2*backoff, 500*time.Millisecond) {
		md, err := adm.Metadata(cmd.Context(), topic)
		switch td, ok := md.Topics[topic]; {
		case err != nil:
			last = err.Error()
		case !ok || td.Err != nil || len(td.Partitions) == 0:
			last = fmt.Sprintf("topic %s not in metadata yet", topic)
		default:
			last = ""
			for _, p := range td.Partitions.Sorted() {
				if len(p.Replicas) != rf || len(p.ISR) != rf {
					last = fmt.Sprintf("partition %d: replicas %v, ISR %v", p.Partition, p.Replicas, p.ISR)
					break
				}
			}
			if last == "" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s: not every partition has %d in-sync replicas after 30s: %s", topic, rf, last)
		}
		select {
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		case <-time.After(backoff):
		}
	}
}
