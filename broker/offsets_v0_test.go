package broker_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestOffsetCommitFetchV0InZooKeeper: OffsetCommit v0 writes the offset as decimal text to
// /consumers/<group>/offsets/<topic>/<partition> (KafkaApis.commitOffsetsToZookeeper), where the
// 0.8 ZooKeeper consumer keeps its offsets, and OffsetFetch v0 reads from there: an offset written
// there directly comes back, a partition without one is UNKNOWN_TOPIC_OR_PARTITION with offset -1,
// and too-long metadata is OFFSET_METADATA_TOO_LARGE. Versions 1+ go to the group coordinator and
// do not see the ZooKeeper offsets.
func TestOffsetCommitFetchV0InZooKeeper(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1, nil)
	createTopic(t, b.addr(), "v0", 3)
	zc := zkClient(t, z.Connect())
	c := dial(t, b.addr())

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group = "old"
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "v0"
	for p, md := range []string{"m", string(make([]byte, 4097))} {
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset, cp.Metadata = int32(p), 42, kmsg.StringPtr(md)
		ct.Partitions = append(ct.Partitions, cp)
	}
	commit.Topics = append(commit.Topics, ct)
	cr := request[*kmsg.OffsetCommitResponse](t, c, commit, 0)
	if got := cr.Topics[0].Partitions; len(got) != 2 || got[0].ErrorCode != 0 || got[1].ErrorCode != 12 {
		t.Fatalf("OffsetCommit v0 partitions = %+v; want errors 0 and 12 (OFFSET_METADATA_TOO_LARGE)", got)
	}
	if data, _ := getZ(t, zc, "/consumers/old/offsets/v0/0"); string(data) != "42" {
		t.Fatalf("/consumers/old/offsets/v0/0 = %q, want \"42\"", data)
	}
	if ok, _, _ := zc.Exists("/consumers/old/offsets/v0/1"); ok {
		t.Fatal("the refused commit of partition 1 was written")
	}
	if _, err := zc.Create("/consumers/old/offsets/v0/2", []byte("7"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	fetchResp := func(version int16) *kmsg.OffsetFetchResponse {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = "old"
		ft := kmsg.NewOffsetFetchRequestTopic()
		ft.Topic, ft.Partitions = "v0", []int32{0, 1, 2}
		req.Topics = append(req.Topics, ft)
		return request[*kmsg.OffsetFetchResponse](t, c, req, version)
	}
	answered := func(r *kmsg.OffsetFetchResponse) bool { return len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 3 }
	fetch := func(version int16) []kmsg.OffsetFetchResponseTopicPartition {
		resp := fetchResp(version)
		if !answered(resp) {
			t.Fatalf("OffsetFetch v%d = %+v; want topic v0 with 3 partitions", version, resp)
		}
		return resp.Topics[0].Partitions
	}
	got := fetch(0)
	want := []struct {
		offset int64
		code   int16
	}{{42, 0}, {-1, 3}, {7, 0}}
	for i, w := range want {
		if got[i].Partition != int32(i) || got[i].Offset != w.offset || got[i].ErrorCode != w.code {
			t.Fatalf("OffsetFetch v0 partition %d = %+v; want offset %d error %d", i, got[i], w.offset, w.code)
		}
	}
	// The coordinator (v1+) answers once __consumer_offsets, created on first use, is loaded.
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorKey = "old"
	request[*kmsg.FindCoordinatorResponse](t, c, find, 0)
	// v0-1 carry a group's error on every partition (no top-level error field): wait until none carries
	// a coordinator error (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE).
	testutil.WaitFor(t, 20*time.Second, "the group coordinator", func() bool {
		r := fetchResp(1)
		if !answered(r) {
			return false
		}
		for _, p := range r.Topics[0].Partitions {
			switch p.ErrorCode {
			case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code:
				return false
			}
		}
		return true
	})
	for _, p := range fetch(1) {
		if p.Offset != -1 || p.ErrorCode != 0 {
			t.Fatalf("OffsetFetch v1 (the coordinator) partition %d = offset %d error %d; want -1, 0", p.Partition, p.Offset, p.ErrorCode)
		}
	}
}
