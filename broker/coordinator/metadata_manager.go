package coordinator

import (
	"fmt"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file ports the writes of kafka.coordinator.group.GroupMetadataManager (Kafka 3.9): the group
// and offset records appended to __consumer_offsets, and the expired-offset cleanup.

// ---- GroupMetadataManager writes ----

// storeGroup appends the group's metadata record (GroupMetadataManager.storeGroup) and calls cb with
// the Kafka error the write ended with, mapped as Kafka maps it for group metadata.
func (c *Core) storeGroup(g *group, assignment map[string][]byte, cb func(int16)) {
	p := c.partitionFor(g.id)
	if !c.owned[p] {
		cb(kerr.NotCoordinator.Code)
		return
	}
	value, err := groupMetadataValue(g, assignment)
	if err != nil {
		c.fail("%v", err)
	}
	c.appendRecords(p, []KV{{Key: groupMetadataKey(g.id), Value: value}}, func(code int16, _ int64) {
		cb(mapStoreGroupError(code))
	})
}

func mapStoreGroupError(code int16) int16 {
	switch code {
	case errNone:
		return errNone
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.RequestTimedOut.Code:
		return kerr.RebalanceInProgress.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.UnknownServerError.Code
	}
	return code
}

// maybeConvertOffsetCommitError is GroupMetadataManager.maybeConvertOffsetCommitError.
func maybeConvertOffsetCommitError(code int16) int16 {
	switch code {
	case kerr.NetworkException.Code:
		return kerr.CoordinatorLoadInProgress.Code
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.InvalidCommitOffsetSize.Code
	}
	return code
}

func (c *Core) validOffsetMetadataLength(md string) bool {
	return len(utf16.Encode([]rune(md))) <= int(c.cfg.OffsetMetadataMaxBytes)
}

// storeOffsets is GroupMetadataManager.storeOffsets: the offsets are staged as pending, appended, and
// only on a successful append become the committed offsets; cb gets every partition's error after
// the append (OFFSET_METADATA_TOO_LARGE for oversized metadata, which is never written).
func (c *Core) storeOffsets(g *group, entries []commitEntry, cb commitCallback) {
	var filtered []commitEntry
	for _, e := range entries {
		if c.validOffsetMetadataLength(e.om.metadata) {
			filtered = append(filtered, e)
		}
	}
	status := func(err int16) map[topicPartition]int16 {
		out := make(map[topicPartition]int16, len(entries))
		for _, e := range entries {
			if !c.validOffsetMetadataLength(e.om.metadata) {
				out[e.tp] = kerr.OffsetMetadataTooLarge.Code
			} else {
				out[e.tp] = err
			}
		}
		return out
	}
	if len(filtered) == 0 {
		cb(status(kerr.OffsetMetadataTooLarge.Code))
		return
	}
	p := c.partitionFor(g.id)
	if !c.owned[p] {
		cb(status(kerr.NotCoordinator.Code))
		return
	}
	recs := make([]KV, 0, len(filtered))
	for _, e := range filtered {
		recs = append(recs, KV{Key: offsetCommitKey(g.id, e.tp.topic, e.tp.partition), Value: offsetCommitValue(e.om)})
		g.pendingOffsets[e.tp] = e.om
	}
	c.appendRecords(p, recs, func(code int16, seq int64) {
		if code == errNone {
			c.offsetCommits += uint64(len(filtered))
			if !g.is(Dead) {
				for _, e := range filtered {
					c.onOffsetCommitAppend(g, e.tp, commitRecord{appendedAt: seq, om: e.om})
				}
			}
		} else {
			if !g.is(Dead) {
				for _, e := range filtered {
					if staged, ok := g.pendingOffsets[e.tp]; ok && staged == e.om {
						delete(g.pendingOffsets, e.tp)
					}
				}
			}
			c.logGroup(g).Debugf("offset commit failed when appending to log: %s", errName(code))
			code = maybeConvertOffsetCommitError(code)
		}
		cb(status(code))
	})
}

// onOffsetCommitAppend is GroupMetadata.onOffsetCommitAppend.
func (c *Core) onOffsetCommitAppend(g *group, tp topicPartition, cr commitRecord) {
	if _, ok := g.pendingOffsets[tp]; ok {
		if cur, ok := g.offsets[tp]; !ok || cur.appendedAt < cr.appendedAt {
			g.offsets[tp] = cr
		}
	}
	if staged, ok := g.pendingOffsets[tp]; ok && staged == cr.om {
		delete(g.pendingOffsets, tp)
	}
}

// cleanupGroupMetadata is GroupMetadataManager.cleanupGroupMetadata: selector removes offsets; an
// Empty group without offsets becomes Dead and leaves the cache; tombstones for the removed offsets
// (and for the group, unless it never had a generation) are appended without waiting for them
// (Kafka appends with acks=0). Returns the number of offsets removed.
func (c *Core) cleanupGroupMetadata(groups []*group, selector func(*group) []topicPartition) int {
	n := 0
	for _, g := range groups {
		removed := selector(g)
		if g.is(Empty) && !g.hasOffsets() {
			c.logGroup(g).Info("group transitioned to Dead")
			c.transition(g, Dead)
		}
		dead := g.is(Dead)
		p := c.partitionFor(g.id)
		if !c.owned[p] {
			continue
		}
		var tombstones []KV
		for _, tp := range removed {
			tombstones = append(tombstones, KV{Key: offsetCommitKey(g.id, tp.topic, tp.partition)})
		}
		if dead && c.groups[g.id] == g {
			delete(c.groups, g.id)
			c.cancelGroupTimers(g)
			// a group that only stored offsets (generation 0) never had a metadata record
			if g.generation > 0 {
				tombstones = append(tombstones, KV{Key: groupMetadataKey(g.id)})
			}
		}
		if len(tombstones) > 0 {
			c.appendRecords(p, tombstones, nil)
			n += len(removed)
		}
	}
	return n
}

// cleanupExpiredOffsets is the periodic delete-expired-group-metadata task.
func (c *Core) cleanupExpiredOffsets() {
	groups := make([]*group, 0, len(c.groups))
	for _, id := range c.Groups() {
		groups = append(groups, c.groups[id])
	}
	retentionMs := int64(c.cfg.OffsetsRetentionMinutes) * 60 * 1000
	n := c.cleanupGroupMetadata(groups, func(g *group) []topicPartition { return g.removeExpiredOffsets(c.nowMs, retentionMs) })
	if n > 0 {
		c.logWith().Infof("removed %d expired offsets", n)
	}
}

// errName gives a Kafka error code's name.
func errName(code int16) string {
	if code == errNone {
		return "NONE"
	}
	if e := kerr.TypedErrorForCode(code); e != nil {
		return e.Message
	}
	return fmt.Sprintf("error %d", code)
}
