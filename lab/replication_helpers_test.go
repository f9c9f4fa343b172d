package lab

// Shared helpers of the replication acceptance tests (replication_test.go): labs of broker processes
// (kill -9 and restart), clients seeded with the whole lab or with one broker, replicated topics,
// waits on the ISR, per-replica log end offsets, FindCoordinator, the partition state znode.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// ReplicationReferenceEnv, set to "kafka", runs the replication tests on real Kafka 3.9 brokers
// (BrokerKafka) instead of this project's: the reference the tests' expectations were checked on.
const ReplicationReferenceEnv = "REBALANCELAB_REPLICATION_REFERENCE"

// startReplicatedLab starts ZooKeeper and n broker processes of this project (kill -9-able) with the
// lab's settings plus config (nil: none). The lab's own offsets.topic.replication.factor is
// min(3, n) (LabBrokerSettings); config may override it. With $REBALANCELAB_REPLICATION_REFERENCE=kafka
// the brokers are Kafka 3.9's.
func startReplicatedLab(t *testing.T, n int, config map[string]string) *Lab {
	t.Helper()
	o := Options{Brokers: n, BrokersAs: BrokersProcess, BrokerConfig: maps.Clone(config), Dir: t.TempDir()}
	switch ref := os.Getenv(ReplicationReferenceEnv); ref {
	case "":
		o.BrokerBinary = rebalancelabBinary(t)
	case BrokerKafka:
		o.Broker = BrokerKafka
	default:
		t.Fatalf("$%s = %q: want %q or unset", ReplicationReferenceEnv, ref, BrokerKafka)
	}
	l := startLab(t, o)
	t.Cleanup(func() { // before Close (cleanups run last first): the logs of a failed run
		if t.Failed() {
			if dir := os.Getenv("REBALANCELAB_KEEP_LOGS"); dir != "" {
				for _, b := range l.Brokers() {
					if data, err := os.ReadFile(b.LogPath()); err == nil {
						_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-broker-%d.log", t.Name(), b.ID())), data, 0o644)
					}
				}
			}
			for _, b := range l.Brokers() {
				t.Logf("broker %d log tail (%s):\n%s", b.ID(), b.LogPath(), fileTail(b.LogPath(), 3000))
			}
		}
		if o.Broker == BrokerKafka {
			// Kafka's controlled shutdown of the last brokers of a replicated cluster outlasts Close's
			// 10 s SIGTERM grace (it retries moving leaders nowhere); the reference run kills them.
			for _, b := range l.Brokers() {
				_ = b.Kill()
			}
		}
	})
	return l
}

// newClient is a kgo client seeded with addrs (every broker of l when addrs is empty), closed at the
// end of the test.
func newClient(t *testing.T, l *Lab, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	if len(addrs) == 0 {
		addrs = strings.Split(l.Bootstrap(), ",")
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient(%v): %v", addrs, err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// addrsExcept is every broker's address but those of the given ids.
func addrsExcept(l *Lab, ids ...int32) []string {
	var out []string
	for _, b := range l.Brokers() {
		if !slices.Contains(ids, b.ID()) {
			out = append(out, b.Addr())
		}
	}
	return out
}

// createReplicatedTopic creates topic with partitions partitions and replication factor rf (or, when
// assignment is set, that replica assignment per partition) and the given topic configs, and fails the
// test with the broker's error code and message otherwise. Today this is where replication factor > 1
// is refused (INVALID_REPLICATION_FACTOR "... implements replication factor 1 only").
func createReplicatedTopic(t *testing.T, cl *kgo.Client, topic string, partitions int32, rf int16, assignment [][]int32, configs map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions, rt.ReplicationFactor = partitions, rf
	if assignment != nil {
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		for p, replicas := range assignment {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), replicas
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(configs[k])
		rt.Configs = append(rt.Configs, c)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 20000
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreateTopics %s (partitions %d, replication factor %d, assignment %v): %v", topic, partitions, rf, assignment, err)
	}
	for _, r := range resp.Topics {
		if r.ErrorCode != 0 {
			t.Fatalf("CreateTopics %s (partitions %d, replication factor %d, assignment %v, configs %v): %v: %s",
				topic, partitions, rf, assignment, configs, kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// metadataOf is a fresh Metadata answer for topic's partitions (nil while the topic is unknown or
// the request fails).
func metadataOf(ctx context.Context, adm *kadm.Client, topic string) kadm.PartitionDetails {
	m, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil
	}
	td, ok := m.Topics[topic]
	if !ok || td.Err != nil {
		return nil
	}
	return td.Partitions
}

// waitFor is testutil.WaitFor whose failure also reports last(), evaluated when the wait has failed
// (the last state seen).
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool, last func() string) {
	t.Helper()
	if err := testutil.Await(context.Background(), d, what, cond); err != nil {
		t.Fatalf("%v; last seen: %s", err, last())
	}
}

// waitFullISR waits (deadline d) until Metadata shows topic with partitions partitions, each with a
// leader, rf replicas and all rf of them in the ISR, and returns that answer.
func waitFullISR(t *testing.T, adm *kadm.Client, topic string, partitions, rf int, d time.Duration) kadm.PartitionDetails {
	t.Helper()
	var last kadm.PartitionDetails
	waitFor(t, d, fmt.Sprintf("%s: %d partitions each with %d replicas all in the ISR", topic, partitions, rf), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		last = metadataOf(ctx, adm, topic)
		if len(last) != partitions {
			return false
		}
		for _, p := range last {
			if p.Err != nil || p.Leader < 0 || len(p.Replicas) != rf || len(p.ISR) != rf {
				return false
			}
		}
		return true
	}, func() string { return formatPartitions(last) })
	return last
}

// formatPartitions prints partition details for failure messages.
func formatPartitions(ps kadm.PartitionDetails) string {
	if ps == nil {
		return "no Metadata answer for the topic"
	}
	var b strings.Builder
	for _, p := range ps.Sorted() {
		fmt.Fprintf(&b, "[p%d leader %d replicas %v isr %v err %v]", p.Partition, p.Leader, p.Replicas, p.ISR, p.Err)
	}
	return b.String()
}

// logEndOffsets asks every broker of l directly (a client seeded with that broker alone, the request
// sent to that broker id) for the log end offset of each of topic's partitions it holds: ListOffsets
// with ReplicaID -2 (Kafka's debugging replica id, answered by followers too) and timestamp -1
// (latest: the log end offset for a non-consumer replica id). Result: broker id -> partition -> LEO.
func logEndOffsets(t *testing.T, l *Lab, topic string, partitions kadm.PartitionDetails) map[int32]map[int32]int64 {
	t.Helper()
	out := map[int32]map[int32]int64{}
	for _, b := range l.Brokers() {
		var ps []int32
		for _, p := range partitions.Sorted() {
			if slices.Contains(p.Replicas, b.ID()) {
				ps = append(ps, p.Partition)
			}
		}
		if len(ps) == 0 {
			continue
		}
		cl := newClient(t, l, []string{b.Addr()})
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -2
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range ps {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cl.Broker(int(b.ID())).Request(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("ListOffsets (replica id -2) to broker %d %s: %v", b.ID(), b.Addr(), err)
		}
		out[b.ID()] = map[int32]int64{}
		for _, rt := range resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("ListOffsets (replica id -2) to broker %d: %s-%d: %v", b.ID(), topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
				}
				out[b.ID()][rp.Partition] = rp.Offset
			}
		}
		cl.Close()
	}
	return out
}

// assertReplicasAgree fails unless, for every partition, every replica's log end offset (asked of
// each broker directly, logEndOffsets) is the same; it returns partition -> that offset.
func assertReplicasAgree(t *testing.T, l *Lab, topic string, partitions kadm.PartitionDetails) map[int32]int64 {
	t.Helper()
	leos := logEndOffsets(t, l, topic, partitions)
	agreed := map[int32]int64{}
	for _, p := range partitions.Sorted() {
		per := map[int32]int64{}
		for _, r := range p.Replicas {
			leo, ok := leos[r][p.Partition]
			if !ok {
				t.Fatalf("%s-%d: replica %d did not answer for the partition (answers %v)", topic, p.Partition, r, leos)
			}
			per[r] = leo
		}
		first := per[p.Replicas[0]]
		for r, leo := range per {
			if leo != first {
				t.Fatalf("%s-%d: replicas' log end offsets differ: %v (broker -> LEO)", topic, p.Partition, per)
			}
			_ = r
		}
		agreed[p.Partition] = first
	}
	return agreed
}

// findCoordinator sends FindCoordinator (group key) to broker id with cl and returns the answer's
// error code and coordinator node id, for v3 (one key, top-level fields) as well as v4+ (batched
// keys): kgo picks the version both sides support.
func findCoordinator(ctx context.Context, cl *kgo.Client, id int32, group string) (code int16, node int32, err error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 0
	req.CoordinatorKey = group
	req.CoordinatorKeys = []string{group}
	resp, err := cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		return 0, -1, err
	}
	r := resp.(*kmsg.FindCoordinatorResponse)
	if r.Version >= 4 {
		for _, c := range r.Coordinators {
			if c.Key == group {
				return c.ErrorCode, c.NodeID, nil
			}
		}
		return 0, -1, fmt.Errorf("FindCoordinator v%d: no answer for key %q in %+v", r.Version, group, r.Coordinators)
	}
	return r.ErrorCode, r.NodeID, nil
}

// partitionState is /brokers/topics/<t>/partitions/<p>/state as Kafka 3.9 writes it
// (TopicPartitionStateZNode.encode: version 1; leader_recovery_state only when not RECOVERED).
type partitionState struct {
	Version         int     `json:"version"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	ControllerEpoch int32   `json:"controller_epoch"`
	ISR             []int32 `json:"isr"`
}

// readPartitionState reads the state znode: the decoded state, its keys (for an exact comparison of
// the JSON object) and the raw bytes.
func readPartitionState(c *zk.Conn, topic string, p int32) (partitionState, []string, []byte, error) {
	data, _, err := c.Get(fmt.Sprintf("/brokers/topics/%s/partitions/%d/state", topic, p))
	if err != nil {
		return partitionState{}, nil, nil, err
	}
	var s partitionState
	if err := json.Unmarshal(data, &s); err != nil {
		return partitionState{}, nil, data, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return partitionState{}, nil, data, err
	}
	return s, slices.Sorted(maps.Keys(raw)), data, nil
}

// controllerEpoch reads /controller_epoch (-1 when absent or unreadable).
func controllerEpoch(c *zk.Conn) int32 {
	data, _, err := c.Get("/controller_epoch")
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return -1
	}
	return int32(n)
}

// stateKeys are the keys of a partition state znode written by Kafka 3.9 for a recovered leader.
var stateKeys = []string{"controller_epoch", "isr", "leader", "leader_epoch", "version"}

// startBroker (re)starts b within a minute, failing the test otherwise.
func startBroker(t *testing.T, b *BrokerNode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatalf("restart broker %d: %v", b.ID(), err)
	}
}
