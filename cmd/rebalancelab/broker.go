package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/broker"
	"github.com/rebalancelab/rebalancelab/broker/coordinator"
	"github.com/rebalancelab/rebalancelab/internal/groupview"
	"github.com/rebalancelab/rebalancelab/lab"
)

// brokerCLIDefaults are applied before --config, as Kafka's own config/server.properties does for a
// single-broker cluster: __consumer_offsets with replication factor 1 (KafkaConfig's default is 3, which
// fewer than 3 brokers cannot host; this broker implements 1 only).
var brokerCLIDefaults = map[string]string{
	"offsets.topic.replication.factor": "1",
}

// brokerFlags are `rebalancelab broker`'s flags, as given; properties converts them.
type brokerFlags struct {
	id                    int32
	zk, listen, dataDir   string
	configs               []string // --config key=value (repeatable)
	groupLog, metricsAddr string
}

// properties converts the flags into the broker's server.properties: brokerCLIDefaults, then --config,
// then --id (when given, or when no broker.id is configured), --listen, --data and --zk over them
// (cmd: the command they were parsed by, for which were given). zookeeper.connect stays empty when
// neither --zk nor --config gives it. Errors: a --config that is no key=value or gives a key twice; a
// --listen that is no HOST:PORT.
func (f *brokerFlags) properties(cmd *cobra.Command) (map[string]string, error) {
	given, err := parseConfigs("config", f.configs)
	if err != nil {
		return nil, err
	}
	props := map[string]string{}
	for k, v := range brokerCLIDefaults {
		props[k] = v
	}
	for k, v := range given {
		props[k] = v
	}
	if cmd.Flags().Changed("id") || props["broker.id"] == "" {
		props["broker.id"] = strconv.Itoa(int(f.id))
	}
	if f.listen != "" {
		if _, _, err := net.SplitHostPort(f.listen); err != nil {
			return nil, fmt.Errorf("--listen %q: want HOST:PORT: %v", f.listen, err)
		}
		props["listeners"] = "PLAINTEXT://" + f.listen
	}
	if f.dataDir != "" {
		props["log.dirs"] = f.dataDir
	}
	if f.zk != "" {
		props["zookeeper.connect"] = f.zk
	}
	return props, nil
}

// newBrokerCmd builds `rebalancelab broker`: one Kafka broker registered in ZooKeeper, until interrupted.
func newBrokerCmd() *cobra.Command {
	var f brokerFlags
	cmd := &cobra.Command{
		Use:   "broker --id N --zk ADDRS --listen HOST:PORT --data DIR [--config key=value ...] [--group-log FILE] [--metrics-addr HOST:PORT]",
		Short: "Run one Kafka broker (real wire protocol) registered in ZooKeeper, until interrupted",
		Long: `Runs a broker with Kafka 3.9's defaults for every server.properties key (--config key=value
overrides, repeatable; unknown keys are an error), except offsets.topic.replication.factor=1 as in
Kafka's shipped config/server.properties. --id, --zk, --listen and --data set broker.id,
zookeeper.connect, listeners=PLAINTEXT://HOST:PORT and log.dirs. Without --zk a ZooKeeper server is
started for the broker and removed when it stops. It fails (exit 1, no JSON line) when it gets no
ZooKeeper session within zookeeper.connection.timeout.ms, or when another live broker holds
/brokers/ids/<id> (after waiting zookeeper.session.timeout.ms for a previous incarnation's session to
expire). The first line on stdout is
{"broker_id":N,"listen":"HOST:PORT","advertised":"HOST:PORT","zookeeper":"..."} (with --metrics-addr,
also "metrics":"http://HOST:PORT/metrics", the broker's Prometheus metrics); SIGINT/SIGTERM close
the broker gracefully (ZooKeeper session closed, logs flushed).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			props, err := f.properties(cmd)
			if err != nil {
				return err
			}
			if props["zookeeper.connect"] == "" {
				// Bad settings are refused before a ZooKeeper is started for them.
				check := map[string]string{"zookeeper.connect": "127.0.0.1:2181"}
				for k, v := range props {
					if k != "zookeeper.connect" {
						check[k] = v
					}
				}
				if _, err := broker.ConfigFromProperties(check); err != nil {
					return err
				}
				z, err := lab.StartZooKeeper(ctx, lab.ZKOptions{Log: logrus.WithField("component", "zookeeper")})
				if err != nil {
					if ctx.Err() != nil {
						return fmt.Errorf("%w; cleaned up", errInterrupted)
					}
					return fmt.Errorf("no --zk given and starting a ZooKeeper failed (install the Debian zookeeper package or pass --zk host:port): %w", err)
				}
				defer z.Close()
				props["zookeeper.connect"] = z.Connect()
			}
			cfg, err := broker.ConfigFromProperties(props)
			if err != nil {
				return err
			}
			var opts []broker.Option
			if f.groupLog != "" {
				lf, err := os.OpenFile(f.groupLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					return fmt.Errorf("--group-log: %w", err)
				}
				defer lf.Close() // after b.Close, which delivers the last transitions
				enc := json.NewEncoder(lf)
				opts = append(opts, broker.WithGroupObserver(func(ev coordinator.GroupChanged) {
					if err := enc.Encode(groupview.Decode(ev)); err != nil {
						logrus.WithError(err).Warn("--group-log: write failed")
					}
				}))
			}
			b, err := broker.Start(ctx, cfg, logrus.WithField("broker", cfg.BrokerID), opts...)
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("%w; cleaned up", errInterrupted)
				}
				return err
			}
			first := map[string]any{"broker_id": b.ID(), "listen": b.Addr(), "advertised": b.AdvertisedAddr(), "zookeeper": cfg.ZooKeeperConnect}
			if f.metricsAddr != "" {
				ms, err := serveMetrics(f.metricsAddr, b.Metrics())
				if err != nil {
					b.Close()
					return err
				}
				defer ms.Close()
				first["metrics"] = ms.URL
			}
			line, _ := json.Marshal(first)
			fmt.Fprintln(os.Stdout, string(line))
			<-ctx.Done()
			return b.Close()
		},
	}
	cmd.Flags().Int32Var(&f.id, "id", 0, "broker.id")
	cmd.Flags().StringVar(&f.zk, "zk", "", "zookeeper.connect (host:port,...[/chroot]); empty: start one")
	cmd.Flags().StringVar(&f.listen, "listen", "127.0.0.1:9092", "listener HOST:PORT (port 0: any free port)")
	cmd.Flags().StringVar(&f.dataDir, "data", "", "log.dirs (default /tmp/kafka-logs, Kafka's)")
	cmd.Flags().StringArrayVar(&f.configs, "config", nil, "server.properties key=value (repeatable)")
	cmd.Flags().StringVar(&f.groupLog, "group-log", "", "append every group state transition the coordinator makes, decoded by protocol (groupview), as JSON lines to FILE")
	addMetricsFlag(cmd, &f.metricsAddr, "the broker (kafka_server_*, kafka_network_*, kafka_coordinator_group_*)")
	return cmd
}
