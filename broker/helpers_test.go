package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	dto "github.com/prometheus/client_model/go"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/rebalancelab/rebalancelab/broker"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/internal/zklog"
	"github.com/rebalancelab/rebalancelab/lab"
)

func TestMain(m *testing.M) {
	// sarama (a client in the interop tests) starts go-metrics' process-wide meter ticker once and never
	// stops it: a singleton of that library, not a leak of the broker.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
		goleak.Cleanup(testutil.Exit)) // Exit: removes the test binary (testutil.Binary)
}

// testLog collects a test's broker logs and prints them only if the test fails.
type testLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func newTestLog(t *testing.T) *logrus.Logger {
	tl := &testLog{}
	lg := logrus.New()
	lg.SetOutput(tl)
	lg.SetLevel(logrus.DebugLevel)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("BROKER_TEST_LOG") != "" {
			tl.mu.Lock()
			b := tl.buf.Bytes()
			if len(b) > 64<<10 {
				b = b[len(b)-64<<10:]
			}
			fmt.Fprintf(os.Stderr, "--- broker log of %s (tail) ---\n%s\n", t.Name(), b)
			tl.mu.Unlock()
		}
	})
	return lg
}

// startZK starts a real standalone ZooKeeper (Debian's package, tickTime 200 ms) for the test.
func startZK(t *testing.T) *lab.ZooKeeper {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lg := logrus.New()
	lg.SetOutput(&bytes.Buffer{})
	z, err := lab.StartZooKeeper(ctx, lab.ZKOptions{Log: logrus.NewEntry(lg)})
	if err != nil {
		t.Fatalf("ZooKeeper: %v", err)
	}
	t.Cleanup(func() { z.Close() })
	return z
}

// zkClient is a go-zookeeper session for reading what the brokers wrote.
func zkClient(t *testing.T, connect string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{connect}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(zklog.Discard))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// testBroker is a broker the test can stop and start again on the same port and data dir.
type testBroker struct {
	t     *testing.T
	id    int32
	props map[string]string
	log   *logrus.Logger
	opts  []broker.Option // Start's options, kept across restarts
	b     *broker.Broker
}

// labProps are the lab's short settings (docs/design.md "Lab timing") next to Kafka's defaults.
func labProps(id int32, zkConnect, dir string) map[string]string {
	return map[string]string{
		"broker.id":                        strconv.Itoa(int(id)),
		"zookeeper.connect":                zkConnect,
		"listeners":                        "PLAINTEXT://127.0.0.1:0",
		"log.dirs":                         dir,
		"zookeeper.session.timeout.ms":     "2000", // Kafka: 18000
		"offsets.topic.replication.factor": "1",    // Kafka: 3
		"offsets.topic.num.partitions":     "4",    // Kafka: 50
		"group.initial.rebalance.delay.ms": "0",    // Kafka: 3000
	}
}

func startBroker(t *testing.T, zkConnect string, id int32, extra map[string]string, opts ...broker.Option) *testBroker {
	t.Helper()
	props := labProps(id, zkConnect, t.TempDir())
	for k, v := range extra {
		props[k] = v
	}
	tb := &testBroker{t: t, id: id, props: props, log: newTestLog(t), opts: opts}
	tb.start()
	t.Cleanup(func() { tb.stop() })
	return tb
}

func (tb *testBroker) start() {
	tb.t.Helper()
	cfg, err := broker.ConfigFromProperties(tb.props)
	if err != nil {
		tb.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := broker.Start(ctx, cfg, logrus.NewEntry(tb.log), tb.opts...)
	if err != nil {
		tb.t.Fatal(err)
	}
	if !b.Registered() {
		b.Close()
		tb.t.Fatalf("broker %d not registered in ZooKeeper after Start", tb.id)
	}
	tb.b = b
	// A restart reuses the port.
	tb.props["listeners"] = "PLAINTEXT://" + b.Addr()
}

func (tb *testBroker) stop() {
	if tb.b != nil {
		if err := tb.b.Close(); err != nil {
			tb.t.Errorf("broker %d close: %v", tb.id, err)
		}
		tb.b = nil
	}
}

func (tb *testBroker) addr() string { return tb.props["listeners"][len("PLAINTEXT://"):] }

// dial opens a wire connection (the lab's minimal Kafka client) to addr.
func dial(t *testing.T, addr string) *wire.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := wire.Dial(ctx, nil, addr, "broker-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func request[R kmsg.Response](t *testing.T, c *wire.Conn, req kmsg.Request, version int16) R {
	t.Helper()
	resp, err := tryRequest[R](c, req, version)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// tryRequest is request for a goroutine other than the test's: the error is returned (named by the
// request and version), for the test goroutine to report.
func tryRequest[R kmsg.Response](c *wire.Conn, req kmsg.Request, version int16) (R, error) {
	req.SetVersion(version)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Request(ctx, req)
	if err != nil {
		var zero R
		return zero, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(req.Key()), version, err)
	}
	return resp.(R), nil
}

// metadata asks for topics (nil: all) at Metadata v12 without auto-creation.
func metadata(t *testing.T, c *wire.Conn, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	for _, tp := range topics {
		req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(tp)})
	}
	return request[*kmsg.MetadataResponse](t, c, req, 12)
}

// counterValue reads a counter of the broker's registry by name and labels (0 when absent).
func counterValue(t *testing.T, b *broker.Broker, name string, labels map[string]string) float64 {
	t.Helper()
	return findMetric(t, b, name, labels).GetCounter().GetValue()
}

// gaugeValue reads a gauge of the broker's registry by name and labels (0 when absent).
func gaugeValue(t *testing.T, b *broker.Broker, name string, labels map[string]string) float64 {
	t.Helper()
	return findMetric(t, b, name, labels).GetGauge().GetValue()
}

// findMetric is the first metric of the broker's registry with name and labels (nil when absent).
func findMetric(t *testing.T, b *broker.Broker, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mfs, err := b.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.Metric {
			for k, v := range labels {
				if !hasLabel(m, k, v) {
					continue metric
				}
			}
			return m
		}
	}
	return nil
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.Label {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

// consumerFetch is a consumer's Fetch (replica id -1, no wait) of partition 0 of topic from offset 0,
// at most maxBytes bytes for the answer and for the partition.
func consumerFetch(topic string, maxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, maxBytes, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = maxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// rawConn is a plain TCP connection for writing arbitrary bytes.
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
