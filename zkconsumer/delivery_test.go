package zkconsumer

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// These tests run the connector against the project's real broker (package broker) registered in
// a real ZooKeeper, with franz-go producing.

type testBroker struct {
	t     *testing.T
	props map[string]string
	b     *broker.Broker
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startBroker starts broker id on a fixed port and data dir, so that a restart is the same broker.
func startBroker(t *testing.T, zkConnect string, id int) *testBroker {
	t.Helper()
	tb := &testBroker{t: t, props: map[string]string{
		"broker.id":                        strconv.Itoa(id),
		"listeners":                        fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", freePort(t)),
		"zookeeper.connect":                zkConnect,
		"log.dirs":                         t.TempDir(),
		"offsets.topic.replication.factor": "1",
		"auto.create.topics.enable":        "false",
	}}
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
	b, err := broker.Start(ctx, cfg, testLog().WithField("broker", tb.props["broker.id"]))
	if err != nil {
		tb.t.Fatalf("starting broker %s: %v", tb.props["broker.id"], err)
	}
	tb.b = b
}

func (tb *testBroker) stop() {
	if tb.b != nil {
		tb.b.Close()
		tb.b = nil
	}
}

func newClient(t *testing.T, brokers ...*testBroker) *kgo.Client {
	t.Helper()
	var seeds []string
	for _, b := range brokers {
		seeds = append(seeds, b.b.Addr())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createTopicAssigned creates topic with an explicit replica assignment (partition → replicas).
func createTopicAssigned(t *testing.T, cl *kgo.Client, topic string, assignment [][]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

// produce sends values to one partition and returns their offsets.
func produce(t *testing.T, cl *kgo.Client, topic string, partition int32, values ...string) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)})
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("producing to %s/%d: %v", topic, partition, err)
	}
	var offs []int64
	for _, r := range res {
		offs = append(offs, r.Record.Offset)
	}
	return offs
}

// sink collects what a connector's streams deliver.
type sink struct {
	mu   sync.Mutex
	msgs []Message
	wg   sync.WaitGroup
}

func drain(streams ...<-chan Message) *sink {
	s := &sink{}
	for _, st := range streams {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for m := range st {
				s.mu.Lock()
				s.msgs = append(s.msgs, m)
				s.mu.Unlock()
			}
		}()
	}
	return s
}

// got lists delivered messages as "topic/partition@offset=value", sorted.
func (s *sink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.msgs {
		out = append(out, fmt.Sprintf("%s/%d@%d=%s", m.Topic, m.Partition, m.Offset, m.Value))
	}
	sort.Strings(out)
	return out
}

func (s *sink) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}

// barrier produces a sentinel record to topic/partition and waits until s has delivered it. A
// partition is delivered in offset order, so by then s has delivered everything it was going to
// deliver from that partition before the sentinel — a condition, where a sleep could only hope that
// nothing more comes. It returns the sentinel as got() lists it.
func barrier(t *testing.T, cl *kgo.Client, s *sink, topic string, partition int32) string {
	t.Helper()
	entry := msgs(topic, partition, produce(t, cl, topic, partition, "barrier")[0], "barrier")[0]
	testutil.WaitFor(t, 20*time.Second, "the barrier "+entry, func() bool { return slices.Contains(s.got(), entry) })
	return entry
}

func allStreams(byTopic map[string][]<-chan Message) []<-chan Message {
	var out []<-chan Message
	for _, s := range byTopic {
		out = append(out, s...)
	}
	return out
}

func msgs(topic string, partition int32, from int64, values ...string) []string {
	var out []string
	for i, v := range values {
		out = append(out, fmt.Sprintf("%s/%d@%d=%s", topic, partition, from+int64(i), v))
	}
	return out
}

func sorted(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	sort.Strings(out)
	return out
}

// Fetch and deliver: messages arrive on the owning thread's stream with their offsets; explicit
// CommitOffsets writes the next offsets in decimal; a later connector of the group resumes there.
func TestDeliverAndCommit(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {1}})
	produce(t, cl, "t", 0, "a0", "a1", "a2")
	produce(t, cl, "t", 1, "b0", "b1")
	a := newAdmin(t, z.Connect())

	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false"}
	m := newMember(t, z.Connect(), "g", "c1", props)
	s := drain(allStreams(createStreams(t, m, map[string]int{"t": 2}))...)
	want := sorted(msgs("t", 0, 0, "a0", "a1", "a2"), msgs("t", 1, 0, "b0", "b1"))
	testutil.WaitFor(t, 20*time.Second, "5 messages", func() bool { return consumed(m, s, 5) })
	if got := s.got(); !reflect.DeepEqual(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	// Two threads: range gives thread 0 partition 0 and thread 1 partition 1.
	if got := a.owners("g", "t"); !reflect.DeepEqual(got, map[int32]string{0: "g_c1-0", 1: "g_c1-1"}) {
		t.Fatalf("owners %v", got)
	}
	if n := m.count(0, timeline.Deliver, nil); n != 5 {
		t.Fatalf("deliver records = %d, want 5", n)
	}
	if err := m.CommitOffsets(); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int]string{0: "3", 1: "2"} {
		data, _, err := a.conn.Get(fmt.Sprintf("/consumers/g/offsets/t/%d", p))
		if err != nil || string(data) != want {
			t.Fatalf("offset znode of partition %d = %q, %v; want %q", p, data, err, want)
		}
	}
	if n := m.count(0, timeline.Commit, func(r timeline.Record) bool { return r.Result == timeline.CommitApplied }); n != 2 {
		t.Fatalf("applied commit records = %d, want 2", n)
	}
	if err := m.CommitOffsets(); err != nil { // nothing changed: nothing written
		t.Fatal(err)
	}
	if n := m.count(0, timeline.Commit, nil); n != 2 {
		t.Fatalf("commit records after an idle commit = %d, want 2", n)
	}
	m.Shutdown()
	s.wg.Wait() // the streams closed

	produce(t, cl, "t", 0, "a3")
	m2 := newMember(t, z.Connect(), "g", "c2", props)
	s2 := drain(allStreams(createStreams(t, m2, map[string]int{"t": 1}))...)
	// Partition 0 is delivered in offset order: anything older than a3 would have come first.
	testutil.WaitFor(t, 20*time.Second, "the new message", func() bool { return s2.len() >= 1 })
	if got := s2.got(); !reflect.DeepEqual(got, []string{"t/0@3=a3"}) {
		t.Fatalf("resumed connector delivered %v, want only t/0@3=a3", got)
	}
}

// ZK-NO-AUTOCOMMIT (KAFKA-919): with auto.commit.enable=false the rebalance commits nothing, so
// the offset znodes stay absent and the N messages read before a second connector joins are
// delivered again.
func TestZKNoAutoCommit(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {1}})
	produce(t, cl, "t", 0, "a0", "a1", "a2")
	produce(t, cl, "t", 1, "b0", "b1", "b2")
	a := newAdmin(t, z.Connect())
	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false"}

	m1 := newMember(t, z.Connect(), "g", "c1", props)
	s1 := drain(allStreams(createStreams(t, m1, map[string]int{"t": 1}))...)
	first := sorted(msgs("t", 0, 0, "a0", "a1", "a2"), msgs("t", 1, 0, "b0", "b1", "b2"))
	testutil.WaitFor(t, 20*time.Second, "6 messages", func() bool { return consumed(m1, s1, 6) })
	if got := s1.got(); !reflect.DeepEqual(got, first) {
		t.Fatalf("c1 delivered %v", got)
	}
	mark := len(m1.rec.Records())

	m2 := newMember(t, z.Connect(), "g", "c2", props)
	s2 := drain(allStreams(createStreams(t, m2, map[string]int{"t": 1}))...)
	testutil.WaitFor(t, 20*time.Second, "redelivery", func() bool { return s1.len() >= 9 && s2.len() >= 3 })
	bar0, bar1 := barrier(t, cl, s1, "t", 0), barrier(t, cl, s2, "t", 1)
	if got := s2.got(); !reflect.DeepEqual(got, sorted(msgs("t", 1, 0, "b0", "b1", "b2"), []string{bar1})) {
		t.Fatalf("c2 delivered %v, want partition 1 from offset 0 again (then the barrier)", got)
	}
	if got := s1.got(); !reflect.DeepEqual(got, sorted(first, msgs("t", 0, 0, "a0", "a1", "a2"), []string{bar0})) {
		t.Fatalf("c1 delivered %v, want its 6 then partition 0 again (then the barrier)", got)
	}
	for _, p := range []int{0, 1} {
		if ok, _, err := a.conn.Exists(fmt.Sprintf("/consumers/g/offsets/t/%d", p)); ok || err != nil {
			t.Fatalf("offset znode of partition %d exists (%v, %v): the rebalance committed", p, ok, err)
		}
	}
	if n := m1.count(mark, timeline.RebalanceBegin, nil); n != 1 {
		t.Fatalf("c1 rebalances after the join = %d, want 1", n)
	}
	if n := m1.count(0, timeline.Commit, nil) + m2.count(0, timeline.Commit, nil); n != 0 {
		t.Fatalf("%d commit records, want none", n)
	}
}

// The same join with auto-commit on: the rebalance commits what c1 consumed before releasing,
// so nothing is delivered twice (the contrast that makes ZK-NO-AUTOCOMMIT's redelivery a fact of
// the setting, not of the connector).
func TestAutoCommitBeforeRelease(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {1}})
	produce(t, cl, "t", 0, "a0", "a1")
	produce(t, cl, "t", 1, "b0", "b1")
	a := newAdmin(t, z.Connect())
	props := map[string]string{"auto.offset.reset": "smallest"} // auto.commit.enable=true, interval 60 s

	m1 := newMember(t, z.Connect(), "g", "c1", props)
	s1 := drain(allStreams(createStreams(t, m1, map[string]int{"t": 1}))...)
	testutil.WaitFor(t, 20*time.Second, "4 messages", func() bool { return consumed(m1, s1, 4) })
	m2 := newMember(t, z.Connect(), "g", "c2", props)
	s2 := drain(allStreams(createStreams(t, m2, map[string]int{"t": 1}))...)
	testutil.WaitFor(t, 20*time.Second, "the commit before release", func() bool {
		d, _, err := a.conn.Get("/consumers/g/offsets/t/1")
		return err == nil && string(d) == "2"
	})
	produce(t, cl, "t", 1, "b2")
	// Partition 1 is delivered in offset order: a redelivered b0 or b1 would have come before b2.
	testutil.WaitFor(t, 20*time.Second, "b2 at c2", func() bool { return s2.len() >= 1 })
	if got := s2.got(); !reflect.DeepEqual(got, []string{"t/1@2=b2"}) {
		t.Fatalf("c2 delivered %v, want only t/1@2=b2", got)
	}
	// c1 keeps partition 0: a redelivered a0 or a1 would come before the barrier.
	bar0 := barrier(t, cl, s1, "t", 0)
	if got := s1.got(); !reflect.DeepEqual(got, sorted(msgs("t", 0, 0, "a0", "a1"), msgs("t", 1, 0, "b0", "b1"), []string{bar0})) {
		t.Fatalf("c1 delivered %v, want its 4 (no redelivery), then the barrier", got)
	}
	// c1's pre-release commit is its last act as owner: in its timeline both commits come before
	// the revocation (the stale_commits figures rely on this order).
	var order []timeline.Kind
	for _, r := range m1.rec.Records() {
		if r.Kind == timeline.Commit || r.Kind == timeline.Revoked {
			order = append(order, r.Kind)
		}
	}
	if want := []timeline.Kind{timeline.Commit, timeline.Commit, timeline.Revoked}; !reflect.DeepEqual(order[:min(3, len(order))], want) {
		t.Fatalf("c1's commits and revocations in order %v, want %v first", order, want)
	}
}

// waitLeader waits until Metadata names a leader (or none, leader -1) for topic/partition.
func waitLeader(t *testing.T, cl *kgo.Client, topic string, partition, want int32) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, fmt.Sprintf("leader of %s/%d = %d", topic, partition, want), func() bool {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 {
			return false
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.Partition == partition {
				return p.Leader == want
			}
		}
		return false
	})
}

// ZK-LEADERLESS (KAFKA-693): partition 1's only broker is down when the connector starts. The
// rebalance succeeds at once, both owner znodes name the connector, partition 0 is consumed while
// the broker is down, partition 1 once it is back — with no restart and no other rebalance.
func TestZKLeaderless(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b1 := startBroker(t, z.Connect(), 1)
	b2 := startBroker(t, z.Connect(), 2)
	cl := newClient(t, b1, b2)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {2}})
	produce(t, cl, "t", 1, "b0", "b1") // before broker 2 goes
	b2.stop()
	waitLeader(t, cl, "t", 1, -1)
	produce(t, cl, "t", 0, "a0", "a1", "a2")
	a := newAdmin(t, z.Connect())

	m := newMember(t, z.Connect(), "g", "c1", map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false"})
	s := drain(allStreams(createStreams(t, m, map[string]int{"t": 1}))...)
	if n := m.count(0, timeline.RebalanceEnd, func(r timeline.Record) bool { return *r.OK && r.Attempt == 1 }); n != 1 {
		t.Fatalf("rebalance_end{ok, attempt 1} = %d, want 1", n)
	}
	if got := a.owners("g", "t"); !reflect.DeepEqual(got, map[int32]string{0: "g_c1-0", 1: "g_c1-0"}) {
		t.Fatalf("owners %v, want both partitions owned by g_c1-0", got)
	}
	testutil.WaitFor(t, 20*time.Second, "partition 0 while broker 2 is down", func() bool { return s.len() >= 3 })
	// Nothing more of partition 0 comes before its barrier; partition 1 is still with the leader
	// finder (its only broker is down), so no fetcher has it and nothing of it can come.
	bar := barrier(t, cl, s, "t", 0)
	if got, want := m.fetchPlaces(), map[string]string{"t/0": "broker 1", "t/1": "no leader"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("while broker 2 is down: partitions at %v, want %v", got, want)
	}
	if got := s.got(); !reflect.DeepEqual(got, sorted(msgs("t", 0, 0, "a0", "a1", "a2"), []string{bar})) {
		t.Fatalf("while broker 2 is down: delivered %v", got)
	}

	b2.start()
	testutil.WaitFor(t, 30*time.Second, "partition 1 after broker 2 returns", func() bool { return s.len() >= 6 })
	if got := s.got(); !reflect.DeepEqual(got, sorted(msgs("t", 0, 0, "a0", "a1", "a2"), []string{bar}, msgs("t", 1, 0, "b0", "b1"))) {
		t.Fatalf("after broker 2 returned: delivered %v", got)
	}
	if n := m.count(0, timeline.RebalanceBegin, nil); n != 1 {
		t.Fatalf("rebalances = %d, want 1 (no rebalance for a broker's return)", n)
	}
	if n := m.count(0, timeline.Error, nil); n != 0 {
		t.Fatalf("%d error records", n)
	}
}

// ZK-PARTITIONS-ADDED (KAFKA-1075): the topic grows from 2 to 4 partitions (CreatePartitions; the
// broker rewrites /brokers/topics/t); both connectors rebalance, range splits 2 and 2, and the
// messages sent to partitions 2 and 3 are consumed by their new owner without restarts.
func TestZKPartitionsAdded(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {1}})
	a := newAdmin(t, z.Connect())
	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false"}
	m1 := newMember(t, z.Connect(), "g", "c1", props)
	s1 := drain(allStreams(createStreams(t, m1, map[string]int{"t": 1}))...)
	m2 := newMember(t, z.Connect(), "g", "c2", props)
	s2 := drain(allStreams(createStreams(t, m2, map[string]int{"t": 1}))...)
	testutil.WaitFor(t, 20*time.Second, "2 partitions split", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), map[int32]string{0: "g_c1-0", 1: "g_c2-0"}) && m1.rebalanceIdle() && m2.rebalanceIdle()
	})

	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "t", 4
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	want := map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0"}
	testutil.WaitFor(t, 30*time.Second, "4 partitions split", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), want) && m1.rebalanceIdle() && m2.rebalanceIdle()
	})
	waitLeader(t, cl, "t", 3, 1)
	produce(t, cl, "t", 2, "c0", "c1")
	produce(t, cl, "t", 3, "d0")
	testutil.WaitFor(t, 20*time.Second, "the new partitions' messages", func() bool { return s2.len() >= 3 })
	bars2 := []string{barrier(t, cl, s2, "t", 2), barrier(t, cl, s2, "t", 3)}
	if got := s2.got(); !reflect.DeepEqual(got, sorted(msgs("t", 2, 0, "c0", "c1"), msgs("t", 3, 0, "d0"), bars2)) {
		t.Fatalf("c2 delivered %v", got)
	}
	bars1 := []string{barrier(t, cl, s1, "t", 0), barrier(t, cl, s1, "t", 1)}
	if got := s1.got(); !reflect.DeepEqual(got, sorted(bars1)) {
		t.Fatalf("c1 delivered %v, want only the barriers (partitions 0 and 1 had no messages)", got)
	}
	if n := m1.count(0, timeline.Error, nil) + m2.count(0, timeline.Error, nil); n != 0 {
		t.Fatalf("%d error records", n)
	}
}

// ZK-FAILED-ATTEMPT-RELEASES with fetching: while another session squats on an owner znode the
// connectors' attempts fail (each deleting what it claimed); once it is gone every partition has
// one owner znode and each connector fetches exactly the partitions whose znode names it.
func TestZKFailedAttemptReleasesFetching(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {1}, {1}, {1}})
	squatter := newAdmin(t, z.Connect())
	squatter.create("/consumers/g/owners/t/3", []byte("g_other-0"), zk.FlagEphemeral)
	a := newAdmin(t, z.Connect())
	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false", "rebalance.backoff.ms": "300", "rebalance.max.retries": "50"}

	var ms []*member
	streams := make([]map[string][]<-chan Message, 2)
	var wg sync.WaitGroup
	for i, id := range []string{"c1", "c2"} {
		m := newMember(t, z.Connect(), "g", id, props)
		ms = append(ms, m)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var err error
			if streams[i], err = m.CreateMessageStreams(ctx, map[string]int{"t": 1}); err != nil {
				t.Errorf("%s: %v", m.ConsumerID(), err)
			}
		}()
	}
	// Both keep failing while the squatter holds partition 3; no failed attempt leaves a claim.
	testutil.WaitFor(t, 20*time.Second, "failed attempts", func() bool {
		return ms[1].count(0, timeline.ZKOp, func(r timeline.Record) bool { return isWrite(r) && r.Path == "/consumers/g/owners/t/3" }) >= 2
	})
	squatter.conn.Close()
	wg.Wait()
	s1, s2 := drain(allStreams(streams[0])...), drain(allStreams(streams[1])...)
	want := map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0"}
	testutil.WaitFor(t, 30*time.Second, "stable owners", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), want) && ms[0].rebalanceIdle() && ms[1].rebalanceIdle()
	})
	for p := int32(0); p < 4; p++ {
		produce(t, cl, "t", p, fmt.Sprintf("v%d", p))
	}
	delivered := func(m *member) map[int32]int {
		out := map[int32]int{}
		for _, r := range m.rec.Records() {
			if r.Kind == timeline.Deliver {
				out[*r.Partition]++
			}
		}
		return out
	}
	testutil.WaitFor(t, 20*time.Second, "4 deliveries", func() bool { return s1.len()+s2.len() >= 4 })
	// A barrier after each partition's record, at its owner: what else was going to come has come.
	bars := []string{barrier(t, cl, s1, "t", 0), barrier(t, cl, s1, "t", 1), barrier(t, cl, s2, "t", 2), barrier(t, cl, s2, "t", 3)}
	if got := sorted(s1.got(), s2.got()); !reflect.DeepEqual(got, sorted(msgs("t", 0, 0, "v0"), msgs("t", 1, 0, "v1"), msgs("t", 2, 0, "v2"), msgs("t", 3, 0, "v3"), bars)) {
		t.Fatalf("delivered %v", got)
	}
	testutil.WaitFor(t, 10*time.Second, "the barriers' deliver records", func() bool {
		return ms[0].delivered("t", 0, 1) && ms[0].delivered("t", 1, 1) && ms[1].delivered("t", 2, 1) && ms[1].delivered("t", 3, 1)
	})
	if got := delivered(ms[0]); !reflect.DeepEqual(got, map[int32]int{0: 2, 1: 2}) {
		t.Fatalf("c1 delivered partitions %v, want 0 and 1 twice each (the record, then the barrier)", got)
	}
	if got := delivered(ms[1]); !reflect.DeepEqual(got, map[int32]int{2: 2, 3: 2}) {
		t.Fatalf("c2 delivered partitions %v, want 2 and 3 twice each (the record, then the barrier)", got)
	}
	for _, m := range ms {
		if n := m.givenUp(); n != 0 {
			t.Errorf("%s gave up a rebalance %d times", m.ConsumerID(), n)
		}
	}
}

// A full queue (the application reads nothing) blocks the fetcher; a rebalance and Shutdown must
// still stop it (Kafka interrupts the blocked ConsumerFetcherThread).
func TestStopWithFullQueues(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {1}, {1}, {1}})
	for p := int32(0); p < 4; p++ {
		produce(t, cl, "t", p, "v")
	}
	props := map[string]string{"auto.offset.reset": "smallest", "queued.max.message.chunks": "1"}
	m := newMember(t, z.Connect(), "g", "c1", props)
	createStreams(t, m, map[string]int{"t": 1}) // never read
	// 1 chunk handed over + 1 queued: the fetcher is stuck on the third.
	testutil.WaitFor(t, 20*time.Second, "the fetcher blocked", func() bool {
		m.fetcher.mu.Lock()
		defer m.fetcher.mu.Unlock()
		for _, f := range m.fetcher.fetchers {
			f.mu.Lock()
			n := 0
			for _, s := range f.offsets {
				if s.offset > 0 {
					n++
				}
			}
			f.mu.Unlock()
			if n >= 3 {
				return true
			}
		}
		return false
	})
	m2 := newMember(t, z.Connect(), "g", "c2", props) // a rebalance must stop the blocked fetcher
	createStreams(t, m2, map[string]int{"t": 1})
	a := newAdmin(t, z.Connect())
	testutil.WaitFor(t, 20*time.Second, "the split", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0"}) && m.rebalanceIdle() && m2.rebalanceIdle()
	})
	done := make(chan struct{})
	go func() { m.Shutdown(); m2.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown hangs on a fetcher blocked by a full queue")
	}
}
