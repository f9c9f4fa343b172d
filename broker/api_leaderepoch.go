package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleOffsetForLeaderEpoch is KafkaApis.handleOffsetForLeaderEpochRequest of Kafka 3.9 (v0–v4,
// KIP-101, KIP-279, KIP-320): per partition, ReplicaManager.lastOffsetForLeaderEpoch and
// Partition.lastOffsetForLeaderEpoch with fetchOnlyFromLeader=true, the only way 3.9 calls it
// (replica_id, v3+, changes nothing in the answer):
//   - a partition this broker holds no replica of: NOT_LEADER_OR_FOLLOWER when the cluster has it,
//     UNKNOWN_TOPIC_OR_PARTITION otherwise;
//   - current_leader_epoch (v2+; -1 = not given) against this replica's leader epoch, checked
//     before leadership (Partition.getLocalLog): older FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH;
//   - a follower replica: NOT_LEADER_OR_FOLLOWER;
//   - else the leader-epoch cache's answer for leader_epoch (storage.Log.EndOffsetForEpoch,
//     LeaderEpochFileCache.endOffsetFor): the largest cached epoch at or below it and the start
//     offset of the next larger epoch, or the log end offset for the latest epoch; the requested
//     epoch itself with the first entry's start offset when it is older than every cached epoch;
//     leader_epoch -1 and end_offset -1 (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET) for -1, an
//     empty cache or an epoch above every cached one.
//
// Topics and partitions are answered in request order (OffsetForLeaderTopicResultCollection keeps it).
func (b *Broker) handleOffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			current := p.CurrentLeaderEpoch
			if req.Version < 2 {
				current = -1 // the field is v2+
			}
			rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = b.lastOffsetForLeaderEpoch(t.Topic, p.Partition, current, p.LeaderEpoch)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// lastOffsetForLeaderEpoch is one partition of handleOffsetForLeaderEpoch: the error code, and with
// code 0 the epoch and end offset found (-1, -1 when none is; also with an error).
func (b *Broker) lastOffsetForLeaderEpoch(topic string, p, currentLeaderEpoch, leaderEpoch int32) (code int16, epoch int32, endOffset int64) {
	part, err := b.localPartition(topic, p)
	if err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return kerr.UnknownTopicOrPartition.Code, -1, -1
		}
		return kerr.NotLeaderForPartition.Code, -1, -1
	}
	st, leading := part.leaderState()
	local := part.epoch.Load()
	if leading {
		local = st.LeaderEpoch
	}
	// Partition.checkCurrentLeaderEpoch: only -1 (RecordBatch.NO_PARTITION_LEADER_EPOCH) means "not given".
	if currentLeaderEpoch != -1 {
		switch {
		case local > currentLeaderEpoch:
			return kerr.FencedLeaderEpoch.Code, -1, -1
		case local < currentLeaderEpoch:
			return kerr.UnknownLeaderEpoch.Code, -1, -1
		}
	}
	if !leading {
		return kerr.NotLeaderForPartition.Code, -1, -1
	}
	e, end := part.log.EndOffsetForEpoch(leaderEpoch)
	if end < 0 { // UnifiedLog.endOffsetForEpoch: None, answered with the defaults
		return 0, -1, -1
	}
	return 0, e, end
}
