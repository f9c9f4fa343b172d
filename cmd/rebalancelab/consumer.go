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

func init() {
	var (
		bootstrap  string
		group      string
		topics     []string
		assignors  string
		instanceID string
		configs    []string
		print      bool
		metrics    string
	)
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
			if bootstrap == "" || group == "" || len(topics) == 0 {
				return errors.New("--bootstrap, --group and --topic are required")
			}
			props, err := parseConfigs("config", configs)
			if err != nil {
				return err
			}
			var subscribe []string
			seen := map[string]bool{}
			for _, t := range topics {
				for _, name := range strings.Split(t, ",") {
					if name = strings.TrimSpace(name); name == "" {
						return fmt.Errorf("--topic %q: empty topic name", t)
					}
					if seen[name] {
						return fmt.Errorf("--topic %s: topic %s is already given; give each topic once", t, name)
					}
					seen[name] = true
					subscribe = append(subscribe, name)
				}
			}
			props["bootstrap.servers"] = bootstrap
			props["group.id"] = group
			if assignors != "" {
				props["partition.assignment.strategy"] = assignors
			}
			if instanceID != "" {
				props["group.instance.id"] = instanceID
			}
			cfg, err := newconsumer.FromProperties(props)
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
			ms, err := memberMetrics(metrics, c.Collector())
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
				if print {
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
	f := cmd.Flags()
	f.StringVar(&bootstrap, "bootstrap", "", "bootstrap.servers: host:port[,host:port...]")
	f.StringVar(&group, "group", "", "group.id")
	f.StringArrayVar(&topics, "topic", nil, "topic to subscribe to (repeatable, or comma-separated)")
	f.StringVar(&assignors, "assignor", "", "partition.assignment.strategy (default range,cooperative-sticky)")
	f.StringVar(&instanceID, "instance-id", "", "group.instance.id: a static member (KIP-345)")
	f.StringArrayVar(&configs, "config", nil, "Kafka consumer property key=value (repeatable)")
	f.BoolVar(&print, "print", false, `print "topic partition offset value" per delivered message`)
	addMetricsFlag(cmd, &metrics, "this member (kafka_consumer_*)")
	rootCmd.AddCommand(cmd)
}
