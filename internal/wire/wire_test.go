package wire

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
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

// A request made while a long poll is in flight is pipelined: it is written at once (not held
// until the poll is answered) and answered after it, in order; many concurrent requests each get
// their own response.
func TestPipelining(t *testing.T) {
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
	inFlight := func() int {
		conn.mu.Lock()
		defer conn.mu.Unlock()
		return len(conn.pending)
	}
	waitInFlight := func(n int, what string) {
		t.Helper()
		if err := testutil.Await(context.Background(), 5*time.Second, what, func() bool { return inFlight() == n }); err != nil {
			t.Fatalf("%v: %d requests in flight, want %d", err, inFlight(), n)
		}
	}
	done := make(chan error, 2)
	go func() { _, err := conn.Request(context.Background(), f); done <- err }()
	waitInFlight(1, "the long poll written")
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	go func() { _, err := conn.Request(context.Background(), md); done <- err }()
	// The fetch waits 1 s at the broker: the metadata request is on the wire behind it meanwhile.
	waitInFlight(2, "metadata written while the long poll is unanswered")
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}

	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(v int16) {
			defer wg.Done()
			md := kmsg.NewPtrMetadataRequest()
			md.SetVersion(v)
			r, err := conn.Request(context.Background(), md)
			if err != nil {
				t.Error(err)
				return
			}
			if got := r.GetVersion(); got != v {
				t.Errorf("request v%d got a v%d response", v, got)
			}
		}(int16(i % 10))
	}
	wg.Wait()
}

// Ordered requests have their answers handled in wire order: the second request's answer, in while
// the first's handle still runs, waits (queued is called) and is handled after it; a request on a
// closed connection is handled at once with the error, and the order goes on past failed ones.
func TestOrderedHandlesInWireOrder(t *testing.T) {
	c := newCluster(t)
	conn, err := Dial(context.Background(), nil, c.ListenAddrs()[0], "wire-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	md := func(v int16) *kmsg.MetadataRequest {
		r := kmsg.NewPtrMetadataRequest()
		r.SetVersion(v)
		return r
	}
	var mu sync.Mutex
	var order []int16
	handled := func(v int16) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, v)
	}
	inFirst, releaseFirst, secondQueued := make(chan struct{}), make(chan struct{}), make(chan struct{})
	done := make(chan struct{}, 2)
	go func() {
		conn.Ordered(context.Background(), md(1), func(r kmsg.Response, err error) {
			close(inFirst)
			<-releaseFirst
			if err != nil || r.GetVersion() != 1 {
				t.Errorf("first: %v, %v", r, err)
			}
			handled(1)
		}, nil)
		done <- struct{}{}
	}()
	<-inFirst
	go func() {
		conn.Ordered(context.Background(), md(2), func(r kmsg.Response, err error) {
			if err != nil || r.GetVersion() != 2 {
				t.Errorf("second: %v, %v", r, err)
			}
			handled(2)
		}, func() { close(secondQueued) })
		done <- struct{}{}
	}()
	select {
	case <-secondQueued:
	case <-time.After(10 * time.Second):
		t.Fatal("the second answer did not wait for the first's handle")
	}
	close(releaseFirst)
	<-done
	<-done
	if len(order) != 2 || order[0] != 1 || order[1] != 2 {
		t.Fatalf("handled in order %v, want [1 2]", order)
	}

	// A request whose context is done, or on a closed connection, is never written: handled at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var got error
	conn.Ordered(ctx, md(1), func(_ kmsg.Response, err error) { got = err }, nil)
	if !errors.Is(got, context.Canceled) {
		t.Fatalf("Ordered with a done context: %v, want context.Canceled", got)
	}
	_ = conn.Close()
	conn.Ordered(context.Background(), md(1), func(_ kmsg.Response, err error) { got = err }, nil)
	if !errors.Is(got, ErrClosed) {
		t.Fatalf("Ordered on a closed connection: %v, want ErrClosed", got)
	}
}
