package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
)

// waitCoordinator sends FindCoordinator until the group's coordinator is available: the first one
// creates __consumer_offsets (COORDINATOR_NOT_AVAILABLE until it has a leader), as Kafka does.
func waitCoordinator(t *testing.T, c *wire.Conn, group string) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, "the group coordinator", func() bool {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.CoordinatorKey = group
		r.SetVersion(0)
		resp, err := c.Request(context.Background(), r)
		return err == nil && resp.(*kmsg.FindCoordinatorResponse).ErrorCode == 0
	})
}

// groupSweep sends group API key at version v for group "sweep-g", which has no members, and checks
// the answer Kafka 3.9 gives: unknown members get UNKNOWN_MEMBER_ID; a memberless commit (generation
// -1, as a consumer with manual assignment sends) is stored and fetched back; the group is then
// described Empty, listed, and deleted (later versions: GROUP_ID_NOT_FOUND). It reports whether key is
// a group API. The versions are swept in key order, so the commit (8) precedes the fetch (9).
func groupSweep(t *testing.T, c *wire.Conn, key, v int16, name string) bool {
	t.Helper()
	const group = "sweep-g"
	want := func(what string, got, code int16) {
		t.Helper()
		if got != code {
			t.Fatalf("%s: %s %v, want %v", name, what, kerr.ErrorForCode(got), kerr.ErrorForCode(code))
		}
	}
	unknownMember := kerr.UnknownMemberID.Code
	switch kmsg.Key(key) {
	case kmsg.OffsetCommit:
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group, r.Generation, r.MemberID = group, -1, ""
		r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "sweep", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 2}}}}
		resp := request[*kmsg.OffsetCommitResponse](t, c, r, v)
		want("partition error", resp.Topics[0].Partitions[0].ErrorCode, 0)
	case kmsg.OffsetFetch:
		r := kmsg.NewPtrOffsetFetchRequest()
		var off int64
		var code int16
		if v < 8 {
			r.Group = group
			r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "sweep", Partitions: []int32{0}}}
			resp := request[*kmsg.OffsetFetchResponse](t, c, r, v)
			p := resp.Topics[0].Partitions[0]
			off, code = p.Offset, p.ErrorCode
		} else {
			r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "sweep", Partitions: []int32{0}}}}}
			resp := request[*kmsg.OffsetFetchResponse](t, c, r, v)
			p := resp.Groups[0].Topics[0].Partitions[0]
			off, code = p.Offset, p.ErrorCode
		}
		want("partition error", code, 0)
		if off != 2 {
			t.Fatalf("%s: committed offset %d, want 2", name, off)
		}
	case kmsg.FindCoordinator:
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.CoordinatorKey = group
		r.CoordinatorKeys = []string{group}
		resp := request[*kmsg.FindCoordinatorResponse](t, c, r, v)
		code, node := resp.ErrorCode, resp.NodeID
		if v >= 4 {
			code, node = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
		}
		want("error", code, 0)
		if node != 1 {
			t.Fatalf("%s: coordinator %d, want broker 1", name, node)
		}
	case kmsg.JoinGroup: // with a member id the group does not know
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group, r.MemberID, r.ProtocolType = group, "stranger", "consumer"
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10000, 10000
		r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
		want("error", request[*kmsg.JoinGroupResponse](t, c, r, v).ErrorCode, unknownMember)
	case kmsg.Heartbeat:
		r := kmsg.NewPtrHeartbeatRequest()
		r.Group, r.MemberID, r.Generation = group, "stranger", 1
		want("error", request[*kmsg.HeartbeatResponse](t, c, r, v).ErrorCode, unknownMember)
	case kmsg.LeaveGroup: // v0-2 answer at the top level, v3+ (batch leave, KIP-345) per member
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Group, r.MemberID = group, "stranger"
		r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "stranger"}}
		resp := request[*kmsg.LeaveGroupResponse](t, c, r, v)
		if v < 3 {
			want("error", resp.ErrorCode, unknownMember)
		} else {
			want("error", resp.ErrorCode, 0)
			want("member error", resp.Members[0].ErrorCode, unknownMember)
		}
	case kmsg.SyncGroup:
		r := kmsg.NewPtrSyncGroupRequest()
		r.Group, r.MemberID, r.Generation = group, "stranger", 1
		r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		want("error", request[*kmsg.SyncGroupResponse](t, c, r, v).ErrorCode, unknownMember)
	case kmsg.DescribeGroups:
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Groups = []string{group}
		g := request[*kmsg.DescribeGroupsResponse](t, c, r, v).Groups[0]
		want("error", g.ErrorCode, 0)
		if g.Group != group || g.State != "Empty" || len(g.Members) != 0 {
			t.Fatalf("%s: %+v, want %s Empty with no members", name, g, group)
		}
	case kmsg.ListGroups:
		resp := request[*kmsg.ListGroupsResponse](t, c, kmsg.NewPtrListGroupsRequest(), v)
		want("error", resp.ErrorCode, 0)
		found := false
		for _, g := range resp.Groups {
			found = found || g.Group == group
		}
		if !found {
			t.Fatalf("%s: %s not listed in %+v", name, group, resp.Groups)
		}
	case kmsg.DeleteGroups: // the first version deletes it, the later ones find nothing
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Groups = []string{group}
		code := int16(0)
		if v > 0 {
			code = kerr.GroupIDNotFound.Code
		}
		want("error", request[*kmsg.DeleteGroupsResponse](t, c, r, v).Groups[0].ErrorCode, code)
	case kmsg.OffsetDelete: // after DeleteGroups (key order): the group is gone
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = group
		r.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "sweep", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
		resp := request[*kmsg.OffsetDeleteResponse](t, c, r, v)
		want("error", resp.ErrorCode, kerr.GroupIDNotFound.Code)
		if len(resp.Topics) != 0 {
			t.Fatalf("%s: topics %+v with a group error, want none", name, resp.Topics)
		}
	default:
		return false
	}
	return true
}
