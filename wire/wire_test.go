package wire

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// kfake (franz-go's in-process Kafka) is the peer here: this package only frames requests, and the
// project's broker has its own tests with real clients.
func newCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestRequestVersions(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := Dial(ctx, nil, c.ListenAddrs()[0], "wire-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// ApiVersions v3 is flexible but its response header is not (KIP-511).
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "rebalancelab", "test"
	r, err := conn.Request(ctx, av)
	if err != nil {
		t.Fatal(err)
	}
	if code := r.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
		t.Fatalf("ApiVersions error %v", kerr.ErrorForCode(code))
	}
	// Metadata v0 (classic header) and v12 (flexible header with tags) both decode.
	for _, v := range []int16{0, 12} {
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(v)
		topic := kmsg.NewMetadataRequestTopic()
		topic.Topic = kmsg.StringPtr("t")
		md.Topics = append(md.Topics, topic)
		r, err := conn.Request(ctx, md)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		resp := r.(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: topics %+v", v, resp.Topics)
		}
	}
}

func TestProduceAcksZeroHasNoResponse(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := Dial(ctx, nil, c.ListenAddrs()[0], "wire-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	p := kmsg.NewPtrProduceRequest()
	p.SetVersion(7)
	p.Acks = 0
	resp, err := conn.Request(ctx, p)
	if err != nil || resp != nil {
		t.Fatalf("acks=0: resp %v err %v, want nil, nil", resp, err)
	}
	// The connection is still in step: the next request gets its own response.
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	if _, err := conn.Request(ctx, md); err != nil {
		t.Fatal(err)
	}
}

func TestCloseInterruptsLongPoll(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	conn, err := Dial(ctx, nil, c.ListenAddrs()[0], "wire-test")
	if err != nil {
		t.Fatal(err)
	}
	// A fetch on an empty partition that would wait 30 s.
	f := kmsg.NewPtrFetchRequest()
	f.SetVersion(4)
	f.MaxWaitMillis, f.MinBytes, f.MaxBytes = 30000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	done := make(chan error, 1)
	go func() { _, err := conn.Request(ctx, f); done <- err }()
	time.AfterFunc(200*time.Millisecond, func() { conn.Close() })
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("fetch returned no error after Close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not interrupt the long poll")
	}
	if _, err := conn.Request(ctx, kmsg.NewPtrMetadataRequest()); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

func TestContextCancelClosesConn(t *testing.T) {
	c := newCluster(t)
	conn, err := Dial(context.Background(), nil, c.ListenAddrs()[0], "wire-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	f := kmsg.NewPtrFetchRequest()
	f.SetVersion(4)
	f.MaxWaitMillis, f.MinBytes, f.MaxBytes = 30000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	f.Topics = append(f.Topics, ft)
	if _, err := conn.Request(ctx, f); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want deadline exceeded", err)
	}
	if _, err := conn.Request(context.Background(), kmsg.NewPtrMetadataRequest()); !errors.Is(err, ErrClosed) {
		t.Fatalf("after cancel: %v, want ErrClosed", err)
	}
}

// A request queued behind a long poll gives up when its context ends, without touching the
// connection: the long poll is still answered afterwards.
func TestWaitingForTurnHonoursContext(t *testing.T) {
	c := newCluster(t)
	conn, err := Dial(context.Background(), nil, c.ListenAddrs()[0], "wire-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	f := kmsg.NewPtrFetchRequest()
	f.SetVersion(4)
	f.MaxWaitMillis, f.MinBytes, f.MaxBytes = 1000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	f.Topics = append(f.Topics, ft)
	polled := make(chan error, 1)
	go func() { _, err := conn.Request(context.Background(), f); polled <- err }()
	for deadline := time.Now().Add(5 * time.Second); len(conn.turn) == 0; { // the fetch holds the turn
		if time.Now().After(deadline) {
			t.Fatal("the long poll never took the connection")
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := conn.Request(ctx, kmsg.NewPtrMetadataRequest()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued request: %v, want deadline exceeded", err)
	}
	if err := <-polled; err != nil {
		t.Fatalf("the long poll failed after the queued request gave up: %v", err)
	}
	if _, err := conn.Request(context.Background(), kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatalf("connection unusable afterwards: %v", err)
	}
}
