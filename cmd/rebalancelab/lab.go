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

func init() {
	var (
		zkNodes       int
		brokers       int
		zkAddrs       string
		dataDir       string
		kafkaDefaults bool
		brokerImpl    string
		metrics       string
	)
	labCmd := &cobra.Command{Use: "lab", Short: "A real environment: ZooKeeper (standalone or ensemble) and brokers"}
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
			if zkNodes != 1 && zkNodes != 3 {
				return fmt.Errorf("--zk-nodes %d: want 1 (standalone) or 3 (ensemble)", zkNodes)
			}
			if brokers < 0 {
				return fmt.Errorf("--brokers %d: want 0 or more", brokers)
			}
			if metrics != "" && brokerImpl == lab.BrokerKafka {
				return fmt.Errorf("--metrics-addr serves this project's brokers; Kafka 3.9's metrics are JMX (use --broker rebalancelab)")
			}
			ctx := cmd.Context()
			l, err := lab.Start(ctx, lab.Options{
				ZK:            lab.ZKOptions{Nodes: zkNodes},
				ExternalZK:    zkAddrs,
				Brokers:       brokers,
				NoBrokers:     brokers == 0,
				KafkaDefaults: kafkaDefaults,
				Broker:        brokerImpl,
				Dir:           dataDir,
				Log:           logrus.NewEntry(logrus.StandardLogger()),
			})
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
			if metrics != "" {
				ms, err := serveMetrics(metrics, labGatherer(l))
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
	up.Flags().IntVar(&zkNodes, "zk-nodes", 1, "ZooKeeper servers: 1 (standalone) or 3 (ensemble)")
	up.Flags().IntVar(&brokers, "brokers", 1, "brokers to start (ids 1..N)")
	up.Flags().StringVar(&zkAddrs, "zk", "", "use this running ZooKeeper (host:port,...) instead of starting one")
	up.Flags().StringVar(&dataDir, "data", "", "directory for ZooKeeper and broker data and logs (kept); default: a temp dir, removed")
	addBrokerFlag(up, &brokerImpl)
	up.Flags().BoolVar(&kafkaDefaults, "kafka-defaults", false, "run brokers with Kafka's default timings instead of lab.ShortTimings")
	addMetricsFlag(up, &metrics, "every broker (label broker)")
	labCmd.AddCommand(up)
	rootCmd.AddCommand(labCmd)
}
