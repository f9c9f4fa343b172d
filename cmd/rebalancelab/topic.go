package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	topicCmd := &cobra.Command{Use: "topic", Short: "Create topics and add partitions (CreateTopics / CreatePartitions on the wire)"}

	var (
		partitions int32
		rf         int16
		bootstrap  string
		timeout    time.Duration
	)
	adminClient := func() (*kadm.Client, func(), error) {
		if bootstrap == "" {
			return nil, nil, fmt.Errorf("--bootstrap is required (a broker's host:port)")
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
		if err != nil {
			return nil, nil, err
		}
		return kadm.NewClient(cl), cl.Close, nil
	}

	create := &cobra.Command{
		Use:   "create NAME --partitions P [--replication-factor R] --bootstrap ADDR",
		Short: "Create a topic (Kafka's kafka-topics.sh --create); waits until every partition has a leader state",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			adm, closeFn, err := adminClient()
			if err != nil {
				return err
			}
			defer closeFn()
			ctx, cancel := contextWithTimeout(cmd, timeout)
			defer cancel()
			resp, err := adm.CreateTopic(ctx, partitions, rf, nil, args[0])
			if err != nil {
				return fmt.Errorf("create topic %s: %w", args[0], err)
			}
			if resp.Err != nil {
				return fmt.Errorf("create topic %s: %w: %s", args[0], resp.Err, resp.ErrMessage)
			}
			fmt.Fprintf(os.Stdout, "created topic %s with %d partitions, replication factor %d\n", resp.Topic, resp.NumPartitions, resp.ReplicationFactor)
			return nil
		},
	}
	create.Flags().Int32Var(&partitions, "partitions", -1, "partition count (-1: the broker's num.partitions)")
	create.Flags().Int16Var(&rf, "replication-factor", -1, "replication factor (-1: the broker's default.replication.factor)")

	addParts := &cobra.Command{
		Use:   "add-partitions NAME --partitions P --bootstrap ADDR",
		Short: "Grow a topic to P partitions in total (kafka-topics.sh --alter --partitions P)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if partitions < 1 {
				return fmt.Errorf("--partitions: the new total partition count is required")
			}
			adm, closeFn, err := adminClient()
			if err != nil {
				return err
			}
			defer closeFn()
			ctx, cancel := contextWithTimeout(cmd, timeout)
			defer cancel()
			resps, err := adm.UpdatePartitions(ctx, int(partitions), args[0])
			if err != nil {
				return fmt.Errorf("add partitions to %s: %w", args[0], err)
			}
			r, ok := resps[args[0]]
			if !ok {
				return fmt.Errorf("add partitions to %s: no answer for the topic", args[0])
			}
			if r.Err != nil {
				return fmt.Errorf("add partitions to %s: %w: %s", args[0], r.Err, r.ErrMessage)
			}
			fmt.Fprintf(os.Stdout, "topic %s now has %d partitions\n", args[0], partitions)
			return nil
		},
	}
	addParts.Flags().Int32Var(&partitions, "partitions", 0, "new total partition count")

	for _, c := range []*cobra.Command{create, addParts} {
		c.Flags().StringVar(&bootstrap, "bootstrap", "", "broker host:port[,host:port]")
		c.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "give up after this long")
		topicCmd.AddCommand(c)
	}
	rootCmd.AddCommand(topicCmd)
}
