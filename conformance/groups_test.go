package conformance

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group APIs' script, run once per version index i: each API at min(i, the highest version both
// brokers advertise), so every advertised version of each of them is exercised, on its own group
// (g-v<i>), with its error paths.

// groupTopic is the topic the group scripts commit offsets for (2 partitions), created by setUp.
const groupTopic = "dt-groups"

// versions are the highest versions of each API both brokers advertise, and our lowest.
type versions struct {
	min, max map[int16]int16
}

// at is API key's version for index i: min(i, max), at least min.
func (v versions) at(key int16, i int) int16 {
	return max(min(int16(i), v.max[key]), v.min[key])
}

func consumerMetadata() []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = []string{groupTopic}
	return m.AppendTo(nil)
}

func consumerAssignment(partitions ...int32) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	if len(partitions) > 0 {
		t := kmsg.NewConsumerMemberAssignmentTopic()
		t.Topic, t.Partitions = groupTopic, partitions
		a.Topics = append(a.Topics, t)
	}
	return a.AppendTo(nil)
}

// groupCase is the script for version index i.
func groupCase(v versions, i int) kcase {
	g := fmt.Sprintf("g-v%d", i)
	vJoin, vSync, vHB, vLeave := v.at(kmsg.JoinGroup.Int16(), i), v.at(kmsg.SyncGroup.Int16(), i), v.at(kmsg.Heartbeat.Int16(), i), v.at(kmsg.LeaveGroup.Int16(), i)
	vCommit, vFetch, vDescribe, vList, vFind := v.at(kmsg.OffsetCommit.Int16(), i), v.at(kmsg.OffsetFetch.Int16(), i),
		v.at(kmsg.DescribeGroups.Int16(), i), v.at(kmsg.ListGroups.Int16(), i), v.at(kmsg.FindCoordinator.Int16(), i)
	name := fmt.Sprintf("groups i=%d (JoinGroup v%d SyncGroup v%d Heartbeat v%d LeaveGroup v%d OffsetCommit v%d OffsetFetch v%d DescribeGroups v%d ListGroups v%d FindCoordinator v%d)",
		i, vJoin, vSync, vHB, vLeave, vCommit, vFetch, vDescribe, vList, vFind)

	join := func(group, member string, session int32, protocols bool) *kmsg.JoinGroupRequest {
		r := kmsg.NewPtrJoinGroupRequest()
		r.SetVersion(vJoin)
		r.Group, r.MemberID, r.ProtocolType = group, member, "consumer"
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = session, 10000
		if protocols {
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = "range", consumerMetadata()
			r.Protocols = append(r.Protocols, p)
		}
		return r
	}
	joinAs := func(who string) func(*state) kmsg.Request {
		return func(st *state) kmsg.Request { return join(g, st.m(who), 10000, true) }
	}
	remember := func(who string) func(*state, kmsg.Response) {
		return func(st *state, r kmsg.Response) {
			j := r.(*kmsg.JoinGroupResponse)
			if j.MemberID != "" {
				st.member[who] = j.MemberID
			}
			if j.ErrorCode == 0 {
				st.gen[who] = j.Generation
			}
		}
	}
	sync := func(group, member string, gen int32, protocolType string, assign map[string][]byte) *kmsg.SyncGroupRequest {
		r := kmsg.NewPtrSyncGroupRequest()
		r.SetVersion(vSync)
		r.Group, r.MemberID, r.Generation = group, member, gen
		r.ProtocolType, r.Protocol = kmsg.StringPtr(protocolType), kmsg.StringPtr("range")
		for m, a := range assign {
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = m, a
			r.GroupAssignment = append(r.GroupAssignment, ga)
		}
		return r
	}
	heartbeat := func(group, member string, gen int32) *kmsg.HeartbeatRequest {
		r := kmsg.NewPtrHeartbeatRequest()
		r.SetVersion(vHB)
		r.Group, r.MemberID, r.Generation = group, member, gen
		return r
	}
	leave := func(member string) *kmsg.LeaveGroupRequest {
		r := kmsg.NewPtrLeaveGroupRequest()
		r.SetVersion(vLeave)
		r.Group, r.MemberID = g, member
		if vLeave >= 3 {
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = member
			r.Members = append(r.Members, m)
		}
		return r
	}
	commit := func(member string, gen int32, partition int32, offset int64, metadata string) *kmsg.OffsetCommitRequest {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.SetVersion(vCommit)
		r.Group, r.MemberID, r.Generation = g, member, gen
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = groupTopic
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.Metadata = partition, offset, kmsg.StringPtr(metadata)
		if partition == 0 {
			p.LeaderEpoch = 7 // a committed leader epoch (KIP-320; sent from v6, answered by OffsetFetch v5+); partition 1's is -1
		}
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
	fetchOffsetsOf := func(g string, all, requireStable bool) *kmsg.OffsetFetchRequest {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.SetVersion(vFetch)
		r.RequireStable = requireStable
		if vFetch >= 8 {
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = g
			if !all {
				t := kmsg.NewOffsetFetchRequestGroupTopic()
				t.Topic, t.Partitions = groupTopic, []int32{0, 1}
				rg.Topics = append(rg.Topics, t)
			}
			r.Groups = append(r.Groups, rg)
			return r
		}
		r.Group = g
		if !all {
			t := kmsg.NewOffsetFetchRequestTopic()
			t.Topic, t.Partitions = groupTopic, []int32{0, 1}
			r.Topics = append(r.Topics, t)
		}
		return r
	}
	fetchOffsets := func(all bool) *kmsg.OffsetFetchRequest { return fetchOffsetsOf(g, all, false) }
	describe := func() *kmsg.DescribeGroupsRequest {
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.SetVersion(vDescribe)
		r.Groups = []string{g, g + "-never"}
		return r
	}
	fixed := func(r kmsg.Request) func(*state) kmsg.Request { return func(*state) kmsg.Request { return r } }

	var steps []step
	add := func(s ...step) { steps = append(steps, s...) }

	// FindCoordinator: the group's coordinator; an invalid key type (v1+).
	add(step{name: "find-coordinator", req: func(*state) kmsg.Request {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.SetVersion(vFind)
		r.CoordinatorKey, r.CoordinatorKeys = g, []string{g}
		return r
	}})
	if vFind >= 1 {
		add(step{name: "find-coordinator-bad-type", req: func(*state) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.SetVersion(vFind)
			r.CoordinatorKey, r.CoordinatorKeys, r.CoordinatorType = g, []string{g}, 7
			return r
		}})
	}

	// JoinGroup's error paths, then the first member's join.
	add(
		step{name: "join-session-below-min", req: fixed(join(g, "", 100, true))},
		step{name: "join-empty-group-id", req: fixed(join("", "", 10000, true))},
		step{name: "join-unknown-member", req: fixed(join(g, "ghost", 10000, true))},
		step{name: "join-no-protocols", req: fixed(join(g, "", 10000, false))},
		step{name: "join-a", req: joinAs("a"), after: remember("a")},
	)
	if vJoin >= 4 { // KIP-394: the first join only gets a member id
		add(step{name: "join-a-with-id", req: joinAs("a"), after: remember("a")})
	}

	// SyncGroup's error paths, then the leader's sync.
	add(
		step{name: "sync-illegal-generation", req: func(st *state) kmsg.Request { return sync(g, st.m("a"), st.gen["a"]+1, "consumer", nil) }},
		step{name: "sync-unknown-member", req: func(st *state) kmsg.Request { return sync(g, "ghost", st.gen["a"], "consumer", nil) }},
	)
	if vSync >= 5 {
		add(step{name: "sync-inconsistent-protocol-type", req: func(st *state) kmsg.Request { return sync(g, st.m("a"), st.gen["a"], "connect", nil) }})
	}
	add(step{name: "sync-a", req: func(st *state) kmsg.Request {
		return sync(g, st.m("a"), st.gen["a"], "consumer", map[string][]byte{st.m("a"): consumerAssignment(0, 1)})
	}})

	// Heartbeat.
	add(
		step{name: "heartbeat-a", req: func(st *state) kmsg.Request { return heartbeat(g, st.m("a"), st.gen["a"]) }},
		step{name: "heartbeat-illegal-generation", req: func(st *state) kmsg.Request { return heartbeat(g, st.m("a"), st.gen["a"]+1) }},
		step{name: "heartbeat-unknown-member", req: func(st *state) kmsg.Request { return heartbeat(g, "ghost", st.gen["a"]) }},
		step{name: "heartbeat-unknown-group", req: func(st *state) kmsg.Request { return heartbeat(g+"-never", "ghost", 1) }},
	)

	// OffsetCommit and OffsetFetch.
	add(
		step{name: "commit-a", req: func(st *state) kmsg.Request { return commit(st.m("a"), st.gen["a"], 0, 5, "m") }},
		step{name: "commit-unknown-partition", req: func(st *state) kmsg.Request { return commit(st.m("a"), st.gen["a"], 9, 5, "") }},
		step{name: "commit-metadata-too-large", req: func(st *state) kmsg.Request {
			return commit(st.m("a"), st.gen["a"], 1, 5, strings.Repeat("x", 4097))
		}},
	)
	if vCommit >= 1 {
		add(
			step{name: "commit-illegal-generation", req: func(st *state) kmsg.Request { return commit(st.m("a"), st.gen["a"]+1, 1, 6, "") }},
			step{name: "commit-unknown-member", req: func(st *state) kmsg.Request { return commit("ghost", st.gen["a"], 1, 6, "") }},
		)
	}
	add(step{name: "fetch-offsets", req: func(*state) kmsg.Request { return fetchOffsets(false) }})
	if vFetch >= 2 {
		add(step{name: "fetch-offsets-all", req: func(*state) kmsg.Request { return fetchOffsets(true) }})
	}
	// OffsetFetch's error paths: a group that does not exist (no error: no offsets), and v7+'s
	// require_stable (UNSTABLE_OFFSET_COMMIT only while a transactional commit is pending, which
	// neither broker has here: this broker serves no transactions).
	add(step{name: "fetch-offsets-unknown-group", req: func(*state) kmsg.Request { return fetchOffsetsOf(g+"-never", false, false) }})
	if vFetch >= 2 {
		add(step{name: "fetch-offsets-all-unknown-group", req: func(*state) kmsg.Request { return fetchOffsetsOf(g+"-never", true, false) }})
	}
	if vFetch >= 7 {
		add(step{name: "fetch-offsets-require-stable", req: func(*state) kmsg.Request { return fetchOffsetsOf(g, false, true) }})
	}
	add(step{name: "describe-stable", req: func(*state) kmsg.Request { return describe() }})

	// A second member: the stable group rebalances, a's heartbeat says so, a rejoins, both sync.
	if vJoin >= 4 {
		add(step{name: "join-b", conn: "b", req: joinAs("b"), after: remember("b")})
	}
	add(
		step{name: "join-b-pending", conn: "b", async: true, req: joinAs("b")},
		// Barrier: b's join (on its own connection) has reached the coordinator.
		step{name: "describe-preparing", req: func(*state) kmsg.Request { return describe() }, until: func(r kmsg.Response) bool {
			return r.(*kmsg.DescribeGroupsResponse).Groups[0].State == "PreparingRebalance"
		}},
		step{name: "heartbeat-a-rebalancing", req: func(st *state) kmsg.Request { return heartbeat(g, st.m("a"), st.gen["a"]) }},
		// A commit while the group prepares a rebalance (its generation still current) is taken; ...
		step{name: "commit-a-preparing", req: func(st *state) kmsg.Request { return commit(st.m("a"), st.gen["a"], 0, 6, "") }},
		step{name: "rejoin-a", req: joinAs("a"), after: remember("a")},
		step{name: "join-b-answer", await: "join-b-pending", after: remember("b")},
		// ... one between the join and the sync (CompletingRebalance) is REBALANCE_IN_PROGRESS.
		step{name: "commit-b-completing", req: func(st *state) kmsg.Request { return commit(st.m("b"), st.gen["b"], 1, 6, "") }},
		step{name: "sync-b-pending", conn: "b", async: true, req: func(st *state) kmsg.Request { return sync(g, st.m("b"), st.gen["b"], "consumer", nil) }},
		step{name: "sync-a-leader", req: func(st *state) kmsg.Request {
			return sync(g, st.m("a"), st.gen["a"], "consumer", map[string][]byte{st.m("a"): consumerAssignment(0), st.m("b"): consumerAssignment(1)})
		}},
		step{name: "sync-b-answer", await: "sync-b-pending"},
		step{name: "commit-b", req: func(st *state) kmsg.Request { return commit(st.m("b"), st.gen["b"], 1, 7, "") }},
		step{name: "describe-two", req: func(*state) kmsg.Request { return describe() }},
		// Leaving: b, an unknown member, then a; the group is Empty with its offsets kept.
		step{name: "leave-b", conn: "b", req: func(st *state) kmsg.Request { return leave(st.m("b")) }},
		step{name: "leave-unknown-member", req: fixed(leave("ghost"))},
		step{name: "heartbeat-a-after-leave", req: func(st *state) kmsg.Request { return heartbeat(g, st.m("a"), st.gen["a"]) }},
		step{name: "leave-a", req: func(st *state) kmsg.Request { return leave(st.m("a")) }},
		step{name: "describe-empty", req: func(*state) kmsg.Request { return describe() }},
		step{name: "fetch-offsets-after", req: func(*state) kmsg.Request { return fetchOffsets(false) }},
		step{name: "list-groups", req: func(*state) kmsg.Request {
			r := kmsg.NewPtrListGroupsRequest()
			r.SetVersion(vList)
			return r
		}},
	)
	if vList >= 4 {
		add(step{name: "list-groups-empty-state", req: func(*state) kmsg.Request {
			r := kmsg.NewPtrListGroupsRequest()
			r.SetVersion(vList)
			r.StatesFilter = []string{"Empty"}
			return r
		}})
	}
	return kcase{name: name, steps: steps}
}
