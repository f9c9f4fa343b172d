package broker_test

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker"
	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestGroupRecordTooLarge: Kafka 3.9 stores a group's whole membership as one record batch in
// __consumer_offsets, and that batch is checked against the log's maximum message size like any
// other (UnifiedLog: RecordTooLargeException). GroupMetadataManager.storeGroup maps the append's
// MESSAGE_TOO_LARGE to UNKNOWN_SERVER_ERROR, and GroupCoordinator's SyncGroup callback then answers
// the round with that error and prepares another rebalance: a group whose record cannot be written
// never becomes Stable. The limit bites at exactly one byte over message.max.bytes: a member whose
// subscription makes the group's batch message.max.bytes long syncs, one byte more does not.
func TestGroupRecordTooLarge(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	const limit = 4096
	zk := startZK(t)
	tb := startBroker(t, zk.Connect(), 1, map[string]string{
		"message.max.bytes":            "4096",
		"offsets.topic.num.partitions": "1", // every group's record in partition 0
	})
	c := dial(t, tb.addr())
	waitGroupReady(t, c, "g1") // __consumer_offsets is created by the first FindCoordinator
	offsets, err := tb.b.PartitionLog(broker.OffsetsTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	// lastBatchSize is the size of the newest batch of __consumer_offsets-0 (bytes).
	lastBatchSize := func() int {
		t.Helper()
		data, err := offsets.Read(offsets.HighWatermark()-1, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var h recordbatch.Header
		for len(data) > 0 {
			if h, err = recordbatch.ReadHeader(data); err != nil {
				t.Fatal(err)
			}
			data = data[h.Size():]
		}
		return h.Size()
	}
	// round joins a one-member group whose subscription carries userData bytes of user data, and
	// returns the SyncGroup's error code (the member leads, and assigns itself nothing).
	round := func(group string, userData int) int16 {
		t.Helper()
		waitGroupReady(t, c, group)
		m := newWireMember(t, tb.addr(), group)
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics, meta.UserData = []string{"t"}, bytes.Repeat([]byte{'u'}, userData)
		m.protocols[0].Metadata = meta.AppendTo(nil)
		if resp := m.join(t); resp == nil || resp.ErrorCode != 0 {
			t.Fatalf("JoinGroup of %s failed", group)
		}
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation = group, m.id, m.generation
		req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		none := kmsg.NewConsumerMemberAssignment()
		req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: m.id, MemberAssignment: none.AppendTo(nil)}}
		return request[*kmsg.SyncGroupResponse](t, m.c, req, 5).ErrorCode
	}

	// Same-length group names and client ids: only the user data changes the batch's size.
	if code := round("g1", 100); code != 0 {
		t.Fatalf("g1's SyncGroup: %v", kerr.ErrorForCode(code))
	}
	small := lastBatchSize()
	atLimit := 100 + limit - small
	if code := round("g2", atLimit); code != 0 {
		t.Fatalf("g2's SyncGroup (a batch of message.max.bytes): %v", kerr.ErrorForCode(code))
	}
	if got := lastBatchSize(); got != limit {
		t.Fatalf("g2's group record batch is %d bytes, want exactly message.max.bytes=%d", got, limit)
	}
	hw := offsets.HighWatermark()
	if code := round("g3", atLimit+1); code != kerr.UnknownServerError.Code {
		t.Fatalf("g3's SyncGroup (a batch of message.max.bytes+1): %v, want UNKNOWN_SERVER_ERROR", kerr.ErrorForCode(code))
	}
	if got := offsets.HighWatermark(); got != hw {
		t.Fatalf("__consumer_offsets-0 high watermark %d after g3's failed store, want %d: nothing written", got, hw)
	}
	if d := describeWire(t, c, "g3"); d.State != "PreparingRebalance" {
		t.Fatalf("g3 is %s after the failed store, want PreparingRebalance (another rebalance prepared)", d.State)
	}
	if d := describeWire(t, c, "g2"); d.State != "Stable" {
		t.Fatalf("g2 is %s, want Stable", d.State)
	}
}
