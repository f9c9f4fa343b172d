package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestListOffsetsMaxTimestamp: ListOffsets v7+ with timestamp -3 (MAX_TIMESTAMP, KIP-734) answers the
// first record holding the largest timestamp (offset 1 of timestamps 5, 9, 7, 9, 3); -4
// (EARLIEST_LOCAL, v8+) the log start offset; -5 (LATEST_TIERED, v9+) offset -1 (no remote log); below
// v7, -3 is UNSUPPORTED_VERSION.
func TestListOffsetsMaxTimestamp(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1, nil)
	createTopic(t, b.addr(), "ts", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for _, ts := range []int64{5, 9, 7, 9, 3} {
		recs = append(recs, &kgo.Record{Topic: "ts", Value: []byte("v"), Timestamp: time.UnixMilli(ts)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c := dial(t, b.addr())
	list := func(version int16, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "ts"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return request[*kmsg.ListOffsetsResponse](t, c, req, version).Topics[0].Partitions[0]
	}
	for _, c := range []struct {
		version          int16
		ts               int64
		code             int16
		offset, gotStamp int64
	}{
		{7, -3, 0, 1, 9}, {9, -3, 0, 1, 9}, {8, -4, 0, 0, -1}, {9, -5, 0, -1, -1}, {6, -3, 35, -1, -1},
	} {
		p := list(c.version, c.ts)
		if p.ErrorCode != c.code || p.Offset != c.offset || p.Timestamp != c.gotStamp {
			t.Errorf("v%d timestamp %d: error %d offset %d timestamp %d; want %d, %d, %d", c.version, c.ts, p.ErrorCode, p.Offset, p.Timestamp, c.code, c.offset, c.gotStamp)
		}
	}
}
