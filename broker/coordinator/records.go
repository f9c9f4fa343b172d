package coordinator

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

// OffsetsTopic is the internal topic the coordinator writes to (Topic.GROUP_METADATA_TOPIC_NAME).
const OffsetsTopic = "__consumer_offsets"

// Record schema versions Kafka 3.9's GroupMetadataManager writes.
const (
	offsetCommitKeyVersion   = 1 // OffsetCommitKey.HIGHEST_SUPPORTED_VERSION
	groupMetadataKeyVersion  = 2 // GroupMetadataKey is version 2 only
	offsetCommitValueVersion = 3 // v1 when the commit carries an expire timestamp
	groupMetadataValueVer    = 3
)

// JavaStringHashCode is java.lang.String.hashCode: s[0]*31^(n-1) + ... over UTF-16 code units.
func JavaStringHashCode(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaUtilsAbs is org.apache.kafka.common.utils.Utils.abs: Integer.MIN_VALUE maps to 0.
func javaUtilsAbs(n int32) int32 {
	if n == math.MinInt32 {
		return 0
	}
	if n < 0 {
		return -n
	}
	return n
}

// PartitionFor is GroupMetadataManager.partitionFor: the __consumer_offsets partition of a group,
// Utils.abs(groupId.hashCode) % numPartitions. numPartitions < 1 is treated as 1.
func PartitionFor(groupID string, numPartitions int32) int32 {
	if numPartitions < 1 {
		numPartitions = 1
	}
	return javaUtilsAbs(JavaStringHashCode(groupID)) % numPartitions
}

// offsetCommitKey encodes the key of an offset record (GroupMetadataManager.offsetCommitKey).
func offsetCommitKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetCommitKeyVersion, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

// groupMetadataKey encodes the key of a group record.
func groupMetadataKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupMetadataKeyVersion, Group: group}
	return k.AppendTo(nil)
}

// offsetCommitValue is GroupMetadataManager.offsetCommitValue: version 3, or 1 when the commit has an
// expire timestamp (OffsetCommit v2-v4 with a retention time).
func offsetCommitValue(om offsetAndMetadata) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetCommitValueVersion
	if om.expireTimestamp != -1 {
		v.Version = 1
	}
	v.Offset = om.offset
	v.LeaderEpoch = om.leaderEpoch
	v.Metadata = om.metadata
	v.CommitTimestamp = om.commitTimestamp
	v.ExpireTimestamp = om.expireTimestamp
	return v.AppendTo(nil)
}

// groupMetadataValue is GroupMetadataManager.groupMetadataValue (version 3). Every member needs the
// group's protocol and an entry in assignment, as Kafka requires.
func groupMetadataValue(g *group, assignment map[string][]byte) ([]byte, error) {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueVer
	if g.protocolType != nil {
		v.ProtocolType = *g.protocolType
	}
	v.Generation = g.generation
	v.Protocol = g.protocolName
	if g.leaderID != "" {
		l := g.leaderID
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.stateTimestamp
	for _, m := range g.allMembers() {
		if g.protocolName == nil {
			return nil, fmt.Errorf("group %s: attempted to write non-empty group metadata with no defined protocol", g.id)
		}
		sub, ok := m.metadata(*g.protocolName)
		if !ok {
			return nil, fmt.Errorf("group %s: member %s does not support protocol %s", g.id, m.id, *g.protocolName)
		}
		asg, ok := assignment[m.id]
		if !ok {
			return nil, fmt.Errorf("group %s: attempted to write member %s with no assignment", g.id, m.id)
		}
		gm := kmsg.NewGroupMetadataValueMember()
		gm.MemberID = m.id
		gm.InstanceID = m.instanceID
		gm.ClientID = m.clientID
		gm.ClientHost = m.clientHost
		gm.RebalanceTimeoutMillis = m.rebalanceTimeoutMs
		gm.SessionTimeoutMillis = m.sessionTimeoutMs
		gm.Subscription = nonNil(sub)
		gm.Assignment = nonNil(asg)
		v.Members = append(v.Members, gm)
	}
	return v.AppendTo(nil), nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// KV is one record of __consumer_offsets; a nil Value is a tombstone.
type KV struct {
	Key, Value []byte
}

// EncodeBatch builds one uncompressed v2 RecordBatch (magic 2, CreateTime, no producer) holding recs
// at offsets 0..n-1, all stamped timestampMs, as Kafka's MemoryRecords.builder does for the
// coordinator. The log assigns the real base offset and leader epoch when it appends.
func EncodeBatch(timestampMs int64, recs []KV) []byte {
	var records []byte
	for i, r := range recs {
		records = recordbatch.AppendRecord(records, recordbatch.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value})
	}
	return recordbatch.AppendBatch(nil, recordbatch.Header{
		BaseOffset:           0,
		PartitionLeaderEpoch: -1,
		LastOffsetDelta:      int32(len(recs) - 1),
		BaseTimestamp:        timestampMs,
		MaxTimestamp:         timestampMs,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
		NumRecords:           int32(len(recs)),
	}, records)
}

// ErrCorruptBatch is wrapped by DecodeBatches for data that is not a sequence of valid v2 batches
// (it is recordbatch.ErrCorrupt).
var ErrCorruptBatch = recordbatch.ErrCorrupt

// DecodeBatches walks v2 RecordBatches (as OffsetsLog.Append received them, or as a log reads them
// back) and calls fn for every record of every data batch; control batches are skipped. Compressed
// or pre-v2 batches, a bad CRC or a truncated batch give an error wrapping ErrCorruptBatch. fn's
// error stops the walk and is returned.
func DecodeBatches(data []byte, fn func(key, value []byte) error) error {
	for len(data) > 0 {
		b, err := recordbatch.Read(data)
		if err != nil {
			return err
		}
		data = data[b.Size():]
		if err := decodeBatch(b, fn); err != nil {
			return err
		}
	}
	return nil
}

// decodeBatch calls fn for every record of b, decompressed if it is (offsets.topic.compression.codec),
// unless b is a control batch (transaction markers: no offsets or groups).
func decodeBatch(b recordbatch.Batch, fn func(key, value []byte) error) error {
	if b.IsControl() {
		return nil
	}
	recs, err := recordbatch.Decompress(recordbatch.Codec(b.Compression()), recordbatch.Magic, b.Records, math.MaxInt32)
	if err != nil {
		return fmt.Errorf("%w: batch at %d: %v", ErrCorruptBatch, b.BaseOffset, err)
	}
	return recordbatch.ReadRecords(recs, b.NumRecords, func(r recordbatch.Record) error {
		return fn(r.Key, r.Value)
	})
}

// recordKey is a decoded __consumer_offsets key (GroupMetadataManager.readMessageKey).
type recordKey struct {
	kind      int // keyOffset, keyGroup or keyUnknown
	version   int16
	group     string
	topic     string
	partition int32
}

const (
	keyUnknown = iota
	keyOffset
	keyGroup
)

func readRecordKey(b []byte) (recordKey, error) {
	if len(b) < 2 {
		return recordKey{}, fmt.Errorf("record key of %d bytes", len(b))
	}
	version := int16(binary.BigEndian.Uint16(b))
	switch {
	case version == 0 || version == 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(b); err != nil {
			return recordKey{}, fmt.Errorf("offset commit key: %w", err)
		}
		return recordKey{kind: keyOffset, version: version, group: k.Group, topic: k.Topic, partition: k.Partition}, nil
	case version == 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(b); err != nil {
			return recordKey{}, fmt.Errorf("group metadata key: %w", err)
		}
		return recordKey{kind: keyGroup, version: version, group: k.Group}, nil
	}
	return recordKey{kind: keyUnknown, version: version}, nil
}

// readOffsetValue is GroupMetadataManager.readOffsetMessageValue.
func readOffsetValue(b []byte) (offsetAndMetadata, error) {
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(b); err != nil {
		return offsetAndMetadata{}, fmt.Errorf("offset commit value: %w", err)
	}
	if v.Version < 0 || v.Version > 4 {
		return offsetAndMetadata{}, fmt.Errorf("unknown offset message version %d", v.Version)
	}
	om := offsetAndMetadata{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata,
		commitTimestamp: v.CommitTimestamp, expireTimestamp: -1}
	if v.Version >= 3 {
		om.leaderEpoch = v.LeaderEpoch
	}
	if v.Version == 1 {
		om.expireTimestamp = v.ExpireTimestamp
	}
	return om, nil
}

// readGroupValue is GroupMetadataManager.readGroupMessageValue + GroupMetadata.loadGroup: a group
// with members comes back Stable, one without Empty; each member supports just the group's
// protocol with its stored subscription, and keeps its assignment.
func readGroupValue(groupID string, b []byte, epoch uint64, nowMs int64) (*group, error) {
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("group metadata value: %w", err)
	}
	if v.Version < 0 || v.Version > 4 {
		return nil, fmt.Errorf("unknown group metadata message version %d", v.Version)
	}
	state := Stable
	if len(v.Members) == 0 {
		state = Empty
	}
	g := newGroup(groupID, state, epoch, nowMs)
	g.generation = v.Generation
	if v.ProtocolType != "" {
		pt := v.ProtocolType
		g.protocolType = &pt
	}
	g.protocolName = v.Protocol
	if v.Leader != nil {
		g.leaderID = *v.Leader
	}
	g.stateTimestamp = v.CurrentStateTimestamp
	if len(v.Members) > 0 && v.Protocol == nil {
		return nil, fmt.Errorf("group %s has %d members but no protocol", groupID, len(v.Members))
	}
	for _, vm := range v.Members {
		if g.has(vm.MemberID) {
			return nil, fmt.Errorf("group %s lists member %s twice", groupID, vm.MemberID)
		}
		if vm.InstanceID != nil {
			if _, dup := g.staticMembers[*vm.InstanceID]; dup {
				return nil, fmt.Errorf("group %s lists group instance id %s twice", groupID, *vm.InstanceID)
			}
		}
		m := &member{
			id:                 vm.MemberID,
			instanceID:         vm.InstanceID,
			clientID:           vm.ClientID,
			clientHost:         vm.ClientHost,
			rebalanceTimeoutMs: vm.RebalanceTimeoutMillis,
			sessionTimeoutMs:   vm.SessionTimeoutMillis,
			protocolType:       v.ProtocolType,
			protocols:          []protocol{{name: *v.Protocol, metadata: vm.Subscription}},
			assignment:         vm.Assignment,
		}
		if v.Version == 0 {
			m.rebalanceTimeoutMs = vm.SessionTimeoutMillis
		}
		g.add(m, nil)
	}
	if v.Leader != nil {
		g.leaderID = *v.Leader // add() set the first member when the group had no leader yet
	}
	g.subscribedTopics = g.computeSubscribedTopics()
	return g, nil
}

// PartitionReader is what ReadPartition needs from a partition log; broker/storage's *Log has this
// shape (Read returns whole batches starting with the one that holds offset).
type PartitionReader interface {
	Read(offset int64, maxBytes int32) ([]byte, error)
	LogStartOffset() int64
	LogEndOffset() int64
}

// offsetsLoadBufferSize is offsets.load.buffer.size's default (bytes): how much ReadPartition asks
// for per read.
const offsetsLoadBufferSize = 5242880

// ReadPartition calls fn for every record of r from its log start offset to its log end offset, in
// order, as GroupMetadataManager.doLoadGroupsAndOffsets reads __consumer_offsets (FetchIsolation
// LOG_END: a new leader loads what it has, also above the high watermark its followers have not
// confirmed yet — it keeps those records as leader): an OffsetsLog over
// a partition log implements ReadAll with it. Errors from r, corrupt batches (ErrCorruptBatch) and
// fn's errors are returned.
func ReadPartition(r PartitionReader, fn func(key, value []byte) error) error {
	off, end := r.LogStartOffset(), r.LogEndOffset()
	for off < end {
		data, err := r.Read(off, offsetsLoadBufferSize)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return nil
		}
		next := off
		for rest := data; len(rest) > 0; {
			b, err := recordbatch.Read(rest)
			if err != nil {
				return fmt.Errorf("at offset %d: %w", next, err)
			}
			if err := decodeBatch(b, fn); err != nil {
				return err
			}
			next = b.LastOffset() + 1
			rest = rest[b.Size():]
		}
		if next <= off {
			return fmt.Errorf("%w: no progress reading offset %d", ErrCorruptBatch, off)
		}
		off = next
	}
	return nil
}
