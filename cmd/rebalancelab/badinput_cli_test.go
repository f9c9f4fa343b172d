package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

// countingListener is a TCP listener nobody serves: connections pile up in its backlog, and accepted
// counts them once the process under test has exited (so a connection made just before exiting is
// counted too: the kernel completed it whether or not anyone accepted it yet).
type countingListener struct {
	t  *testing.T
	ln *net.TCPListener
}

func newCountingListener(t *testing.T) *countingListener {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &countingListener{t, ln}
}

func (c *countingListener) addr() string { return c.ln.Addr().String() }

// accepted drains the backlog: the number of connections made to the listener so far. Call it once the
// process under test has exited: its connections are then complete and queued, and Accept returns
// each at once (Go checks an expired deadline before the backlog, hence the deadline in the future).
func (c *countingListener) accepted() int {
	c.t.Helper()
	if err := c.ln.SetDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		c.t.Fatal(err)
	}
	n := 0
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return n
			}
			c.t.Fatal(err)
		}
		conn.Close()
		n++
	}
}

// Bad input at the command line is refused with a clear message, exit status 1, before anything
// connects: a numeric --config value outside its Kafka type or range (for each command that takes
// --config), a repeated --topic (zkconsumer, consumer), a repeated --config key, and on an existing
// cluster (--bootstrap) a scenario that stops nodes or the zk era without --zk. The ZooKeeper and
// bootstrap addresses given are a listener that counts connections: it must see none.
func TestCLIBadInputRefusedBeforeConnecting(t *testing.T) {
	bin := testutil.Binary(t)
	for _, c := range []struct {
		name string
		args func(addr string) []string
		want string
	}{
		{"ZKConsumerSessionTimeoutPastInt32", func(a string) []string {
			return []string{"zkconsumer", "--zk", a, "--group", "g", "--topic", "t", "--config", "zookeeper.session.timeout.ms=3000000000"}
		}, "rebalancelab: zkconsumer: Invalid value 3000000000 for configuration zookeeper.session.timeout.ms: not a number of type INT (32-bit signed integer); allowed range [1, 2147483647]\n"},
		{"ZKConsumerNegativeBackoff", func(a string) []string {
			return []string{"zkconsumer", "--zk", a, "--group", "g", "--topic", "t", "--config", "offsets.channel.backoff.ms=-5"}
		}, "rebalancelab: zkconsumer: Invalid value -5 for configuration offsets.channel.backoff.ms: type INT, allowed range [0, 2147483647]\n"},
		{"ConsumerRequestTimeoutPastInt32", func(a string) []string {
			return []string{"consumer", "--bootstrap", a, "--group", "g", "--topic", "t", "--config", "request.timeout.ms=3000000000"}
		}, "rebalancelab: newconsumer: Invalid value 3000000000 for configuration request.timeout.ms: not a number of type INT (32-bit signed integer); allowed range [0, 2147483647]\n"},
		{"BrokerSessionTimeoutPastInt32", func(a string) []string {
			return []string{"broker", "--id", "1", "--zk", a, "--listen", "127.0.0.1:0", "--data", t.TempDir(),
				"--config", "zookeeper.connection.timeout.ms=2000", "--config", "zookeeper.session.timeout.ms=3000000000"}
		}, "rebalancelab: broker config: Invalid value 3000000000 for configuration zookeeper.session.timeout.ms: not a number of type INT (32-bit signed integer); allowed range [1, 2147483647]\n"},
		{"ZKConsumerRepeatedTopic", func(a string) []string {
			return []string{"zkconsumer", "--zk", a, "--group", "g", "--topic", "t:1", "--topic", "t:2"}
		}, "rebalancelab: --topic t:2: topic t is already given (--topic t:1); give each topic once, with all its threads (T:threads)\n"},
		{"ConsumerRepeatedTopic", func(a string) []string {
			return []string{"consumer", "--bootstrap", a, "--group", "g", "--topic", "t,u", "--topic", "t"}
		}, "rebalancelab: --topic t: topic t is already given; give each topic once\n"},
		{"RepeatedConfigKey", func(a string) []string {
			return []string{"zkconsumer", "--zk", a, "--group", "g", "--topic", "t", "--config", "rebalance.max.retries=2", "--config", "rebalance.max.retries=9"}
		}, "rebalancelab: --config rebalance.max.retries=9: rebalance.max.retries is already given (--config rebalance.max.retries=2); give each key once\n"},
		{"ScenarioStoppingNodesOnExistingCluster", func(a string) []string {
			return []string{"scenario", "run", "zk-quorum-loss", "--bootstrap", a, "--zk", a}
		}, "rebalancelab: scenario zk-quorum-loss: stops ZooKeeper nodes: needs the lab's own processes, not an existing cluster (--bootstrap)\n"},
		{"BenchStormZKEraOnExistingClusterWithoutZK", func(a string) []string {
			return []string{"bench", "storm", "--era", "zk", "--consumers", "2", "--bootstrap", a}
		}, "rebalancelab: the zk era on an existing cluster needs its ZooKeeper: --zk HOST:PORT (a cluster in ZooKeeper mode, Kafka 3.9 or older); or leave the zk era out (--era classic,cooperative,static)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newCountingListener(t)
			r := runCLI(t, bin, "", time.Minute, append(c.args(l.addr()), "--log-level", "warn")...)
			n := l.accepted()
			if r.code != 1 || r.stdout != "" || r.stderr != c.want || n != 0 {
				t.Fatalf("exit %d, %d connection(s) to %s, stdout %q, stderr:\n%s\nwant exit 1, no connection, stderr:\n%s",
					r.code, n, l.addr(), r.stdout, r.stderr, c.want)
			}
		})
	}
}

// `rebalancelab produce` writes uncompressed batches by default (Kafka's producer default
// compression.type=none; franz-go's own default is snappy, which clients without a snappy codec
// cannot read), and --compression picks Kafka's codecs: the attributes' codec bits of every batch
// the broker stores say which. An unknown codec is refused before anything connects.
func TestCLIBadInputProduceCompression(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bin := testutil.Binary(t)
	quiet := logrus.New()
	quiet.SetLevel(logrus.ErrorLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := lab.Start(ctx, lab.Options{Brokers: 1, Log: logrus.NewEntry(quiet)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	bs := l.Bootstrap()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// codecs fetches partition 0 of topic from offset 0 and returns each batch's codec (attributes & 7).
	codecs := func(topic string) []int16 {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(11)
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 1000, 1, 10<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.LogStartOffset = 0, 10<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatalf("fetch %s: %v", topic, err)
		}
		var out []int16
		b := p.RecordBatches
		for len(b) > 0 {
			var batch kmsg.RecordBatch
			if err := batch.ReadFrom(b); err != nil {
				t.Fatalf("fetch %s: record batch: %v", topic, err)
			}
			out = append(out, batch.Attributes&7)
			b = b[12+int(batch.Length):]
		}
		return out
	}
	for _, c := range []struct {
		topic string
		flag  []string
		codec int16 // Kafka's CompressionType id: none 0, gzip 1, snappy 2, lz4 3, zstd 4
	}{
		{"dflt", nil, 0},
		{"none", []string{"--compression", "none"}, 0},
		{"gzip", []string{"--compression", "gzip"}, 1},
		{"snappy", []string{"--compression", "snappy"}, 2},
		{"lz4", []string{"--compression", "lz4"}, 3},
		{"zstd", []string{"--compression", "zstd"}, 4},
	} {
		args := append([]string{"produce", "--bootstrap", bs, "--topic", c.topic, "--count", "50", "--size", "200"}, c.flag...)
		r := runCLI(t, bin, "", time.Minute, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "produced 50 of 50 records to "+c.topic) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
		got := codecs(c.topic)
		if len(got) == 0 {
			t.Fatalf("%s: no batches fetched", c.topic)
		}
		for _, g := range got {
			if g != c.codec {
				t.Fatalf("%v: batch codecs %v, want every one %d", args, got, c.codec)
			}
		}
	}

	ln := newCountingListener(t)
	r := runCLI(t, bin, "", time.Minute, "produce", "--bootstrap", ln.addr(), "--topic", "x", "--count", "1", "--compression", "brotli")
	want := "rebalancelab: --compression brotli: want none, gzip, snappy, lz4 or zstd (Kafka's compression.type)\n"
	if n := ln.accepted(); r.code != 1 || r.stderr != want || n != 0 {
		t.Fatalf("--compression brotli: exit %d, %d connection(s), stderr %q; want exit 1, none, %q", r.code, n, r.stderr, want)
	}
}
