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

// topicFlags are the connection flags every topic subcommand has (each subcommand's flags struct
// embeds its own: cobra writes a flag's default into its variable when the flag is registered).
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

// newTopicCmd builds `topic` and its subcommands create and add-partitions.
func newTopicCmd() *cobra.Command {
	topicCmd := &cobra.Command{Use: "topic", Short: "Create topics and add partitions (CreateTopics / CreatePartitions on the wire)"}
	topicCmd.AddCommand(newTopicCreateCmd(), newTopicAddPartitionsCmd())
	return topicCmd
}

// newTopicCreateCmd builds `topic create`: CreateTopics, as kafka-topics.sh --create.
func newTopicCreateCmd() *cobra.Command {
	var f struct {
		topicFlags
		partitions int32 // -1: the broker's num.partitions
		rf         int16 // -1: the broker's default.replication.factor
	}
	create := &cobra.Command{
		Use:   "create NAME --partitions P [--replication-factor R] --bootstrap ADDR",
		Short: "Create a topic (Kafka's kafka-topics.sh --create); waits until every partition has a leader state",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			adm, closeFn, err := f.admin()
			if err != nil {
				return err
			}
			defer closeFn()
			ctx, cancel := contextWithTimeout(cmd, f.timeout)
			defer cancel()
			// kadm.CreateTopic returns resp.Err as its error: look at resp first for the broker's message.
			resp, err := adm.CreateTopic(ctx, f.partitions, f.rf, nil, args[0])
			if resp.Err != nil {
				return fmt.Errorf("create topic %s: %w", args[0], withBrokerMessage(resp.Err, resp.ErrMessage))
			}
			if err != nil {
				return fmt.Errorf("create topic %s (bootstrap %s): %w", args[0], f.bootstrap, err)
			}
			fmt.Fprintf(os.Stdout, "created topic %s with %d partitions, replication factor %d\n", resp.Topic, resp.NumPartitions, resp.ReplicationFactor)
			return nil
		},
	}
	create.Flags().Int32Var(&f.partitions, "partitions", -1, "partition count (-1: the broker's num.partitions)")
	create.Flags().Int16Var(&f.rf, "replication-factor", -1, "replication factor (-1: the broker's default.replication.factor)")
	f.register(create)
	return create
}

// newTopicAddPartitionsCmd builds `topic add-partitions`: CreatePartitions, as kafka-topics.sh --alter.
func newTopicAddPartitionsCmd() *cobra.Command {
	var f struct {
		topicFlags
		total int32 // --partitions: the new total
	}
	addParts := &cobra.Command{
		Use:   "add-partitions NAME --partitions P --bootstrap ADDR",
		Short: "Grow a topic to P partitions in total (kafka-topics.sh --alter --partitions P)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.total < 1 {
				return fmt.Errorf("--partitions %d: the new total partition count must be at least 1", f.total)
			}
			adm, closeFn, err := f.admin()
			if err != nil {
				return err
			}
			defer closeFn()
			ctx, cancel := contextWithTimeout(cmd, f.timeout)
			defer cancel()
			resps, err := adm.UpdatePartitions(ctx, int(f.total), args[0])
			if err != nil {
				return fmt.Errorf("add partitions to %s (bootstrap %s): %w", args[0], f.bootstrap, err)
			}
			r, ok := resps[args[0]]
			if !ok {
				return fmt.Errorf("add partitions to %s: no answer for the topic", args[0])
			}
			if r.Err != nil {
				return fmt.Errorf("add partitions to %s: %w", args[0], withBrokerMessage(r.Err, r.ErrMessage))
			}
			fmt.Fprintf(os.Stdout, "topic %s now has %d partitions\n", args[0], f.total)
			return nil
		},
	}
	addParts.Flags().Int32Var(&f.total, "partitions", 0, "new total partition count (required)")
	_ = addParts.MarkFlagRequired("partitions")
	f.register(addParts)
	return addParts
}
