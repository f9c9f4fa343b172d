package coordinator

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIsGroupAPI: the group APIs are exactly the eleven keys of APIVersions (the one list the broker
// routes by), and the broker's own APIs and KIP-848's, which ZooKeeper mode refuses, are not among them.
func TestIsGroupAPI(t *testing.T) {
	want := []kmsg.Key{kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.Heartbeat,
		kmsg.LeaveGroup, kmsg.SyncGroup, kmsg.DescribeGroups, kmsg.ListGroups, kmsg.DeleteGroups, kmsg.OffsetDelete}
	if got := len(APIVersions()); got != len(want) {
		t.Fatalf("APIVersions lists %d APIs, want %d", got, len(want))
	}
	for _, k := range want {
		if !IsGroupAPI(k.Int16()) {
			t.Errorf("IsGroupAPI(%s) = false", kmsg.NameForKey(k.Int16()))
		}
	}
	for _, k := range []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.Metadata, kmsg.ApiVersions,
		kmsg.InitProducerID, kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe} {
		if IsGroupAPI(k.Int16()) {
			t.Errorf("IsGroupAPI(%s) = true", kmsg.NameForKey(k.Int16()))
		}
	}
	if IsGroupAPI(-1) || IsGroupAPI(10000) {
		t.Error("IsGroupAPI of an unknown key = true")
	}
}
