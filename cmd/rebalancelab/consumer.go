package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/newconsumer"
)

// consumerFlags are `rebalancelab consumer`'s flags, as given; options converts them.
type consumerFlags struct {
	bootstrap, group      string
	topics                []string // --topic (repeatable, or comma-separated)
	assignors, instanceID string
	configs               []string // --config key=value (repeatable)
	print                 bool
	metricsAddr           string
}

// options converts the flags into the member's configuration (Kafka 3.9 consumer properties: --config
// with bootstrap.servers, group.id, partition.assignment.strategy and group.instance.id from their
// flags over them; Log and Listener are left to the caller) and the topics it subscribes to, each
// once. Errors: --bootstrap, --group or --topic missing; a --config that is no key=value or gives a
// key twice; an empty topic name or one given twice; a property newconsumer.FromProperties refuses.
func (f *consumerFlags) options() (newconsumer.Config, []string, error) {
	if f.bootstrap == "" || f.group == "" || len(f.topics) == 0 {
		return newconsumer.Config{}, nil, errors.New("--bootstrap, --group and --topic are required")
	}
	props, err := parseConfigs("config", f.configs)
	if err != nil {
		return newconsumer.Config{}, nil, err
	}
	var subscribe []string
	seen := map[string]bool{}
	for _, t := range f.topics {
		for _, name := range strings.Split(t, ",") {
			if name = strings.TrimSpace(name); name == "" {
				return newconsumer.Config{}, nil, fmt.Errorf("--topic %q: empty topic name", t)
			}
			if seen[name] {
				return newconsumer.Config{}, nil, fmt.Errorf("--topic %s: topic %s is already given; give each topic once", t, name)
			}
			seen[name] = true
			subscribe = append(subscribe, name)
		}
	}
	props["bootstrap.servers"] = f.bootstrap
	props["group.id"] = f.group
	if f.assignors != "" {
		props["partition.assignment.strategy"] = f.assignors
	}
	if f.instanceID != "" {
		props["group.instance.id"] = f.instanceID
	}
	cfg, err := newconsumer.FromProperties(props)
	if err != nil {
		return newconsumer.Config{}, nil, err
	}
	return cfg, subscribe, nil
}

// newConsumerCmd builds `rebalancelab consumer`: a coordinator-era member until interrupted.
func newConsumerCmd() *cobra.Command {
	var f consumerFlags
	cmd := &cobra.Command{
		Use:   "consumer --bootstrap ADDR --group G --topic T [--assignor NAME] [--instance-id ID] [--config k=v ...] [--print] [--metrics-addr HOST:PORT]",
		Short: "Run a coordinator-era consumer (Kafka 3.9's classic group protocol) until interrupted",
		Long: `Runs one group member of the coordinator era in group G: FindCoordinator, JoinGroup, the leader's
assignment, SyncGroup, heartbeats, fetching, auto-commit (package newconsumer). --topic T subscribes
(repeatable, or comma-separated). --assignor sets partition.assignment.strategy: range, roundrobin,
sticky, cooperative-sticky, or a comma-separated preference list (Kafka 3.9's default is
range,cooperative-sticky). --instance-id makes the member static (group.instance.id, KIP-345).
--config takes Kafka 3.9 consumer properties (session.timeout.ms, heartbeat.interval.ms,
auto.offset.reset, enable.auto.commit, ...; unknown keys are an error). --print writes one line per
delivered message: "topic partition offset value". --metrics-addr serves the member's Prometheus
metrics (rebalances, generation, assigned partitions, records-lag per partition) at /metrics, its URL
logged. SIGINT/SIGTERM close gracefully: commit (with
auto-commit), onPartitionsRevoked, LeaveGroup (not for a static member).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, subscribe, err := f.options()
			if err != nil {
				return err
			}
			log := logrus.WithField("component", "consumer")
			cfg.Log = log
			cfg.Listener = newconsumer.ListenerFuncs{
				Assigned: func(ps []newconsumer.TopicPartition) { log.Infof("partitions assigned: %v", ps) },
				Revoked:  func(ps []newconsumer.TopicPartition) { log.Infof("partitions revoked: %v", ps) },
				Lost:     func(ps []newconsumer.TopicPartition) { log.Warnf("partitions lost: %v", ps) },
			}
			c, err := newconsumer.New(cfg)
			if err != nil {
				return err
			}
			ms, err := memberMetrics(f.metricsAddr, c.Collector())
			if err != nil {
				c.Kill()
				return err
			}
			defer ms.Close()
			if err := c.Subscribe(subscribe...); err != nil {
				return err
			}
			out := bufio.NewWriter(os.Stdout)
			var pollErr error
			for {
				recs, err := c.Poll(ctx)
				if err != nil {
					if ctx.Err() == nil {
						pollErr = err
					}
					break
				}
				if f.print {
					for _, r := range recs {
						fmt.Fprintf(out, "%s %d %d %s\n", r.Topic, r.Partition, r.Offset, r.Value)
					}
					if err := out.Flush(); err != nil {
						pollErr = fmt.Errorf("stdout: %w", err)
						break
					}
				}
			}
			closeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := c.Close(closeCtx); err != nil {
				log.WithError(err).Warn("close")
			}
			return pollErr
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.bootstrap, "bootstrap", "", "bootstrap.servers: host:port[,host:port...]")
	fs.StringVar(&f.group, "group", "", "group.id")
	fs.StringArrayVar(&f.topics, "topic", nil, "topic to subscribe to (repeatable, or comma-separated)")
	fs.StringVar(&f.assignors, "assignor", "", "partition.assignment.strategy (default range,cooperative-sticky)")
	fs.StringVar(&f.instanceID, "instance-id", "", "group.instance.id: a static member (KIP-345)")
	fs.StringArrayVar(&f.configs, "config", nil, "Kafka consumer property key=value (repeatable)")
	fs.BoolVar(&f.print, "print", false, `print "topic partition offset value" per delivered message`)
	addMetricsFlag(cmd, &f.metricsAddr, "this member (kafka_consumer_*)")
	return cmd
}
