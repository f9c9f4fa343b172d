package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/zkconsumer"
)

// zkConsumerFlags are `rebalancelab zkconsumer`'s flags, as given; options converts them.
type zkConsumerFlags struct {
	zk, group   string
	topics      []string // --topic T[:threads] (repeatable)
	whitelist   string
	threads     int
	consumerID  string
	configs     []string // --config key=value (repeatable)
	print       bool
	metricsAddr string
}

// options converts the flags into the connector's Kafka 0.8.2 consumer properties (--config, with
// group.id and consumer.id from their flags; zookeeper.connect is left to the caller, which may have
// to start a ZooKeeper first) and, for a static subscription, its topic → thread count. The properties
// are checked as zkconsumer.FromProperties checks them, before anything starts or connects. Errors:
// no --group; both or neither of --topic and --whitelist; a --topic that is no T or T:threads, or
// names a topic twice; a --config that is no key=value or gives a key twice; a property refused.
func (f *zkConsumerFlags) options() (props map[string]string, topicCount map[string]int, err error) {
	if f.group == "" {
		return nil, nil, errors.New("--group is required")
	}
	if (len(f.topics) == 0) == (f.whitelist == "") {
		return nil, nil, errors.New("give either --topic T[:threads] (repeatable) or --whitelist REGEX")
	}
	topicCount = map[string]int{}
	givenAs := map[string]string{}
	for _, t := range f.topics {
		name, n, err := parseTopicThreads(t)
		if err != nil {
			return nil, nil, err
		}
		if prev, dup := givenAs[name]; dup { // TopicCount is a map: one thread count per topic
			return nil, nil, fmt.Errorf("--topic %s: topic %s is already given (--topic %s); give each topic once, with all its threads (T:threads)", t, name, prev)
		}
		givenAs[name] = t
		topicCount[name] = n
	}
	if props, err = parseConfigs("config", f.configs); err != nil {
		return nil, nil, err
	}
	props["group.id"] = f.group
	if f.consumerID != "" {
		props["consumer.id"] = f.consumerID
	}
	// Bad settings are refused before anything starts or connects (zookeeper.connect is checked by
	// the caller's FromProperties, once known).
	check := map[string]string{"zookeeper.connect": "127.0.0.1:2181"}
	for k, v := range props {
		check[k] = v
	}
	if _, err := zkconsumer.FromProperties(check); err != nil {
		return nil, nil, err
	}
	return props, topicCount, nil
}

// newZKConsumerCmd builds `rebalancelab zkconsumer`: a ZooKeeper-era consumer connector until interrupted.
func newZKConsumerCmd() *cobra.Command {
	var f zkConsumerFlags
	cmd := &cobra.Command{
		Use:   "zkconsumer --zk ADDRS --group G (--topic T[:threads] | --whitelist REGEX) [--consumer-id ID] [--config k=v ...] [--print] [--metrics-addr HOST:PORT]",
		Short: "Run a ZooKeeper-era consumer (Kafka 0.8.2's ZookeeperConsumerConnector) until interrupted",
		Long: `Runs one ZooKeeper-era consumer connector in group G: it registers in /consumers/G/ids, rebalances
with the other members through ZooKeeper (range or roundrobin, owner znodes) and fetches from the
brokers registered there. Offsets live in ZooKeeper, or with --config offsets.storage=kafka at the
group's offset manager (and with dual.commit.enabled, its default then, in ZooKeeper too).
--topic T[:threads] (repeatable, each topic once; 1 thread by default) is a static subscription,
--whitelist REGEX a wildcard one with --threads streams. --config takes Kafka 0.8.2 consumer
properties (rebalance.max.retries, auto.commit.enable, auto.offset.reset, ...); an unknown key, a key
given twice or a number outside its type and range is an error before anything starts or connects.
--consumer-id sets consumer.id. --print writes one line per delivered message: "topic partition
offset value". --metrics-addr serves the connector's Prometheus metrics (0.8.2's RebalanceRateAndTime,
ConsumerLag per partition, MaxLag; owned partitions) at /metrics, its URL logged. Without --zk a ZooKeeper server is started (and removed at exit). SIGINT/SIGTERM shut
down gracefully: commit (with auto-commit), close the session (its registration and owner znodes go
with it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			props, topicCount, err := f.options()
			if err != nil {
				return err
			}
			log := logrus.WithField("component", "zkconsumer")
			zkAddrs := f.zk
			if zkAddrs == "" {
				z, err := lab.StartZooKeeper(ctx, lab.ZKOptions{Log: logrus.WithField("component", "zookeeper")})
				if err != nil {
					return fmt.Errorf("no --zk given and starting a ZooKeeper failed (install the Debian zookeeper package or pass --zk host:port): %w", err)
				}
				defer z.Close()
				zkAddrs = z.Connect()
				log.WithField("zookeeper", zkAddrs).Warn("no --zk given: started a ZooKeeper without brokers")
			}
			props["zookeeper.connect"] = zkAddrs
			cfg, err := zkconsumer.FromProperties(props)
			if err != nil {
				return err
			}
			cfg.Log = log
			c, err := zkconsumer.New(cfg)
			if err != nil {
				return err
			}
			defer c.Shutdown()
			ms, err := memberMetrics(f.metricsAddr, c.Collector())
			if err != nil {
				return err
			}
			defer ms.Close()

			var streams []<-chan zkconsumer.Message
			if f.whitelist != "" {
				streams, err = c.CreateMessageStreamsByFilter(ctx, zkconsumer.Whitelist(f.whitelist), f.threads)
			} else {
				var byTopic map[string][]<-chan zkconsumer.Message
				byTopic, err = c.CreateMessageStreams(ctx, topicCount)
				for _, s := range byTopic {
					streams = append(streams, s...)
				}
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil // interrupted during the initial rebalance
				}
				return err
			}
			log.WithField("consumer_id", c.ConsumerID()).Info("consuming")

			out := bufio.NewWriter(os.Stdout)
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, s := range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for m := range s { // closed by Shutdown
						if f.print {
							mu.Lock()
							printMessage(out, m)
							_ = out.Flush() // each line as its message is delivered, not at exit
							mu.Unlock()
						}
					}
				}()
			}
			go func() {
				for err := range c.Errors() {
					log.WithError(err).Error("rebalance failed; holding no partitions until the next group change")
				}
			}()
			<-ctx.Done()
			c.Shutdown()
			wg.Wait()
			return out.Flush()
		},
	}
	cmd.Flags().StringVar(&f.zk, "zk", "", "zookeeper.connect (host:port,...[/chroot]); empty: start one")
	cmd.Flags().StringVar(&f.group, "group", "", "group.id")
	cmd.Flags().StringArrayVar(&f.topics, "topic", nil, "topic to consume, with its consumer thread count: T or T:threads (repeatable)")
	cmd.Flags().StringVar(&f.whitelist, "whitelist", "", "consume every topic whose whole name matches this regex (',' means '|')")
	cmd.Flags().IntVar(&f.threads, "threads", 1, "consumer threads (streams) of a --whitelist subscription")
	cmd.Flags().StringVar(&f.consumerID, "consumer-id", "", "consumer.id (default: <hostname>-<unix ms>-<8 hex>)")
	cmd.Flags().StringArrayVar(&f.configs, "config", nil, "Kafka 0.8.2 consumer property key=value (repeatable)")
	cmd.Flags().BoolVar(&f.print, "print", false, `print "topic partition offset value" per delivered message`)
	addMetricsFlag(cmd, &f.metricsAddr, "this connector (0.8.2's meters)")
	return cmd
}

// parseTopicThreads parses "T" or "T:threads".
func parseTopicThreads(s string) (string, int, error) {
	name, n, hasN := strings.Cut(s, ":")
	if name == "" {
		return "", 0, fmt.Errorf("--topic %q: empty topic name", s)
	}
	if !hasN {
		return name, 1, nil
	}
	threads, err := strconv.Atoi(n)
	if err != nil || threads < 1 {
		return "", 0, fmt.Errorf("--topic %q: threads must be a positive integer", s)
	}
	return name, threads, nil
}

func printMessage(w io.Writer, m zkconsumer.Message) {
	fmt.Fprintf(w, "%s %d %d %s\n", m.Topic, m.Partition, m.Offset, m.Value)
}
