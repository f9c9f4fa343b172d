package newconsumer

import "github.com/rebalancelab/rebalancelab/newconsumer/assignor"

// TopicPartition names one partition.
type TopicPartition = assignor.TopicPartition

// RebalanceListener is Kafka's ConsumerRebalanceListener. Its methods run on the goroutine that
// calls Poll (or Close), so they may call CommitSync. Partition lists are sorted by topic, then
// partition.
//
//   - OnPartitionsRevoked: partitions given up in a rebalance, before they move. EAGER: every
//     owned partition, before each JoinGroup (also when empty). COOPERATIVE (KIP-429): only those
//     that leave, after the SyncGroup that takes them away (only when non-empty). Also on Close.
//   - OnPartitionsAssigned: partitions newly added after each completed rebalance (also when empty).
//   - OnPartitionsLost: partitions that may already belong to someone else: the member was fenced
//     or removed (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID, poll timeout) before
//     it could revoke them; committing them would fail. Only when non-empty.
type RebalanceListener interface {
	OnPartitionsRevoked(partitions []TopicPartition)
	OnPartitionsAssigned(partitions []TopicPartition)
	OnPartitionsLost(partitions []TopicPartition)
}

// ListenerFuncs adapts functions to RebalanceListener; nil functions do nothing, except Lost, which
// defaults to Revoked as ConsumerRebalanceListener.onPartitionsLost does.
type ListenerFuncs struct {
	Revoked  func([]TopicPartition)
	Assigned func([]TopicPartition)
	Lost     func([]TopicPartition)
}

func (l ListenerFuncs) OnPartitionsRevoked(ps []TopicPartition) {
	if l.Revoked != nil {
		l.Revoked(ps)
	}
}

func (l ListenerFuncs) OnPartitionsAssigned(ps []TopicPartition) {
	if l.Assigned != nil {
		l.Assigned(ps)
	}
}

func (l ListenerFuncs) OnPartitionsLost(ps []TopicPartition) {
	if l.Lost != nil {
		l.Lost(ps)
		return
	}
	l.OnPartitionsRevoked(ps)
}
