package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestResponseErrorCode: the one walk finds the first non-zero error code the way the per-API walks
// it replaced did (the response's own, then topics before their partitions, in order), and every
// response type kmsg knows walks without a panic.
func TestResponseErrorCode(t *testing.T) {
	md := kmsg.NewPtrMetadataResponse()
	md.Topics = []kmsg.MetadataResponseTopic{
		{Partitions: []kmsg.MetadataResponseTopicPartition{{}, {ErrorCode: 9}}},
		{ErrorCode: 3},
	}
	fetch := kmsg.NewPtrFetchResponse()
	fetch.Topics = []kmsg.FetchResponseTopic{
		{Partitions: []kmsg.FetchResponseTopicPartition{{RecordBatches: make([]byte, 1<<20)}}},
		{Partitions: []kmsg.FetchResponseTopicPartition{{}, {ErrorCode: 1}}},
	}
	fetchTop := kmsg.NewPtrFetchResponse()
	fetchTop.ErrorCode = 70
	fetchTop.Topics = []kmsg.FetchResponseTopic{{Partitions: []kmsg.FetchResponseTopicPartition{{ErrorCode: 1}}}}
	ofOld := kmsg.NewPtrOffsetFetchResponse()
	ofOld.ErrorCode = 15
	ofGroups := kmsg.NewPtrOffsetFetchResponse()
	ofGroups.Groups = []kmsg.OffsetFetchResponseGroup{{}, {ErrorCode: 16}}
	leave := kmsg.NewPtrLeaveGroupResponse()
	leave.Members = []kmsg.LeaveGroupResponseMember{{}, {ErrorCode: 25}}
	fc := kmsg.NewPtrFindCoordinatorResponse()
	fc.Coordinators = []kmsg.FindCoordinatorResponseCoordinator{{ErrorCode: 15}}
	dg := kmsg.NewPtrDescribeGroupsResponse()
	dg.Groups = []kmsg.DescribeGroupsResponseGroup{{Group: "a"}, {Group: "b", ErrorCode: 69}}
	commit := kmsg.NewPtrOffsetCommitResponse()
	commit.Topics = []kmsg.OffsetCommitResponseTopic{{Partitions: []kmsg.OffsetCommitResponseTopicPartition{{}, {ErrorCode: 22}}}}
	hb := kmsg.NewPtrHeartbeatResponse()
	hb.ErrorCode = 27
	cases := []struct {
		name string
		resp kmsg.Response
		want int16
	}{
		{"Metadata: partition of the first topic", md, 9},
		{"Fetch: second topic's partition", fetch, 1},
		{"Fetch: top level first", fetchTop, 70},
		{"OffsetFetch v0-v7: top level", ofOld, 15},
		{"OffsetFetch v8+: second group", ofGroups, 16},
		{"LeaveGroup: member", leave, 25},
		{"FindCoordinator v4+: coordinator", fc, 15},
		{"DescribeGroups: second group", dg, 69},
		{"OffsetCommit: partition", commit, 22},
		{"Heartbeat", hb, 27},
		{"Produce without errors", kmsg.NewPtrProduceResponse(), 0},
		{"nil", (*kmsg.JoinGroupResponse)(nil), 0},
	}
	for _, tc := range cases {
		if got := responseErrorCode(tc.resp); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		if r := kmsg.ResponseForKey(k); r != nil {
			if got := responseErrorCode(r); got != 0 {
				t.Errorf("empty %T: %d, want 0", r, got)
			}
		}
	}
}
