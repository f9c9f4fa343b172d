package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/scenarios/env"
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

// createTopicRF is createTopic with replication factor rf: env.CreateTopic, which waits for the
// partitions' leaders.
func createTopicRF(cmd *cobra.Command, bootstrap, topic string, partitions int32, rf int16) error {
	return env.CreateTopic(cmd.Context(), bootstrap, env.Topic{Name: topic, Partitions: int(partitions), ReplicationFactor: int(rf)})
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
// topic measures replication only once the followers are in), for up to 30 s: env.CreateTopic's
// InSync wait, on the topic createTopicRF made (a second create finds it, TOPIC_ALREADY_EXISTS).
func waitFullISR(cmd *cobra.Command, bootstrap, topic string, rf int) error {
	return env.AwaitInSync(cmd.Context(), bootstrap, topic, rf, 30*time.Second)
}
