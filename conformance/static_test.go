package conformance

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/lab"
)

// Static membership (KIP-345): a member with a group.instance.id (JoinGroup v5+) rejoins with the same
// instance id and no member id, gets a new member id, and its old member id is fenced
// (FENCED_INSTANCE_ID) on Heartbeat and SyncGroup (v3+), OffsetCommit (v7+), JoinGroup and LeaveGroup's
// members[] (v3+). Run once per version index i from 3: JoinGroup at max(5, i), the other APIs at
// min(i, the highest version both brokers advertise), so each version that carries an instance id is
// exercised; below v7 OffsetCommit carries none, so the old member id is just unknown there.

// staticFirstIndex is the first version index of the static cases: Heartbeat, SyncGroup and
// LeaveGroup's members[] carry group.instance.id from v3.
const staticFirstIndex = 3

func staticCase(v versions, i int) kcase {
	g := fmt.Sprintf("gs-v%d", i)
	const instance = "instance-a"
	vJoin := max(v.at(kmsg.JoinGroup.Int16(), i), 5)
	vSync, vHB, vLeave := v.at(kmsg.SyncGroup.Int16(), i), v.at(kmsg.Heartbeat.Int16(), i), v.at(kmsg.LeaveGroup.Int16(), i)
	vCommit, vDescribe := v.at(kmsg.OffsetCommit.Int16(), i), v.at(kmsg.DescribeGroups.Int16(), i)
	name := fmt.Sprintf("static i=%d (JoinGroup v%d SyncGroup v%d Heartbeat v%d LeaveGroup v%d OffsetCommit v%d DescribeGroups v%d)",
		i, vJoin, vSync, vHB, vLeave, vCommit, vDescribe)
	inst := kmsg.StringPtr(instance)

	join := func(member string) *kmsg.JoinGroupRequest {
		r := kmsg.NewPtrJoinGroupRequest()
		r.SetVersion(vJoin)
		r.Group, r.MemberID, r.InstanceID, r.ProtocolType = g, member, inst, "consumer"
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10000, 10000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", consumerMetadata()
		r.Protocols = append(r.Protocols, p)
		return r
	}
	remember := func(who string) func(*state, kmsg.Response) {
		return func(st *state, r kmsg.Response) {
			j := r.(*kmsg.JoinGroupResponse)
			if j.ErrorCode == 0 {
				st.member[who], st.gen[who] = j.MemberID, j.Generation
			}
		}
	}
	sync := func(member string, gen int32, assign map[string][]byte) *kmsg.SyncGroupRequest {
		r := kmsg.NewPtrSyncGroupRequest()
		r.SetVersion(vSync)
		r.Group, r.MemberID, r.Generation, r.InstanceID = g, member, gen, inst
		r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		for m, a := range assign {
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = m, a
			r.GroupAssignment = append(r.GroupAssignment, ga)
		}
		return r
	}
	heartbeat := func(member string, gen int32) *kmsg.HeartbeatRequest {
		r := kmsg.NewPtrHeartbeatRequest()
		r.SetVersion(vHB)
		r.Group, r.MemberID, r.Generation, r.InstanceID = g, member, gen, inst
		return r
	}
	commit := func(member string, gen int32, offset int64) *kmsg.OffsetCommitRequest {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.SetVersion(vCommit)
		r.Group, r.MemberID, r.Generation, r.InstanceID = g, member, gen, inst
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = groupTopic
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = 0, offset
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
	leave := func(member string) *kmsg.LeaveGroupRequest {
		r := kmsg.NewPtrLeaveGroupRequest()
		r.SetVersion(vLeave)
		r.Group = g
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID, m.InstanceID = member, inst
		r.Members = append(r.Members, m)
		return r
	}
	describe := func(*state) kmsg.Request {
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.SetVersion(vDescribe)
		r.Groups = []string{g}
		return r
	}
	a := func(st *state) string { return st.m("a") }
	old := func(st *state) string { return st.m("a-old") }

	steps := []step{
		// The static member joins (no MEMBER_ID_REQUIRED with an instance id), syncs and is Stable.
		{name: "join-static", req: func(*state) kmsg.Request { return join("") }, after: remember("a")},
		{name: "sync-static", req: func(st *state) kmsg.Request {
			return sync(a(st), st.gen["a"], map[string][]byte{a(st): consumerAssignment(0, 1)})
		}},
		{name: "heartbeat-static", req: func(st *state) kmsg.Request { return heartbeat(a(st), st.gen["a"]) }},
		{name: "commit-static", req: func(st *state) kmsg.Request { return commit(a(st), st.gen["a"], 3) }},
		{name: "describe-static", req: describe},
		// It restarts: the same instance id, no member id. A new member id, no rebalance.
		{name: "rejoin-static-new-id", req: func(*state) kmsg.Request { return join("") }, after: func(st *state, r kmsg.Response) {
			st.member["a-old"], st.gen["a-old"] = st.m("a"), st.gen["a"]
			remember("a")(st, r)
		}},
		{name: "describe-after-rejoin", req: describe},
		// The old member id is fenced everywhere it is checked with the instance id.
		{name: "heartbeat-old-id", req: func(st *state) kmsg.Request { return heartbeat(old(st), st.gen["a-old"]) }},
		{name: "sync-old-id", req: func(st *state) kmsg.Request { return sync(old(st), st.gen["a-old"], nil) }},
		{name: "commit-old-id", req: func(st *state) kmsg.Request { return commit(old(st), st.gen["a-old"], 4) }},
		{name: "join-old-id", req: func(st *state) kmsg.Request { return join(old(st)) }},
		{name: "leave-old-id", req: func(st *state) kmsg.Request { return leave(old(st)) }},
		// The new member id works: heartbeat, sync (the assignment kept), commit; then it leaves by
		// its instance id.
		{name: "heartbeat-new-id", req: func(st *state) kmsg.Request { return heartbeat(a(st), st.gen["a"]) }},
		{name: "sync-new-id", req: func(st *state) kmsg.Request { return sync(a(st), st.gen["a"], nil) }},
		{name: "commit-new-id", req: func(st *state) kmsg.Request { return commit(a(st), st.gen["a"], 5) }},
		{name: "leave-new-id", req: func(st *state) kmsg.Request { return leave(a(st)) }},
		{name: "describe-after-leave", req: describe},
	}
	return kcase{name: name, steps: steps}
}

// nonCoordinatorCase sends OffsetFetch, at version vFetch, for a group whose coordinator is another
// broker (the lab's second broker, which leads no __consumer_offsets partition; see TestDifferential).
func nonCoordinatorCase(vFetch int16) kcase {
	g := "g-v1" // a group of the group scripts, coordinated by the first broker
	return kcase{
		name: fmt.Sprintf("non-coordinator OffsetFetch v%d", vFetch),
		addr: func(l *lab.Lab) string { return l.Brokers()[1].Addr() },
		steps: []step{{name: "fetch-offsets", req: func(*state) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.SetVersion(vFetch)
			if vFetch >= 8 {
				rg := kmsg.NewOffsetFetchRequestGroup()
				rg.Group = g
				t := kmsg.NewOffsetFetchRequestGroupTopic()
				t.Topic, t.Partitions = groupTopic, []int32{0}
				rg.Topics = append(rg.Topics, t)
				r.Groups = append(r.Groups, rg)
				return r
			}
			r.Group = g
			t := kmsg.NewOffsetFetchRequestTopic()
			t.Topic, t.Partitions = groupTopic, []int32{0}
			r.Topics = append(r.Topics, t)
			return r
		}}},
	}
}
