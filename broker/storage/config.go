package storage

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Kafka 3.9 defaults (kafka.log.LogConfig / org.apache.kafka.storage.internals.log.LogConfig,
// server.properties keys in brackets).
const (
	DefaultSegmentBytes          = 1 << 30                 // log.segment.bytes: 1 GiB
	DefaultSegmentMs             = 7 * 24 * 60 * 60 * 1000 // log.roll.ms (log.roll.hours=168): 7 days
	DefaultRetentionBytes        = -1                      // log.retention.bytes: unlimited
	DefaultRetentionMs           = 7 * 24 * 60 * 60 * 1000 // log.retention.ms (log.retention.hours=168): 7 days
	DefaultFlushIntervalMessages = math.MaxInt64           // log.flush.interval.messages: leave flushing to the OS
	DefaultIndexIntervalBytes    = 4096                    // log.index.interval.bytes
	DefaultCleanupPolicy         = "delete"                // log.cleanup.policy
	DefaultDeleteRetentionMs     = 24 * 60 * 60 * 1000     // log.cleaner.delete.retention.ms: 1 day
	DefaultMinCleanableRatio     = 0.5                     // log.cleaner.min.cleanable.ratio
	DefaultMinCompactionLagMs    = 0                       // log.cleaner.min.compaction.lag.ms
	DefaultMaxCompactionLagMs    = math.MaxInt64           // log.cleaner.max.compaction.lag.ms
)

// Config configures one partition log. A zero field means Kafka's default.
type Config struct {
	// SegmentBytes [log.segment.bytes]: a segment is rolled when an append would
	// make it larger than this (bytes). Default 1 GiB; at most math.MaxInt32
	// (positions in the index are int32, as in Kafka).
	SegmentBytes int64
	// SegmentMs [log.roll.ms]: a non-empty segment is rolled when the incoming
	// records' largest timestamp is more than this many ms past the segment's
	// first timestamp (or, when the segment has no timestamps, when it was
	// created more than this many ms ago by Now). Default 7 days.
	SegmentMs int64
	// RetentionBytes [log.retention.bytes]: EnforceRetention deletes the oldest
	// segments while the log minus the segment stays at least this large
	// (bytes). -1 (the default) = no size limit.
	RetentionBytes int64
	// RetentionMs [log.retention.ms]: EnforceRetention deletes the oldest segments
	// whose largest record timestamp is more than this many ms before Now.
	// Default 7 days; -1 = keep forever. Zero cannot mean "delete at once" (it
	// means the default); use 1.
	RetentionMs int64
	// FlushIntervalMessages [log.flush.interval.messages]: Append fsyncs the log
	// when this many messages (offsets) are unflushed. Default math.MaxInt64:
	// leave flushing to the OS. With 1 every Append is durable before it returns.
	FlushIntervalMessages int64
	// IndexIntervalBytes [log.index.interval.bytes]: one offset-index entry per
	// about this many bytes of batches. Default 4096.
	IndexIntervalBytes int32
	// LeaderEpoch is the partition leader epoch stamped into every appended
	// batch (KIP-101; Kafka's leader writes its epoch into partitionLeaderEpoch).
	// The log uses max(LeaderEpoch, latest epoch on disk); see SetLeaderEpoch.
	// Default 0, Kafka's first epoch.
	LeaderEpoch int32
	// CleanupPolicy [cleanup.policy]: "delete" (the default: retention deletes old
	// segments), "compact" (the Cleaner keeps the latest record per key; retention
	// deletes nothing) or both, "compact,delete" in either order (Kafka's list).
	CleanupPolicy string
	// DeleteRetentionMs [delete.retention.ms]: how long a tombstone (a record with a
	// null value) survives compaction after the clean that first saw it (KIP-534's
	// delete horizon), ms. Default 1 day. Zero means the default; use 1.
	DeleteRetentionMs int64
	// MinCleanableDirtyRatio [min.cleanable.dirty.ratio]: the Cleaner picks a log
	// only when dirty bytes / (clean + dirty bytes) exceeds this. Default 0.5; in
	// (0, 1]. Zero means the default; use a tiny positive value for "always".
	MinCleanableDirtyRatio float64
	// MinCompactionLagMs [min.compaction.lag.ms]: a segment whose largest record
	// timestamp is less than this many ms before Now is not cleaned yet. Default 0.
	MinCompactionLagMs int64
	// MaxCompactionLagMs [max.compaction.lag.ms]: a log whose oldest dirty segment
	// starts more than this many ms before Now is cleaned whatever its dirty
	// ratio. Default math.MaxInt64 (never forced). Zero means the default.
	MaxCompactionLagMs int64
	// ProducerIDExpirationMs [producer.id.expiration.ms]: an idempotent producer whose last batch's
	// timestamp is this many ms or more before Now is forgotten, at Open and at each EnforceRetention
	// (ProducerStateManager.removeExpiredProducers). Default 1 day.
	ProducerIDExpirationMs int64
	// ReplicatedHighWatermark: the high watermark is kept apart from the log end
	// offset (a replicated partition: the leader advances it as followers catch
	// up, a follower takes the leader's), moved by SetHighWatermark and
	// ForceHighWatermark and checkpointed in high-watermark-checkpoint. False (the
	// default): HighWatermark is the log end offset, as with a single replica.
	ReplicatedHighWatermark bool
	// FS is the file system; default OS.
	FS FS
	// Now is the clock for time-based roll and retention; default time.Now.
	Now func() time.Time
}

// withDefaults fills zero fields with Kafka's defaults and rejects values Kafka's
// LogConfig would reject.
func (c Config) withDefaults() (Config, error) {
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentMs == 0 {
		c.SegmentMs = DefaultSegmentMs
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = DefaultRetentionBytes
	}
	if c.RetentionMs == 0 {
		c.RetentionMs = DefaultRetentionMs
	}
	if c.FlushIntervalMessages == 0 {
		c.FlushIntervalMessages = DefaultFlushIntervalMessages
	}
	if c.IndexIntervalBytes == 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.CleanupPolicy == "" {
		c.CleanupPolicy = DefaultCleanupPolicy
	}
	if c.DeleteRetentionMs == 0 {
		c.DeleteRetentionMs = DefaultDeleteRetentionMs
	}
	if c.MinCleanableDirtyRatio == 0 {
		c.MinCleanableDirtyRatio = DefaultMinCleanableRatio
	}
	if c.MaxCompactionLagMs == 0 {
		c.MaxCompactionLagMs = DefaultMaxCompactionLagMs
	}
	if c.ProducerIDExpirationMs == 0 {
		c.ProducerIDExpirationMs = DefaultProducerIDExpirationMs
	}
	if c.FS == nil {
		c.FS = OS
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	switch {
	case c.SegmentBytes < batchOverhead || c.SegmentBytes > math.MaxInt32:
		return c, fmt.Errorf("storage: log.segment.bytes %d: must be in [%d, %d]", c.SegmentBytes, batchOverhead, math.MaxInt32)
	case c.SegmentMs < 1:
		return c, fmt.Errorf("storage: log.roll.ms %d: must be at least 1", c.SegmentMs)
	case c.RetentionBytes < -1:
		return c, fmt.Errorf("storage: log.retention.bytes %d: must be -1 or positive", c.RetentionBytes)
	case c.RetentionMs < -1:
		return c, fmt.Errorf("storage: log.retention.ms %d: must be -1 or positive", c.RetentionMs)
	case c.FlushIntervalMessages < 1:
		return c, fmt.Errorf("storage: log.flush.interval.messages %d: must be at least 1", c.FlushIntervalMessages)
	case c.IndexIntervalBytes < 0:
		return c, fmt.Errorf("storage: log.index.interval.bytes %d: must not be negative", c.IndexIntervalBytes)
	case !validPolicy(c.CleanupPolicy):
		return c, fmt.Errorf("storage: cleanup.policy %q: must be a list of delete and compact", c.CleanupPolicy)
	case c.DeleteRetentionMs < 0:
		return c, fmt.Errorf("storage: delete.retention.ms %d: must not be negative", c.DeleteRetentionMs)
	case !(c.MinCleanableDirtyRatio > 0 && c.MinCleanableDirtyRatio <= 1):
		return c, fmt.Errorf("storage: min.cleanable.dirty.ratio %v: must be in [0, 1]", c.MinCleanableDirtyRatio)
	case c.MinCompactionLagMs < 0:
		return c, fmt.Errorf("storage: min.compaction.lag.ms %d: must not be negative", c.MinCompactionLagMs)
	case c.MaxCompactionLagMs < 1:
		return c, fmt.Errorf("storage: max.compaction.lag.ms %d: must be at least 1", c.MaxCompactionLagMs)
	case c.ProducerIDExpirationMs < 1:
		return c, fmt.Errorf("storage: producer.id.expiration.ms %d: must be at least 1", c.ProducerIDExpirationMs)
	case c.LeaderEpoch < 0:
		return c, fmt.Errorf("storage: leader epoch %d: must not be negative", c.LeaderEpoch)
	}
	return c, nil
}

// Compact reports whether cleanup.policy includes compact (LogConfig.compact).
func (c Config) Compact() bool { return hasPolicy(c.CleanupPolicy, "compact") }

// Delete reports whether cleanup.policy includes delete (LogConfig.delete); an
// empty policy is the default, delete.
func (c Config) Delete() bool { return c.CleanupPolicy == "" || hasPolicy(c.CleanupPolicy, "delete") }

func hasPolicy(list, p string) bool {
	for _, v := range strings.Split(list, ",") {
		if strings.TrimSpace(v) == p {
			return true
		}
	}
	return false
}

// validPolicy: a non-empty comma-separated list of delete and compact.
func validPolicy(list string) bool {
	for _, v := range strings.Split(list, ",") {
		if v = strings.TrimSpace(v); v != "delete" && v != "compact" {
			return false
		}
	}
	return true
}
