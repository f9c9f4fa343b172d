package groupview

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/coordinator"
)

// be is a big-endian writer in the shape of Java's DataOutputStream.
type be []byte

func (b be) i16(v int16) be  { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func (b be) i32(v int32) be  { return binary.BigEndian.AppendUint32(b, uint32(v)) }
func (b be) i64(v int64) be  { return binary.BigEndian.AppendUint64(b, uint64(v)) }
func (b be) str(s string) be { return append(b.i16(int16(len(s))), s...) } // writeUTF (ASCII) / Kafka STRING

func TestDecodeConsumer(t *testing.T) {
	sub := kmsg.NewConsumerMemberMetadata()
	sub.Version, sub.Topics = 3, []string{"b", "a"}
	asg := kmsg.NewConsumerMemberAssignment()
	asg.Version = 3
	asg.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "a", Partitions: []int32{2, 0}}, {Topic: "b", Partitions: []int32{1}}}
	g := Decode(coordinator.GroupChanged{Group: "g", State: coordinator.Stable, Generation: 4, ProtocolType: "consumer", Protocol: "range", Leader: "m1",
		Members: []coordinator.ObservedMember{
			{MemberID: "m1", InstanceID: "i1", ClientID: "c1", ClientHost: "/127.0.0.1", Metadata: sub.AppendTo(nil), Assignment: asg.AppendTo(nil)},
			{MemberID: "m2", ClientID: "c2", ClientHost: "/127.0.0.1", Metadata: []byte{0, 3, 0}},
		}})
	want := Generation{Group: "g", State: "Stable", Generation: 4, ProtocolType: "consumer", Protocol: "range", Leader: "m1", Members: []Member{
		{MemberID: "m1", InstanceID: "i1", ClientID: "c1", ClientHost: "/127.0.0.1", Topics: []string{"a", "b"}, Partitions: map[string][]int32{"a": {0, 2}, "b": {1}}},
		{MemberID: "m2", ClientID: "c2", ClientHost: "/127.0.0.1"},
	}}
	if g.Members[1].DecodeError == "" || !strings.HasPrefix(g.Members[1].DecodeError, "subscription: ") {
		t.Fatalf("a truncated subscription: DecodeError %q", g.Members[1].DecodeError)
	}
	g.Members[1].DecodeError = ""
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("got %+v\nwant %+v", g, want)
	}
}

// streamsAssignment is AssignmentInfo as Streams 3.9 encodes it at version v (10 and 11 with named
// topologies), with the partitions-by-host section and the rest left empty.
func streamsAssignment(v int32, active [][2]int32, standby [][2]int32, topology string) []byte {
	b := be(nil).i32(v)
	if v >= 3 {
		b = b.i32(11)
	}
	task := func(b be, t [2]int32) be {
		b = b.i32(t[0]).i32(t[1])
		if v >= 10 {
			b = b.i32(int32(len(topology)))
			for _, c := range topology {
				b = b.i16(int16(c))
			}
		}
		return b
	}
	b = b.i32(int32(len(active)))
	for _, t := range active {
		b = task(b, t)
	}
	b = b.i32(int32(len(standby)))
	for _, t := range standby {
		b = task(b, t).i32(2).str("in-a").i32(t[1]).str("in-b").i32(t[1])
	}
	return b.i32(0).i32(0).i32(0).i64(0) // active and standby host partitions, error code, next rebalance ms
}

func TestDecodeStreams(t *testing.T) {
	for _, tc := range []struct {
		version       int32
		topology      string
		active, stand []string
	}{
		{2, "", []string{"0_1", "1_1"}, []string{"0_3"}},
		{11, "", []string{"0_1", "1_1"}, []string{"0_3"}},
		{10, "nt", []string{"nt__0_1", "nt__1_1"}, []string{"nt__0_3"}},
	} {
		asg := kmsg.NewConsumerMemberAssignment()
		asg.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "in-a", Partitions: []int32{1}}, {Topic: "in-b", Partitions: []int32{1}}}
		asg.UserData = streamsAssignment(tc.version, [][2]int32{{1, 1}, {0, 1}}, [][2]int32{{0, 3}}, tc.topology)
		g := Decode(coordinator.GroupChanged{Group: "app", State: coordinator.Stable, ProtocolType: "consumer", Protocol: StreamsProtocol,
			Members: []coordinator.ObservedMember{{MemberID: "t1", Assignment: asg.AppendTo(nil)}}})
		m := g.Members[0]
		if m.DecodeError != "" || !reflect.DeepEqual(m.ActiveTasks, tc.active) || !reflect.DeepEqual(m.StandbyTasks, tc.stand) ||
			!reflect.DeepEqual(m.Partitions, map[string][]int32{"in-a": {1}, "in-b": {1}}) {
			t.Fatalf("version %d: %+v, want active %v standby %v", tc.version, m, tc.active, tc.stand)
		}
	}
	// As Streams 3.9 writes it for a task reading two co-partitioned inputs: the active task list has
	// one entry per assigned partition (in-a-0, in-a-3, in-b-0, in-b-3 → 0_0 0_3 0_0 0_3).
	asg := kmsg.NewConsumerMemberAssignment()
	asg.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "in-a", Partitions: []int32{0, 3}}, {Topic: "in-b", Partitions: []int32{0, 3}}}
	asg.UserData = streamsAssignment(11, [][2]int32{{0, 0}, {0, 3}, {0, 0}, {0, 3}}, nil, "")
	g := Decode(coordinator.GroupChanged{ProtocolType: "consumer", Protocol: StreamsProtocol, Members: []coordinator.ObservedMember{{MemberID: "t1", Assignment: asg.AppendTo(nil)}}})
	if m := g.Members[0]; m.DecodeError != "" || !reflect.DeepEqual(m.ActiveTasks, []string{"0_0", "0_3"}) {
		t.Fatalf("a task per partition: %+v, want active [0_0 0_3]", m)
	}
	asg = kmsg.NewConsumerMemberAssignment()
	asg.UserData = streamsAssignment(11, [][2]int32{{0, 0}}, nil, "")[:10]
	g = Decode(coordinator.GroupChanged{ProtocolType: "consumer", Protocol: StreamsProtocol, Members: []coordinator.ObservedMember{{MemberID: "t1", Assignment: asg.AppendTo(nil)}}})
	if e := g.Members[0].DecodeError; e != "Streams AssignmentInfo: truncated (10 bytes)" {
		t.Fatalf("a truncated AssignmentInfo: DecodeError %q", e)
	}
}

// connectAssignment is a worker's assignment as Connect 3.9 writes it at version v (1 and 2 with the
// revoked section): the connector and task ids are INT32, -1 the connector itself.
func connectAssignment(v int16, assigned, revoked map[string][]int32, delayMs int32) []byte {
	b := be(nil).i16(v).i16(0).str("w1").str("http://w1:8083/").i64(7)
	section := func(b be, m map[string][]int32) be {
		b = b.i32(int32(len(m)))
		for _, c := range []string{"sink", "source"} {
			if ts, ok := m[c]; ok {
				b = b.str(c).i32(int32(len(ts)))
				for _, t := range ts {
					b = b.i32(t)
				}
			}
		}
		return b
	}
	b = section(b, assigned)
	if v >= 1 {
		b = section(b, revoked).i32(delayMs)
	}
	return b
}

func TestDecodeConnect(t *testing.T) {
	md := kmsg.NewConnectMemberMetadata()
	md.Version, md.URL, md.ConfigOffset = 1, "http://w2:8083/", 7
	for _, v := range []int16{0, 1, 2} {
		var revoked map[string][]int32
		if v >= 1 {
			revoked = map[string][]int32{"sink": {0}}
		}
		g := Decode(coordinator.GroupChanged{Group: "connect-cluster", ProtocolType: "connect", Protocol: "sessioned", Members: []coordinator.ObservedMember{{
			MemberID: "w2", Metadata: md.AppendTo(nil),
			Assignment: connectAssignment(v, map[string][]int32{"source": {-1, 0, 70000}, "sink": {1}}, revoked, 2750)}}})
		m := g.Members[0]
		want := Member{MemberID: "w2", ConnectURL: "http://w2:8083/", Connectors: []string{"source"}, Tasks: []string{"sink-1", "source-0", "source-70000"},
			ConnectVersion: v}
		if v >= 1 {
			want.RevokedTasks, want.ConnectDelayMs = []string{"sink-0"}, 2750
		}
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("version %d: %+v\nwant %+v", v, m, want)
		}
	}
}
