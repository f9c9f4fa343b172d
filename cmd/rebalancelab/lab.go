package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/lab"
)

// labUpLine is the first stdout line of `lab up` (docs/design.md's CLI contract); field order is fixed.
type labUpLine struct {
	ZooKeeper string   `json:"zookeeper"`
	Brokers   []string `json:"brokers"`
	Metrics   string   `json:"metrics,omitempty"` // --metrics-addr: every broker's Prometheus metrics (label broker)
}

// labGatherer gathers the registries of the lab's running in-process brokers at each scrape.
func labGatherer(l *lab.Lab) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		var gs prometheus.Gatherers
		for _, n := range l.Brokers() {
			if b := n.Broker(); b != nil {
				gs = append(gs, b.Metrics())
			}
		}
		return gs.Gather()
	})
}

// newLabCmd builds `lab` and its one subcommand, up.
func newLabCmd() *cobra.Command {
	labCmd := &cobra.Command{Use: "lab", Short: "A real environment: ZooKeeper (standalone or ensemble) and brokers"}
	labCmd.AddCommand(newLabUpCmd())
	return labCmd
}

// labUpFlags are `lab up`'s flags, as given; options converts them.
type labUpFlags struct {
	zkNodes, brokers int
	zk, dataDir      string
	kafkaDefaults    bool
	broker           string // --broker: the brokers' implementation
	metricsAddr      string
}

// options converts the flags into the lab's options. Errors: --zk-nodes other than 1 or 3; a negative
// --brokers; --metrics-addr with Kafka's brokers (their metrics are JMX).
func (f *labUpFlags) options() (lab.Options, error) {
	if f.zkNodes != 1 && f.zkNodes != 3 {
		return lab.Options{}, fmt.Errorf("--zk-nodes %d: want 1 (standalone) or 3 (ensemble)", f.zkNodes)
	}
	if f.brokers < 0 {
		return lab.Options{}, fmt.Errorf("--brokers %d: want 0 or more", f.brokers)
	}
	if f.metricsAddr != "" && f.broker == lab.BrokerKafka {
		return lab.Options{}, fmt.Errorf("--metrics-addr serves this project's brokers; Kafka 3.9's metrics are JMX (use --broker rebalancelab)")
	}
	return lab.Options{
		ZK:            lab.ZKOptions{Nodes: f.zkNodes},
		ExternalZK:    f.zk,
		Brokers:       f.brokers,
		NoBrokers:     f.brokers == 0,
		KafkaDefaults: f.kafkaDefaults,
		Broker:        f.broker,
		Dir:           f.dataDir,
		Log:           logrus.NewEntry(logrus.StandardLogger()),
	}, nil
}

// newLabUpCmd builds `lab up`: ZooKeeper and brokers on loopback until SIGINT/SIGTERM.
func newLabUpCmd() *cobra.Command {
	var f labUpFlags
	up := &cobra.Command{
		Use:   "up [--zk-nodes 1|3] [--brokers N] [--broker rebalancelab|kafka] [--zk ADDRS] [--data DIR] [--metrics-addr HOST:PORT]",
		Short: "Start ZooKeeper and N brokers on loopback; run until SIGINT/SIGTERM, then clean up",
		Long: `Starts a real ZooKeeper (Debian's zookeeper package or $ZOOKEEPER_HOME; --zk uses a running one
instead) with --zk-nodes servers, and --brokers in-process brokers registered in it, all on free
127.0.0.1 ports, with the lab's short timings (lab.ShortTimings; --kafka-defaults: Kafka's own).
--broker kafka runs real Kafka 3.9 brokers (ZooKeeper mode, JVMs from the interop build that
` + "`make deps`" + ` makes) instead of this project's, with the same timings.
The first line on stdout is
  {"zookeeper":"127.0.0.1:P1,...","brokers":["127.0.0.1:P",...]}
(with --metrics-addr HOST:PORT also "metrics":"http://HOST:PORT/metrics": every broker's Prometheus
metrics on one endpoint, told apart by the label broker) then it runs until SIGINT/SIGTERM and stops everything (brokers, ZooKeeper JVMs); signals during the
clean-up are caught, a third one forces the exit. Without --data the files live in a temp dir that is
removed; with --data they are kept. With --zk, a broker that gets no ZooKeeper session within
zookeeper.connection.timeout.ms makes it fail (exit 1, no JSON line).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			l, err := lab.Start(ctx, o)
			if err != nil {
				if ctx.Err() != nil {
					// A signal during start-up: lab.Start has stopped what it started.
					return fmt.Errorf("%w; cleaned up", errInterrupted)
				}
				return err
			}
			line := labUpLine{ZooKeeper: l.ZKConnect(), Brokers: []string{}}
			for _, b := range l.Brokers() {
				line.Brokers = append(line.Brokers, b.Addr())
			}
			if f.metricsAddr != "" {
				ms, err := serveMetrics(f.metricsAddr, labGatherer(l))
				if err != nil {
					l.Close()
					return err
				}
				defer ms.Close()
				line.Metrics = ms.URL
			}
			out, _ := json.Marshal(line)
			fmt.Fprintln(os.Stdout, string(out))
			<-ctx.Done()
			logrus.Info("lab: shutting down")
			return l.Close()
		},
	}
	up.Flags().IntVar(&f.zkNodes, "zk-nodes", 1, "ZooKeeper servers: 1 (standalone) or 3 (ensemble)")
	up.Flags().IntVar(&f.brokers, "brokers", 1, "brokers to start (ids 1..N)")
	up.Flags().StringVar(&f.zk, "zk", "", "use this running ZooKeeper (host:port,...) instead of starting one")
	up.Flags().StringVar(&f.dataDir, "data", "", "directory for ZooKeeper and broker data and logs (kept); default: a temp dir, removed")
	addBrokerFlag(up, &f.broker)
	up.Flags().BoolVar(&f.kafkaDefaults, "kafka-defaults", false, "run brokers with Kafka's default timings instead of lab.ShortTimings")
	addMetricsFlag(up, &f.metricsAddr, "every broker (label broker)")
	return up
}
