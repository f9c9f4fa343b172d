package benchmark

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The throughput windows against a kfake cluster: a fetch before anything is produced is refused;
// windows produce and fetch records; fetching goes on past the topic's end by reading it again from
// offset 0 (every record checked in offset order, across the seek); Verify finds every acknowledged
// record at the end offsets. No rate is asserted.
func TestThroughputWindows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	bootstrap := strings.Join(fake.ListenAddrs(), ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(fake.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "windows")
	cl.Close()
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	c, err := OpenThroughput("kfake", bootstrap, ThroughputOptions{Topic: "windows", Partitions: 3, RecordBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.Fetch(ctx, 100*time.Millisecond); err == nil || !strings.Contains(err.Error(), "nothing produced to windows yet") {
		t.Fatalf("fetch before any produce: error %v", err)
	}
	produced := 0
	for w := range 2 {
		r, err := c.Window(ctx, w, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if r.ProducedRecords < 1 || r.FetchedRecords < 1 || r.ProduceSeconds < 0.2 || r.FetchSeconds < 0.2 || r.Window != w {
			t.Fatalf("window %d: %+v", w, r)
		}
		produced += r.ProducedRecords
	}
	// A short produce, then a fetch long enough to reach the end: it reads the topic again from 0.
	n, _, err := c.Produce(ctx, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	produced += n
	// Fetch windows until the consumer has reached the end and read the topic again from 0 (ctx's
	// minute bounds it), every record still checked in offset order.
	before := c.rereads
	for c.rereads == before {
		if _, _, err := c.Fetch(ctx, 100*time.Millisecond); err != nil {
			t.Fatalf("fetching %d records until the consumer reads them again: %v", c.acked, err)
		}
	}
	if err := c.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	if c.acked != produced {
		t.Fatalf("%d acknowledged over the windows, the windows counted %d", c.acked, produced)
	}
}
