package zkconsumer

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// FID-OFFSETS-STORAGE: 0.8.2's offsets.storage=kafka and dual.commit.enabled, against the project's
// broker (its group coordinator is the offset manager) and a real ZooKeeper.

// kafkaOffsets asks the broker (OffsetFetch, franz-go's version) for group's committed offsets of
// topic's partitions 0..n-1 (-1: none).
func kafkaOffsets(t *testing.T, cl *kgo.Client, group, topic string, n int) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	for p := 0; p < n; p++ {
		rt.Partitions = append(rt.Partitions, int32(p))
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("OffsetFetch: %v", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("OffsetFetch: %v", err)
	}
	out := map[int32]int64{}
	for _, tt := range resp.Topics {
		for _, p := range tt.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				t.Fatalf("OffsetFetch %s/%d: %v", tt.Topic, p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	return out
}

// commitKafka commits offset for topic/partition as a consumer outside group management would
// (OffsetCommit, generation -1, no member id).
func commitKafka(t *testing.T, cl *kgo.Client, group, topic string, partition int32, offset int64) {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatalf("OffsetCommit %s/%d=%d: %v", topic, partition, offset, err)
	}
}

// isOffsetWrite is a zk_op write of /consumers/g/offsets or below: what zk_offset_writes counts.
func isOffsetWrite(r timeline.Record) bool {
	return r.Op == "write" && (r.Path == "/consumers/g/offsets" || strings.HasPrefix(r.Path, "/consumers/g/offsets/"))
}

// commits lists m's commit records from index from on as "topic/partition@offset result err".
func (m *member) commits(from int) []string {
	var out []string
	recs := m.rec.Records()
	for _, r := range recs[min(from, len(recs)):] {
		if r.Kind == timeline.Commit {
			out = append(out, strings.TrimSpace(fmt.Sprintf("%s/%d@%d %s %s", r.Topic, *r.Partition, *r.Offset, r.Result, r.Err)))
		}
	}
	return out
}

// offsets.storage=kafka, dual.commit.enabled=false: CommitOffsets sends every owned partition's offset
// to the offset manager (OffsetCommit v1, unfenced: generation -1 and no member id, which the
// coordinator accepts for a group it does not manage), writes nothing to ZooKeeper, records each
// partition as an applied commit, and a later connector of the group resumes from the Kafka offsets.
func TestFIDOffsetsStorageKafkaCommitAndResume(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {1}})
	produce(t, cl, "t", 0, "a0", "a1", "a2")
	produce(t, cl, "t", 1, "b0", "b1")
	a := newAdmin(t, z.Connect())
	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false",
		"offsets.storage": "kafka", "dual.commit.enabled": "false", "offsets.channel.backoff.ms": "100"}

	m := newMember(t, z.Connect(), "g", "c1", props)
	s := drain(allStreams(createStreams(t, m, map[string]int{"t": 1}))...)
	testutil.WaitFor(t, 20*time.Second, "5 messages", func() bool { return consumed(m, s, 5) })
	mark := len(m.rec.Records())
	if err := m.CommitOffsets(); err != nil {
		t.Fatal(err)
	}
	if got, want := kafkaOffsets(t, cl, "g", "t", 2), map[int32]int64{0: 3, 1: 2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("offsets at the offset manager %v, want %v", got, want)
	}
	if got := a.offsets("g", "t", 2); !reflect.DeepEqual(got, map[int32]int64{0: -1, 1: -1}) {
		t.Fatalf("offset znodes %v: written without dual commit", got)
	}
	if got, want := m.commits(mark), []string{"t/0@3 applied", "t/1@2 applied"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("commit records %q, want %q", got, want)
	}
	// 0.8.2 sends every owned partition on every Kafka commit, changed or not.
	if err := m.CommitOffsets(); err != nil {
		t.Fatal(err)
	}
	if got := m.commits(mark); len(got) != 4 || got[2] != "t/0@3 applied" || got[3] != "t/1@2 applied" {
		t.Fatalf("commit records after a second commit %q, want both partitions again", got)
	}
	if n := m.count(0, timeline.ZKOp, isOffsetWrite); n != 0 {
		t.Fatalf("%d ZooKeeper offset writes, want 0 (offsets.storage=kafka, no dual commit)", n)
	}
	m.Shutdown()
	s.wg.Wait()

	produce(t, cl, "t", 0, "a3")
	m2 := newMember(t, z.Connect(), "g", "c2", props)
	s2 := drain(allStreams(createStreams(t, m2, map[string]int{"t": 1}))...)
	testutil.WaitFor(t, 20*time.Second, "the new message", func() bool { return s2.len() >= 1 })
	bar := barrier(t, cl, s2, "t", 1)
	if got, want := s2.got(), sorted([]string{"t/0@3=a3", bar}); !reflect.DeepEqual(got, want) {
		t.Fatalf("resumed connector delivered %v, want %v (from the Kafka-stored offsets)", got, want)
	}
}

// dual.commit.enabled (the default with offsets.storage=kafka): each partition the offset manager
// accepted is also written to ZooKeeper — only when it changed, as commitOffsetToZooKeeper checks its
// checkpoint — and a rebalance takes max(ZooKeeper, Kafka) per partition.
func TestFIDOffsetsStorageDualCommitTakesMax(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {1}})
	produce(t, cl, "t", 0, "a0", "a1", "a2")
	produce(t, cl, "t", 1, "b0", "b1")
	a := newAdmin(t, z.Connect())
	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false",
		"offsets.storage": "kafka", "offsets.channel.backoff.ms": "100"}

	m := newMember(t, z.Connect(), "g", "c1", props)
	s := drain(allStreams(createStreams(t, m, map[string]int{"t": 1}))...)
	testutil.WaitFor(t, 20*time.Second, "5 messages", func() bool { return consumed(m, s, 5) })
	if err := m.CommitOffsets(); err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{0: 3, 1: 2}
	if got := kafkaOffsets(t, cl, "g", "t", 2); !reflect.DeepEqual(got, want) {
		t.Fatalf("offsets at the offset manager %v, want %v", got, want)
	}
	if got := a.offsets("g", "t", 2); !reflect.DeepEqual(got, want) {
		t.Fatalf("offset znodes %v, want %v (dual commit)", got, want)
	}
	// Partition 0's write finds no node: set, create, then the parents .../offsets/t, .../offsets
	// (ZkClient creates the last missing parent first: t fails, offsets, t again) and the node: 6.
	// Partition 1's: set, create: 2.
	writes := m.count(0, timeline.ZKOp, isOffsetWrite)
	if writes != 8 {
		t.Fatalf("%d ZooKeeper offset writes, want 8 (the first writes of 2 offsets)", writes)
	}
	if err := m.CommitOffsets(); err != nil { // unchanged: Kafka gets both again, ZooKeeper nothing
		t.Fatal(err)
	}
	if n := m.count(0, timeline.ZKOp, isOffsetWrite); n != writes {
		t.Fatalf("ZooKeeper offset writes went from %d to %d on an unchanged commit", writes, n)
	}
	if n := m.count(0, timeline.Commit, func(r timeline.Record) bool { return r.Result == timeline.CommitApplied }); n != 4 {
		t.Fatalf("applied commit records = %d, want 4 (two Kafka commits of two partitions)", n)
	}
	m.Shutdown()
	s.wg.Wait()

	// Skew the stores: ZooKeeper behind on partition 0, Kafka behind on partition 1. max() resumes
	// each where the consumer really was.
	if _, err := a.conn.Set("/consumers/g/offsets/t/0", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	commitKafka(t, cl, "g", "t", 1, 1)
	produce(t, cl, "t", 0, "a3")
	produce(t, cl, "t", 1, "b2")
	m2 := newMember(t, z.Connect(), "g", "c2", props)
	s2 := drain(allStreams(createStreams(t, m2, map[string]int{"t": 1}))...)
	testutil.WaitFor(t, 20*time.Second, "the two new messages", func() bool { return s2.len() >= 2 })
	bar0, bar1 := barrier(t, cl, s2, "t", 0), barrier(t, cl, s2, "t", 1)
	if got, want := s2.got(), sorted([]string{"t/0@3=a3", "t/1@2=b2", bar0, bar1}); !reflect.DeepEqual(got, want) {
		t.Fatalf("resumed connector delivered %v, want %v (max of ZooKeeper and Kafka)", got, want)
	}
}

// The commit is unfenced but not unchecked: while the coordinator manages a live group of the same
// name (a 3.9 consumer is a member), generation -1 with no member id is refused with
// UNKNOWN_MEMBER_ID. Each partition is recorded as a rejected commit with the error, CommitOffsets
// returns it, and with dual commit nothing reaches ZooKeeper (only accepted partitions are written).
func TestFIDOffsetsStorageRejectedCommitRecorded(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {1}})
	createTopicAssigned(t, cl, "other", [][]int32{{1}})
	produce(t, cl, "t", 0, "a0")
	produce(t, cl, "t", 1, "b0")
	a := newAdmin(t, z.Connect())

	grp, err := kgo.NewClient(kgo.SeedBrokers(b.b.Addr()), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("other"),
		kgo.SessionTimeout(6*time.Second), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(grp.Close)
	pollCtx, stopPoll := context.WithCancel(context.Background())
	polled := make(chan struct{})
	go func() { // the member's application: poll until the test ends
		defer close(polled)
		for pollCtx.Err() == nil {
			grp.PollFetches(pollCtx)
		}
	}()
	t.Cleanup(func() { stopPoll(); <-polled })
	adm := kadm.NewClient(cl)
	testutil.WaitFor(t, 30*time.Second, "group g Stable with one member", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d, err := adm.DescribeGroups(ctx, "g")
		return err == nil && d["g"].State == "Stable" && len(d["g"].Members) == 1
	})

	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false",
		"offsets.storage": "kafka", "offsets.channel.backoff.ms": "100"}
	m := newMember(t, z.Connect(), "g", "c1", props)
	s := drain(allStreams(createStreams(t, m, map[string]int{"t": 1}))...)
	testutil.WaitFor(t, 20*time.Second, "2 messages", func() bool { return consumed(m, s, 2) })
	mark := len(m.rec.Records())
	err = m.CommitOffsets()
	if err == nil || !strings.Contains(err.Error(), "UNKNOWN_MEMBER_ID") {
		t.Fatalf("CommitOffsets = %v, want UNKNOWN_MEMBER_ID", err)
	}
	recs := m.commits(mark)
	if len(recs) != 2 || !strings.HasPrefix(recs[0], "t/0@1 rejected UNKNOWN_MEMBER_ID") || !strings.HasPrefix(recs[1], "t/1@1 rejected UNKNOWN_MEMBER_ID") {
		t.Fatalf("commit records %q, want both partitions rejected with UNKNOWN_MEMBER_ID", recs)
	}
	if n := m.count(0, timeline.ZKOp, isOffsetWrite); n != 0 {
		t.Fatalf("%d ZooKeeper offset writes for refused commits, want 0", n)
	}
	if got := a.offsets("g", "t", 2); !reflect.DeepEqual(got, map[int32]int64{0: -1, 1: -1}) {
		t.Fatalf("offset znodes %v after refused commits", got)
	}
}

// gateListener blocks BeforeStartingFetchers until released: a window in which the owner znodes are
// claimed and the fetchers not yet started.
type gateListener struct {
	entered, release chan struct{}
}

func (l *gateListener) BeforeReleasingPartitions(map[string][]int32) {}

func (l *gateListener) BeforeStartingFetchers(string, map[string]map[int32]string) {
	l.entered <- struct{}{}
	<-l.release
}

// A commit made while a rebalance starts the new assignment (here from the application, in the
// listener's window; in a scenario, the auto-commit ticker) is recorded after the member's
// `assigned` record: with offsets.storage=kafka every owned partition is sent on every commit, and a
// commit record before `assigned` would read as a commit by a non-owner (stale_commits_applied)
// although the member holds the owner znodes.
func TestFIDOffsetsStorageCommitInRebalanceRecordedAfterAssigned(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {1}})
	produce(t, cl, "t", 0, "a0")
	l := &gateListener{entered: make(chan struct{}), release: make(chan struct{})}
	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false",
		"offsets.storage": "kafka", "dual.commit.enabled": "false", "offsets.channel.backoff.ms": "100"}
	m := newMemberWith(t, z.Connect(), "g", "c1", props, func(c *Config) { c.Listener = l })
	// CreateMessageStreams blocks in the gated rebalance: it runs on its own goroutine, which hands
	// its outcome to the test goroutine (t.Fatal only there).
	type created struct {
		streams map[string][]<-chan Message
		err     error
	}
	streams := make(chan created, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := m.CreateMessageStreams(ctx, map[string]int{"t": 1})
		streams <- created{s, err}
	}()
	select {
	case <-l.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the initial rebalance never reached BeforeStartingFetchers")
	}
	commitErr := m.CommitOffsets() // in the window: owner znodes claimed, fetchers not started
	close(l.release)
	cr := <-streams
	if cr.err != nil {
		t.Fatalf("%s: CreateMessageStreams: %v", m.ConsumerID(), cr.err)
	}
	s := drain(allStreams(cr.streams)...)
	testutil.WaitFor(t, 20*time.Second, "a0", func() bool { return s.len() >= 1 })
	if commitErr != nil {
		t.Fatal(commitErr)
	}
	assigned, firstCommit := -1, -1
	for i, r := range m.rec.Records() {
		if r.Kind == timeline.Assigned && assigned < 0 {
			assigned = i
		}
		if r.Kind == timeline.Commit && firstCommit < 0 {
			firstCommit = i
		}
	}
	if got := m.commits(0); !reflect.DeepEqual(got, []string{"t/0@-1 applied", "t/1@-1 applied"}) {
		t.Fatalf("commit records %q, want both partitions' (not yet fetched: -1) offsets applied", got)
	}
	if assigned < 0 || firstCommit < assigned {
		t.Fatalf("first commit record at %d, assigned at %d: the commit is recorded before the member owns the partitions", firstCommit, assigned)
	}
}

// A broken offsets channel is dropped and the offset manager located again, as 0.8.2's
// offsetsChannel.disconnect: with the member's broker link cut, a commit on the established channel
// fails (each partition recorded rejected with the I/O error); once the link heals, the next commit
// finds the manager anew (ConsumerMetadata) and lands.
func TestFIDOffsetsStorageChannelRelocatedAfterBreak(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}})
	produce(t, cl, "t", 0, "a0", "a1")
	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false",
		"offsets.storage": "kafka", "dual.commit.enabled": "false",
		"offsets.channel.backoff.ms": "100", "offsets.channel.socket.timeout.ms": "3000"}
	m, links := linkedMember(t, z.Connect(), "g", "c1", props)
	s := drain(allStreams(createStreams(t, m, map[string]int{"t": 1}))...)
	testutil.WaitFor(t, 20*time.Second, "2 messages", func() bool { return consumed(m, s, 2) })
	if err := m.CommitOffsets(); err != nil {
		t.Fatal(err)
	}
	if err := links.Cut(lab.LinkFetch); err != nil {
		t.Fatal(err)
	}
	if err := m.CommitOffsets(); err == nil {
		t.Fatal("a commit over the cut link succeeded")
	}
	if err := links.Heal(lab.LinkFetch); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, "t", 0, "a2")
	testutil.WaitFor(t, 20*time.Second, "the third message", func() bool { return consumed(m, s, 3) })
	if err := m.CommitOffsets(); err != nil {
		t.Fatalf("commit after the link healed: %v", err)
	}
	got := m.commits(0)
	if len(got) != 3 || got[0] != "t/0@2 applied" || !strings.HasPrefix(got[1], "t/0@2 rejected ") || got[2] != "t/0@3 applied" {
		t.Fatalf("commit records %q, want applied, rejected (I/O error), applied at 3", got)
	}
	if off := kafkaOffsets(t, cl, "g", "t", 1); off[0] != 3 {
		t.Fatalf("offset at the offset manager %d, want 3", off[0])
	}
}
