package broker_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestStalledReaderLetsGoOfItsFetch: a client with a 64 KiB receive buffer asks for 24 MB of records
// and stops reading after the first bytes, so the broker's zero-copy send blocks. A response
// must go out within connections.max.idle.ms (1 s here), so the broker gives up the send, which held
// the segment file, closes the connection and counts it (reason response_not_read): the client then
// reads fewer bytes than the frame's size and the end of the stream. Before, the send blocked until the client read
// again and then completed the frame.
func TestStalledReaderLetsGoOfItsFetch(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, map[string]string{"connections.max.idle.ms": "1000"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()), kgo.DefaultProduceTopic("big"), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "big"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 240; i++ {
		value := make([]byte, 100_000) // random: the producer's compression leaves it 100 kB
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	c := rawConn(t, tb.addr())
	// A small receive buffer (no autotuning, which here may grow to 32 MB): the broker's send fills
	// the buffers and blocks.
	if err := c.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(frameOf(consumerFetch("big", 50<<20), 12, 1)); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatal(err)
	}
	frame := int64(binary.BigEndian.Uint32(size[:]))
	if frame < 24_000_000 {
		t.Fatalf("the answer is %d bytes: the test needs one larger than the sockets' buffers", frame)
	}
	testutil.WaitFor(t, 20*time.Second, "the broker closing the connection that does not read its response", func() bool {
		return counterValue(t, tb.b, "kafka_network_connections_closed_total", map[string]string{"reason": "response_not_read"}) == 1
	})
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	n, err := io.Copy(io.Discard, c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reading the rest: %v (want the end of the stream)", err)
	}
	if n >= frame {
		t.Fatalf("the client read %d bytes after the size: the whole %d-byte frame went out after the idle close", n, frame)
	}
}
