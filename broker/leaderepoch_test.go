package broker_test

import (
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
)

// epochEnd is one OffsetForLeaderEpoch answer: error, epoch, end offset.
type epochEnd struct {
	code   int16
	epoch  int32
	offset int64
}

// offsetForLeaderEpoch asks c (v4, replica id -1) for topic's partition 0: the end of leaderEpoch,
// with currentLeaderEpoch (-1: not checked).
func offsetForLeaderEpoch(t *testing.T, c *wire.Conn, topic string, currentLeaderEpoch, leaderEpoch int32) epochEnd {
	t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LeaderEpoch = currentLeaderEpoch, leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.OffsetForLeaderEpochResponse](t, c, req, 4)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != topic || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("OffsetForLeaderEpoch %s: answer %+v", topic, resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	return epochEnd{p.ErrorCode, p.LeaderEpoch, p.EndOffset}
}

func wantEpochEnd(t *testing.T, what string, got, want epochEnd) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: OffsetForLeaderEpoch answered %v epoch %d end %d, want %v epoch %d end %d", what,
			kerr.ErrorForCode(got.code), got.epoch, got.offset, kerr.ErrorForCode(want.code), want.epoch, want.offset)
	}
}

// TestOffsetForLeaderEpochAcrossUncleanElection: OffsetForLeaderEpoch answers from each replica's
// leader-epoch cache as Kafka 3.9's Partition.lastOffsetForLeaderEpoch, through the history of an
// unclean election. Broker 1 leads e [1,2,3] and takes 3 records in the creation epoch; 2 and 3
// stop (the controller's ISR shrinks bump the epoch), 1 takes 2 more records alone; 1 stops, 2
// and 3 return and 2 is elected outside the ISR, its log ending at 3; it takes 1 record. Asked at
// each step: the end of the current epoch is the log end offset, the end of an older epoch the
// start of the next cached one, an epoch above every cached one has no end (-1, -1), and the new
// leader places the old leader's lost epoch at its own divergence point (offset 3, the epoch before
// it): what a KIP-320 consumer at offset 5 compares with. Errors in Kafka's order: the current
// leader epoch is checked before leadership (UNKNOWN_LEADER_EPOCH, FENCED_LEADER_EPOCH even at a
// follower), then NOT_LEADER_OR_FOLLOWER at a follower; UNKNOWN_TOPIC_OR_PARTITION for a topic
// nobody has. Produce v11 at a follower answers NOT_LEADER_OR_FOLLOWER with KIP-951's hint: the
// leader 2, its epoch and its endpoint.
func TestOffsetForLeaderEpochAcrossUncleanElection(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	extra := map[string]string{"replica.fetch.wait.max.ms": "100", "replica.fetch.backoff.ms": "100", "controlled.shutdown.enable": "false", "replica.lag.time.max.ms": "1500"}
	b1 := startBroker(t, z.Connect(), 1, extra)
	b2 := startBroker(t, z.Connect(), 2, extra)
	b3 := startBroker(t, z.Connect(), 3, extra)
	c1, c2 := dial(t, b1.addr()), dial(t, b2.addr())
	createReplicated(t, c1, "e", []int32{1, 2, 3}, map[string]string{"unclean.leader.election.enable": "true"})
	testutil.WaitFor(t, 15*time.Second, "e has leader 1 and ISR [1 2 3]", func() bool {
		l, _, isr := partitionMeta(t, c1, "e")
		return l == 1 && slices.Equal(isr, []int32{1, 2, 3})
	})
	_, e0, _ := partitionMeta(t, c1, "e")
	if e0 != 0 {
		t.Fatalf("a new topic's leader epoch is %d, want 0", e0)
	}
	wantEpochEnd(t, "empty log, epoch 0", offsetForLeaderEpoch(t, c1, "e", 0, 0), epochEnd{0, 0, 0})
	for i := 0; i < 3; i++ {
		if got := produceOne(t, c1, "e", -1, oneRecordBatch(10)); got.ErrorCode != 0 || got.BaseOffset != int64(i) {
			t.Fatalf("acks=all produce %d: %v at %d", i, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
		}
	}
	wantEpochEnd(t, "leader, current epoch", offsetForLeaderEpoch(t, c1, "e", 0, 0), epochEnd{0, 0, 3})
	wantEpochEnd(t, "leader, no current epoch given", offsetForLeaderEpoch(t, c1, "e", -1, 0), epochEnd{0, 0, 3})
	wantEpochEnd(t, "leader, epoch above every cached one", offsetForLeaderEpoch(t, c1, "e", 0, 5), epochEnd{0, -1, -1})
	wantEpochEnd(t, "leader, undefined epoch", offsetForLeaderEpoch(t, c1, "e", 0, -1), epochEnd{0, -1, -1})
	wantEpochEnd(t, "leader, newer current epoch", offsetForLeaderEpoch(t, c1, "e", 1, 0), epochEnd{kerr.UnknownLeaderEpoch.Code, -1, -1})
	wantEpochEnd(t, "follower, current epoch", offsetForLeaderEpoch(t, c2, "e", 0, 0), epochEnd{kerr.NotLeaderForPartition.Code, -1, -1})
	wantEpochEnd(t, "follower, newer current epoch", offsetForLeaderEpoch(t, c2, "e", 1, 0), epochEnd{kerr.UnknownLeaderEpoch.Code, -1, -1})
	wantEpochEnd(t, "unknown topic", offsetForLeaderEpoch(t, c1, "never", -1, 0), epochEnd{kerr.UnknownTopicOrPartition.Code, -1, -1})

	b2.stop()
	b3.stop()
	testutil.WaitFor(t, 20*time.Second, "ISR [1]", func() bool {
		_, _, isr := partitionMeta(t, c1, "e")
		return slices.Equal(isr, []int32{1})
	})
	_, e1, _ := partitionMeta(t, c1, "e")
	if e1 <= e0 {
		t.Fatalf("leader epoch %d after both followers stopped, want above %d (the controller's ISR shrink)", e1, e0)
	}
	for i := 0; i < 2; i++ {
		if got := produceOne(t, c1, "e", 1, oneRecordBatch(10)); got.ErrorCode != 0 || got.BaseOffset != int64(3+i) {
			t.Fatalf("acks=1 produce to the lone leader: %v at %d", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
		}
	}
	wantEpochEnd(t, "lone leader, current epoch", offsetForLeaderEpoch(t, c1, "e", e1, e1), epochEnd{0, e1, 5})
	wantEpochEnd(t, "lone leader, the creation epoch", offsetForLeaderEpoch(t, c1, "e", e1, 0), epochEnd{0, 0, 3})
	wantEpochEnd(t, "lone leader, an older current epoch", offsetForLeaderEpoch(t, c1, "e", 0, 0), epochEnd{kerr.FencedLeaderEpoch.Code, -1, -1})

	b1.stop()
	b2.start()
	b3.start()
	c2, c3 := dial(t, b2.addr()), dial(t, b3.addr())
	testutil.WaitFor(t, 20*time.Second, "broker 2 elected uncleanly", func() bool {
		l, _, isr := partitionMeta(t, c2, "e")
		return l == 2 && len(isr) >= 1 && isr[0] == 2
	})
	_, e2, _ := partitionMeta(t, c2, "e")
	if e2 <= e1 {
		t.Fatalf("leader epoch %d after the unclean election, want above %d", e2, e1)
	}
	if got := produceOne(t, c2, "e", 1, oneRecordBatch(20)); got.ErrorCode != 0 || got.BaseOffset != 3 {
		t.Fatalf("produce to the new leader: %v at %d, want offset 3", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
	}
	// The old leader's epoch e1 is unknown to 2: its end is where 2's next epoch starts, 3.
	wantEpochEnd(t, "new leader, the lost epoch", offsetForLeaderEpoch(t, c2, "e", e2, e1), epochEnd{0, 0, 3})
	wantEpochEnd(t, "new leader, its epoch", offsetForLeaderEpoch(t, c2, "e", e2, e2), epochEnd{0, e2, 4})
	wantEpochEnd(t, "new leader, the old leader's current epoch", offsetForLeaderEpoch(t, c2, "e", e1, e1), epochEnd{kerr.FencedLeaderEpoch.Code, -1, -1})
	testutil.WaitFor(t, 20*time.Second, "broker 3 follows broker 2 in epoch e2", func() bool {
		return offsetForLeaderEpoch(t, c3, "e", e2, e2).code == kerr.NotLeaderForPartition.Code
	})
	wantEpochEnd(t, "follower, its leader's epoch", offsetForLeaderEpoch(t, c3, "e", e2, e2), epochEnd{kerr.NotLeaderForPartition.Code, -1, -1})
	wantEpochEnd(t, "follower, an older current epoch", offsetForLeaderEpoch(t, c3, "e", e1, e2), epochEnd{kerr.FencedLeaderEpoch.Code, -1, -1})

	// KIP-951: Produce v11 (and v10) at a follower names the leader and its endpoint.
	for _, v := range []int16{9, 10, 11} {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "e"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = oneRecordBatch(10)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := request[*kmsg.ProduceResponse](t, c3, req, v)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("Produce v%d at a follower: %v, want NOT_LEADER_OR_FOLLOWER", v, kerr.ErrorForCode(p.ErrorCode))
		}
		wantLeader, wantEpoch, wantNodes := int32(2), e2, 1
		if v < 10 {
			wantLeader, wantEpoch, wantNodes = -1, -1, 0
		}
		if p.CurrentLeader.LeaderID != wantLeader || p.CurrentLeader.LeaderEpoch != wantEpoch || len(resp.Brokers) != wantNodes {
			t.Fatalf("Produce v%d at a follower: current leader %d epoch %d, %d node endpoints; want %d epoch %d, %d", v,
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch, len(resp.Brokers), wantLeader, wantEpoch, wantNodes)
		}
		if v >= 10 {
			host, port, _ := net.SplitHostPort(b2.addr())
			if n := resp.Brokers[0]; n.NodeID != 2 || n.Host != host || strconv.Itoa(int(n.Port)) != port || n.Rack != nil {
				t.Fatalf("Produce v%d node endpoint %d %s:%d rack %v, want 2 %s rack null", v, n.NodeID, n.Host, n.Port, n.Rack, b2.addr())
			}
		}
	}
}
