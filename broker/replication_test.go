package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
)

// createReplicated creates topic with one partition on replicas (an explicit assignment).
func createReplicated(t *testing.T, c *wire.Conn, topic string, replicas []int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	if r := request[*kmsg.CreateTopicsResponse](t, c, req, 7).Topics[0]; r.ErrorCode != 0 {
		t.Fatalf("create %s: %v %v", topic, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
}

// partitionMeta is partition 0 of topic in c's Metadata: leader, leader epoch, ISR.
func partitionMeta(t *testing.T, c *wire.Conn, topic string) (int32, int32, []int32) {
	t.Helper()
	m := metadata(t, c, topic)
	if len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 1 {
		return -1, -1, nil
	}
	p := m.Topics[0].Partitions[0]
	return p.Leader, p.LeaderEpoch, p.ISR
}

// logEndOffset asks one broker for its own replica's log end offset of partition 0 (ListOffsets,
// replica id -2).
func logEndOffset(t *testing.T, c *wire.Conn, topic string) (int64, int16) {
	t.Helper()
	return partitionLogEndOffset(t, c, topic, 0)
}

// partitionLogEndOffset is logEndOffset for partition part: the offset and the error code.
func partitionLogEndOffset(t *testing.T, c *wire.Conn, topic string, part int32) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -2
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.Timestamp = part, -1
	rt.Partitions = append(rt.Partitions, p)
	req.Topics = append(req.Topics, rt)
	rp := request[*kmsg.ListOffsetsResponse](t, c, req, 4).Topics[0].Partitions[0]
	return rp.Offset, rp.ErrorCode
}

// TestReplicationAcksAllAndISR: three brokers, a partition on [1,2,3] with min.insync.replicas 2.
// acks=all answers once the followers have the records (every replica's log end offset is 5 after
// five produces); when a follower stops, the leader's ISR shrinks to the other two after
// replica.lag.time.max.ms and acks=all still succeeds; with two followers gone, acks=all is
// NOT_ENOUGH_REPLICAS; the followers come back, catch up and rejoin the ISR (appended at its end).
func TestReplicationAcksAllAndISR(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	extra := map[string]string{"replica.lag.time.max.ms": "1500", "replica.fetch.wait.max.ms": "100", "replica.fetch.backoff.ms": "100"}
	b1 := startBroker(t, z.Connect(), 1, extra)
	b2 := startBroker(t, z.Connect(), 2, extra)
	b3 := startBroker(t, z.Connect(), 3, extra)
	c := dial(t, b1.addr())
	createReplicated(t, c, "r", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	testutil.WaitFor(t, 15*time.Second, "r has leader 1 and ISR [1 2 3]", func() bool {
		l, _, isr := partitionMeta(t, c, "r")
		return l == 1 && slices.Equal(isr, []int32{1, 2, 3})
	})
	for i := 0; i < 5; i++ {
		if got := produceOne(t, c, "r", -1, oneRecordBatch(10)); got.ErrorCode != 0 || got.BaseOffset != int64(i) {
			t.Fatalf("acks=all produce %d: %v at %d", i, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
		}
	}
	for _, tb := range []*testBroker{b1, b2, b3} {
		// acks=all answered: the followers had fetched up to 5; their own log end offset is 5 now.
		if leo, code := logEndOffset(t, dial(t, tb.addr()), "r"); code != 0 || leo != 5 {
			t.Fatalf("broker %d: log end offset %d (%v), want 5", tb.id, leo, kerr.ErrorForCode(code))
		}
	}

	b3.stop()
	testutil.WaitFor(t, 20*time.Second, "ISR [1 2] after broker 3 stopped", func() bool {
		_, _, isr := partitionMeta(t, c, "r")
		return slices.Equal(isr, []int32{1, 2})
	})
	if got := produceOne(t, c, "r", -1, oneRecordBatch(10)); got.ErrorCode != 0 || got.BaseOffset != 5 {
		t.Fatalf("acks=all with ISR [1 2]: %v at %d", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
	}
	b2.stop()
	testutil.WaitFor(t, 20*time.Second, "ISR [1] after broker 2 stopped", func() bool {
		_, _, isr := partitionMeta(t, c, "r")
		return slices.Equal(isr, []int32{1})
	})
	if got := produceOne(t, c, "r", -1, oneRecordBatch(10)); got.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all with ISR [1] and min.insync.replicas 2: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(got.ErrorCode))
	}
	if got := produceOne(t, c, "r", 1, oneRecordBatch(10)); got.ErrorCode != 0 || got.BaseOffset != 6 {
		t.Fatalf("acks=1 with ISR [1]: %v at %d", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
	}
	b3.start()
	b2.start()
	testutil.WaitFor(t, 20*time.Second, "brokers 3 and 2 rejoin the ISR", func() bool {
		_, _, isr := partitionMeta(t, c, "r")
		return len(isr) == 3 && isr[0] == 1
	})
	for _, tb := range []*testBroker{b1, b2, b3} {
		testutil.WaitFor(t, 10*time.Second, "replica caught up", func() bool {
			leo, code := logEndOffset(t, dial(t, tb.addr()), "r")
			return code == 0 && leo == 7
		})
	}
}

// TestReplicationUncleanElectionTruncatesOldLeader: broker 1 leads [1,2,3] alone in the ISR (2 and 3
// stopped) and takes two records with acks=1 that no follower has. It stops; 2 and 3 come back,
// and with unclean.leader.election.enable the controller elects 2 outside the ISR (leader epoch up,
// ISR [2]); 2 takes a record at offset 5. When 1 returns it follows 2: its last fetched epoch
// diverges, it truncates to the end of that epoch on 2 (offset 5) and copies 2's record — the two
// acks=1 records are lost, the measured cost of an unclean election — and every replica ends at 6.
func TestReplicationUncleanElectionTruncatesOldLeader(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	extra := map[string]string{"replica.fetch.wait.max.ms": "100", "replica.fetch.backoff.ms": "100", "controlled.shutdown.enable": "false"}
	b1 := startBroker(t, z.Connect(), 1, extra)
	b2 := startBroker(t, z.Connect(), 2, extra)
	b3 := startBroker(t, z.Connect(), 3, extra)
	c := dial(t, b1.addr())
	createReplicated(t, c, "u", []int32{1, 2, 3}, map[string]string{"unclean.leader.election.enable": "true"})
	testutil.WaitFor(t, 15*time.Second, "u has leader 1 and ISR [1 2 3]", func() bool {
		l, _, isr := partitionMeta(t, c, "u")
		return l == 1 && slices.Equal(isr, []int32{1, 2, 3})
	})
	for i := 0; i < 5; i++ {
		if got := produceOne(t, c, "u", -1, oneRecordBatch(10)); got.ErrorCode != 0 {
			t.Fatalf("acks=all produce %d: %v", i, kerr.ErrorForCode(got.ErrorCode))
		}
	}
	b2.stop()
	b3.stop()
	testutil.WaitFor(t, 15*time.Second, "ISR [1]", func() bool {
		_, _, isr := partitionMeta(t, c, "u")
		return slices.Equal(isr, []int32{1})
	})
	for i := 0; i < 2; i++ {
		if got := produceOne(t, c, "u", 1, oneRecordBatch(10)); got.ErrorCode != 0 || got.BaseOffset != int64(5+i) {
			t.Fatalf("acks=1 produce to the lone leader: %v at %d", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
		}
	}
	_, epochBefore, _ := partitionMeta(t, c, "u")
	b1.stop()
	b2.start()
	b3.start()
	c2 := dial(t, b2.addr())
	testutil.WaitFor(t, 15*time.Second, "broker 2 elected uncleanly", func() bool {
		l, _, isr := partitionMeta(t, c2, "u")
		return l == 2 && len(isr) >= 1 && isr[0] == 2
	})
	if _, e, _ := partitionMeta(t, c2, "u"); e <= epochBefore {
		t.Fatalf("leader epoch %d after the unclean election, want above %d", e, epochBefore)
	}
	if got := produceOne(t, c2, "u", 1, oneRecordBatch(20)); got.ErrorCode != 0 || got.BaseOffset != 5 {
		t.Fatalf("produce to the new leader: %v at %d, want offset 5", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
	}
	b1.start()
	for _, tb := range []*testBroker{b1, b2, b3} {
		testutil.WaitFor(t, 15*time.Second, "every replica at log end offset 6", func() bool {
			leo, code := logEndOffset(t, dial(t, tb.addr()), "u")
			return code == 0 && leo == 6
		})
	}
	// Broker 1's offset 5 is now the new leader's record (20-byte value), not its own acks=1 record.
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "u"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 5, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	rp := request[*kmsg.FetchResponse](t, c2, req, 11).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 || len(rp.RecordBatches) == 0 {
		t.Fatalf("fetch at 5 from the new leader: %v, %d bytes", kerr.ErrorForCode(rp.ErrorCode), len(rp.RecordBatches))
	}
}

// TestReplicationCoordinatorFailoverKeepsOffsets: __consumer_offsets with replication factor 3; a
// group's offsets are committed to its coordinator, the coordinator's broker stops, another broker
// takes the group's partition over, loads the offsets, and takes further commits: every committed
// value reads back, before and after, from the new coordinator.
func TestReplicationCoordinatorFailoverKeepsOffsets(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	extra := map[string]string{"offsets.topic.replication.factor": "3", "replica.fetch.wait.max.ms": "100", "replica.fetch.backoff.ms": "100"}
	tbs := []*testBroker{startBroker(t, z.Connect(), 1, extra), startBroker(t, z.Connect(), 2, extra), startBroker(t, z.Connect(), 3, extra)}
	c := dial(t, tbs[0].addr())
	createReplicated(t, c, "o", []int32{1, 2, 3}, nil)
	seeds := []string{tbs[0].addr(), tbs[1].addr(), tbs[2].addr()}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	commit := func(at int64) {
		t.Helper()
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "o", Partition: 0, At: at, LeaderEpoch: -1})
		testutil.WaitFor(t, 30*time.Second, fmt.Sprintf("commit %d acknowledged", at), func() bool {
			r, err := adm.CommitOffsets(ctx, "g", os)
			return err == nil && r.Error() == nil
		})
	}
	fetched := func() int64 {
		t.Helper()
		var at int64 = -2
		testutil.WaitFor(t, 30*time.Second, "offsets fetched", func() bool {
			r, err := adm.FetchOffsets(ctx, "g")
			if err != nil || r.Error() != nil {
				return false
			}
			o, ok := r.Lookup("o", 0)
			at = o.At
			return ok
		})
		return at
	}
	coordinator := func() int32 {
		t.Helper()
		var id int32 = -1
		testutil.WaitFor(t, 30*time.Second, "a coordinator for g", func() bool {
			for _, g := range adm.FindGroupCoordinators(ctx, "g") {
				if g.Err == nil {
					id = g.NodeID
				}
			}
			return id > 0
		})
		return id
	}
	commit(10)
	if got := fetched(); got != 10 {
		t.Fatalf("committed 10, fetched %d", got)
	}
	old := coordinator()
	tbs[old-1].stop()
	commit(20)
	if now := coordinator(); now == old {
		t.Fatalf("coordinator still broker %d after it stopped", old)
	}
	if got := fetched(); got != 20 {
		t.Fatalf("after the failover: committed 20, fetched %d", got)
	}
	tbs[old-1].start()
	commit(30)
	if got := fetched(); got != 30 {
		t.Fatalf("after the old coordinator came back: committed 30, fetched %d", got)
	}
}
