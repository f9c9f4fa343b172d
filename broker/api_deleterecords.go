package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/storage"
)

// handleDeleteRecords is KafkaApis.handleDeleteRecordsRequest with ReplicaManager.deleteRecords and
// Partition.deleteRecordsOnLeader: per partition the log start offset moves up to the requested offset
// (-1: the high watermark) and the answer carries the new low watermark (the log start offset; with
// one replica nothing waits for followers). Errors: internal topics INVALID_TOPIC_EXCEPTION, a topic
// without delete in cleanup.policy POLICY_VIOLATION, an offset below -1 or above the high watermark
// OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER.
func (b *Broker) handleDeleteRecords(req *kmsg.DeleteRecordsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LowWatermark, rp.ErrorCode = b.deleteRecords(t.Topic, p.Partition, p.Offset)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (b *Broker) deleteRecords(topic string, p int32, offset int64) (int64, int16) {
	if topic == OffsetsTopic {
		return -1, kerr.InvalidTopicException.Code
	}
	part, err := b.leaderPartition(topic, p)
	if err != nil {
		return -1, errCode(err)
	}
	if !part.config().delete {
		return -1, kerr.PolicyViolation.Code
	}
	if offset == -1 { // DeleteRecordsRequest.HIGH_WATERMARK
		offset = part.log.HighWatermark()
	}
	if offset < 0 {
		return -1, kerr.OffsetOutOfRange.Code
	}
	part.appendMu.Lock()
	low, err := part.log.DeleteRecordsBefore(offset)
	part.appendMu.Unlock()
	if errors.Is(err, storage.ErrOffsetOutOfRange) {
		return -1, kerr.OffsetOutOfRange.Code
	}
	if err != nil {
		return -1, errCode(err)
	}
	return low, 0
}
