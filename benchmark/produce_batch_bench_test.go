package benchmark

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

// BenchmarkProduceBatchBytes: one franz-go producer (acks=all, uncompressed 1 KiB records, 6
// partitions) writes 16 MB per operation to the lab's broker with batches of at most 16 KiB, 256 KiB
// and 1 MiB per partition (kgo.ProducerBatchMaxBytes; a produce request carries up to one batch per
// partition, so 1 MiB batches make requests over 1 MiB). MB/s is the figure: with frames read into
// one buffer sized from their length prefix and one write per append, large batches must be no
// slower than small ones.
func BenchmarkProduceBatchBytes(b *testing.B) {
	testutil.Needs(b, testutil.ZooKeeper)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := logrus.New()
	log.SetOutput(io.Discard)
	l, err := lab.Start(ctx, lab.Options{Log: logrus.NewEntry(log)})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const recordBytes, perOp = 1024, 16_000_000
	values := make([][]byte, 256)
	for i := range values {
		values[i] = make([]byte, recordBytes)
		_, _ = rand.Read(values[i])
	}
	calls := 0 // go test calls a sub-benchmark's function once per -count (and per probe): one topic each
	for _, batch := range []int32{16 << 10, 256 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("batch=%dKiB", batch>>10), func(b *testing.B) {
			calls++
			topic := fmt.Sprintf("produce-batch-%d-%d", batch, calls)
			cl, err := kgo.NewClient(kgo.SeedBrokers(l.Bootstrap()),
				kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
				kgo.ProducerBatchMaxBytes(batch), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
				kgo.MaxBufferedRecords(100_000), kgo.ProducerLinger(0))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			if resp, err := kadm.NewClient(cl).CreateTopic(ctx, 6, 1, nil, topic); err != nil || resp.Err != nil {
				b.Fatalf("create %s: %v %v", topic, err, resp.Err)
			}
			b.SetBytes(perOp)
			b.ReportAllocs()
			for b.Loop() {
				for i := 0; i < perOp/recordBytes; i++ {
					cl.Produce(ctx, &kgo.Record{Topic: topic, Value: values[i%len(values)]}, func(_ *kgo.Record, err error) {
						if err != nil {
							b.Error(err)
						}
					})
				}
				if err := cl.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
