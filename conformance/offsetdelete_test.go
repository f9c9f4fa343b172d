package conformance

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetDeleteCase is OffsetDelete (v0, the only version) through a group's states, after
// GroupCoordinator.handleDeleteOffsets and KafkaApis.handleOffsetDeleteRequest: a group that does not
// exist, an empty group id, a Stable consumer group (its subscribed topic GROUP_SUBSCRIBED_TO_TOPIC,
// another topic deleted, an unknown topic and partition UNKNOWN_TOPIC_OR_PARTITION), a Stable group of
// another protocol type (NON_EMPTY_GROUP), the group Empty (everything deleted, read back), then Dead
// once its last offset is gone; and an offsets-only group (generation 0). Group APIs at versions both
// brokers have had since 0.11 (JoinGroup v3: no MEMBER_ID_REQUIRED round).
func offsetDeleteCase() kcase {
	const g, gc, simple = "g-offdel", "g-offdel-connect", "g-offdel-simple"
	join := func(group, protocolType string) *kmsg.JoinGroupRequest {
		r := kmsg.NewPtrJoinGroupRequest()
		r.SetVersion(3)
		r.Group, r.ProtocolType = group, protocolType
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10000, 10000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", consumerMetadata() // subscribes to groupTopic
		r.Protocols = append(r.Protocols, p)
		return r
	}
	remember := func(who string) func(*state, kmsg.Response) {
		return func(st *state, r kmsg.Response) {
			j := r.(*kmsg.JoinGroupResponse)
			st.member[who], st.gen[who] = j.MemberID, j.Generation
		}
	}
	sync := func(group, who string) func(*state) kmsg.Request {
		return func(st *state) kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.SetVersion(2)
			r.Group, r.MemberID, r.Generation = group, st.m(who), st.gen[who]
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = st.m(who), consumerAssignment(0, 1)
			r.GroupAssignment = append(r.GroupAssignment, ga)
			return r
		}
	}
	type tp struct {
		topic string
		ps    []int32
	}
	commit := func(group, who string, tps ...tp) func(*state) kmsg.Request {
		return func(st *state) kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.SetVersion(2)
			r.Group, r.MemberID, r.Generation, r.RetentionTimeMillis = group, st.m(who), -1, -1
			if who != "" {
				r.Generation = st.gen[who]
			}
			for _, x := range tps {
				t := kmsg.NewOffsetCommitRequestTopic()
				t.Topic = x.topic
				for _, p := range x.ps {
					rp := kmsg.NewOffsetCommitRequestTopicPartition()
					rp.Partition, rp.Offset = p, 3
					t.Partitions = append(t.Partitions, rp)
				}
				r.Topics = append(r.Topics, t)
			}
			return r
		}
	}
	del := func(group string, tps ...tp) func(*state) kmsg.Request {
		return func(*state) kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.SetVersion(0)
			r.Group = group
			for _, x := range tps {
				t := kmsg.NewOffsetDeleteRequestTopic()
				t.Topic = x.topic
				for _, p := range x.ps {
					rp := kmsg.NewOffsetDeleteRequestTopicPartition()
					rp.Partition = p
					t.Partitions = append(t.Partitions, rp)
				}
				r.Topics = append(r.Topics, t)
			}
			return r
		}
	}
	fetch := func(group string) func(*state) kmsg.Request {
		return func(*state) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.SetVersion(5)
			r.Group = group
			for _, t := range []string{groupTopic, dataTopic} {
				rt := kmsg.NewOffsetFetchRequestTopic()
				rt.Topic, rt.Partitions = t, []int32{0, 1}
				r.Topics = append(r.Topics, rt)
			}
			return r
		}
	}
	describe := func(group string) func(*state) kmsg.Request {
		return func(*state) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.SetVersion(2)
			r.Groups = []string{group}
			return r
		}
	}
	leave := func(group, who string) func(*state) kmsg.Request {
		return func(st *state) kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.SetVersion(2)
			r.Group, r.MemberID = group, st.m(who)
			return r
		}
	}
	fixed := func(r kmsg.Request) func(*state) kmsg.Request { return func(*state) kmsg.Request { return r } }
	both := []tp{{groupTopic, []int32{0, 1}}, {dataTopic, []int32{0, 1}}}
	return kcase{name: "OffsetDelete v0", steps: []step{
		{name: "delete-unknown-group", req: del(g, tp{groupTopic, []int32{0}})},
		{name: "delete-empty-group-id", req: del("", tp{groupTopic, []int32{0}})},
		{name: "join-a", req: fixed(join(g, "consumer")), after: remember("a")},
		{name: "sync-a", req: sync(g, "a")},
		{name: "commit-a", req: commit(g, "a", both...)},
		{name: "delete-stable", req: del(g, tp{groupTopic, []int32{0}}, tp{dataTopic, []int32{0}}, tp{"dt-no-such-topic", []int32{0}},
			tp{groupTopic, []int32{7}})},
		{name: "fetch-after-stable-delete", req: fetch(g)},
		{name: "join-connect", conn: "c", req: fixed(join(gc, "connect")), after: remember("c")},
		{name: "sync-connect", conn: "c", req: sync(gc, "c")},
		{name: "delete-connect-stable", req: del(gc, tp{dataTopic, []int32{0}})},
		{name: "leave-a", req: leave(g, "a")},
		{name: "delete-empty", req: del(g, tp{groupTopic, []int32{0}}, tp{dataTopic, []int32{0}})},
		{name: "fetch-after-empty-delete", req: fetch(g)},
		{name: "describe-empty", req: describe(g)},
		{name: "delete-last", req: del(g, tp{groupTopic, []int32{1}}, tp{dataTopic, []int32{1}})},
		{name: "describe-dead", req: describe(g)},
		{name: "delete-dead", req: del(g, tp{groupTopic, []int32{1}})},
		{name: "commit-simple", req: commit(simple, "", tp{dataTopic, []int32{0}})},
		{name: "delete-simple", req: del(simple, tp{dataTopic, []int32{0, 1}})},
		{name: "describe-simple", req: describe(simple)},
		{name: "leave-connect", conn: "c", req: leave(gc, "c")},
	}}
}
