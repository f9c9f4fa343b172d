package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/poll"
)

// contextWithTimeout bounds a command by d on top of its own context (SIGINT/SIGTERM).
func contextWithTimeout(cmd *cobra.Command, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(cmd.Context())
	}
	return context.WithTimeout(cmd.Context(), d)
}

// defaultProduceTimeout is produce's --timeout default.
const defaultProduceTimeout = 30 * time.Second

// pingBroker asks the bootstrap brokers for metadata until one answers, timeout passes (0: no limit)
// or ctx ends; it returns nil or the last error a broker gave (a dial error, say), not the deadline's.
func pingBroker(ctx context.Context, cl *kgo.Client, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var last error
	every := poll.Backoff{First: 250 * time.Millisecond, Max: 250 * time.Millisecond}
	if every.UntilErr(ctx, 0, "a broker's answer", func() error {
		err := cl.Ping(ctx)
		if err != nil && (last == nil || ctx.Err() == nil) {
			last = err
		}
		return err
	}) != nil {
		return last
	}
	return nil
}

// produceValue is record i's value: the decimal sequence number, left-padded with zeros to size bytes
// when size is larger (so it still parses as the number).
func produceValue(i int64, size int) []byte {
	if size > 0 {
		return []byte(fmt.Sprintf("%0*d", size, i))
	}
	return []byte(fmt.Sprintf("%d", i))
}

// compressionCodecs maps Kafka's compression.type values to franz-go's codecs.
var compressionCodecs = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

// produceFlags are `rebalancelab produce`'s flags, as given; options converts them.
type produceFlags struct {
	bootstrap, topic string
	count            int64 // records to produce
	size             int   // value bytes (the sequence number zero-padded to it)
	timeout          time.Duration
	codec            string // --compression: Kafka's compression.type
}

// options converts the flags into the producer client's options: round-robin partitions, acks=all,
// one request in flight per broker, batches of at least --size plus headroom, compressed with
// --compression, records timed out after --timeout (0: never). Errors: --count below 1; a negative
// --size or --timeout; a --compression that is no Kafka codec.
func (f *produceFlags) options() ([]kgo.Opt, error) {
	if f.count < 1 {
		return nil, fmt.Errorf("--count %d: want at least 1 record", f.count)
	}
	if f.size < 0 {
		return nil, fmt.Errorf("--size %d: must not be negative", f.size)
	}
	if f.timeout < 0 {
		return nil, fmt.Errorf("--timeout %v: must not be negative (0: no limit)", f.timeout)
	}
	compression, ok := compressionCodecs[f.codec]
	if !ok {
		return nil, fmt.Errorf("--compression %s: want none, gzip, snappy, lz4 or zstd (Kafka's compression.type)", f.codec)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(f.bootstrap, ",")...),
		kgo.DefaultProduceTopic(f.topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxProduceRequestsInflightPerBroker(1),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchMaxBytes(max(1<<20, int32(f.size)+512)),
		// franz-go's default is snappy then none; Kafka's producer default is none, and
		// clients without a snappy codec cannot read snappy batches.
		kgo.ProducerBatchCompression(compression),
	}
	if f.timeout > 0 {
		// Java's delivery.timeout.ms: a record not acknowledged in time fails with kgo's last
		// error for it (e.g. "record delivery timeout, last err: LEADER_NOT_AVAILABLE").
		opts = append(opts, kgo.RecordDeliveryTimeout(f.timeout))
	}
	return opts, nil
}

// newProduceCmd builds `rebalancelab produce`: N records whose values are their sequence numbers.
func newProduceCmd() *cobra.Command {
	var f produceFlags
	cmd := &cobra.Command{
		Use:   "produce --bootstrap ADDR --topic T --count N [--size BYTES] [--compression none|gzip|snappy|lz4|zstd]",
		Short: "Produce N records whose values are their sequence numbers 0..N-1 (acks=all), then print a summary",
		Long: `Produces records without keys, dealt round-robin over the topic's partitions (record i goes to
partition i mod P), with acks=all and one request in flight per broker, so that each partition receives
its records in sequence order. Values are the decimal sequence number, left-padded with zeros to --size
bytes when --size is larger. Batches are uncompressed unless --compression names one of Kafka's codecs
(compression.type: none, the default as in Kafka's producer, gzip, snappy, lz4, zstd). The summary gives the count per partition and the offset range each got.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := f.options()
			if err != nil {
				return err
			}
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				return fmt.Errorf("--bootstrap %q: %w", f.bootstrap, err)
			}
			defer cl.Close()
			ctx := cmd.Context() // ends on SIGINT/SIGTERM; records are bounded by --timeout
			// kgo retries an unreachable broker silently until the records time out: find one first.
			if err := pingBroker(ctx, cl, f.timeout); err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("%w before any broker at --bootstrap %s answered (last error: %v)", errInterrupted, f.bootstrap, err)
				}
				return fmt.Errorf("no broker at --bootstrap %s answered within --timeout %v; last error: %w", f.bootstrap, f.timeout, err)
			}

			type span struct{ n, first, last int64 }
			var (
				mu       sync.Mutex
				parts    = map[int32]*span{}
				firstErr error
				wg       sync.WaitGroup
			)
			start := time.Now()
			for i := int64(0); i < f.count && ctx.Err() == nil; i++ {
				wg.Add(1)
				cl.Produce(ctx, &kgo.Record{Value: produceValue(i, f.size)}, func(r *kgo.Record, err error) {
					defer wg.Done()
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						if firstErr == nil {
							firstErr = err
						}
						return
					}
					s := parts[r.Partition]
					if s == nil {
						s = &span{first: r.Offset}
						parts[r.Partition] = s
					}
					s.n++
					s.first, s.last = min(s.first, r.Offset), max(s.last, r.Offset)
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			var ids []int32
			var total int64
			for p, s := range parts {
				ids = append(ids, p)
				total += s.n
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			fmt.Fprintf(os.Stdout, "produced %d of %d records to %s in %v (%.0f records/s)\n", total, f.count, f.topic, elapsed.Round(time.Millisecond), float64(total)/max(elapsed.Seconds(), 1e-9))
			for _, p := range ids {
				s := parts[p]
				fmt.Fprintf(os.Stdout, "  partition %d: %d records, offsets %d..%d\n", p, s.n, s.first, s.last)
			}
			if ctx.Err() != nil && total < f.count {
				return fmt.Errorf("%w after %d of %d records were acknowledged (bootstrap %s, topic %s)", errInterrupted, total, f.count, f.bootstrap, f.topic)
			}
			if firstErr != nil {
				return fmt.Errorf("%d of %d records not acknowledged (bootstrap %s, topic %s); first error: %w", f.count-total, f.count, f.bootstrap, f.topic, firstErr)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.bootstrap, "bootstrap", "", "broker host:port[,host:port] (required)")
	cmd.Flags().StringVar(&f.topic, "topic", "", "topic to produce to, auto-created by the broker if allowed (required)")
	cmd.Flags().Int64Var(&f.count, "count", 0, "number of records, at least 1 (required)")
	cmd.Flags().IntVar(&f.size, "size", 0, "value size in bytes (the sequence number is zero-padded to it)")
	cmd.Flags().StringVar(&f.codec, "compression", "none", "compression.type of the batches: none, gzip, snappy, lz4 or zstd")
	cmd.Flags().DurationVar(&f.timeout, "timeout", defaultProduceTimeout, "give up when no broker answers, or a record is not acknowledged, within this long (Java's delivery.timeout.ms; 0: no limit)")
	for _, f := range []string{"bootstrap", "topic", "count"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}
