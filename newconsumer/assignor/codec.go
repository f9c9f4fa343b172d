package assignor

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Versions of the consumer protocol's embedded messages that Kafka 3.9 writes (ConsumerProtocol's
// HIGHEST_SUPPORTED_VERSION of ConsumerProtocolSubscription and ConsumerProtocolAssignment): v3
// subscriptions carry owned partitions (v1, KIP-429), generation (v2) and rack (v3).
const (
	SubscriptionVersion int16 = 3
	AssignmentVersion   int16 = 3
)

// EncodeSubscription encodes s as JoinGroup protocol metadata: a v3 ConsumerMemberMetadata with
// topics sorted and owned partitions grouped by topic, sorted (ConsumerProtocol.serializeSubscription).
// MemberID and InstanceID are not part of it (the coordinator knows them).
func EncodeSubscription(s Subscription) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = SubscriptionVersion
	m.Topics = append([]string(nil), s.Topics...)
	sortStrings(m.Topics)
	m.UserData = s.UserData
	owned := append([]TopicPartition(nil), s.OwnedPartitions...)
	SortPartitions(owned)
	for _, tp := range owned {
		if n := len(m.OwnedPartitions); n == 0 || m.OwnedPartitions[n-1].Topic != tp.Topic {
			m.OwnedPartitions = append(m.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: tp.Topic})
		}
		last := &m.OwnedPartitions[len(m.OwnedPartitions)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	m.Generation = s.Generation
	if s.Rack != "" {
		m.Rack = kmsg.StringPtr(s.Rack)
	}
	return m.AppendTo(nil)
}

// DecodeSubscription decodes a JoinGroup member's protocol metadata (ConsumerProtocol.deserializeSubscription).
// Versions above 3 are read as v3, as Java does; a negative version or truncated bytes are an error.
// A missing or negative generation becomes DefaultGeneration.
func DecodeSubscription(memberID, instanceID string, metadata []byte) (Subscription, error) {
	var m kmsg.ConsumerMemberMetadata
	if err := m.ReadFrom(metadata); err != nil {
		return Subscription{}, fmt.Errorf("assignor: member %s: bad subscription metadata (%d bytes): %w", memberID, len(metadata), err)
	}
	if m.Version < 0 {
		return Subscription{}, fmt.Errorf("assignor: member %s: unsupported subscription version %d", memberID, m.Version)
	}
	s := Subscription{
		MemberID:   memberID,
		InstanceID: instanceID,
		Topics:     m.Topics,
		UserData:   m.UserData,
		Generation: m.Generation,
	}
	if s.Generation < 0 {
		s.Generation = DefaultGeneration
	}
	if m.Rack != nil {
		s.Rack = *m.Rack
	}
	for _, o := range m.OwnedPartitions {
		for _, p := range o.Partitions {
			s.OwnedPartitions = append(s.OwnedPartitions, TopicPartition{o.Topic, p})
		}
	}
	return s, nil
}

// EncodeAssignment encodes a member's assignment for SyncGroup: a v3 ConsumerMemberAssignment with
// partitions grouped by topic, sorted (ConsumerProtocol.serializeAssignment).
func EncodeAssignment(partitions []TopicPartition, userData []byte) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	a.Version = AssignmentVersion
	ps := append([]TopicPartition(nil), partitions...)
	SortPartitions(ps)
	for _, tp := range ps {
		if n := len(a.Topics); n == 0 || a.Topics[n-1].Topic != tp.Topic {
			a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: tp.Topic})
		}
		last := &a.Topics[len(a.Topics)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	a.UserData = userData
	return a.AppendTo(nil)
}

// DecodeAssignment decodes the assignment a SyncGroup response carries (ConsumerProtocol.deserializeAssignment).
// Fewer than 2 bytes is an error, as in ConsumerCoordinator.onJoinComplete (the leader sent no
// assignment for this member); so are truncated bytes and a negative version.
func DecodeAssignment(b []byte) ([]TopicPartition, []byte, error) {
	if len(b) < 2 {
		return nil, nil, fmt.Errorf("assignor: insufficient bytes (%d) to read the assignment from the SyncGroup response; the leader sent no assignment for this member", len(b))
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, nil, fmt.Errorf("assignor: bad assignment (%d bytes): %w", len(b), err)
	}
	if a.Version < 0 {
		return nil, nil, fmt.Errorf("assignor: unsupported assignment version %d", a.Version)
	}
	ps := []TopicPartition{}
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			ps = append(ps, TopicPartition{t.Topic, p})
		}
	}
	return ps, a.UserData, nil
}

// EncodeStickyUserData encodes the sticky assignor's user data, StickyMemberMetadata
// (StickyAssignor.serializeTopicPartitionAssignment): previous assignment grouped by topic, and
// generation (v1, KIP-341; kmsg writes v0 when generation is DefaultGeneration, which reads back the same).
func EncodeStickyUserData(partitions []TopicPartition, generation int32) []byte {
	m := kmsg.NewStickyMemberMetadata()
	m.Generation = generation
	ps := append([]TopicPartition(nil), partitions...)
	SortPartitions(ps)
	for _, tp := range ps {
		if n := len(m.CurrentAssignment); n == 0 || m.CurrentAssignment[n-1].Topic != tp.Topic {
			m.CurrentAssignment = append(m.CurrentAssignment, kmsg.StickyMemberMetadataCurrentAssignment{Topic: tp.Topic})
		}
		last := &m.CurrentAssignment[len(m.CurrentAssignment)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	return m.AppendTo(nil)
}

// DecodeStickyUserData decodes StickyMemberMetadata v1 or v0 (no generation: DefaultGeneration).
func DecodeStickyUserData(b []byte) ([]TopicPartition, int32, error) {
	var m kmsg.StickyMemberMetadata
	if err := m.ReadFrom(b); err != nil {
		return nil, DefaultGeneration, fmt.Errorf("assignor: bad sticky user data (%d bytes): %w", len(b), err)
	}
	var ps []TopicPartition
	for _, a := range m.CurrentAssignment {
		for _, p := range a.Partitions {
			ps = append(ps, TopicPartition{a.Topic, p})
		}
	}
	return ps, m.Generation, nil
}

// EncodeCooperativeUserData encodes the cooperative-sticky assignor's user data: a struct with one
// INT32 field, the generation (CooperativeStickyAssignor's COOPERATIVE_STICKY_ASSIGNOR_USER_DATA_V0).
// kmsg has no type for it; the bytes are the big-endian int32.
func EncodeCooperativeUserData(generation int32) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(generation))
}

// DecodeCooperativeUserData reads the generation from cooperative-sticky user data; fewer than 4
// bytes is an error (Java then uses DefaultGeneration).
func DecodeCooperativeUserData(b []byte) (int32, error) {
	if len(b) < 4 {
		return DefaultGeneration, fmt.Errorf("assignor: cooperative-sticky user data has %d bytes, want 4", len(b))
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

func sortStrings(s []string) {
	sort.Slice(s, func(i, j int) bool { return CompareStrings(s[i], s[j]) < 0 })
}
