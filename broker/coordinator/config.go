package coordinator

import (
	"context"
	"fmt"
	"math"
)

// Node is a broker as FindCoordinator names it (kafka.cluster.Node): id, advertised host and port.
type Node struct {
	ID   int32
	Host string
	Port int32
}

// noNode is Node.noNode(): the node FindCoordinator returns with an error.
var noNode = Node{ID: -1, Host: "", Port: -1}

// Config configures the coordinator. Fields carry the server.properties keys of Kafka 3.9
// (GroupCoordinatorConfig / OffsetConfig); start from DefaultConfig, which holds Kafka's defaults,
// because several zero values are meaningful (group.initial.rebalance.delay.ms=0 is the lab setting).
//
// The lab's short settings (docs/design.md "Lab timing") are group.min.session.timeout.ms lowered below
// the members' session.timeout.ms (e.g. 500) and group.initial.rebalance.delay.ms=0.
type Config struct {
	// Node is this broker (broker.id and its advertised listener): FindCoordinator's answer.
	Node Node

	// GroupMinSessionTimeoutMs is group.min.session.timeout.ms (ms, Kafka default 6000): JoinGroup
	// with a smaller session timeout gets INVALID_SESSION_TIMEOUT.
	GroupMinSessionTimeoutMs int32
	// GroupMaxSessionTimeoutMs is group.max.session.timeout.ms (ms, Kafka default 1800000).
	GroupMaxSessionTimeoutMs int32
	// GroupInitialRebalanceDelayMs is group.initial.rebalance.delay.ms (ms, Kafka default 3000): how
	// long the first rebalance of an Empty group waits for more members (InitialDelayedJoin).
	GroupInitialRebalanceDelayMs int32
	// GroupMaxSize is group.max.size (members, Kafka default 2147483647): more joiners get
	// GROUP_MAX_SIZE_REACHED.
	GroupMaxSize int32
	// OffsetsTopicNumPartitions is offsets.topic.num.partitions (Kafka default 50): a group lives in
	// partition abs(groupId.hashCode) % this of __consumer_offsets.
	OffsetsTopicNumPartitions int32
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes (Kafka default 4096; Kafka compares the
	// metadata string's length in UTF-16 chars): larger commits get OFFSET_METADATA_TOO_LARGE.
	OffsetMetadataMaxBytes int32
	// OffsetsRetentionMinutes is offsets.retention.minutes (minutes, Kafka default 10080 = 7 days).
	OffsetsRetentionMinutes int32
	// OffsetsRetentionCheckIntervalMs is offsets.retention.check.interval.ms (ms, Kafka default
	// 600000): how often expired offsets and dead Empty groups are removed.
	OffsetsRetentionCheckIntervalMs int64
	// OffsetsTopicSegmentBytes is offsets.topic.segment.bytes (bytes, Kafka default 104857600), the
	// segment size of __consumer_offsets: the driver hands the log no more than this (nor more than
	// 1 MiB) in one OffsetsLog.Append, since a log refuses an append larger than a segment.
	OffsetsTopicSegmentBytes int32

	// PartitionExists, when set, tells whether topic-partition exists in the cluster: OffsetCommit for
	// an unknown partition gets UNKNOWN_TOPIC_OR_PARTITION before the coordinator sees it (KafkaApis
	// handleOffsetCommitRequest's metadataCache check). Nil: every partition exists.
	PartitionExists func(topic string, partition int32) bool
	// CoordinatorFor, when set, names the leader of __consumer_offsets partition p (FindCoordinator's
	// answer) and ok=false when it has none (COORDINATOR_NOT_AVAILABLE). Nil: this broker (Node)
	// coordinates every group.
	CoordinatorFor func(offsetsPartition int32) (leader Node, ok bool)
	// ClientInfo, when set, gives Handle the request header's client id and the client's host from
	// the request's context (e.g. from broker.RequestInfoFrom); the host is recorded as Kafka prints
	// it ("/127.0.0.1"). ContextWithClient on the context takes precedence. Nil: "" for both.
	ClientInfo func(ctx context.Context) (clientID, clientHost string)
	// OnGroupChange, when set, is called with every group state transition (GroupChanged): the
	// coordinator's view of each generation, for timelines. The driver calls it in order, from one
	// goroutine of its own, never under its lock; Close waits for the calls queued before it. The core
	// emits GroupChanged effects only when ObserveGroups is set (the driver sets it with this).
	OnGroupChange func(GroupChanged)
	// ObserveGroups makes the core emit a GroupChanged effect for every group state transition.
	ObserveGroups bool
}

// DefaultConfig returns Kafka 3.9's defaults (Node is left for the broker to fill).
func DefaultConfig() Config {
	return Config{
		GroupMinSessionTimeoutMs:        6000,
		GroupMaxSessionTimeoutMs:        1800000,
		GroupInitialRebalanceDelayMs:    3000,
		GroupMaxSize:                    math.MaxInt32,
		OffsetsTopicNumPartitions:       50,
		OffsetMetadataMaxBytes:          4096,
		OffsetsRetentionMinutes:         7 * 24 * 60,
		OffsetsRetentionCheckIntervalMs: 600000,
		OffsetsTopicSegmentBytes:        104857600,
	}
}

// Validate checks the bounds Kafka's ConfigDef enforces (atLeast(1) etc.).
func (c *Config) Validate() error {
	switch {
	case c.GroupMinSessionTimeoutMs < 0:
		return fmt.Errorf("coordinator config: group.min.session.timeout.ms must be >= 0, got %d", c.GroupMinSessionTimeoutMs)
	case c.GroupMaxSessionTimeoutMs < c.GroupMinSessionTimeoutMs:
		return fmt.Errorf("coordinator config: group.max.session.timeout.ms (%d) < group.min.session.timeout.ms (%d)",
			c.GroupMaxSessionTimeoutMs, c.GroupMinSessionTimeoutMs)
	case c.GroupInitialRebalanceDelayMs < 0:
		return fmt.Errorf("coordinator config: group.initial.rebalance.delay.ms must be >= 0, got %d", c.GroupInitialRebalanceDelayMs)
	case c.GroupMaxSize < 1:
		return fmt.Errorf("coordinator config: group.max.size must be >= 1, got %d", c.GroupMaxSize)
	case c.OffsetsTopicNumPartitions < 1:
		return fmt.Errorf("coordinator config: offsets.topic.num.partitions must be >= 1, got %d", c.OffsetsTopicNumPartitions)
	case c.OffsetMetadataMaxBytes < 0:
		return fmt.Errorf("coordinator config: offset.metadata.max.bytes must be >= 0, got %d", c.OffsetMetadataMaxBytes)
	case c.OffsetsRetentionMinutes < 1:
		return fmt.Errorf("coordinator config: offsets.retention.minutes must be >= 1, got %d", c.OffsetsRetentionMinutes)
	case c.OffsetsTopicSegmentBytes < 1:
		return fmt.Errorf("coordinator config: offsets.topic.segment.bytes must be >= 1, got %d", c.OffsetsTopicSegmentBytes)
	case c.OffsetsRetentionCheckIntervalMs < 1:
		return fmt.Errorf("coordinator config: offsets.retention.check.interval.ms must be >= 1, got %d", c.OffsetsRetentionCheckIntervalMs)
	}
	return nil
}
