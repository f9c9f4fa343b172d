package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// brokerError is a per-topic error as the broker answered it: the Kafka error name and the broker's
// ErrorMessage (kafka-topics.sh prints the same), not franz-go's generic text for the code. Without
// an ErrorMessage it is kerr's "NAME: description". errors.Is/As still see the kerr error.
type brokerError struct {
	err *kerr.Error
	msg string
}

func (e *brokerError) Error() string { return e.err.Message + ": " + e.msg }
func (e *brokerError) Unwrap() error { return e.err }

func withBrokerMessage(err error, msg string) error {
	var ke *kerr.Error
	if msg == "" || !errors.As(err, &ke) {
		return err
	}
	return &brokerError{err: ke, msg: msg}
}

// topicFlags are one topic subcommand's connection flags (each subcommand owns its variables: cobra
// writes a flag's default into its variable when the flag is registered).
type topicFlags struct {
	bootstrap string
	timeout   time.Duration
}

func (f *topicFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&f.bootstrap, "bootstrap", "", "broker host:port[,host:port] (required)")
	c.Flags().DurationVar(&f.timeout, "timeout", 30*time.Second, "give up after this long")
	_ = c.MarkFlagRequired("bootstrap")
}

func (f *topicFlags) admin() (*kadm.Client, func(), error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(f.bootstrap, ",")...))
	if err != nil {
		return nil, nil, fmt.Errorf("--bootstrap %q: %w", f.bootstrap, err)
	}
	return kadm.NewClient(cl), cl.Close, nil
}

func init() {
	topicCmd := &cobra.Command{Use: "topic", Short: "Create topics and add partitions (CreateTopics / CreatePartitions on the wire)"}

	var (
		createFlags topicFlags
		partitions  int32
		rf          int16
	)
	create := &cobra.Command{
		Use:   "create NAME --partitions P [--replication-factor R] --bootstrap ADDR",
		Short: "Create a topic (Kafka's kafka-topics.sh --create); waits until every partition has a leader state",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			adm, closeFn, err := createFlags.admin()
			if err != nil {
				return err
			}
			defer closeFn()
			ctx, cancel := contextWithTimeout(cmd, createFlags.timeout)
			defer cancel()
			// kadm.CreateTopic returns resp.Err as its error: look at resp first for the broker's message.
			resp, err := adm.CreateTopic(ctx, partitions, rf, nil, args[0])
			if resp.Err != nil {
				return fmt.Errorf("create topic %s: %w", args[0], withBrokerMessage(resp.Err, resp.ErrMessage))
			}
			if err != nil {
				return fmt.Errorf("create topic %s (bootstrap %s): %w", args[0], createFlags.bootstrap, err)
			}
			fmt.Fprintf(os.Stdout, "created topic %s with %d partitions, replication factor %d\n", resp.Topic, resp.NumPartitions, resp.ReplicationFactor)
			return nil
		},
	}
	create.Flags().Int32Var(&partitions, "partitions", -1, "partition count (-1: the broker's num.partitions)")
	create.Flags().Int16Var(&rf, "replication-factor", -1, "replication factor (-1: the broker's default.replication.factor)")
	createFlags.register(create)

	var (
		addFlags topicFlags
		total    int32
	)
	addParts := &cobra.Command{
		Use:   "add-partitions NAME --partitions P --bootstrap ADDR",
		Short: "Grow a topic to P partitions in total (kafka-topics.sh --alter --partitions P)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if total < 1 {
				return fmt.Errorf("--partitions %d: the new total partition count must be at least 1", total)
			}
			adm, closeFn, err := addFlags.admin()
			if err != nil {
				return err
			}
			defer closeFn()
			ctx, cancel := contextWithTimeout(cmd, addFlags.timeout)
			defer cancel()
			resps, err := adm.UpdatePartitions(ctx, int(total), args[0])
			if err != nil {
				return fmt.Errorf("add partitions to %s (bootstrap %s): %w", args[0], addFlags.bootstrap, err)
			}
			r, ok := resps[args[0]]
			if !ok {
				return fmt.Errorf("add partitions to %s: no answer for the topic", args[0])
			}
			if r.Err != nil {
				return fmt.Errorf("add partitions to %s: %w", args[0], withBrokerMessage(r.Err, r.ErrMessage))
			}
			fmt.Fprintf(os.Stdout, "topic %s now has %d partitions\n", args[0], total)
			return nil
		},
	}
	addParts.Flags().Int32Var(&total, "partitions", 0, "new total partition count (required)")
	_ = addParts.MarkFlagRequired("partitions")
	addFlags.register(addParts)

	topicCmd.AddCommand(create, addParts)
	rootCmd.AddCommand(topicCmd)
}
