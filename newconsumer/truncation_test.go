package newconsumer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/lab"
)

// truncationReferenceEnv, set to "kafka", runs TestIntegrationUncleanElectionTruncation on real
// Kafka 3.9 brokers instead of this project's: the reference its expected offsets were checked on.
const truncationReferenceEnv = "REBALANCELAB_TRUNCATION_REFERENCE"

// delivery is one record handed to the application: offset, value, batch leader epoch.
type delivery struct {
	offset int64
	value  string
	epoch  int32
}

// truncLab is three brokers with topic "t" (one partition on [1,2,3], unclean.leader.election.enable).
type truncLab struct {
	l   *lab.Lab
	adm *kadm.Client
}

func startTruncLab(t *testing.T, ctx context.Context) *truncLab {
	t.Helper()
	o := lab.Options{Brokers: 3, Dir: t.TempDir(), Log: quietLog(), BrokerConfig: map[string]string{
		"controlled.shutdown.enable": "false", "replica.fetch.wait.max.ms": "100", "replica.fetch.backoff.ms": "100",
		"replica.lag.time.max.ms": "1500"}}
	switch ref := os.Getenv(truncationReferenceEnv); ref {
	case "":
	case lab.BrokerKafka:
		o.Broker = lab.BrokerKafka
	default:
		t.Fatalf("$%s = %q: want %q or unset", truncationReferenceEnv, ref, lab.BrokerKafka)
	}
	l, err := lab.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if o.Broker == lab.BrokerKafka {
			for _, b := range l.Brokers() {
				_ = b.Kill()
			}
		}
		l.Close()
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(l.Bootstrap(), ",")...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	tl := &truncLab{l: l, adm: kadm.NewClient(cl)}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "t", -1, -1
	rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2, 3}}}
	rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "unclean.leader.election.enable", Value: kmsg.StringPtr("true")}}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("create t: %v", err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create t: %v", kerr.ErrorForCode(code))
	}
	return tl
}

// partition is partition 0 of t in the metadata of the broker at addr: leader, leader epoch, ISR.
func (tl *truncLab) partition(t *testing.T, ctx context.Context, addr string) (int32, int32, []int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	m, err := kadm.NewClient(cl).Metadata(ctx, "t")
	if err != nil {
		return -1, -1, nil
	}
	p, ok := m.Topics["t"].Partitions[0]
	if !ok || p.Err != nil {
		return -1, -1, nil
	}
	isr := slices.Clone(p.ISR)
	slices.Sort(isr)
	return p.Leader, p.LeaderEpoch, isr
}

// produce writes values to t's partition 0 through addrs with acks (kgo.AllISRAcks or LeaderAck),
// checking their offsets start at want.
func produce(t *testing.T, ctx context.Context, addrs []string, acks kgo.Acks, want int64, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequiredAcks(acks), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i, v := range values {
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 0, Value: []byte(v)}).First()
		if err != nil {
			t.Fatalf("produce %q: %v", v, err)
		}
		if r.Offset != want+int64(i) {
			t.Fatalf("produce %q: offset %d, want %d", v, r.Offset, want+int64(i))
		}
	}
}

// pollUntil polls c (from the test goroutine) until cond holds of everything delivered so far.
func pollUntil(t *testing.T, c *Consumer, got *[]delivery, d time.Duration, what string, cond func([]delivery) bool) {
	t.Helper()
	testutil.WaitFor(t, d, what, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		recs, err := c.Poll(ctx)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Poll: %v", err)
		}
		for _, r := range recs {
			*got = append(*got, delivery{r.Offset, string(r.Value), r.LeaderEpoch})
		}
		return cond(*got)
	})
}

// position is the consumer's position of t-0 and its epoch.
func position(c *Consumer) (int64, int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.owned[TopicPartition{Topic: "t", Partition: 0}]
	if st == nil {
		return -1, -1
	}
	return st.position, st.offsetEpoch
}

// epochAnswer is one OffsetForLeaderEpoch answer for t-0.
type epochAnswer struct {
	code  int16
	epoch int32
	end   int64
}

// askEpoch sends OffsetForLeaderEpoch v4 (replica id -1) for t-0 to the broker at addr.
func askEpoch(t *testing.T, ctx context.Context, addr string, current, epoch int32) epochAnswer {
	t.Helper()
	c, err := wire.Dial(ctx, nil, addr, "epoch-probe")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(4)
	req.ReplicaID = -1
	req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{
		{Partition: 0, CurrentLeaderEpoch: current, LeaderEpoch: epoch}}}}
	resp, err := c.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	return epochAnswer{p.ErrorCode, p.LeaderEpoch, p.EndOffset}
}

// kgoPeer consumes t-0 from the start with franz-go (no group), recording what it delivers and the
// data loss it reports (kgo's KIP-320 validation: kgo.ErrDataLoss).
type kgoPeer struct {
	cl   *kgo.Client
	mu   sync.Mutex
	got  []delivery
	loss []kgo.ErrDataLoss
	stop context.CancelFunc
	done chan struct{}
}

func startKgoPeer(t *testing.T, addrs []string) *kgoPeer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &kgoPeer{cl: cl, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			p.mu.Lock()
			fs.EachError(func(_ string, _ int32, err error) {
				var dl *kgo.ErrDataLoss
				if errors.As(err, &dl) {
					p.loss = append(p.loss, *dl)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { p.got = append(p.got, delivery{r.Offset, string(r.Value), r.LeaderEpoch}) })
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() { p.stop(); <-p.done; cl.Close() })
	return p
}

func (p *kgoPeer) snapshot() ([]delivery, []kgo.ErrDataLoss) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got), slices.Clone(p.loss)
}

func shown(ds []delivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%d:%s", d.offset, d.value))
	}
	return out
}

// TestIntegrationUncleanElectionTruncation (KIP-320): broker 1 leads t [1,2,3]; three records
// (offsets 0-2) reach every replica in epoch 0. Brokers 2 and 3 stop (ISR [1], the leader epoch
// moves to e1 > 0) and broker 1 takes two acks=1 records (offsets 3-4, epoch e1) that no follower
// has. A newconsumer member and a franz-go peer both consume all five: position 5, epoch e1. Broker
// 1 stops; 2 and 3 return and 2 is elected uncleanly (epoch e2 > e1), its log ending at 3, and
// takes "new-3" at offset 3. The member's fetch fails, its metadata names leader 2 in e2, and it
// validates its position (OffsetForLeaderEpoch, current epoch e2, epoch e1): broker 2 answers end
// offset 3 in epoch 0, below the position, so the log was truncated and, with
// auto.offset.reset=earliest, the member seeks to 3 (epoch 0), logs Kafka's "Truncation detected"
// line, and delivers "new-3" at offset 3 (epoch e2) — not a reset to the beginning, and not a skip
// to the log end. The franz-go peer detects the same truncation (ErrDataLoss consumed to 5, reset
// to 3) and reads the same record; so does Kafka 3.9's own consumer (VerifiableConsumer, its log
// line "Truncation detected ... offset=5 ... first offset known to diverge ... offset=3"), once
// broker 1, its group's coordinator, is back.
func TestIntegrationUncleanElectionTruncation(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka, testutil.JVM)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tl := startTruncLab(t, ctx)
	bs := tl.l.Brokers()
	addr := func(i int) string { return bs[i-1].Addr() }
	all := strings.Split(tl.l.Bootstrap(), ",")
	testutil.WaitFor(t, 30*time.Second, "t led by broker 1 with ISR [1 2 3]", func() bool {
		l, _, isr := tl.partition(t, ctx, addr(1))
		return l == 1 && slices.Equal(isr, []int32{1, 2, 3})
	})
	produce(t, ctx, all, kgo.AllISRAcks(), 0, "v0", "v1", "v2")

	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.InfoLevel)
	cfg, err := FromProperties(map[string]string{"bootstrap.servers": tl.l.Bootstrap(), "group.id": "g-trunc", "client.id": "m1",
		"auto.offset.reset": "earliest", "enable.auto.commit": "false", "session.timeout.ms": "30000", "heartbeat.interval.ms": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Log = logrus.NewEntry(logger)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	if err := c.Subscribe("t"); err != nil {
		t.Fatal(err)
	}
	peer := startKgoPeer(t, all)
	jpeer := startJavaPeer(t, tl.l.Bootstrap())
	var got []delivery
	pollUntil(t, c, &got, 60*time.Second, "the member delivers offsets 0-2", func(ds []delivery) bool { return len(ds) >= 3 })

	if err := bs[1].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := bs[2].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var e1 int32
	testutil.WaitFor(t, 30*time.Second, "ISR [1]", func() bool {
		_, e, isr := tl.partition(t, ctx, addr(1))
		e1 = e
		return slices.Equal(isr, []int32{1})
	})
	if e1 <= 0 {
		t.Fatalf("leader epoch %d with ISR [1], want above 0", e1)
	}
	produce(t, ctx, []string{addr(1)}, kgo.LeaderAck(), 3, "lost-3", "lost-4")
	pollUntil(t, c, &got, 30*time.Second, "the member delivers offsets 3-4", func(ds []delivery) bool { return len(ds) >= 5 })
	if pos, epoch := position(c); pos != 5 || epoch != e1 {
		t.Fatalf("position before the election: %d epoch %d, want 5 epoch %d", pos, epoch, e1)
	}
	testutil.WaitFor(t, 30*time.Second, "the kgo peer consumed offsets 0-4", func() bool {
		ds, _ := peer.snapshot()
		return len(ds) >= 5
	})
	testutil.WaitFor(t, 60*time.Second, "Kafka's VerifiableConsumer consumed offsets 0-4", func() bool {
		ds, _ := jpeer.snapshot()
		return len(ds) >= 5
	})

	if err := bs[0].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := bs[1].Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := bs[2].Start(ctx); err != nil {
		t.Fatal(err)
	}
	var e2 int32
	testutil.WaitFor(t, 60*time.Second, "broker 2 elected uncleanly", func() bool {
		l, e, _ := tl.partition(t, ctx, addr(2))
		e2 = e
		return l == 2
	})
	if e2 <= e1 {
		t.Fatalf("leader epoch %d after the unclean election, want above %d", e2, e1)
	}
	produce(t, ctx, []string{addr(2), addr(3)}, kgo.LeaderAck(), 3, "new-3")
	// What the new leader answers for each epoch (the same on Kafka's brokers: the reference run).
	for _, q := range []struct {
		current, epoch int32
		want           epochAnswer
	}{
		{e2, e1, epochAnswer{0, 0, 3}}, // the lost epoch ends where the new leader's log diverged
		{e2, 0, epochAnswer{0, 0, 3}},
		{e2, e2, epochAnswer{0, e2, 4}},
		{e1, e1, epochAnswer{kerr.FencedLeaderEpoch.Code, -1, -1}},
	} {
		if got := askEpoch(t, ctx, addr(2), q.current, q.epoch); got != q.want {
			t.Fatalf("OffsetForLeaderEpoch at broker 2 (current %d, epoch %d): %v epoch %d end %d, want %v epoch %d end %d", q.current, q.epoch,
				kerr.ErrorForCode(got.code), got.epoch, got.end, kerr.ErrorForCode(q.want.code), q.want.epoch, q.want.end)
		}
	}
	pollUntil(t, c, &got, 60*time.Second, "the member delivers offset 3 again", func(ds []delivery) bool { return len(ds) >= 6 })

	want := []delivery{{0, "v0", 0}, {1, "v1", 0}, {2, "v2", 0}, {3, "lost-3", e1}, {4, "lost-4", e1}, {3, "new-3", e2}}
	if !slices.Equal(got, want) {
		t.Fatalf("delivered %v (epochs %v), want %v", shown(got), got, shown(want))
	}
	if pos, epoch := position(c); pos != 4 || epoch != e2 {
		t.Fatalf("position after the truncation: %d epoch %d, want 4 epoch %d", pos, epoch, e2)
	}
	var truncations []logrus.Fields
	for _, e := range hook.AllEntries() {
		if strings.HasPrefix(e.Message, "Truncation detected") {
			truncations = append(truncations, e.Data)
			if e.Level != logrus.InfoLevel || e.Message != fmt.Sprintf("Truncation detected for partition t-0 at offset 5 (epoch %d), resetting offset to the first offset known to diverge 3 (epoch 0)", e1) {
				t.Fatalf("truncation logged as %s %q", e.Level, e.Message)
			}
		}
	}
	if len(truncations) != 1 {
		t.Fatalf("%d truncations logged, want 1: %v", len(truncations), truncations)
	}
	f := truncations[0]
	if f["position"] != int64(5) || f["position_epoch"] != e1 || f["end_offset"] != int64(3) || f["end_offset_epoch"] != int32(0) {
		t.Fatalf("truncation fields %v, want position 5 epoch %d, end offset 3 epoch 0", f, e1)
	}

	// The franz-go peer: the same truncation, the same record.
	testutil.WaitFor(t, 60*time.Second, "the kgo peer reads offset 3 again", func() bool {
		ds, _ := peer.snapshot()
		return len(ds) >= 6
	})
	pds, loss := peer.snapshot()
	if !slices.Equal(pds, want) {
		t.Fatalf("kgo peer delivered %v (epochs %v), want %v", shown(pds), pds, shown(want))
	}
	if len(loss) != 1 || loss[0].ConsumedTo != 5 || loss[0].ConsumedToEpoch != e1 || loss[0].ResetTo != 3 || loss[0].ResetToEpoch != 0 {
		t.Fatalf("kgo peer data loss %+v, want one: consumed to 5 epoch %d, reset to 3 epoch 0", loss, e1)
	}
	// Kafka's consumer: its group's coordinator was on broker 1 (__consumer_offsets' ISR shrank to
	// it), and 3.9's poll validates no position while the coordinator is unknown
	// (updateAssignmentMetadataIfNeeded stops at coordinator.poll); broker 1 returns, follows 2
	// (its acks=1 records truncated) and coordinates again.
	if err := bs[0].Start(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 90*time.Second, "Kafka's VerifiableConsumer reads offset 3 again", func() bool {
		ds, _ := jpeer.snapshot()
		return len(ds) >= 6
	})
	jds, jlines := jpeer.snapshot()
	wantJava := slices.Clone(want)
	for i := range wantJava {
		wantJava[i].epoch = -1
	}
	if !slices.Equal(jds, wantJava) {
		t.Fatalf("Kafka's consumer delivered %v, want %v", shown(jds), shown(wantJava))
	}
	if len(jlines) != 1 || !strings.Contains(jlines[0], fmt.Sprintf("Truncation detected for partition t-0 at offset FetchPosition{offset=5, offsetEpoch=Optional[%d]", e1)) ||
		!strings.Contains(jlines[0], "resetting offset to the first offset known to diverge FetchPosition{offset=3, offsetEpoch=Optional[0]") {
		t.Fatalf("Kafka's consumer logged %q, want one truncation at offset 5 (epoch %d) reset to 3 (epoch 0)", jlines, e1)
	}
	t.Logf("epochs: e1 %d, e2 %d; Kafka's consumer logged: %s", e1, e2, jlines[0])
}

// javaPeer is Kafka 3.9's own consumer, VerifiableConsumer (classic protocol, its own group
// g-java, auto-commit, --verbose: one record_data event per record), with SubscriptionState's log
// lines on stderr: what it delivered and the truncation it logged.
type javaPeer struct {
	cmd       *exec.Cmd
	done      chan struct{}
	mu        sync.Mutex
	got       []delivery // epoch -1: record_data carries none
	truncated []string   // SubscriptionState's "Truncation detected" lines
}

func startJavaPeer(t *testing.T, bootstrap string) *javaPeer {
	t.Helper()
	dir, err := lab.FindKafkaClasspath() // missing: the error names `make deps`, never a skip
	if err != nil {
		t.Fatal(err)
	}
	l4j := filepath.Join(t.TempDir(), "log4j.properties")
	if err := os.WriteFile(l4j, []byte(`log4j.rootLogger=OFF
log4j.logger.org.apache.kafka.clients.consumer.internals.SubscriptionState=INFO, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=%m%n
`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &javaPeer{done: make(chan struct{})}
	p.cmd = exec.Command("java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", filepath.Join(dir, "*"),
		"-Dlog4j.configuration=file:"+l4j, "org.apache.kafka.tools.VerifiableConsumer",
		"--bootstrap-server", bootstrap, "--topic", "t", "--group-id", "g-java", "--group-protocol", "classic",
		"--session-timeout", "30000", "--reset-policy", "earliest", "--enable-autocommit", "--verbose")
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e struct {
				Name   string `json:"name"`
				Offset int64  `json:"offset"`
				Value  string `json:"value"`
			}
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Name == "record_data" {
				p.mu.Lock()
				p.got = append(p.got, delivery{e.Offset, e.Value, -1})
				p.mu.Unlock()
			}
		}
	}()
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if line := sc.Text(); strings.Contains(line, "Truncation detected") {
				p.mu.Lock()
				p.truncated = append(p.truncated, line)
				p.mu.Unlock()
			}
		}
	}()
	go func() {
		defer close(p.done)
		readers.Wait()
		_ = p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *javaPeer) snapshot() ([]delivery, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got), slices.Clone(p.truncated)
}
