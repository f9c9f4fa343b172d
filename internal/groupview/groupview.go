// Package groupview decodes what the group coordinator sees of every generation of every group
// (coordinator.GroupChanged) by the group's protocol: for consumers (protocol type "consumer") the
// subscribed topics and assigned partitions; for Kafka Streams (a consumer group whose protocol is
// Streams' assignor, "stream") the active and standby tasks inside the assignment's user data
// (AssignmentInfo, Kafka 3.9, versions 1-11); for Kafka Connect (protocol type "connect") the
// connectors and tasks of each worker, and what an incremental cooperative assignment revokes
// (ConnectProtocol / IncrementalCooperativeConnectProtocol, versions 0-2). It is the source of the
// generation and assignment lanes of members that are not the project's own.
package groupview

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/coordinator"
)

// StreamsProtocol is the assignor name Kafka Streams' StreamsPartitionAssignor joins with.
const StreamsProtocol = "stream"

// Generation is one GroupChanged, decoded.
type Generation struct {
	TsMs         int64    `json:"ts_ms"` // when the coordinator made the transition (Unix ms)
	Group        string   `json:"group"`
	State        string   `json:"state"` // coordinator.GroupState's name: Empty, PreparingRebalance, ...
	Generation   int32    `json:"generation"`
	ProtocolType string   `json:"protocol_type,omitempty"`
	Protocol     string   `json:"protocol,omitempty"`
	Leader       string   `json:"leader,omitempty"`
	Members      []Member `json:"members"`
}

// Member is one member of a Generation. Which fields are set depends on the protocol; a member whose
// bytes do not decode keeps its identity and says why in DecodeError.
type Member struct {
	MemberID   string `json:"member_id"`
	InstanceID string `json:"instance_id,omitempty"`
	ClientID   string `json:"client_id"`
	ClientHost string `json:"client_host"`

	// consumer and Streams: the subscription and the assigned partitions (topic → sorted partitions)
	Topics     []string           `json:"topics,omitempty"`
	Partitions map[string][]int32 `json:"partitions,omitempty"`
	// Streams: task ids as Streams prints them, "<subtopology>_<partition>" (a named topology
	// prefixes "<name>__"), sorted
	ActiveTasks  []string `json:"active_tasks,omitempty"`
	StandbyTasks []string `json:"standby_tasks,omitempty"`
	// Connect: the connectors this worker runs, and its tasks as "<connector>-<n>", sorted; Revoked*
	// what an incremental cooperative assignment takes away
	Connectors        []string `json:"connectors,omitempty"`
	Tasks             []string `json:"tasks,omitempty"`
	RevokedConnectors []string `json:"revoked_connectors,omitempty"`
	RevokedTasks      []string `json:"revoked_tasks,omitempty"`
	ConnectURL        string   `json:"connect_url,omitempty"`
	// ConnectVersion is the assignment's version (0: eager, full assignments; 1 compatible, 2
	// sessioned: incremental, only what is newly assigned and revoked); ConnectDelayMs its scheduled
	// delay: how long the leader holds back a departed worker's connectors and tasks
	// (scheduled.rebalance.max.delay.ms, counting down).
	ConnectVersion int16 `json:"connect_version,omitempty"`
	ConnectDelayMs int32 `json:"connect_delay_ms,omitempty"`

	DecodeError string `json:"decode_error,omitempty"`
}

// Decode decodes ev. It never fails: a member whose metadata or assignment does not decode as its
// protocol's gets DecodeError; an unknown protocol type leaves only the identities.
func Decode(ev coordinator.GroupChanged) Generation {
	g := Generation{TsMs: ev.TimeMs, Group: ev.Group, State: ev.State.String(), Generation: ev.Generation, ProtocolType: ev.ProtocolType,
		Protocol: ev.Protocol, Leader: ev.Leader, Members: []Member{}}
	for _, om := range ev.Members {
		m := Member{MemberID: om.MemberID, InstanceID: om.InstanceID, ClientID: om.ClientID, ClientHost: om.ClientHost}
		var err error
		switch ev.ProtocolType {
		case "consumer":
			err = decodeConsumer(&m, om, ev.Protocol == StreamsProtocol)
		case "connect":
			err = decodeConnect(&m, om)
		}
		if err != nil {
			m.DecodeError = err.Error()
		}
		g.Members = append(g.Members, m)
	}
	return g
}

func decodeConsumer(m *Member, om coordinator.ObservedMember, streams bool) error {
	if len(om.Metadata) > 0 {
		var s kmsg.ConsumerMemberMetadata
		if err := s.ReadFrom(om.Metadata); err != nil {
			return fmt.Errorf("subscription: %w", err)
		}
		m.Topics = slices.Sorted(slices.Values(s.Topics))
	}
	if len(om.Assignment) == 0 {
		return nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(om.Assignment); err != nil {
		return fmt.Errorf("assignment: %w", err)
	}
	m.Partitions = map[string][]int32{}
	for _, t := range a.Topics {
		m.Partitions[t.Topic] = append(m.Partitions[t.Topic], t.Partitions...)
		slices.Sort(m.Partitions[t.Topic])
	}
	if !streams || len(a.UserData) == 0 {
		return nil
	}
	active, standby, err := decodeStreamsAssignment(a.UserData)
	if err != nil {
		return fmt.Errorf("Streams AssignmentInfo: %w", err)
	}
	m.ActiveTasks, m.StandbyTasks = active, standby
	return nil
}

// decodeStreamsAssignment reads the task lists at the head of Streams' AssignmentInfo (big-endian,
// Java DataOutputStream): version int32; from version 3 the commonly supported version int32; the
// active tasks (int32 count, task ids: one per assigned partition, so repeated; returned distinct); the standby tasks (int32 count, each a task id and its
// partitions: int32 count of (writeUTF topic, int32 partition)). A task id is int32 subtopology,
// int32 partition and, from version 10, the named topology as int32 length and that many UTF-16
// chars. What follows (partitions by host, error code, next rebalance time) is not read.
func decodeStreamsAssignment(b []byte) (active, standby []string, err error) {
	r := kbin.Reader{Src: b}
	version := r.Int32()
	if version < 1 || version > 11 {
		return nil, nil, fmt.Errorf("version %d (Kafka 3.9 writes 1-11)", version)
	}
	if version >= 3 {
		r.Int32() // commonly supported version
	}
	task := func() string {
		sub, part := r.Int32(), r.Int32()
		id := fmt.Sprintf("%d_%d", sub, part)
		if version >= 10 {
			n := r.Int32()
			if n < 0 || int(n)*2 > len(r.Src) {
				r.Src = nil // truncated: Complete reports it
				return id
			}
			u := make([]uint16, n)
			for i := range u {
				u[i] = uint16(r.Int16())
			}
			if name := string(utf16Decode(u)); name != "" {
				id = name + "__" + id
			}
		}
		return id
	}
	for n := r.Int32(); n > 0 && r.Ok(); n-- {
		active = append(active, task())
	}
	for n := r.Int32(); n > 0 && r.Ok(); n-- {
		standby = append(standby, task())
		for k := r.Int32(); k > 0 && r.Ok(); k-- {
			r.Src = skipUTF(r.Src)
			r.Int32()
		}
	}
	if !r.Ok() {
		return nil, nil, fmt.Errorf("truncated (%d bytes)", len(b))
	}
	// Streams writes one active task per assigned partition (StreamsPartitionAssignor lists the task of
	// each partition of the member's assignment, in the assignment's order), so a task reading both of
	// two co-partitioned inputs appears twice: the member's tasks are the distinct ids.
	slices.Sort(active)
	slices.Sort(standby)
	return slices.Compact(active), slices.Compact(standby), nil
}

// skipUTF skips one DataOutputStream.writeUTF string (uint16 length, modified UTF-8 bytes); nil when
// truncated.
func skipUTF(b []byte) []byte {
	if len(b) < 2 {
		return nil
	}
	n := int(b[0])<<8 | int(b[1])
	if len(b) < 2+n {
		return nil
	}
	return b[2+n:]
}

func utf16Decode(u []uint16) []rune {
	var out []rune
	for i := 0; i < len(u); i++ {
		c := rune(u[i])
		if c >= 0xD800 && c < 0xDC00 && i+1 < len(u) && u[i+1] >= 0xDC00 && u[i+1] < 0xE000 {
			c = (c-0xD800)<<10 + rune(u[i+1]-0xDC00) + 0x10000
			i++
		}
		out = append(out, c)
	}
	return out
}

// connectorTask is ConnectProtocol.CONNECTOR_TASK: the task id that stands for the connector itself.
const connectorTask = -1

// decodeConnect reads a Connect worker's metadata (kmsg.ConnectMemberMetadata: version, url, config
// offset) and its assignment as ConnectProtocol writes it: version int16, error int16, leader and
// leader url (int16-length strings), config offset int64, the assignment (int32 count of connector
// string and int32 count of int32 task ids, -1 being the connector itself) and, from version 1, the
// revoked ones in the same shape (count -1: null) and the scheduled delay int32. The tasks are
// INT32 in Kafka's schema (kmsg's ConnectMemberAssignment reads them as int16, so it is not used).
func decodeConnect(m *Member, om coordinator.ObservedMember) error {
	if len(om.Metadata) > 0 {
		var md kmsg.ConnectMemberMetadata
		if err := md.ReadFrom(om.Metadata); err != nil {
			return fmt.Errorf("worker metadata: %w", err)
		}
		m.ConnectURL = md.URL
	}
	if len(om.Assignment) == 0 {
		return nil
	}
	r := kbin.Reader{Src: om.Assignment}
	version := r.Int16()
	if version < 0 || version > 2 {
		return fmt.Errorf("assignment version %d (Kafka 3.9 writes 0-2)", version)
	}
	r.Int16()      // error
	_ = r.String() // leader
	_ = r.String() // leader url
	r.Int64()      // config offset
	assignments := func() (connectors, tasks []string) {
		n := r.Int32()
		for ; n > 0 && r.Ok(); n-- {
			c := r.String()
			for k := r.Int32(); k > 0 && r.Ok(); k-- {
				if t := r.Int32(); t == connectorTask {
					connectors = append(connectors, c)
				} else {
					tasks = append(tasks, fmt.Sprintf("%s-%d", c, t))
				}
			}
		}
		slices.Sort(connectors)
		slices.Sort(tasks)
		return connectors, tasks
	}
	m.ConnectVersion = version
	m.Connectors, m.Tasks = assignments()
	if version >= 1 {
		m.RevokedConnectors, m.RevokedTasks = assignments()
		m.ConnectDelayMs = r.Int32()
	}
	if err := r.Complete(); err != nil {
		return fmt.Errorf("assignment: %w", err)
	}
	return nil
}
