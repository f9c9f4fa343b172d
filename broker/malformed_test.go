package broker_test

import (
	"encoding/binary"
	"errors"
	"io"
	"math/rand"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// frameOf encodes req (at version) as a client would send it, size prefix included.
func frameOf(req kmsg.Request, version int16, corr int32) []byte {
	req.SetVersion(version)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("malformed")).AppendRequest(nil, req, corr)
}

// closedByBroker reports whether the broker closed c within d (a read returns EOF or a reset).
func closedByBroker(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false
		}
		return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed)
	}
}

// readResponse reads one response frame from c and returns its body after the correlation id.
func readResponse(t *testing.T, c net.Conn, wantCorr int32) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("reading response size: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatalf("reading response: %v", err)
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != wantCorr {
		t.Fatalf("correlation id %d, want %d", corr, wantCorr)
	}
	return body[4:]
}

// TestMalformedInput: each kind of bad input gets the documented treatment on its own connection, the
// broker survives, and a separate client connection keeps answering Metadata after every case.
func TestMalformedInput(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, nil)
	createTopic(t, tb.addr(), "known", 2)
	good := dial(t, tb.addr())
	metadataOK := func(after string) {
		t.Helper()
		m := metadata(t, good, "known")
		if len(m.Brokers) != 1 || m.Brokers[0].NodeID != 1 || len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 || len(m.Topics[0].Partitions) != 2 {
			t.Fatalf("Metadata after %s: %+v", after, m)
		}
	}
	closed := func(reason string) float64 {
		return counterValue(t, tb.b, "kafka_network_connections_closed_total", map[string]string{"reason": reason})
	}
	metadataOK("start")

	t.Run("random bytes framed as a request", func(t *testing.T) {
		rng := rand.New(rand.NewSource(1))
		for i := 0; i < 20; i++ {
			body := make([]byte, 8+rng.Intn(200))
			rng.Read(body)
			binary.BigEndian.PutUint16(body[0:], uint16(1000+rng.Intn(30000))) // no such API key
			c := rawConn(t, tb.addr())
			c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
			c.Write(body)
			if !closedByBroker(c, 5*time.Second) {
				t.Fatalf("frame %d of random bytes: connection not closed", i)
			}
			c.Close()
		}
		metadataOK("random frames")
	})

	t.Run("random byte stream", func(t *testing.T) {
		rng := rand.New(rand.NewSource(2))
		for i := 0; i < 20; i++ {
			junk := make([]byte, 1+rng.Intn(512))
			rng.Read(junk)
			c := rawConn(t, tb.addr())
			c.Write(junk)
			// A size prefix that promises more than was sent leaves the broker waiting for the rest,
			// as Kafka does; either way the client closing must not disturb anyone.
			closedByBroker(c, 100*time.Millisecond)
			c.Close()
		}
		metadataOK("random streams")
	})

	t.Run("size above socket.request.max.bytes", func(t *testing.T) {
		before := closed("request_too_large")
		c := rawConn(t, tb.addr())
		c.Write(binary.BigEndian.AppendUint32(nil, 104857600+1))
		if !closedByBroker(c, 5*time.Second) {
			t.Fatal("oversized request: connection not closed")
		}
		c2 := rawConn(t, tb.addr())
		c2.Write([]byte{0xff, 0xff, 0xff, 0xff}) // negative size
		if !closedByBroker(c2, 5*time.Second) {
			t.Fatal("negative size: connection not closed")
		}
		if got := closed("request_too_large") - before; got != 2 {
			t.Fatalf("request_too_large closes: %v, want 2", got)
		}
		metadataOK("oversized request")
	})

	t.Run("unknown api key", func(t *testing.T) {
		before := closed("unknown_api_key")
		for _, frame := range [][]byte{
			{0, 0, 0, 10, 0x27, 0x0f, 0, 0, 0, 0, 0, 1, 0xff, 0xff}, // key 9999
			frameOf(kmsg.NewPtrAddPartitionsToTxnRequest(), 0, 1),   // known to Kafka, not served here
			frameOf(kmsg.NewPtrAlterReplicaLogDirsRequest(), 0, 2),  // admin API: not served
			frameOf(kmsg.NewPtrDescribeACLsRequest(), 0, 3),         // not implemented
		} {
			c := rawConn(t, tb.addr())
			c.Write(frame)
			if !closedByBroker(c, 5*time.Second) {
				t.Fatalf("frame %x: connection not closed", frame[:8])
			}
		}
		if got := closed("unknown_api_key") - before; got != 4 {
			t.Fatalf("unknown_api_key closes: %v, want 4", got)
		}
		metadataOK("unknown api key")
	})

	t.Run("unsupported version", func(t *testing.T) {
		before := closed("unsupported_version")
		for _, frame := range [][]byte{
			frameOf(kmsg.NewPtrMetadataRequest(), 13, 1),
			frameOf(kmsg.NewPtrProduceRequest(), 12, 2), // v0-v11 served (4.0's v12, KIP-890, not)
			frameOf(kmsg.NewPtrFetchRequest(), 13, 3),   // v0-v12 served (topic ids from v13 not)
		} {
			c := rawConn(t, tb.addr())
			c.Write(frame)
			if !closedByBroker(c, 5*time.Second) {
				t.Fatal("unsupported version: connection not closed")
			}
		}
		if got := closed("unsupported_version") - before; got != 3 {
			t.Fatalf("unsupported_version closes: %v, want 3", got)
		}
		// ApiVersions at a version from the future: answered (v0 format) with UNSUPPORTED_VERSION and
		// ApiVersions' range; the connection stays usable for a retry at v0.
		c := rawConn(t, tb.addr())
		c.Write(frameOf(kmsg.NewPtrApiVersionsRequest(), 42, 7))
		resp := kmsg.NewPtrApiVersionsResponse()
		if err := resp.ReadFrom(readResponse(t, c, 7)); err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MinVersion != 0 || resp.ApiKeys[0].MaxVersion != 4 {
			t.Fatalf("ApiVersions v42: %+v", resp)
		}
		c.Write(frameOf(kmsg.NewPtrApiVersionsRequest(), 0, 8))
		resp = kmsg.NewPtrApiVersionsResponse()
		if err := resp.ReadFrom(readResponse(t, c, 8)); err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 || len(resp.ApiKeys) != 33 { // 22 data/admin/inter-broker APIs (InitProducerId, OffsetForLeaderEpoch, the config APIs, AlterPartition, ControlledShutdown, LeaderAndIsr, UpdateMetadata and StopReplica among them) + 11 group APIs (OffsetDelete among them)
			t.Fatalf("ApiVersions v0 after the retry: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
		}
		metadataOK("unsupported version")
	})

	t.Run("truncated request", func(t *testing.T) {
		before := closed("malformed_request")
		m := kmsg.NewPtrMetadataRequest()
		m.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("known")}, {Topic: kmsg.StringPtr("other")}}
		full := frameOf(m, 4, 1)
		cut := full[4 : len(full)-6] // the body ends inside the second topic name
		c := rawConn(t, tb.addr())
		c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(cut))), cut...))
		if !closedByBroker(c, 5*time.Second) {
			t.Fatal("truncated request: connection not closed")
		}
		// A frame cut short by the client closing: nothing to answer, nothing to break.
		c2 := rawConn(t, tb.addr())
		c2.Write(full[:len(full)-6])
		c2.Close()
		if got := closed("malformed_request") - before; got != 1 {
			t.Fatalf("malformed_request closes: %v, want 1", got)
		}
		metadataOK("truncated request")
	})

	t.Run("unknown topic or partition", func(t *testing.T) {
		c := dial(t, tb.addr())
		pr := kmsg.NewPtrProduceRequest()
		pr.Acks, pr.TimeoutMillis = 1, 5000
		pr.Topics = []kmsg.ProduceRequestTopic{
			{Topic: "nope", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: make([]byte, 70)}}},
			{Topic: "known", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 7, Records: make([]byte, 70)}}},
		}
		presp := request[*kmsg.ProduceResponse](t, c, pr, 7)
		for _, tp := range presp.Topics {
			if got := tp.Partitions[0].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("produce %s/%d: %v", tp.Topic, tp.Partitions[0].Partition, kerr.ErrorForCode(got))
			}
		}
		f := kmsg.NewPtrFetchRequest()
		f.MaxWaitMillis, f.MinBytes, f.MaxBytes, f.SessionEpoch = 5000, 1, 1<<20, -1
		f.Topics = []kmsg.FetchRequestTopic{{Topic: "known", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 9, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}}
		start := time.Now()
		if got := request[*kmsg.FetchResponse](t, c, f, 12).Topics[0].Partitions[0].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("fetch known/9: %v", kerr.ErrorForCode(got))
		}
		if time.Since(start) > 2*time.Second {
			t.Fatal("fetch with an unknown partition waited for MaxWaitMillis instead of answering the error")
		}
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "nope", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1, CurrentLeaderEpoch: -1}}}}
		if got := request[*kmsg.ListOffsetsResponse](t, c, lo, 6).Topics[0].Partitions[0].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("list offsets nope/0: %v", kerr.ErrorForCode(got))
		}
		// Metadata without auto-creation: UNKNOWN_TOPIC_OR_PARTITION; an illegal name: INVALID_TOPIC_EXCEPTION.
		mr := kmsg.NewPtrMetadataRequest()
		mr.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("nope")}, {Topic: kmsg.StringPtr("bad/name")}}
		mresp := request[*kmsg.MetadataResponse](t, c, mr, 12)
		if mresp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || mresp.Topics[1].ErrorCode != kerr.InvalidTopicException.Code {
			t.Fatalf("metadata for unknown topics: %v, %v", kerr.ErrorForCode(mresp.Topics[0].ErrorCode), kerr.ErrorForCode(mresp.Topics[1].ErrorCode))
		}
		// Corrupt records for a partition this broker leads: CORRUPT_MESSAGE, nothing appended.
		pr.Topics = []kmsg.ProduceRequestTopic{{Topic: "known", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: make([]byte, 70)}}}}
		if got := request[*kmsg.ProduceResponse](t, c, pr, 7).Topics[0].Partitions[0].ErrorCode; got != kerr.CorruptMessage.Code {
			t.Fatalf("produce of zeroed bytes: %v", kerr.ErrorForCode(got))
		}
		metadataOK("unknown topic or partition")
	})

	t.Run("acks=0 produce error closes the connection", func(t *testing.T) {
		before := closed("acks0_produce_error")
		pr := kmsg.NewPtrProduceRequest()
		pr.Acks, pr.TimeoutMillis = 0, 5000
		pr.Topics = []kmsg.ProduceRequestTopic{{Topic: "nope", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: make([]byte, 70)}}}}
		c := rawConn(t, tb.addr())
		c.Write(frameOf(pr, 7, 1))
		if !closedByBroker(c, 5*time.Second) {
			t.Fatal("acks=0 produce to an unknown topic: connection not closed")
		}
		if got := closed("acks0_produce_error") - before; got != 1 {
			t.Fatalf("acks0_produce_error closes: %v, want 1", got)
		}
		metadataOK("acks=0 error")
	})
}
