package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-848's consumer group protocol (group.protocol=consumer) needs KRaft: a Kafka 3.9 broker in
// ZooKeeper mode advertises ConsumerGroupHeartbeat and ConsumerGroupDescribe (v0) but answers both
// UNSUPPORTED_VERSION, because its group coordinator is the classic one
// (KafkaApis.handleConsumerGroupHeartbeat / handleConsumerGroupDescribe when
// isConsumerGroupProtocolEnabled is false). This broker does the same, so that a client probing for
// the new protocol learns what it would learn from Kafka.

// handleConsumerGroupHeartbeat is ConsumerGroupHeartbeatRequest.getErrorResponse(UNSUPPORTED_VERSION).
func (b *Broker) handleConsumerGroupHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	return resp
}

// handleConsumerGroupDescribe is ConsumerGroupDescribeRequest.getErrorResponse(UNSUPPORTED_VERSION):
// every group asked for, with that error.
func (b *Broker) handleConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, g := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.UnsupportedVersion.Code
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
