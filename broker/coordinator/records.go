package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"
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

const batchHeaderLen = 61 // v2 RecordBatch header through NumRecords

// EncodeBatch builds one uncompressed v2 RecordBatch (magic 2, CreateTime, no producer) holding recs
// at offsets 0..n-1, all stamped timestampMs, as Kafka's MemoryRecords.builder does for the
// coordinator. The log assigns the real base offset and leader epoch when it appends.
func EncodeBatch(timestampMs int64, recs []KV) []byte {
	var records []byte
	for i, r := range recs {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		body := rec.AppendTo(nil)
		rec.Length = int32(len(body) - 1) // Length 0 took one varint byte
		records = rec.AppendTo(records)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           0,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       timestampMs,
		MaxTimestamp:         timestampMs,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              records,
	}
	b.Length = int32(batchHeaderLen - 12 + len(records))
	out := b.AppendTo(nil)
	crc := crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(out[17:21], crc)
	return out
}

// ErrCorruptBatch is wrapped by DecodeBatches for data that is not a sequence of valid v2 batches.
var ErrCorruptBatch = errors.New("corrupt record batch")

// DecodeBatches walks v2 RecordBatches (as OffsetsLog.Append received them, or as a log reads them
// back) and calls fn for every record of every data batch; control batches are skipped. Compressed
// or pre-v2 batches, a bad CRC or a truncated batch give an error wrapping ErrCorruptBatch. fn's
// error stops the walk and is returned.
func DecodeBatches(data []byte, fn func(key, value []byte) error) error {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for len(data) > 0 {
		if len(data) < 12 {
			return fmt.Errorf("%w: %d trailing bytes", ErrCorruptBatch, len(data))
		}
		length := int32(binary.BigEndian.Uint32(data[8:12]))
		if length < batchHeaderLen-12 || int(length) > len(data)-12 {
			return fmt.Errorf("%w: batch length %d with %d bytes left", ErrCorruptBatch, length, len(data)-12)
		}
		raw := data[:12+int(length)]
		data = data[12+int(length):]
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			return fmt.Errorf("%w: %v", ErrCorruptBatch, err)
		}
		if b.Magic != 2 {
			return fmt.Errorf("%w: magic %d (only v2 batches are supported)", ErrCorruptBatch, b.Magic)
		}
		if uint32(b.CRC) != crc32.Checksum(raw[21:], castagnoli) {
			return fmt.Errorf("%w: CRC mismatch", ErrCorruptBatch)
		}
		if b.Attributes&0x07 != 0 {
			return fmt.Errorf("%w: compressed batches are not supported (attributes %#x)", ErrCorruptBatch, b.Attributes)
		}
		if b.Attributes&0x20 != 0 { // control batch (transaction markers): no offsets or groups
			continue
		}
		recs := b.Records
		for i := int32(0); i < b.NumRecords; i++ {
			l, n := binary.Varint(recs)
			if n <= 0 || l < 0 || int64(len(recs)-n) < l {
				return fmt.Errorf("%w: bad record %d", ErrCorruptBatch, i)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:n+int(l)]); err != nil {
				return fmt.Errorf("%w: record %d: %v", ErrCorruptBatch, i, err)
			}
			recs = recs[n+int(l):]
			if err := fn(r.Key, r.Value); err != nil {
				return err
			}
		}
	}
	return nil
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
	HighWatermark() int64
}

// offsetsLoadBufferSize is offsets.load.buffer.size's default (bytes): how much ReadPartition asks
// for per read.
const offsetsLoadBufferSize = 5242880

// ReadPartition calls fn for every record of r from its log start offset to its high watermark, in
// order, as GroupMetadataManager.doLoadGroupsAndOffsets reads __consumer_offsets: an OffsetsLog over
// a partition log implements ReadAll with it. Errors from r, corrupt batches (ErrCorruptBatch) and
// fn's errors are returned.
func ReadPartition(r PartitionReader, fn func(key, value []byte) error) error {
	off, hw := r.LogStartOffset(), r.HighWatermark()
	for off < hw {
		data, err := r.Read(off, offsetsLoadBufferSize)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return nil
		}
		next := off
		for rest := data; len(rest) > 0; {
			if len(rest) < batchHeaderLen {
				return fmt.Errorf("%w: %d trailing bytes at offset %d", ErrCorruptBatch, len(rest), next)
			}
			n := 12 + int(int32(binary.BigEndian.Uint32(rest[8:12])))
			if n < batchHeaderLen || n > len(rest) {
				return fmt.Errorf("%w: batch of %d bytes with %d left at offset %d", ErrCorruptBatch, n, len(rest), next)
			}
			base := int64(binary.BigEndian.Uint64(rest[0:8]))
			lastDelta := int32(binary.BigEndian.Uint32(rest[23:27]))
			if err := DecodeBatches(rest[:n], fn); err != nil {
				return err
			}
			next = base + int64(lastDelta) + 1
			rest = rest[n:]
		}
		if next <= off {
			return fmt.Errorf("%w: no progress reading offset %d", ErrCorruptBatch, off)
		}
		off = next
	}
	return nil
}
