package lab

// The real ZooKeeper-era consumer: Kafka 0.8.2.2's ZookeeperConsumerConnector in a JVM, through the
// small harness of interop/kafka-0.8.2 (io.github.rebalancelab.oldzk.OldConsumer), started as
// `java -Xmx128m -cp 'interop/kafka-0.8.2/target/lib/*' io.github.rebalancelab.oldzk.OldConsumer ...`.
// The harness prints a JSON line per event on stdout (started, delivered, the connector's rebalance as
// its log lines tell it, stopped) and shuts the connector down on a "stop" line on stdin.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/sirupsen/logrus"
)

// OldConsumerModule is the interop module of the real 0.8.2.2 connector.
const OldConsumerModule = "kafka-0.8.2"

// OldConsumerClasspathEnv overrides FindOldConsumerClasspath.
const OldConsumerClasspathEnv = "REBALANCELAB_OLDCONSUMER_CLASSPATH"

// OldConsumerMain is the harness's main class.
const OldConsumerMain = "io.github.rebalancelab.oldzk.OldConsumer"

// OldConsumerJVMFlags: a small JVM. Kafka 0.8.2.2 (Scala 2.11.5, zkclient 0.3, ZooKeeper 3.4.6's client)
// runs on JDK 17 without --add-opens: the consumer touches no JDK internals.
var OldConsumerJVMFlags = []string{"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true"}

// FindOldConsumerClasspath returns interop/kafka-0.8.2/target/lib ($REBALANCELAB_OLDCONSUMER_CLASSPATH
// when set), found as FindConnectClasspath finds Connect's; the error wraps ErrNoKafka and names `make deps`.
func FindOldConsumerClasspath() (string, error) {
	return interopModule{module: OldConsumerModule, env: OldConsumerClasspathEnv, marker: "kafka_2.11-0.8.2.2.jar",
		what: "resolves org.apache.kafka:kafka_2.11 0.8.2.2 and compiles the harness", err: ErrNoKafka}.classpath()
}

// OldConsumerOptions configures StartOldConsumer.
type OldConsumerOptions struct {
	ZooKeeper  string // zookeeper.connect
	Group      string // group.id
	Topic      string
	Streams    int    // KafkaStreams (consumer threads) for Topic; default 1
	ConsumerID string // consumer.id: the connector's id is then <Group>_<ConsumerID>
	// Config: more consumer properties (0.8.2's ConsumerConfig keys); auto.offset.reset defaults to smallest.
	Config    map[string]string
	Classpath string // default FindOldConsumerClasspath's
	LogPath   string // the JVM's stderr (its WARN and ERROR lines); default a file in os.TempDir
	Log       *logrus.Entry
}

// OldConsumerEvent is one JSON line of the harness.
type OldConsumerEvent struct {
	Event      string `json:"event"` // started, delivered, rebalance_begin, rebalance_end, rebalance_failed, owned, selected, log, error, stopped
	TS         int64  `json:"ts"`    // ms since the epoch
	ConsumerID string `json:"consumer_id,omitempty"`
	Stream     int    `json:"stream,omitempty"`
	Topic      string `json:"topic,omitempty"`
	Partition  int32  `json:"partition,omitempty"`
	Offset     int64  `json:"offset,omitempty"`
	// delivered: the message's key and value as UTF-8 text, nil when null or when the message is over
	// 256 bytes (the harness leaves large ones out)
	Key        *string `json:"key,omitempty"`
	Value      *string `json:"value,omitempty"`
	Attempt    int     `json:"attempt,omitempty"`
	Thread     string  `json:"thread,omitempty"` // owned: the consumer thread id that claimed Partition
	Partitions string  `json:"partitions,omitempty"`
	Level      string  `json:"level,omitempty"` // log: WARN, ERROR, FATAL
	Message    string  `json:"message,omitempty"`
	Java       string  `json:"java,omitempty"`
}

// OldConsumer is one running 0.8.2.2 connector JVM.
type OldConsumer struct {
	ConsumerID string // as the connector names itself (<group>_<consumer.id>)
	LogPath    string
	p          *proc
	stdin      io.WriteCloser

	mu     sync.Mutex
	events []OldConsumerEvent
}

// StartOldConsumer starts the JVM and returns once the connector's first rebalance is done (the harness
// prints started after createMessageStreams returns), or ctx ends.
func StartOldConsumer(ctx context.Context, o OldConsumerOptions) (*OldConsumer, error) {
	if o.Classpath == "" {
		cp, err := FindOldConsumerClasspath()
		if err != nil {
			return nil, err
		}
		o.Classpath = cp
	}
	java, err := findJava()
	if err != nil {
		return nil, err
	}
	if o.Streams <= 0 {
		o.Streams = 1
	}
	if o.LogPath == "" {
		f, err := os.CreateTemp("", "oldconsumer-*.log")
		if err != nil {
			return nil, err
		}
		o.LogPath = f.Name()
		f.Close()
	}
	argv := append([]string{java}, OldConsumerJVMFlags...)
	argv = append(argv, "-cp", filepath.Join(o.Classpath, "*"), OldConsumerMain,
		"--zookeeper", o.ZooKeeper, "--group", o.Group, "--topic", o.Topic, "--streams", strconv.Itoa(o.Streams))
	if o.ConsumerID != "" {
		argv = append(argv, "--consumer-id", o.ConsumerID)
	}
	keys := make([]string, 0, len(o.Config))
	for k := range o.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		argv = append(argv, "--config", k+"="+o.Config[k])
	}
	c := &OldConsumer{LogPath: o.LogPath}
	firstStarted := make(chan struct{})
	readLines := func(stdout io.Reader) {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := false
		for sc.Scan() {
			var ev OldConsumerEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				if o.Log != nil {
					o.Log.Warnf("old connector: not a JSON line: %q", sc.Text())
				}
				continue
			}
			c.mu.Lock()
			c.events = append(c.events, ev)
			if ev.Event == "started" {
				c.ConsumerID = ev.ConsumerID
			}
			c.mu.Unlock()
			if ev.Event == "started" && !once {
				once = true
				close(firstStarted)
			}
		}
	}
	c.p, c.stdin, err = startProcIO(argv, "", nil, o.LogPath, readLines)
	if err != nil {
		return nil, fmt.Errorf("lab: the 0.8.2.2 connector: %w", err)
	}
	select {
	case <-firstStarted:
		return c, nil
	case <-c.p.done:
		return nil, fmt.Errorf("lab: the 0.8.2.2 connector exited before it started (%v): %s", c.p.err, c.p.logTail())
	case <-ctx.Done():
		c.Kill()
		return nil, fmt.Errorf("lab: the 0.8.2.2 connector did not start: %w: %s", ctx.Err(), c.p.logTail())
	}
}

// Events is a copy of every event so far.
func (c *OldConsumer) Events() []OldConsumerEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]OldConsumerEvent(nil), c.events...)
}

// Pid is the JVM's process id.
func (c *OldConsumer) Pid() int { return c.p.pid() }

// Exited reports whether the JVM has exited.
func (c *OldConsumer) Exited() bool { return c.p.exited() }

// Stop asks for a graceful shutdown ("stop": the connector commits, when auto-commit is on, and closes
// its ZooKeeper session) and waits for the exit; at ctx's end it kills the JVM.
func (c *OldConsumer) Stop(ctx context.Context) error {
	if c.Exited() {
		return c.p.err
	}
	_, _ = io.WriteString(c.stdin, "stop\n")
	_ = c.stdin.Close()
	select {
	case <-c.p.done:
		return c.p.err
	case <-ctx.Done():
		c.Kill()
		return fmt.Errorf("lab: the 0.8.2.2 connector did not stop: %w", ctx.Err())
	}
}

// Kill is kill -9 of the JVM's process group (no goodbye: its session expires on the server); it waits
// for the exit.
func (c *OldConsumer) Kill() { c.p.kill() }
