package broker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/storage"
	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

// zeroCopyLog is a real on-disk log (the OS file system: its files have descriptors) holding batches
// of several sizes, and take, which gives a new slice of it each call, some below zeroCopyMinBytes
// (read into the frame) and some above (sent with sendfile), each released by the test's end unless
// appendFetchFrame or the test released it.
func zeroCopyLog(t testing.TB) (*storage.Log, func(i int) storage.Slice) {
	t.Helper()
	l, err := storage.Open(t.TempDir(), storage.Config{FS: storage.OS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for i := 0; i < 60; i++ {
		if _, err := l.Append(testBatch(i, 1+i%5, 10+i*97%3000)); err != nil {
			t.Fatal(err)
		}
	}
	specs := []struct {
		off int64
		max int32
	}{{0, 1000}, {3, 5000}, {17, 20000}, {40, 40000}, {70, 100000}, {5, 1 << 20}}
	take := func(i int) storage.Slice {
		sp := specs[i%len(specs)]
		s, err := l.SliceUpTo(sp.off, sp.max, math.MaxInt64)
		if err != nil || s.Size == 0 {
			t.Fatalf("SliceUpTo(%d, %d) = Size %d, %v", sp.off, sp.max, s.Size, err)
		}
		return s
	}
	var large int
	for i := range specs {
		s := take(i)
		if s.Size >= zeroCopyMinBytes {
			large++
		}
		s.Release()
	}
	if large < 2 || large == len(specs) {
		t.Fatalf("%d of %d slices at or above zeroCopyMinBytes: the test needs both kinds", large, len(specs))
	}
	return l, take
}

// testBatch is one uncompressed v2 batch of n records of size bytes each, tagged with seq.
func testBatch(seq, n, size int) []byte {
	var recs []byte
	for i := 0; i < n; i++ {
		recs = recordbatch.AppendRecord(recs, recordbatch.Record{OffsetDelta: int32(i), Value: bytes.Repeat([]byte{byte('a' + (seq+i)%26)}, size)})
	}
	h := recordbatch.Header{PartitionLeaderEpoch: -1, LastOffsetDelta: int32(n - 1), ProducerID: -1, ProducerEpoch: -1,
		BaseSequence: -1, NumRecords: int32(n)}
	return recordbatch.AppendBatch(nil, h, recs)
}

// tcpPair is both ends of a loopback TCP connection, closed at the test's end (a second Close is
// harmless).
func tcpPair(tb testing.TB) (server, client net.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		client.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// materialize puts each splice's bytes into buf at its position.
func materialize(t *testing.T, buf []byte, splices []splice) []byte {
	t.Helper()
	var out []byte
	prev := 0
	for _, sp := range splices {
		out = append(out, buf[prev:sp.at]...)
		var err error
		if out, err = sp.s.AppendTo(out); err != nil {
			t.Fatal(err)
		}
		prev = sp.at
	}
	return append(out, buf[prev:]...)
}

// TestFetchFrameMatchesKmsg: for every Fetch version this broker serves, random answers (records in
// slices, in memory, empty and null; aborted transactions null, empty or not; diverging epochs;
// errors) framed by appendFetchFrame, with the slices' bytes put in place, are byte for byte what
// kmsg's encoding of the same answer with the records in memory is.
func TestFetchFrameMatchesKmsg(t *testing.T) {
	_, take := zeroCopyLog(t)
	rng := rand.New(rand.NewSource(1))
	for v := int16(0); v <= 12; v++ {
		for round := 0; round < 50; round++ {
			resp := kmsg.NewPtrFetchResponse()
			resp.Version = v
			resp.ThrottleMillis, resp.ErrorCode, resp.SessionID = rng.Int31n(100), int16(rng.Intn(3)), rng.Int31()
			ans := &fetchAnswer{FetchResponse: resp}
			want := kmsg.NewPtrFetchResponse()
			*want = *resp
			want.Topics = nil
			for ti := 0; ti < 1+rng.Intn(3); ti++ {
				rt := kmsg.NewFetchResponseTopic()
				rt.Topic = string(rune('a'+ti)) + "-topic"
				for pi := 0; pi < rng.Intn(4); pi++ {
					rp := kmsg.NewFetchResponseTopicPartition()
					rp.Partition, rp.ErrorCode = int32(pi), int16(rng.Intn(2))
					rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = rng.Int63(), rng.Int63(), rng.Int63()
					rp.PreferredReadReplica = rng.Int31n(3) - 1
					switch rng.Intn(3) {
					case 1:
						rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
					case 2:
						rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 7, FirstOffset: 9}, {ProducerID: 8, FirstOffset: 10}}
					}
					if rng.Intn(3) == 0 {
						rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = rng.Int31n(5), rng.Int63n(1000)
					}
					var s storage.Slice
					switch rng.Intn(4) {
					case 0:
						s = take(rng.Intn(6))
					case 1:
						rp.RecordBatches = testBatch(pi, 2, 33)
					case 2:
						rp.RecordBatches = []byte{}
					}
					wp := rp
					if s.Size > 0 {
						b, err := s.AppendTo(nil)
						if err != nil {
							t.Fatal(err)
						}
						wp.RecordBatches = b
					}
					ans.slices = append(ans.slices, s)
					rt.Partitions = append(rt.Partitions, rp)
					wt := &want.Topics
					if len(*wt) == ti {
						nt := kmsg.NewFetchResponseTopic()
						nt.Topic = rt.Topic
						*wt = append(*wt, nt)
					}
					(*wt)[ti].Partitions = append((*wt)[ti].Partitions, wp)
				}
				resp.Topics = append(resp.Topics, rt)
				if len(want.Topics) == ti {
					nt := kmsg.NewFetchResponseTopic()
					nt.Topic = rt.Topic
					want.Topics = append(want.Topics, nt)
				}
			}
			if !zeroCopyEncodable(resp) {
				t.Fatalf("v%d: an answer of this broker's fields is not zero-copy encodable", v)
			}
			buf, splices, err := appendFetchFrame(nil, 42, ans)
			if err != nil {
				t.Fatal(err)
			}
			got := materialize(t, buf, splices)
			for _, sp := range splices {
				if sp.s.Size < zeroCopyMinBytes {
					t.Fatalf("a slice of %d bytes spliced, below zeroCopyMinBytes", sp.s.Size)
				}
				sp.s.Release()
			}
			exp := appendResponse(nil, 42, want)
			if !bytes.Equal(got, exp) {
				t.Fatalf("v%d round %d: appendFetchFrame gives %d bytes, kmsg %d; first difference at %d", v, round, len(got), len(exp), firstDiff(got, exp))
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestWriteFrameSendsSlices: writeFrame over a TCP connection (sendfile) and over a connection that
// is not a socket (net.Pipe: copied) delivers exactly the frame with the slices' bytes in place.
func TestWriteFrameSendsSlices(t *testing.T) {
	_, take := zeroCopyLog(t)
	buf := []byte("head-")
	var splices []splice
	for i := range 6 {
		s := take(i)
		t.Cleanup(s.Release)
		buf = append(buf, byte('0'+i))
		splices = append(splices, splice{at: len(buf), s: s})
	}
	buf = append(buf, "-tail"...)
	want := materialize(t, buf, splices)

	server, client := tcpPair(t)
	pa, pb := net.Pipe()
	defer pa.Close()
	defer pb.Close()
	for _, c := range []struct {
		name   string
		w, r   net.Conn
		socket bool
	}{{"tcp", server, client, true}, {"pipe", pa, pb, false}} {
		got := make(chan []byte, 1)
		go func() {
			b := make([]byte, len(want))
			_, err := io.ReadFull(c.r, b)
			if err != nil {
				b = nil
			}
			got <- b
		}()
		var scratch []byte
		n, err := writeFrame(c.w, buf, splices, &scratch)
		if err != nil || n != int64(len(want)) {
			t.Fatalf("%s: writeFrame = %d, %v; want %d bytes", c.name, n, err, len(want))
		}
		if b := <-got; !bytes.Equal(b, want) {
			t.Fatalf("%s: the reader got %d bytes differing from the frame", c.name, len(b))
		}
		if copied := len(scratch) > 0; copied == c.socket {
			t.Fatalf("%s: copied through scratch = %v, want %v (sendfile only on a socket)", c.name, copied, !c.socket)
		}
	}
}

// BenchmarkFetchAnswer writes one Fetch answer of 6 partitions to a TCP connection whose other end
// drains it, at 4 KiB to 1 MiB of records per partition: "copy" as the broker did before zero-copy
// (Log.Read copies the batches into a new buffer, kmsg encodes them into the frame, one write),
// "zerocopy" as it does now (SliceUpTo walks the batch headers; appendFetchFrame encodes the rest and
// reads slices below zeroCopyMinBytes into the frame's reused buffer; writeFrame sends the larger ones
// from the segment file with sendfile). B/op and allocs/op are per answer; MB/s counts record bytes.
func BenchmarkFetchAnswer(b *testing.B) {
	l, err := storage.Open(b.TempDir(), storage.Config{FS: storage.OS})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 6*64*4; i++ { // 6 MiB of 4 KiB batches of 1 KiB records
		if _, err := l.Append(testBatch(i, 4, 1000)); err != nil {
			b.Fatal(err)
		}
	}
	per := l.LogEndOffset() / 6
	server, client := tcpPair(b)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		io.Copy(io.Discard, client)
	}()
	answer := func(b *testing.B, maxBytes int32, inline bool) (*fetchAnswer, int64) {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 12
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "t"
		ans := &fetchAnswer{FetchResponse: resp}
		var n int64
		for p := range 6 {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = int32(p)
			rp.RecordBatches = []byte{}
			if inline {
				data, err := l.Read(int64(p)*per, maxBytes)
				if err != nil {
					b.Fatal(err)
				}
				rp.RecordBatches = data
				n += int64(len(data))
			} else {
				s, err := l.SliceUpTo(int64(p)*per, maxBytes, math.MaxInt64)
				if err != nil {
					b.Fatal(err)
				}
				ans.slices = append(ans.slices, s)
				n += s.Size
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		return ans, n
	}
	for _, size := range []int32{4 << 10, 16 << 10, 32 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("copy/%dKiB", size>>10), func(b *testing.B) {
			var out []byte
			_, n := answer(b, size, true)
			b.SetBytes(n)
			b.ReportAllocs()
			for b.Loop() {
				a, _ := answer(b, size, true)
				out = appendResponse(out[:0], 1, a.FetchResponse)
				if _, err := server.Write(out); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("zerocopy/%dKiB", size>>10), func(b *testing.B) {
			var out, scratch []byte
			a, n := answer(b, size, false)
			a.release()
			b.SetBytes(n)
			b.ReportAllocs()
			for b.Loop() {
				a, _ := answer(b, size, false)
				var splices []splice
				var err error
				out, splices, err = appendFetchFrame(out[:0], 1, a)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := writeFrame(server, out, splices, &scratch); err != nil {
					b.Fatal(err)
				}
				for _, sp := range splices {
					sp.s.Release()
				}
			}
		})
	}
	server.Close()
	<-drained
}

// TestWriteFrameRefusesATruncatedSlice: a slice whose segment was truncated and written again after
// it was taken (a follower truncating to its new leader while an answer is out) fails writeFrame with
// storage.ErrSliceTruncated, and the client never receives the whole frame: its last byte is held
// back until the check, whether the slice ends the frame or not.
func TestWriteFrameRefusesATruncatedSlice(t *testing.T) {
	for _, tail := range []string{"", "-tail"} {
		l, err := storage.Open(t.TempDir(), storage.Config{FS: storage.OS})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			if _, err := l.Append(testBatch(i, 4, 1000)); err != nil {
				t.Fatal(err)
			}
		}
		leo := l.LogEndOffset()
		s, err := l.SliceUpTo(leo-40, math.MaxInt32, math.MaxInt64)
		if err != nil || s.Size < zeroCopyMinBytes {
			t.Fatalf("SliceUpTo = Size %d, %v", s.Size, err)
		}
		if err := l.TruncateTo(leo - 40); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			if _, err := l.Append(testBatch(100+i, 4, 1000)); err != nil {
				t.Fatal(err)
			}
		}
		buf := []byte("head-")
		splices := []splice{{at: len(buf), s: s}}
		buf = append(buf, tail...)

		server, client := tcpPair(t)
		got := make(chan int, 1)
		go func() {
			b, _ := io.ReadAll(client)
			got <- len(b)
		}()
		var scratch []byte
		_, err = writeFrame(server, buf, splices, &scratch)
		server.Close()
		n := <-got
		s.Release()
		l.Close()
		if !errors.Is(err, storage.ErrSliceTruncated) {
			t.Fatalf("tail %q: writeFrame: %v, want storage.ErrSliceTruncated", tail, err)
		}
		if whole := int64(len(buf)) + s.Size; int64(n) >= whole {
			t.Fatalf("tail %q: the client received %d bytes, the whole frame (%d)", tail, n, whole)
		}
	}
}
