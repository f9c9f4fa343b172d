package conformance

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/lab"
)

// The leader-epoch scripts: OffsetForLeaderEpoch (KIP-101, KIP-320) at every version both brokers
// advertise, and KIP-951's leader hints in Produce v10+ answers from a broker that holds no replica
// of the partition. Leader epochs are compared here (the normaliser zeroes LeaderEpoch fields
// elsewhere): each case's topic is new and led by the one broker of the first phase, so its epoch
// is 0 on both brokers.

// epochPartition is one partition of an OffsetForLeaderEpoch request.
type epochPartition struct {
	topic                     string
	partition                 int32
	currentLeaderEpoch, epoch int32
}

func offsetForLeaderEpochReq(v int16, replicaID int32, ps ...epochPartition) *kmsg.OffsetForLeaderEpochRequest {
	r := kmsg.NewPtrOffsetForLeaderEpochRequest()
	r.SetVersion(v)
	r.ReplicaID = replicaID
	for _, p := range ps {
		if n := len(r.Topics); n == 0 || r.Topics[n-1].Topic != p.topic {
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = p.topic
			r.Topics = append(r.Topics, t)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p.partition, p.currentLeaderEpoch, p.epoch
		t := &r.Topics[len(r.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	return r
}

// epochView is an OffsetForLeaderEpoch answer with its leader epochs kept (under another name than
// the normaliser's zeroed LeaderEpoch), in answer order.
func epochView(resp kmsg.Response) any {
	r := resp.(*kmsg.OffsetForLeaderEpochResponse)
	var out []any
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, map[string]any{"Topic": t.Topic, "Partition": p.Partition, "ErrorCode": p.ErrorCode,
				"Epoch": p.LeaderEpoch, "EndOffset": p.EndOffset})
		}
	}
	return out
}

func leaderEpochCases(v versions) []kcase {
	var cases []kcase
	for _, ev := range v.of(kmsg.OffsetForLeaderEpoch) {
		topic := fmt.Sprintf("dt-ofle-v%d", ev)
		q := func(name string, replicaID int32, ps ...epochPartition) step {
			return step{name: name, req: fixedReq(offsetForLeaderEpochReq(ev, replicaID, ps...)), view: epochView}
		}
		p := func(current, epoch int32) epochPartition { return epochPartition{topic, 0, current, epoch} }
		steps := []step{
			{name: "create", req: fixedReq(createTopicsReq(7, false, newTopic{topic, 2, 1}))},
			ledBarrier(topic),
			q("empty-log", -1, p(-1, 0)),
			{name: "produce", req: fixedReq(produceReq(9, -1, topic, 0, records(9, true, "a", "b", "c")))},
			q("current-epoch", -1, p(-1, 0)),
			q("epoch-above-every-cached", -1, p(-1, 7)),
			q("epoch-undefined", -1, p(-1, -1)),
			q("epoch-below-every-cached", -1, p(-1, -2)), // no floor entry: the epoch itself, the first entry's start
			q("unknown-topic", -1, epochPartition{"dt-never", 0, -1, 0}),
			q("unknown-partition", -1, epochPartition{topic, 9, -1, 0}),
			q("two-topics", -1, p(-1, 0), epochPartition{topic, 1, -1, 0}, epochPartition{"dt-never", 0, -1, 0}, epochPartition{dataTopic, 1, -1, 0}),
		}
		if ev >= 2 { // current_leader_epoch (KIP-320)
			steps = append(steps,
				q("current-leader-epoch-matches", -1, p(0, 0)),
				q("current-leader-epoch-newer", -1, p(3, 0)),
				q("current-leader-epoch-older", -1, p(-2, 0)),
			)
		}
		if ev >= 3 { // replica_id (KIP-392): a follower's and the debugging id
			steps = append(steps, q("from-follower", 1, p(-1, 0)), q("from-debugger", -2, p(0, 0)))
		}
		cases = append(cases, kcase{name: fmt.Sprintf("OffsetForLeaderEpoch v%d", ev), steps: steps})
	}
	return cases
}

// leaderHintCases run on the second broker of each cluster (after addBroker), which holds no
// replica of the first phase's topics: OffsetForLeaderEpoch answers NOT_LEADER_OR_FOLLOWER, and
// Produce v10+ answers NOT_LEADER_OR_FOLLOWER with the current leader and its endpoint (KIP-951).
func leaderHintCases(v versions) []kcase {
	second := func(l *lab.Lab) string { return l.Brokers()[1].Addr() }
	var cases []kcase
	for _, ev := range v.of(kmsg.OffsetForLeaderEpoch) {
		cases = append(cases, kcase{name: fmt.Sprintf("OffsetForLeaderEpoch v%d at a broker without the replica", ev), addr: second, steps: []step{
			{name: "not-hosted", req: fixedReq(offsetForLeaderEpochReq(ev, -1, epochPartition{dataTopic, 0, -1, 0})), view: epochView},
			{name: "unknown-topic", req: fixedReq(offsetForLeaderEpochReq(ev, -1, epochPartition{"dt-never", 0, -1, 0})), view: epochView},
		}})
	}
	for _, pv := range v.of(kmsg.Produce) {
		if pv < 9 {
			continue
		}
		cases = append(cases, kcase{name: fmt.Sprintf("Produce v%d at a broker without the replica", pv), addr: second, steps: []step{
			{name: "not-leader", req: fixedReq(produceReq(pv, -1, dataTopic, 0, records(pv, true, "x"))), view: func(resp kmsg.Response) any {
				r := resp.(*kmsg.ProduceResponse)
				var ps []any
				for _, t := range r.Topics {
					for _, p := range t.Partitions {
						ps = append(ps, map[string]any{"Topic": t.Topic, "Partition": p.Partition, "ErrorCode": p.ErrorCode,
							"BaseOffset": p.BaseOffset, "LogStartOffset": p.LogStartOffset,
							"HintLeaderID": p.CurrentLeader.LeaderID, "HintLeaderEpoch": p.CurrentLeader.LeaderEpoch})
					}
				}
				var nodes []any
				for _, n := range r.Brokers {
					nodes = append(nodes, map[string]any{"NodeID": n.NodeID, "Host": n.Host, "Rack": n.Rack})
				}
				return map[string]any{"Partitions": ps, "NodeEndpoints": nodes}
			}},
		}})
	}
	return cases
}
