package broker

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/broker/storage"
	"github.com/rebalancelab/rebalancelab/internal/kconfig"
)

// Config is a broker's configuration. Every field is a Kafka server.properties key (in brackets) with
// Kafka 3.9's default (kafka.server.KafkaConfig); ConfigFromProperties fills it from those keys. The lab
// passes short timings (zookeeper.session.timeout.ms=2000, group.initial.rebalance.delay.ms=0, ...);
// the defaults below are Kafka's own.
type Config struct {
	// BrokerID [broker.id]: this broker's id, >= 0. Kafka's default -1 asks it to generate one from
	// /brokers/seqid; the lab always names its brokers, so -1 is refused.
	BrokerID int32
	// Listeners [listeners]: "PLAINTEXT://host:port" (only PLAINTEXT exists here). Default
	// "PLAINTEXT://:9092". Port 0 picks a free port; Addr reports the real one.
	Listeners string
	// AdvertisedListeners [advertised.listeners]: what is registered in /brokers/ids/<id> and answered in
	// Metadata. Default: Listeners; an empty or wildcard host advertises os.Hostname() as Kafka does.
	AdvertisedListeners string

	// ZooKeeperConnect [zookeeper.connect]: "host:port,host:port[/chroot]". Required (no default).
	ZooKeeperConnect string
	// ZooKeeperSessionTimeoutMs [zookeeper.session.timeout.ms]: ms, default 18000 (lab: 2000). The server
	// clamps it to [2, 20] x its tickTime.
	ZooKeeperSessionTimeoutMs int64
	// ZooKeeperConnectionTimeoutMs [zookeeper.connection.timeout.ms]: ms Start waits for a ZooKeeper
	// session before it fails ("Timed out waiting for connection", as KafkaZkClient). Default: the
	// session timeout, as in Kafka.
	ZooKeeperConnectionTimeoutMs int64

	// LogDirs [log.dirs, falling back to log.dir]: the data directory; partition p of topic t lives in
	// <LogDirs>/<t>-<p>. Default "/tmp/kafka-logs". Only one directory is supported.
	LogDirs string
	// NumPartitions [num.partitions]: partitions of an auto-created topic, or of CreateTopics with -1.
	// Default 1.
	NumPartitions int32
	// DefaultReplicationFactor [default.replication.factor]: default 1.
	DefaultReplicationFactor int16
	// AutoCreateTopicsEnable [auto.create.topics.enable]: Metadata for an unknown named topic creates it.
	// Default true.
	AutoCreateTopicsEnable bool
	// DeleteTopicEnable [delete.topic.enable]: default true; false answers TOPIC_DELETION_DISABLED.
	DeleteTopicEnable bool
	// ReplicaAssignmentSeed [rebalancelab.replica.assignment.seed]: a rebalancelab-only LONG (not a Kafka
	// key), >= -1. When the key is given (ReplicaAssignmentRandom), a new topic's replicas are placed from
	// a random start as Kafka 3.9's AdminUtils does: -1 seeds the source from the clock (as Kafka's
	// java.util.Random), a value >= 0 makes placements reproducible (the source of topic t is seeded
	// with (seed, t): assignRandFor). Without the key the lab keeps its fixed start index 0 (partition p
	// of a new topic on the p-th live broker in id order), which its multi-broker tests rely on.
	ReplicaAssignmentSeed int64
	// ReplicaAssignmentRandom is set when rebalancelab.replica.assignment.seed is given.
	ReplicaAssignmentRandom bool

	// SocketRequestMaxBytes [socket.request.max.bytes]: bytes; a larger request size prefix closes the
	// connection (SocketServer). Default 104857600.
	SocketRequestMaxBytes int32
	// ConnectionsMaxIdleMs [connections.max.idle.ms]: ms a connection may send nothing before it is
	// closed. Default 600000.
	ConnectionsMaxIdleMs int64
	// MessageMaxBytes [message.max.bytes]: largest record batch accepted by Produce (bytes), else
	// MESSAGE_TOO_LARGE. Default 1048588.
	MessageMaxBytes int32
	// FetchMaxBytes [fetch.max.bytes]: caps a Fetch response's total bytes. Default 57671680 (55 MiB).
	FetchMaxBytes int32

	// LogSegmentBytes [log.segment.bytes]: default 1073741824.
	LogSegmentBytes int64
	// LogRollMs [log.roll.ms, else log.roll.hours x 3600000]: default 604800000 (168 h).
	LogRollMs int64
	// LogRetentionBytes [log.retention.bytes]: default -1 (no limit).
	LogRetentionBytes int64
	// LogRetentionMs [log.retention.ms, else log.retention.minutes, else log.retention.hours]: ms, default
	// 604800000 (168 h); -1 keeps forever.
	LogRetentionMs int64
	// LogRetentionCheckIntervalMs [log.retention.check.interval.ms]: how often retention runs. Default
	// 300000.
	LogRetentionCheckIntervalMs int64
	// LogFlushIntervalMessages [log.flush.interval.messages]: default math.MaxInt64 (the OS flushes).
	LogFlushIntervalMessages int64
	// LogIndexIntervalBytes [log.index.interval.bytes]: default 4096.
	LogIndexIntervalBytes int32

	// LogCleanupPolicy [log.cleanup.policy]: every topic's cleanup.policy, "delete" (default),
	// "compact" or "compact,delete". Records without a key are refused on a compacted topic.
	LogCleanupPolicy string
	// LogCleanerEnable [log.cleaner.enable]: run the log cleaner (storage.Cleaner). Default true.
	LogCleanerEnable bool
	// LogCleanerBackoffMs [log.cleaner.backoff.ms]: the cleaner's pause when no log needs cleaning.
	// Default 15000.
	LogCleanerBackoffMs int64
	// LogCleanerDedupeBufferSize [log.cleaner.dedupe.buffer.size]: bytes of the cleaner's offset map.
	// Default 134217728.
	LogCleanerDedupeBufferSize int64
	// LogCleanerDeleteRetentionMs [log.cleaner.delete.retention.ms]: every topic's delete.retention.ms.
	// Default 86400000.
	LogCleanerDeleteRetentionMs int64
	// LogCleanerMinCleanableRatio [log.cleaner.min.cleanable.ratio]: every topic's
	// min.cleanable.dirty.ratio. Default 0.5.
	LogCleanerMinCleanableRatio float64
	// LogCleanerMinCompactionLagMs [log.cleaner.min.compaction.lag.ms]: default 0.
	LogCleanerMinCompactionLagMs int64
	// LogCleanerMaxCompactionLagMs [log.cleaner.max.compaction.lag.ms]: default math.MaxInt64.
	LogCleanerMaxCompactionLagMs int64

	// Group coordinator settings (kafka.coordinator.group.GroupConfig / OffsetConfig); the broker only
	// carries them for the coordinator plugged in with SetGroupHandler.

	// GroupMinSessionTimeoutMs [group.min.session.timeout.ms]: default 6000.
	GroupMinSessionTimeoutMs int32
	// GroupMaxSessionTimeoutMs [group.max.session.timeout.ms]: default 1800000.
	GroupMaxSessionTimeoutMs int32
	// GroupInitialRebalanceDelayMs [group.initial.rebalance.delay.ms]: default 3000 (lab: 0).
	GroupInitialRebalanceDelayMs int32
	// GroupMaxSize [group.max.size]: default 2147483647.
	GroupMaxSize int32
	// OffsetsTopicNumPartitions [offsets.topic.num.partitions]: partitions of __consumer_offsets.
	// Default 50.
	OffsetsTopicNumPartitions int32
	// OffsetsTopicReplicationFactor [offsets.topic.replication.factor]: default 3. Kafka enforces it
	// strictly (KIP-115): until that many brokers are alive the topic is not created and
	// FindCoordinator answers COORDINATOR_NOT_AVAILABLE. A cluster of fewer brokers sets it lower, as
	// Kafka's own config/server.properties sets 1 (the lab: min(3, brokers)).
	OffsetsTopicReplicationFactor int16
	// OffsetsTopicSegmentBytes [offsets.topic.segment.bytes]: default 104857600.
	OffsetsTopicSegmentBytes int64
	// OffsetsRetentionMinutes [offsets.retention.minutes]: default 10080 (7 days).
	OffsetsRetentionMinutes int32
	// OffsetsRetentionCheckIntervalMs [offsets.retention.check.interval.ms]: default 600000.
	OffsetsRetentionCheckIntervalMs int64
	// OffsetsCommitTimeoutMs [offsets.commit.timeout.ms]: default 5000.
	OffsetsCommitTimeoutMs int32
	// OffsetsLoadBufferSize [offsets.load.buffer.size]: bytes, default 5242880.
	OffsetsLoadBufferSize int32
	// OffsetMetadataMaxBytes [offset.metadata.max.bytes]: default 4096.
	OffsetMetadataMaxBytes int32

	// Replication settings (ReplicationConfigs): the follower's fetcher and the leader's ISR.

	// ReplicaLagTimeMaxMs [replica.lag.time.max.ms]: a follower that has not caught up to the leader's
	// log end offset for this long leaves the ISR. Default 30000.
	ReplicaLagTimeMaxMs int64
	// ReplicaFetchWaitMaxMs [replica.fetch.wait.max.ms]: a follower's Fetch MaxWait. Default 500.
	ReplicaFetchWaitMaxMs int32
	// ReplicaFetchMaxBytes [replica.fetch.max.bytes]: a follower's per-partition fetch size. Default 1048576.
	ReplicaFetchMaxBytes int32
	// ReplicaFetchResponseMaxBytes [replica.fetch.response.max.bytes]: a follower's Fetch MaxBytes.
	// Default 10485760.
	ReplicaFetchResponseMaxBytes int32
	// ReplicaFetchBackoffMs [replica.fetch.backoff.ms]: the follower's pause after a failed fetch.
	// Default 1000.
	ReplicaFetchBackoffMs int32
	// ReplicaSocketTimeoutMs [replica.socket.timeout.ms]: a follower's request timeout. Default 30000.
	ReplicaSocketTimeoutMs int32
	// ReplicaHighWatermarkCheckpointIntervalMs [replica.high.watermark.checkpoint.interval.ms]: how
	// often high watermarks are written to disk. Default 5000.
	ReplicaHighWatermarkCheckpointIntervalMs int64
	// ControlledShutdownEnable [controlled.shutdown.enable]: Close asks the controller to move this
	// broker's leaderships away first. Default true.
	ControlledShutdownEnable bool

	// Properties are the server.properties keys this Config was built from (ConfigFromProperties; nil for
	// a Config built in code). DescribeConfigs reports them as STATIC_BROKER_CONFIG, and the topic-config
	// defaults of the keys below that have no field here (log.cleanup.policy, min.insync.replicas,
	// compression.type, log.cleaner.delete.retention.ms, ...: logSynonymKeys) come from them.
	Properties map[string]string

	// ZKDialer, when set, dials ZooKeeper (e.g. through a lab fault proxy). Not a server.properties key.
	ZKDialer zk.Dialer
}

// ReplicaAssignmentSeedKey is the rebalancelab-only key of Config.ReplicaAssignmentSeed.
const ReplicaAssignmentSeedKey = "rebalancelab.replica.assignment.seed"

// Kafka 3.9 defaults (KafkaConfig / ServerLogConfigs / GroupCoordinatorConfig).
const (
	defaultZKSessionTimeoutMs       = 18000
	defaultSocketRequestMaxBytes    = 104857600
	defaultConnectionsMaxIdleMs     = 600000
	defaultMessageMaxBytes          = 1048588
	defaultFetchMaxBytes            = 57671680
	defaultLogRetentionCheckMs      = 300000
	defaultGroupMinSessionTimeoutMs = 6000
	defaultGroupMaxSessionTimeoutMs = 1800000
	defaultGroupInitialDelayMs      = 3000
	defaultOffsetsTopicPartitions   = 50
	defaultOffsetsTopicRF           = 3
	defaultOffsetsTopicSegmentBytes = 104857600
	defaultOffsetsRetentionMinutes  = 10080
	defaultOffsetsRetentionCheckMs  = 600000
	defaultOffsetsCommitTimeoutMs   = 5000
	defaultOffsetsLoadBufferSize    = 5242880
	defaultOffsetMetadataMaxBytes   = 4096
	defaultReplicaLagTimeMaxMs      = 30000
	defaultReplicaFetchWaitMaxMs    = 500
	defaultReplicaFetchMaxBytes     = 1048576
	defaultReplicaFetchRespMaxBytes = 10485760
	defaultReplicaFetchBackoffMs    = 1000
	defaultReplicaSocketTimeoutMs   = 30000
	defaultReplicaHWCheckpointMs    = 5000
)

// DefaultConfig is Kafka 3.9's defaults, with BrokerID 0 and no zookeeper.connect.
func DefaultConfig() Config {
	return Config{
		BrokerID:                        0,
		Listeners:                       "PLAINTEXT://:9092",
		ZooKeeperSessionTimeoutMs:       defaultZKSessionTimeoutMs,
		LogDirs:                         "/tmp/kafka-logs",
		NumPartitions:                   1,
		DefaultReplicationFactor:        1,
		AutoCreateTopicsEnable:          true,
		DeleteTopicEnable:               true,
		ReplicaAssignmentSeed:           -1,
		SocketRequestMaxBytes:           defaultSocketRequestMaxBytes,
		ConnectionsMaxIdleMs:            defaultConnectionsMaxIdleMs,
		MessageMaxBytes:                 defaultMessageMaxBytes,
		FetchMaxBytes:                   defaultFetchMaxBytes,
		LogSegmentBytes:                 storage.DefaultSegmentBytes,
		LogRollMs:                       storage.DefaultSegmentMs,
		LogRetentionBytes:               storage.DefaultRetentionBytes,
		LogRetentionMs:                  storage.DefaultRetentionMs,
		LogRetentionCheckIntervalMs:     defaultLogRetentionCheckMs,
		LogFlushIntervalMessages:        storage.DefaultFlushIntervalMessages,
		LogIndexIntervalBytes:           storage.DefaultIndexIntervalBytes,
		LogCleanupPolicy:                storage.DefaultCleanupPolicy,
		LogCleanerEnable:                true,
		LogCleanerBackoffMs:             storage.DefaultCleanerBackoffMs,
		LogCleanerDedupeBufferSize:      storage.DefaultDedupeBufferSize,
		LogCleanerDeleteRetentionMs:     storage.DefaultDeleteRetentionMs,
		LogCleanerMinCleanableRatio:     storage.DefaultMinCleanableRatio,
		LogCleanerMinCompactionLagMs:    storage.DefaultMinCompactionLagMs,
		LogCleanerMaxCompactionLagMs:    storage.DefaultMaxCompactionLagMs,
		GroupMinSessionTimeoutMs:        defaultGroupMinSessionTimeoutMs,
		GroupMaxSessionTimeoutMs:        defaultGroupMaxSessionTimeoutMs,
		GroupInitialRebalanceDelayMs:    defaultGroupInitialDelayMs,
		GroupMaxSize:                    math.MaxInt32,
		OffsetsTopicNumPartitions:       defaultOffsetsTopicPartitions,
		OffsetsTopicReplicationFactor:   defaultOffsetsTopicRF,
		OffsetsTopicSegmentBytes:        defaultOffsetsTopicSegmentBytes,
		OffsetsRetentionMinutes:         defaultOffsetsRetentionMinutes,
		OffsetsRetentionCheckIntervalMs: defaultOffsetsRetentionCheckMs,
		OffsetsCommitTimeoutMs:          defaultOffsetsCommitTimeoutMs,
		OffsetsLoadBufferSize:           defaultOffsetsLoadBufferSize,
		OffsetMetadataMaxBytes:          defaultOffsetMetadataMaxBytes,

		ReplicaLagTimeMaxMs:                      defaultReplicaLagTimeMaxMs,
		ReplicaFetchWaitMaxMs:                    defaultReplicaFetchWaitMaxMs,
		ReplicaFetchMaxBytes:                     defaultReplicaFetchMaxBytes,
		ReplicaFetchResponseMaxBytes:             defaultReplicaFetchRespMaxBytes,
		ReplicaFetchBackoffMs:                    defaultReplicaFetchBackoffMs,
		ReplicaSocketTimeoutMs:                   defaultReplicaSocketTimeoutMs,
		ReplicaHighWatermarkCheckpointIntervalMs: defaultReplicaHWCheckpointMs,
		ControlledShutdownEnable:                 true,
	}
}

// property parses one server.properties value into the config.
type property func(c *Config, v string) error

// numProp reads a numeric key as its Kafka 3.9 ConfigDef type within r (kconfig: the error names
// the key, the type and the allowed range) and stores it times scale (log.retention.hours -> ms).
func numProp(key string, t kconfig.Type, r kconfig.Range, scale int64, store func(*Config, int64)) property {
	return func(c *Config, v string) error {
		n, err := kconfig.Parse(key, v, t, r)
		if err != nil {
			return err
		}
		store(c, n*scale) // scale > 1 only for INT keys: an int32 times 3600000 fits an int64
		return nil
	}
}

func intProp(key string, r kconfig.Range, dst func(*Config) *int32) property {
	return numProp(key, kconfig.Int, r, 1, func(c *Config, n int64) { *dst(c) = int32(n) })
}

// intAsLong is an INT key held in an int64 field, scaled.
func intAsLong(key string, r kconfig.Range, scale int64, dst func(*Config) *int64) property {
	return numProp(key, kconfig.Int, r, scale, func(c *Config, n int64) { *dst(c) = n })
}

func longProp(key string, r kconfig.Range, dst func(*Config) *int64) property {
	return numProp(key, kconfig.Long, r, 1, func(c *Config, n int64) { *dst(c) = n })
}

func shortProp(key string, t kconfig.Type, r kconfig.Range, dst func(*Config) *int16) property {
	return numProp(key, t, r, 1, func(c *Config, n int64) { *dst(c) = int16(n) })
}

func boolProp(dst func(*Config) *bool) property {
	return func(c *Config, v string) error {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			*dst(c) = true
		case "false":
			*dst(c) = false
		default:
			return fmt.Errorf("not a boolean: %q", v)
		}
		return nil
	}
}

// ratioProp is a DOUBLE key in [0, 1] (ConfigDef.Range.between(0, 1)).
func ratioProp(key string, dst func(*Config) *float64) property {
	return func(c *Config, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return fmt.Errorf("Invalid value %s for configuration %s: Not a number of type DOUBLE", v, key)
		}
		if f < 0 || f > 1 {
			return fmt.Errorf("Invalid value %s for configuration %s: Value must be in [0, 1]", v, key)
		}
		*dst(c) = f
		return nil
	}
}

// policyProp is log.cleanup.policy: a LIST of delete and compact
// (ConfigDef.ValidList.in("compact", "delete")).
func policyProp(dst func(*Config) *string) property {
	return func(c *Config, v string) error {
		var parts []string
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if p != "compact" && p != "delete" {
				return fmt.Errorf("Invalid value %s for configuration log.cleanup.policy: String must be one of: compact, delete", p)
			}
			parts = append(parts, p)
		}
		*dst(c) = strings.Join(parts, ",")
		return nil
	}
}

func stringProp(dst func(*Config) *string) property {
	return func(c *Config, v string) error { *dst(c) = strings.TrimSpace(v); return nil }
}

// properties maps every supported server.properties key to its parser. Keys that override another
// (log.retention.ms over .minutes over .hours; log.roll.ms over log.roll.hours; log.dirs over log.dir) are
// applied in precedence order by ConfigFromProperties.
//
// Numeric keys carry Kafka 3.9's ConfigDef type and validator; where Kafka has none, the lower bound
// this broker needs (a positive timeout, retention -1 = forever, broker.id -1 = generate, refused by
// Validate). default.replication.factor is an INT in Kafka, held here as a SHORT (CreateTopics'
// replication factor is one on the wire), hence its range ends at 32767.
var properties = map[string]property{
	"broker.id":                                     intProp("broker.id", kconfig.AtLeast(-1), func(c *Config) *int32 { return &c.BrokerID }),
	"listeners":                                     stringProp(func(c *Config) *string { return &c.Listeners }),
	"advertised.listeners":                          stringProp(func(c *Config) *string { return &c.AdvertisedListeners }),
	"zookeeper.connect":                             stringProp(func(c *Config) *string { return &c.ZooKeeperConnect }),
	"zookeeper.session.timeout.ms":                  intAsLong("zookeeper.session.timeout.ms", kconfig.AtLeast(1), 1, func(c *Config) *int64 { return &c.ZooKeeperSessionTimeoutMs }),
	"zookeeper.connection.timeout.ms":               intAsLong("zookeeper.connection.timeout.ms", kconfig.AtLeast(1), 1, func(c *Config) *int64 { return &c.ZooKeeperConnectionTimeoutMs }),
	"log.dir":                                       stringProp(func(c *Config) *string { return &c.LogDirs }),
	"log.dirs":                                      stringProp(func(c *Config) *string { return &c.LogDirs }),
	"num.partitions":                                intProp("num.partitions", kconfig.AtLeast(1), func(c *Config) *int32 { return &c.NumPartitions }),
	"default.replication.factor":                    shortProp("default.replication.factor", kconfig.Int, kconfig.Between(1, math.MaxInt16), func(c *Config) *int16 { return &c.DefaultReplicationFactor }),
	"auto.create.topics.enable":                     boolProp(func(c *Config) *bool { return &c.AutoCreateTopicsEnable }),
	"delete.topic.enable":                           boolProp(func(c *Config) *bool { return &c.DeleteTopicEnable }),
	"socket.request.max.bytes":                      intProp("socket.request.max.bytes", kconfig.AtLeast(1), func(c *Config) *int32 { return &c.SocketRequestMaxBytes }),
	"connections.max.idle.ms":                       longProp("connections.max.idle.ms", kconfig.AtLeast(1), func(c *Config) *int64 { return &c.ConnectionsMaxIdleMs }),
	"message.max.bytes":                             intProp("message.max.bytes", kconfig.AtLeast(0), func(c *Config) *int32 { return &c.MessageMaxBytes }),
	"fetch.max.bytes":                               intProp("fetch.max.bytes", kconfig.AtLeast(1024), func(c *Config) *int32 { return &c.FetchMaxBytes }),
	"log.segment.bytes":                             intAsLong("log.segment.bytes", kconfig.AtLeast(14), 1, func(c *Config) *int64 { return &c.LogSegmentBytes }),
	"log.roll.hours":                                intAsLong("log.roll.hours", kconfig.AtLeast(1), 3600000, func(c *Config) *int64 { return &c.LogRollMs }),
	"log.roll.ms":                                   longProp("log.roll.ms", kconfig.AtLeast(1), func(c *Config) *int64 { return &c.LogRollMs }),
	"log.retention.bytes":                           longProp("log.retention.bytes", kconfig.AtLeast(-1), func(c *Config) *int64 { return &c.LogRetentionBytes }),
	"log.retention.hours":                           intAsLong("log.retention.hours", kconfig.AtLeast(-1), 3600000, func(c *Config) *int64 { return &c.LogRetentionMs }),
	"log.retention.minutes":                         intAsLong("log.retention.minutes", kconfig.AtLeast(-1), 60000, func(c *Config) *int64 { return &c.LogRetentionMs }),
	"log.retention.ms":                              longProp("log.retention.ms", kconfig.AtLeast(-1), func(c *Config) *int64 { return &c.LogRetentionMs }),
	"log.retention.check.interval.ms":               longProp("log.retention.check.interval.ms", kconfig.AtLeast(1), func(c *Config) *int64 { return &c.LogRetentionCheckIntervalMs }),
	"log.flush.interval.messages":                   longProp("log.flush.interval.messages", kconfig.AtLeast(1), func(c *Config) *int64 { return &c.LogFlushIntervalMessages }),
	"log.index.interval.bytes":                      intProp("log.index.interval.bytes", kconfig.AtLeast(0), func(c *Config) *int32 { return &c.LogIndexIntervalBytes }),
	"log.cleanup.policy":                            policyProp(func(c *Config) *string { return &c.LogCleanupPolicy }),
	"log.cleaner.enable":                            boolProp(func(c *Config) *bool { return &c.LogCleanerEnable }),
	"log.cleaner.backoff.ms":                        longProp("log.cleaner.backoff.ms", kconfig.AtLeast(0), func(c *Config) *int64 { return &c.LogCleanerBackoffMs }),
	"log.cleaner.dedupe.buffer.size":                longProp("log.cleaner.dedupe.buffer.size", kconfig.AtLeast(0), func(c *Config) *int64 { return &c.LogCleanerDedupeBufferSize }),
	"log.cleaner.delete.retention.ms":               longProp("log.cleaner.delete.retention.ms", kconfig.AtLeast(0), func(c *Config) *int64 { return &c.LogCleanerDeleteRetentionMs }),
	"log.cleaner.min.cleanable.ratio":               ratioProp("log.cleaner.min.cleanable.ratio", func(c *Config) *float64 { return &c.LogCleanerMinCleanableRatio }),
	"log.cleaner.min.compaction.lag.ms":             longProp("log.cleaner.min.compaction.lag.ms", kconfig.AtLeast(0), func(c *Config) *int64 { return &c.LogCleanerMinCompactionLagMs }),
	"log.cleaner.max.compaction.lag.ms":             longProp("log.cleaner.max.compaction.lag.ms", kconfig.AtLeast(1), func(c *Config) *int64 { return &c.LogCleanerMaxCompactionLagMs }),
	"group.min.session.timeout.ms":                  intProp("group.min.session.timeout.ms", kconfig.AtLeast(0), func(c *Config) *int32 { return &c.GroupMinSessionTimeoutMs }),
	"group.max.session.timeout.ms":                  intProp("group.max.session.timeout.ms", kconfig.AtLeast(0), func(c *Config) *int32 { return &c.GroupMaxSessionTimeoutMs }),
	"group.initial.rebalance.delay.ms":              intProp("group.initial.rebalance.delay.ms", kconfig.AtLeast(0), func(c *Config) *int32 { return &c.GroupInitialRebalanceDelayMs }),
	"group.max.size":                                intProp("group.max.size", kconfig.AtLeast(1), func(c *Config) *int32 { return &c.GroupMaxSize }),
	"offsets.topic.num.partitions":                  intProp("offsets.topic.num.partitions", kconfig.AtLeast(1), func(c *Config) *int32 { return &c.OffsetsTopicNumPartitions }),
	"offsets.topic.replication.factor":              shortProp("offsets.topic.replication.factor", kconfig.Short, kconfig.AtLeast(1), func(c *Config) *int16 { return &c.OffsetsTopicReplicationFactor }),
	"offsets.topic.segment.bytes":                   intAsLong("offsets.topic.segment.bytes", kconfig.AtLeast(1), 1, func(c *Config) *int64 { return &c.OffsetsTopicSegmentBytes }),
	"offsets.retention.minutes":                     intProp("offsets.retention.minutes", kconfig.AtLeast(1), func(c *Config) *int32 { return &c.OffsetsRetentionMinutes }),
	"offsets.retention.check.interval.ms":           longProp("offsets.retention.check.interval.ms", kconfig.AtLeast(1), func(c *Config) *int64 { return &c.OffsetsRetentionCheckIntervalMs }),
	"offsets.commit.timeout.ms":                     intProp("offsets.commit.timeout.ms", kconfig.AtLeast(1), func(c *Config) *int32 { return &c.OffsetsCommitTimeoutMs }),
	"offsets.load.buffer.size":                      intProp("offsets.load.buffer.size", kconfig.AtLeast(1), func(c *Config) *int32 { return &c.OffsetsLoadBufferSize }),
	"replica.lag.time.max.ms":                       longProp("replica.lag.time.max.ms", kconfig.AtLeast(1), func(c *Config) *int64 { return &c.ReplicaLagTimeMaxMs }),
	"replica.fetch.wait.max.ms":                     intProp("replica.fetch.wait.max.ms", kconfig.AtLeast(0), func(c *Config) *int32 { return &c.ReplicaFetchWaitMaxMs }),
	"replica.fetch.max.bytes":                       intProp("replica.fetch.max.bytes", kconfig.AtLeast(0), func(c *Config) *int32 { return &c.ReplicaFetchMaxBytes }),
	"replica.fetch.response.max.bytes":              intProp("replica.fetch.response.max.bytes", kconfig.AtLeast(0), func(c *Config) *int32 { return &c.ReplicaFetchResponseMaxBytes }),
	"replica.fetch.backoff.ms":                      intProp("replica.fetch.backoff.ms", kconfig.AtLeast(0), func(c *Config) *int32 { return &c.ReplicaFetchBackoffMs }),
	"replica.socket.timeout.ms":                     intProp("replica.socket.timeout.ms", kconfig.AtLeast(1), func(c *Config) *int32 { return &c.ReplicaSocketTimeoutMs }),
	"replica.high.watermark.checkpoint.interval.ms": longProp("replica.high.watermark.checkpoint.interval.ms", kconfig.AtLeast(1), func(c *Config) *int64 { return &c.ReplicaHighWatermarkCheckpointIntervalMs }),
	"controlled.shutdown.enable":                    boolProp(func(c *Config) *bool { return &c.ControlledShutdownEnable }),
	"offset.metadata.max.bytes":                     intProp("offset.metadata.max.bytes", kconfig.AtLeast(0), func(c *Config) *int32 { return &c.OffsetMetadataMaxBytes }),
}

// rebalancelab.replica.assignment.seed is the lab's own key (not Kafka's): a LONG >= -1, whose presence
// turns on Kafka 3.9's random placement start (Config.ReplicaAssignmentSeed).
func init() {
	seed := longProp(ReplicaAssignmentSeedKey, kconfig.AtLeast(-1), func(c *Config) *int64 { return &c.ReplicaAssignmentSeed })
	properties[ReplicaAssignmentSeedKey] = func(c *Config, v string) error {
		c.ReplicaAssignmentRandom = true
		return seed(c, v)
	}
}

// precedence lists keys that must be applied after the keys they override (KafkaConfig's
// "if X is set it takes precedence over Y" rules).
var precedence = map[string]int{
	"log.dir": 0, "log.dirs": 1,
	"log.roll.hours": 0, "log.roll.ms": 1,
	"log.retention.hours": 0, "log.retention.minutes": 1, "log.retention.ms": 2,
}

// PropertyKeys lists the server.properties keys ConfigFromProperties understands, sorted.
func PropertyKeys() []string {
	keys := make([]string, 0, len(properties))
	for k := range properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ConfigFromProperties builds a Config from server.properties keys on top of DefaultConfig (Kafka 3.9
// defaults). An unknown key, an unparsable value or an inconsistent combination is an error naming the
// key. zookeeper.connect is required; broker.id must be >= 0.
func ConfigFromProperties(props map[string]string) (Config, error) {
	c := DefaultConfig()
	keys := make([]string, 0, len(props))
	for k := range props {
		if _, ok := properties[k]; !ok {
			return Config{}, fmt.Errorf("broker config: unknown key %q (known keys: %s)", k, strings.Join(PropertyKeys(), ", "))
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if pi, pj := precedence[keys[i]], precedence[keys[j]]; pi != pj {
			return pi < pj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		if err := properties[k](&c, props[k]); err != nil {
			var ke *kconfig.Error
			if errors.As(err, &ke) { // names the key itself
				return Config{}, fmt.Errorf("broker config: %w", err)
			}
			return Config{}, fmt.Errorf("broker config: %s: %w", k, err)
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	c.Properties = make(map[string]string, len(props))
	for k, v := range props {
		c.Properties[k] = strings.TrimSpace(v)
	}
	return c, nil
}

// logSynonymKeys are the broker keys that only give topics their default (ServerTopicConfigSynonyms)
// and have no Config field: each is checked with its topic key's type and validator and kept in
// Config.Properties.
var logSynonymKeys = []string{
	"log.roll.jitter.ms", "log.roll.jitter.hours", "log.index.size.max.bytes", "log.flush.interval.ms",
	"log.flush.scheduler.interval.ms", "log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms",
	"log.cleaner.max.compaction.lag.ms", "log.segment.delete.delay.ms", "log.cleaner.min.cleanable.ratio",
	"log.cleanup.policy", "unclean.leader.election.enable", "min.insync.replicas", "compression.type",
	"compression.gzip.level", "compression.lz4.level", "compression.zstd.level", "log.preallocate",
	"log.message.format.version", "log.message.timestamp.type", "log.message.timestamp.difference.max.ms",
	"log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms",
	"log.message.downconversion.enable", "log.local.retention.ms", "log.local.retention.bytes",
}

// synonymKey is the configKey a broker key is checked with: its topic key's type and validator under
// the broker key's name (hours and minutes are INTs of their own).
func synonymKey(broker string) *configKey {
	for i := range topicConfigKeys {
		k := &topicConfigKeys[i]
		for _, s := range k.synonyms {
			if s.name == broker {
				if s.scale != 1 {
					return &configKey{name: broker, typ: typeInt}
				}
				return &configKey{name: broker, typ: k.typ, check: k.check}
			}
		}
	}
	return nil
}

func init() {
	for _, key := range logSynonymKeys {
		k := synonymKey(key)
		properties[key] = func(_ *Config, v string) error {
			_, err := parseValue(k, v)
			return err
		}
	}
}

// Validate checks what KafkaConfig checks at startup for the keys used here. Errors name the key.
func (c Config) Validate() error {
	if c.BrokerID < 0 {
		return fmt.Errorf("broker config: broker.id %d: must be >= 0 (id generation is not supported)", c.BrokerID)
	}
	if strings.TrimSpace(c.ZooKeeperConnect) == "" {
		return fmt.Errorf("broker config: zookeeper.connect is required (host:port[,host:port][/chroot])")
	}
	if _, _, err := zkServers(c.ZooKeeperConnect); err != nil {
		return fmt.Errorf("broker config: zookeeper.connect: %w", err)
	}
	if _, err := parseListener(c.Listeners); err != nil {
		return fmt.Errorf("broker config: listeners: %w", err)
	}
	if c.AdvertisedListeners != "" {
		if _, err := parseListener(c.AdvertisedListeners); err != nil {
			return fmt.Errorf("broker config: advertised.listeners: %w", err)
		}
	}
	if strings.Contains(c.LogDirs, ",") {
		return fmt.Errorf("broker config: log.dirs %q: only one directory is supported", c.LogDirs)
	}
	if c.LogDirs == "" {
		return fmt.Errorf("broker config: log.dirs must not be empty")
	}
	if c.GroupMinSessionTimeoutMs > c.GroupMaxSessionTimeoutMs {
		return fmt.Errorf("broker config: group.min.session.timeout.ms %d is above group.max.session.timeout.ms %d",
			c.GroupMinSessionTimeoutMs, c.GroupMaxSessionTimeoutMs)
	}
	if c.SocketRequestMaxBytes <= 0 {
		return fmt.Errorf("broker config: socket.request.max.bytes must be positive")
	}
	return nil
}

// listener is one parsed "PLAINTEXT://host:port".
type listener struct {
	Host string
	Port int
}

func parseListener(s string) (listener, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, ",") {
		return listener{}, fmt.Errorf("%q: only one listener is supported", s)
	}
	rest, ok := strings.CutPrefix(s, "PLAINTEXT://")
	if !ok {
		return listener{}, fmt.Errorf("%q: want PLAINTEXT://host:port (only the PLAINTEXT security protocol exists here)", s)
	}
	host, port, err := net.SplitHostPort(rest)
	if err != nil {
		return listener{}, fmt.Errorf("%q: %v", s, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return listener{}, fmt.Errorf("%q: bad port %q", s, port)
	}
	return listener{Host: host, Port: p}, nil
}

// zkServers splits zookeeper.connect into servers and an optional chroot ("/kafka").
func zkServers(connect string) ([]string, string, error) {
	connect = strings.TrimSpace(connect)
	chroot := ""
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		chroot = strings.TrimRight(connect[i:], "/")
		connect = connect[:i]
	}
	var servers []string
	for _, s := range strings.Split(connect, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, "", fmt.Errorf("%q: %v", s, err)
		}
		servers = append(servers, s)
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("no servers in %q", connect)
	}
	return servers, chroot, nil
}

// storageConfig is the per-partition log configuration (kafka.log.LogConfig from the broker defaults;
// __consumer_offsets uses offsets.topic.segment.bytes as Kafka's GroupMetadataManager does).
func (c Config) storageConfig(topic string, leaderEpoch int32) storage.Config {
	sc := storage.Config{
		// Every partition may have followers: the high watermark is the leader's (broker/replica),
		// the log end offset only with the ISR alone.
		ReplicatedHighWatermark: true,
		SegmentBytes:            c.LogSegmentBytes,
		SegmentMs:               c.LogRollMs,
		RetentionBytes:          c.LogRetentionBytes,
		RetentionMs:             c.LogRetentionMs,
		FlushIntervalMessages:   c.LogFlushIntervalMessages,
		IndexIntervalBytes:      c.LogIndexIntervalBytes,
		LeaderEpoch:             max(leaderEpoch, 0),
		CleanupPolicy:           c.LogCleanupPolicy,
		DeleteRetentionMs:       c.LogCleanerDeleteRetentionMs,
		MinCleanableDirtyRatio:  c.LogCleanerMinCleanableRatio,
		MinCompactionLagMs:      c.LogCleanerMinCompactionLagMs,
		MaxCompactionLagMs:      c.LogCleanerMaxCompactionLagMs,
	}
	// Zero means "default" to storage; Kafka's 0 means at once / always.
	if sc.DeleteRetentionMs == 0 {
		sc.DeleteRetentionMs = 1
	}
	if sc.MinCleanableDirtyRatio == 0 {
		sc.MinCleanableDirtyRatio = math.SmallestNonzeroFloat64
	}
	if topic == OffsetsTopic {
		sc.SegmentBytes = c.OffsetsTopicSegmentBytes
	}
	if sc.IndexIntervalBytes == 0 {
		sc.IndexIntervalBytes = 1 // 0 would mean "default" to storage; Kafka's 0 indexes every batch
	}
	return sc
}

// partitionDir is <log.dirs>/<topic>-<partition> (kafka.log.LogManager).
func (c Config) partitionDir(topic string, p int32) string {
	return filepath.Join(c.LogDirs, fmt.Sprintf("%s-%d", topic, p))
}

func (c Config) sessionTimeout() time.Duration {
	return time.Duration(c.ZooKeeperSessionTimeoutMs) * time.Millisecond
}

func (c Config) connectionTimeout() time.Duration {
	if c.ZooKeeperConnectionTimeoutMs > 0 {
		return time.Duration(c.ZooKeeperConnectionTimeoutMs) * time.Millisecond
	}
	return c.sessionTimeout()
}

// advertisedHost is the host registered in ZooKeeper: advertised.listeners, else listeners, else (empty
// or wildcard host) the machine's host name, as Kafka's EndPoint defaulting does.
func (c Config) advertised(boundPort int) (string, int) {
	l, _ := parseListener(c.Listeners)
	if c.AdvertisedListeners != "" {
		a, _ := parseListener(c.AdvertisedListeners)
		if a.Port == 0 {
			a.Port = boundPort
		}
		l = a
	} else {
		l.Port = boundPort
	}
	if ip := net.ParseIP(l.Host); l.Host == "" || (ip != nil && ip.IsUnspecified()) {
		if h, err := os.Hostname(); err == nil {
			l.Host = h
		} else {
			l.Host = "localhost"
		}
	}
	return l.Host, l.Port
}
