package broker

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzBroker is a broker without ZooKeeper or listener: the request path alone.
func fuzzBroker() *Broker {
	cfg := DefaultConfig()
	cfg.ZooKeeperConnect = "127.0.0.1:1"
	cfg.LogDirs = "/nonexistent-rebalancelab-fuzz"
	cfg.SocketRequestMaxBytes = 1 << 16
	log := logrus.New()
	log.SetOutput(io.Discard)
	return newBroker(cfg, logrus.NewEntry(log))
}

func frame(req kmsg.Request, version int16, corr int32) []byte {
	req.SetVersion(version)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	return f.AppendRequest(nil, req, corr)
}

// FuzzRequest feeds arbitrary bytes, as a client would send them (size-prefixed frames), into one
// connection of a broker and requires that the broker neither panics nor hangs: it answers or closes,
// and a broker shutdown ends whatever the connection still waits on.
func FuzzRequest(f *testing.F) {
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis = 100
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "t", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks = -1
	produce.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: make([]byte, 70)}}}}
	list := kmsg.NewPtrListOffsetsRequest()
	list.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Timestamp: -1}}}}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "t", NumPartitions: 1, ReplicationFactor: 1}}
	seeds := [][]byte{
		frame(kmsg.NewPtrApiVersionsRequest(), 0, 1),
		frame(kmsg.NewPtrApiVersionsRequest(), 3, 2),
		frame(kmsg.NewPtrApiVersionsRequest(), 9, 3),
		frame(meta, 1, 4),
		frame(meta, 12, 5),
		frame(fetch, 4, 6),
		frame(fetch, 12, 7),
		frame(produce, 3, 8),
		frame(produce, 9, 9),
		frame(list, 0, 10),
		frame(list, 6, 11),
		frame(create, 5, 12),
		frame(kmsg.NewPtrJoinGroupRequest(), 5, 13),
		{0, 0, 0, 2, 0xff, 0xff},
		{0xff, 0xff, 0xff, 0xff},
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Add(append(seeds[0], seeds[3]...))
	f.Fuzz(func(t *testing.T, in []byte) {
		b := fuzzBroker()
		defer b.cancel()
		server, client := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.serveConn(server)
		}()
		go io.Copy(io.Discard, client)
		client.SetWriteDeadline(time.Now().Add(time.Second))
		client.Write(in)
		client.Close()
		// A parked long poll (Fetch MaxWaitMillis) may keep a closed connection's handler busy, as in
		// Kafka; closing the broker must end it at once.
		select {
		case <-done:
		case <-time.After(200 * time.Millisecond):
			b.cancel()
			select {
			case <-done:
			case <-time.After(2 * time.Second):
				t.Fatalf("connection still served 2s after the broker closed; input %x", in)
			}
		}
	})
}

// TestHandleFrameHeader checks the header paths the fuzz target relies on, with exact outcomes.
func TestHandleFrameHeader(t *testing.T) {
	b := fuzzBroker()
	defer b.cancel()
	body := func(fr []byte) []byte { return fr[4:] }
	ctx := b.ctx

	// ApiVersions v9: answered in the v0 format with UNSUPPORTED_VERSION and ApiVersions' own range.
	out, _, err := b.handleFrame(ctx, body(frame(kmsg.NewPtrApiVersionsRequest(), 9, 77)), "127.0.0.1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(out[4:8])); corr != 77 {
		t.Fatalf("correlation id %d", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(out[8:]); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 35 || len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MinVersion != 0 || resp.ApiKeys[0].MaxVersion != 4 {
		t.Fatalf("ApiVersions v9 answer: %+v", resp)
	}
	// Unknown key, unsupported version, truncated body: errClose with the documented reason.
	for _, tc := range []struct {
		name   string
		frame  []byte
		reason string
	}{
		{"unknown key", []byte{0x27, 0x0f, 0, 0, 0, 0, 0, 1, 0xff, 0xff}, closeUnknownKey},
		{"add partitions to txn (not served)", body(frame(kmsg.NewPtrAddPartitionsToTxnRequest(), 0, 1)), closeUnknownKey},
		{"metadata v13", body(frame(kmsg.NewPtrMetadataRequest(), 13, 1)), closeBadVersion},
		{"produce v12", body(frame(kmsg.NewPtrProduceRequest(), 12, 1)), closeBadVersion},
		{"truncated metadata", body(frame(&kmsg.MetadataRequest{Topics: []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("abc")}}}, 1, 1))[:15], closeMalformed},
		{"short header", []byte{0, 3, 0}, closeMalformed},
	} {
		_, _, err := b.handleFrame(ctx, tc.frame, "127.0.0.1", nil)
		ec, ok := err.(*errClose)
		if !ok || ec.reason != tc.reason {
			t.Errorf("%s: %v, want close %q", tc.name, err, tc.reason)
		}
	}
}
