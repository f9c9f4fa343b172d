package broker_test

// Idempotent produce (KIP-98) on the real ZooKeeper and broker: InitProducerId, the producer-state
// checks of Produce, franz-go's default (idempotent) producer through connections cut after the
// append and before the answer, a retry across a broker restart, and librdkafka with
// enable.idempotence=true.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker"
	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
)

// createLedTopic creates topic with n partitions and waits until this broker leads each.
func createLedTopic(t *testing.T, tb *testBroker, topic string, n int32) {
	t.Helper()
	createTopic(t, tb.addr(), topic, n)
	waitLocalLogs(t, tb, topic, n)
}

func waitLocalLogs(t *testing.T, tb *testBroker, topic string, n int32) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, topic+" led", func() bool {
		for p := int32(0); p < n; p++ {
			if _, err := tb.b.PartitionLog(topic, p); err != nil {
				return false
			}
		}
		return true
	})
}

// idemBatch is a v2 batch of producer pid/epoch: one record per value, sequences from seq.
func idemBatch(pid int64, epoch int16, seq int32, vals ...string) []byte {
	var recs []byte
	for i, v := range vals {
		recs = recordbatch.AppendRecord(recs, recordbatch.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Value: []byte(v)})
	}
	now := time.Now().UnixMilli()
	return recordbatch.AppendBatch(nil, recordbatch.Header{
		PartitionLeaderEpoch: -1, LastOffsetDelta: int32(len(vals) - 1), BaseTimestamp: now, MaxTimestamp: now + int64(len(vals)-1),
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, NumRecords: int32(len(vals)),
	}, recs)
}

// produceRaw sends one batch to topic/0 with Produce v9, acks=-1, and returns the partition's answer.
func produceRaw(t *testing.T, c *wire.Conn, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.ProduceResponse](t, c, req, 9)
	return resp.Topics[0].Partitions[0]
}

func initProducerID(t *testing.T, c *wire.Conn, version int16, txnID *string, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = txnID, 60000, pid, epoch
	return request[*kmsg.InitProducerIDResponse](t, c, req, version)
}

// TestInitProducerIDAndRetryAcrossRestart: InitProducerId hands out ids from a block claimed in
// /latest_producer_id_block (0-999, then 1000-1999 after a restart, as Kafka's ZkProducerIdManager
// claims one per incarnation), a re-init with the producer's id and epoch gets a new id with epoch 0
// (3.9 for a null transactional id), and bad id/epoch pairs are INVALID_REQUEST. A batch appended
// before a broker restart and retried after it is answered with its original offset and not written
// again (the producer state rebuilt from the log); a gap is OUT_OF_ORDER_SEQUENCE_NUMBER and an older
// epoch INVALID_PRODUCER_EPOCH, neither written.
func TestInitProducerIDAndRetryAcrossRestart(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, nil)
	createLedTopic(t, tb, "idem", 1)
	c := dial(t, tb.addr())

	for v := int16(0); v <= 5; v++ {
		r := initProducerID(t, c, v, nil, -1, -1)
		if r.ErrorCode != 0 || r.ProducerID != int64(v) || r.ProducerEpoch != 0 {
			t.Fatalf("InitProducerId v%d: error %d id %d epoch %d, want id %d epoch 0", v, r.ErrorCode, r.ProducerID, r.ProducerEpoch, v)
		}
	}
	if r := initProducerID(t, c, 4, nil, 3, 0); r.ErrorCode != 0 || r.ProducerID != 6 || r.ProducerEpoch != 0 {
		t.Fatalf("re-init of producer 3 epoch 0: error %d id %d epoch %d, want a new id 6 with epoch 0", r.ErrorCode, r.ProducerID, r.ProducerEpoch)
	}
	for _, bad := range []struct {
		pid   int64
		epoch int16
	}{{3, -1}, {-1, 0}} {
		if r := initProducerID(t, c, 5, nil, bad.pid, bad.epoch); r.ErrorCode != kerr.InvalidRequest.Code || r.ProducerID != -1 || r.ProducerEpoch != -1 {
			t.Fatalf("id %d epoch %d: error %d id %d epoch %d, want INVALID_REQUEST -1 -1", bad.pid, bad.epoch, r.ErrorCode, r.ProducerID, r.ProducerEpoch)
		}
	}
	if r := initProducerID(t, c, 5, kmsg.StringPtr(""), -1, -1); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("empty transactional id: error %d, want INVALID_REQUEST", r.ErrorCode)
	}
	zc := zkClient(t, z.Connect())
	data, _, err := zc.Get("/latest_producer_id_block")
	if err != nil {
		t.Fatal(err)
	}
	var block map[string]any
	if err := json.Unmarshal(data, &block); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(block) != "map[block_end:999 block_start:0 broker:1 version:1]" {
		t.Fatalf("/latest_producer_id_block = %s", data)
	}

	const pid = 0
	for i, vals := range [][]string{{"a0", "a1"}, {"b0"}, {"c0", "c1", "c2"}} {
		seq := []int32{0, 2, 3}[i]
		if r := produceRaw(t, c, "idem", idemBatch(pid, 0, seq, vals...)); r.ErrorCode != 0 || r.BaseOffset != []int64{0, 2, 3}[i] {
			t.Fatalf("batch %d: error %d base %d", i, r.ErrorCode, r.BaseOffset)
		}
	}
	retry := idemBatch(pid, 0, 2, "b0")
	check := func(when string) {
		t.Helper()
		r := produceRaw(t, c, "idem", retry)
		if r.ErrorCode != 0 || r.BaseOffset != 2 || r.LogAppendTime < 0 {
			t.Fatalf("%s: retry of the batch at offset 2: error %d base %d log append time %d; want the duplicate: 0, 2, its timestamp",
				when, r.ErrorCode, r.BaseOffset, r.LogAppendTime)
		}
		if r := produceRaw(t, c, "idem", idemBatch(pid, 0, 7, "gap")); r.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
			t.Fatalf("%s: sequence 7 after 5: error %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", when, r.ErrorCode)
		}
		log, err := tb.b.PartitionLog("idem", 0)
		if err != nil {
			t.Fatal(err)
		}
		if hw := log.HighWatermark(); hw != 6 {
			t.Fatalf("%s: high watermark %d, want 6: a retry or a refused batch was written", when, hw)
		}
	}
	check("before the restart")
	tb.stop()
	tb.start()
	c = dial(t, tb.addr())
	waitLocalLogs(t, tb, "idem", 1)
	check("after the restart")
	if r := produceRaw(t, c, "idem", idemBatch(pid, 1, 0, "d0")); r.ErrorCode != 0 || r.BaseOffset != 6 {
		t.Fatalf("epoch bump to 1 at sequence 0: error %d base %d, want 0, 6", r.ErrorCode, r.BaseOffset)
	}
	if r := produceRaw(t, c, "idem", idemBatch(pid, 0, 6, "old")); r.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("epoch 0 after 1: error %d, want INVALID_PRODUCER_EPOCH", r.ErrorCode)
	}
	if r := initProducerID(t, c, 5, nil, -1, -1); r.ErrorCode != 0 || r.ProducerID != 1000 {
		t.Fatalf("InitProducerId after the restart: error %d id %d, want 1000 (the next block)", r.ErrorCode, r.ProducerID)
	}
}

// TestIdempotentProduceThroughCutConnections: franz-go's default producer (idempotent) writes 6,000
// records to 3 partitions, in waves of 15, while the broker cuts the connection of every 5th Produce it answers
// successfully, after appending and before writing the answer (WithProduceResponseHook). The client
// retries the batches it got no answer for; every retried partition is answered as a duplicate (the
// original offset, not written again). Read back: each record exactly once, each partition in the
// order produced, and each partition's high watermark equal to its record count.
func TestIdempotentProduceThroughCutConnections(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	const (
		topic      = "idem-cut"
		partitions = 3
		n          = 6000
		maxCuts    = 12
	)
	var (
		answered, cuts atomic.Int32
		mu             sync.Mutex
		cutBatches     = map[string]bool{} // "partition/base offset" of the answers cut
		duplicates     = map[string]bool{} // the same, answered as duplicates (log append time set)
	)
	hook := func(resp *kmsg.ProduceResponse) bool {
		var ok []string
		for _, rt := range resp.Topics {
			if rt.Topic != topic {
				return false
			}
			for _, rp := range rt.Partitions {
				key := fmt.Sprintf("%d/%d", rp.Partition, rp.BaseOffset)
				if rp.ErrorCode != 0 {
					return false
				}
				if rp.LogAppendTime >= 0 {
					mu.Lock()
					duplicates[key] = true
					mu.Unlock()
					continue
				}
				ok = append(ok, key)
			}
		}
		if len(ok) == 0 || answered.Add(1)%5 != 0 || cuts.Load() >= maxCuts {
			return false
		}
		cuts.Add(1)
		mu.Lock()
		for _, k := range ok {
			cutBatches[k] = true
		}
		mu.Unlock()
		return true
	}
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, nil, broker.WithProduceResponseHook(hook))
	createLedTopic(t, tb, topic, partitions)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0), kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	// In waves of 15 records (5 per partition), so that the records go in some 400 requests.
	const wave = 15
	for i := 0; i < n; i += wave {
		var recs []*kgo.Record
		for j := i; j < i+wave; j++ {
			recs = append(recs, &kgo.Record{Partition: int32(j % partitions), Value: []byte(fmt.Sprintf("%05d", j))})
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("records %d-%d: %v", i, i+wave-1, err)
		}
	}
	if cuts.Load() != maxCuts {
		t.Fatalf("%d connections cut, want %d: too few produce requests", cuts.Load(), maxCuts)
	}
	mu.Lock()
	for k := range cutBatches {
		if !duplicates[k] {
			t.Errorf("batch %s: its answer was cut, and its retry was not answered as the duplicate", k)
		}
	}
	t.Logf("%d cuts, %d cut partition answers, %d duplicates answered", cuts.Load(), len(cutBatches), len(duplicates))
	mu.Unlock()

	cons, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := map[int32][]string{}
	total := 0
	for total < n && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachError(func(_ string, p int32, err error) {
			if ctx.Err() == nil {
				t.Fatalf("fetch partition %d: %v", p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			total++
		})
	}
	for p := int32(0); p < partitions; p++ {
		var want []string
		for i := int(p); i < n; i += partitions {
			want = append(want, fmt.Sprintf("%05d", i))
		}
		if strings.Join(got[p], ",") != strings.Join(want, ",") {
			t.Fatalf("partition %d: %d records, want %d in produce order (first %v)", p, len(got[p]), len(want), got[p][:min(5, len(got[p]))])
		}
		log, err := tb.b.PartitionLog(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		if hw := log.HighWatermark(); hw != int64(len(want)) {
			t.Fatalf("partition %d: high watermark %d, want %d: duplicates were written", p, hw, len(want))
		}
	}
}

// TestKcatIdempotentProduce: librdkafka (kcat) with enable.idempotence=true produces 2,000 messages
// to 4 partitions; kcat reads back exactly 2,000, each once, and every stored batch carries a
// producer id (the producer really was idempotent).
func TestKcatIdempotentProduce(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kcat)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, nil)
	const (
		topic = "kcat-idem"
		n     = 2000
	)
	createLedTopic(t, tb, topic, 4)
	var in bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "msg-%04d\n", i)
	}
	runKcat(t, in.Bytes(), "-b", tb.addr(), "-P", "-t", topic, "-X", "enable.idempotence=true")
	out := runKcat(t, nil, "-b", tb.addr(), "-C", "-t", topic, "-e", "-q", "-f", "%s\n")
	got := strings.Fields(out)
	seen := make(map[string]int, n)
	for _, m := range got {
		seen[m]++
	}
	for i := 0; i < n; i++ {
		if m := fmt.Sprintf("msg-%04d", i); seen[m] != 1 {
			t.Fatalf("message %s read %d times", m, seen[m])
		}
	}
	if len(got) != n {
		t.Fatalf("kcat -C read %d messages, want %d", len(got), n)
	}
	var records int64
	pids := map[int64]bool{}
	for p := int32(0); p < 4; p++ {
		log, err := tb.b.PartitionLog(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		for off := log.LogStartOffset(); off < log.HighWatermark(); {
			data, err := log.Read(off, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			for len(data) > 0 {
				b, err := recordbatch.Read(data)
				if err != nil {
					t.Fatal(err)
				}
				if b.ProducerID < 0 || b.BaseSequence < 0 {
					t.Fatalf("partition %d offset %d: producer id %d sequence %d, want an idempotent batch", p, b.BaseOffset, b.ProducerID, b.BaseSequence)
				}
				pids[b.ProducerID] = true
				records += int64(b.NumRecords)
				off = b.LastOffset() + 1
				data = data[b.Size():]
			}
		}
	}
	if records != n || len(pids) != 1 {
		t.Fatalf("%d records stored by %d producer ids, want %d by 1", records, len(pids), n)
	}
}
