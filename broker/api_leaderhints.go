package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// addProduceLeaderHints is KIP-951's part of KafkaApis.handleProduceRequest (Kafka 3.9, Produce
// v10+): every partition answered NOT_LEADER_OR_FOLLOWER carries the current leader and its leader
// epoch (the tagged current_leader), and the response lists the endpoints of those leaders that are
// alive (the tagged node_endpoints), so that the producer retries at the new leader without a
// Metadata round trip. The leader is this broker's replica's view of it when it holds one
// (ReplicaManager.getPartitionOrError: the leader it follows, or -1 while it knows none), else the
// cluster view's (the metadata cache), else -1 with epoch -1 (getCurrentLeader).
func (b *Broker) addProduceLeaderHints(resp *kmsg.ProduceResponse) {
	if resp.Version < 10 {
		return
	}
	v := b.view.Load()
	listed := map[int32]bool{}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			rp := &t.Partitions[j]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue
			}
			leader, epoch := b.currentLeader(v, t.Topic, rp.Partition)
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = leader, epoch
			if n, ok := v.brokers[leader]; ok && !listed[leader] {
				listed[leader] = true
				nb := kmsg.NewProduceResponseBroker()
				nb.NodeID, nb.Host, nb.Port = n.ID, n.Host, n.Port
				resp.Brokers = append(resp.Brokers, nb)
			}
		}
	}
}

// currentLeader is KafkaApis.getCurrentLeader's leader id and epoch for topic/partition.
func (b *Broker) currentLeader(v *clusterView, topic string, p int32) (leader, epoch int32) {
	b.partsMu.RLock()
	part := b.parts[topicPartition{topic, p}]
	b.partsMu.RUnlock()
	if part != nil {
		if st, ok := part.leaderState(); ok {
			return st.Leader, st.LeaderEpoch
		}
		return part.leaderID.Load(), part.epoch.Load()
	}
	if t, ok := v.topics[topic]; ok {
		if st, ok := t.states[p]; ok && st.exists {
			return st.Leader, st.LeaderEpoch
		}
	}
	return -1, -1
}
