// Package benchmark measures rebalancelab against peers measured in the same run: produce/fetch
// throughput of the broker (against Kafka 3.9 and franz-go's kfake) and rebalance storms per era.
package benchmark

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ThroughputOptions shapes one target's throughput measurement.
type ThroughputOptions struct {
	Topic       string // created by the caller, Partitions partitions
	Partitions  int32
	RecordBytes int // value size in bytes (uncompressed random bytes, no key)
}

// ThroughputResult is one target's figures over one produce window and the fetch window after it,
// for one record size. Rates are per second of the window's wall time.
type ThroughputResult struct {
	Target             string  `json:"target"` // "rebalancelab", "kafka" or "kfake"
	RecordBytes        int     `json:"record_bytes"`
	Window             int     `json:"window"`           // 0-based, per target and size
	ProducedRecords    int     `json:"produced_records"` // acknowledged in the produce window
	ProduceSeconds     float64 `json:"produce_s"`        // first Produce to the last acknowledgement
	FetchedRecords     int     `json:"fetched_records"`
	FetchSeconds       float64 `json:"fetch_s"`
	ProduceMBps        float64 `json:"produce_mb_per_s"` // MB = 10^6 bytes of record values
	ProduceRecordsPerS float64 `json:"produce_records_per_s"`
	FetchMBps          float64 `json:"fetch_mb_per_s"`
	FetchRecordsPerS   float64 `json:"fetch_records_per_s"`
}

// ThroughputClients are one target's producer and direct consumer, started (and warmed by the
// caller) before any window opens, so that no window holds a client's start-up.
type ThroughputClients struct {
	target string
	o      ThroughputOptions
	prod   *kgo.Client
	cons   *kgo.Client
	values [][]byte

	mu    sync.Mutex
	ends  []int64 // per partition: the offset after the last acknowledged record
	acked int     // records acknowledged over every Produce call

	next    []int64 // per partition: the offset the consumer must return next
	fetched int     // records fetched over every Fetch call
	rereads int     // seeks back to offset 0 over every Fetch call
}

// OpenThroughput starts the producer (acks=all, idempotent as franz-go is by default, uncompressed,
// round-robin over the partitions) and the direct (group-less) consumer of o.Topic on bootstrap
// (host:port[,host:port...]), and draws the random values (a pool of 1,024 distinct ones). Nothing is
// produced yet.
func OpenThroughput(target, bootstrap string, o ThroughputOptions) (*ThroughputClients, error) {
	if o.Partitions < 1 || o.RecordBytes < 1 {
		return nil, fmt.Errorf("%s: throughput needs at least one partition and one byte per record (got %d, %d)", target, o.Partitions, o.RecordBytes)
	}
	c := &ThroughputClients{target: target, o: o, ends: make([]int64, o.Partitions), next: make([]int64, o.Partitions)}
	var err error
	c.prod, err = kgo.NewClient(
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.MaxBufferedRecords(100_000),
		kgo.MaxBufferedBytes(32<<20), // the Java producer's buffer.memory default
	)
	if err != nil {
		return nil, err
	}
	parts := make(map[int32]kgo.Offset, o.Partitions)
	for p := int32(0); p < o.Partitions; p++ {
		parts[p] = kgo.NewOffset().AtStart()
	}
	c.cons, err = kgo.NewClient(
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.Topic: parts}),
		kgo.FetchMaxBytes(50<<20),
	)
	if err != nil {
		c.prod.Close()
		return nil, err
	}
	const pool = 1024
	c.values = make([][]byte, pool)
	for i := range c.values {
		c.values[i] = make([]byte, o.RecordBytes)
		_, _ = rand.Read(c.values[i])
	}
	return c, nil
}

// Close closes both clients.
func (c *ThroughputClients) Close() {
	c.prod.Close()
	c.cons.Close()
}

// Produce produces records for d (Produce blocks while the client holds its maximum of buffered
// records), then waits for every acknowledgement. The window runs from the first Produce to the last
// acknowledgement (so it is somewhat longer than d). Errors: a failed produce, or ctx's.
func (c *ThroughputClients) Produce(ctx context.Context, d time.Duration) (records int, elapsed time.Duration, err error) {
	var failed atomic.Value
	var acked atomic.Int64
	start := time.Now()
	deadline := start.Add(d)
	for i := 0; time.Now().Before(deadline); i++ {
		c.prod.Produce(ctx, &kgo.Record{Topic: c.o.Topic, Value: c.values[i%len(c.values)]}, func(r *kgo.Record, err error) {
			if err == nil && int(r.Partition) >= len(c.ends) {
				err = fmt.Errorf("partition %d: the topic has more partitions than the %d given", r.Partition, len(c.ends))
			}
			if err != nil {
				failed.CompareAndSwap(nil, err)
				return
			}
			acked.Add(1)
			c.mu.Lock()
			if end := r.Offset + 1; end > c.ends[r.Partition] {
				c.ends[r.Partition] = end
			}
			c.mu.Unlock()
		})
		if ctx.Err() != nil {
			break
		}
	}
	if err := c.prod.Flush(ctx); err != nil {
		return 0, 0, fmt.Errorf("%s: flush: %w", c.target, err)
	}
	elapsed = time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		return 0, 0, fmt.Errorf("%s: produce: %w", c.target, err)
	}
	c.mu.Lock()
	c.acked += int(acked.Load())
	c.mu.Unlock()
	return int(acked.Load()), elapsed, nil
}

// Fetch consumes for d from where the previous Fetch stopped (the earliest offset the first time),
// and when every partition has been read up to the offset after its last acknowledged record, seeks
// them all back to offset 0 (the records are read again: the window never waits on an empty log).
// Every record must be the next offset of its partition (from 0 after a seek) with a value of
// RecordBytes bytes. It returns the records fetched and the window's length (somewhat longer than d:
// it ends after the poll that crossed d). The consumer may hold one fetch response per broker from
// before the window (franz-go buffers one; at most 1 MiB per partition), counted in the window: a few
// MB against the hundreds a window of seconds reads. Errors: a fetch error, a record out of order or of the
// wrong size, nothing produced yet, or ctx's.
func (c *ThroughputClients) Fetch(ctx context.Context, d time.Duration) (records int, elapsed time.Duration, err error) {
	c.mu.Lock()
	ends := append([]int64(nil), c.ends...)
	c.mu.Unlock()
	total := int64(0)
	for _, e := range ends {
		total += e
	}
	if total == 0 {
		return 0, 0, fmt.Errorf("%s: fetch: nothing produced to %s yet", c.target, c.o.Topic)
	}
	start := time.Now()
	deadline := start.Add(d)
	for time.Now().Before(deadline) {
		pctx, cancel := context.WithDeadline(ctx, deadline.Add(time.Second))
		fs := c.cons.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return 0, 0, fmt.Errorf("%s: fetched %d records: %w", c.target, records, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr = fmt.Errorf("%s: fetch %s[%d]: %w", c.target, t, p, err)
			}
		})
		if ferr != nil {
			return 0, 0, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			switch {
			case ferr != nil:
			case int(r.Partition) >= len(c.next):
				ferr = fmt.Errorf("%s: fetch %s[%d]: the topic has more partitions than the %d given", c.target, r.Topic, r.Partition, len(c.next))
			case r.Offset != c.next[r.Partition]:
				ferr = fmt.Errorf("%s: fetch %s[%d]: offset %d, want %d", c.target, r.Topic, r.Partition, r.Offset, c.next[r.Partition])
			case len(r.Value) != c.o.RecordBytes:
				ferr = fmt.Errorf("%s: fetch %s[%d] offset %d: %d bytes, produced %d", c.target, r.Topic, r.Partition, r.Offset, len(r.Value), c.o.RecordBytes)
			default:
				c.next[r.Partition]++
				records++
			}
		})
		if ferr != nil {
			return 0, 0, ferr
		}
		if slices.Equal(c.next, ends) {
			seek := make(map[int32]kgo.EpochOffset, len(c.next))
			for p := range c.next {
				seek[int32(p)] = kgo.EpochOffset{Epoch: -1, Offset: 0}
				c.next[p] = 0
			}
			c.cons.SetOffsets(map[string]map[int32]kgo.EpochOffset{c.o.Topic: seek})
			c.rereads++
		}
	}
	elapsed = time.Since(start)
	c.fetched += records
	return records, elapsed, nil
}

// Verify checks that the target holds every acknowledged record: each partition's end offset (a
// ListOffsets of the latest offset) equals the offset after its last acknowledged record, and the
// acknowledgements counted add up to the sum of the end offsets.
func (c *ThroughputClients) Verify(ctx context.Context) error {
	ends, err := kadm.NewClient(c.prod).ListEndOffsets(ctx, c.o.Topic)
	if err != nil {
		return fmt.Errorf("%s: list end offsets: %w", c.target, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := int64(0)
	for p := int32(0); p < c.o.Partitions; p++ {
		lo, ok := ends.Lookup(c.o.Topic, p)
		if !ok || lo.Err != nil {
			return fmt.Errorf("%s: end offset of %s[%d]: %v", c.target, c.o.Topic, p, lo.Err)
		}
		if lo.Offset != c.ends[p] {
			return fmt.Errorf("%s: %s[%d] ends at %d, the last acknowledged record was at %d", c.target, c.o.Topic, p, lo.Offset, c.ends[p]-1)
		}
		sum += lo.Offset
	}
	if sum != int64(c.acked) {
		return fmt.Errorf("%s: %d records acknowledged, the partitions hold %d", c.target, c.acked, sum)
	}
	return nil
}

// Window measures one produce window of d, then one fetch window of d, and returns their figures.
func (c *ThroughputClients) Window(ctx context.Context, window int, d time.Duration) (ThroughputResult, error) {
	res := ThroughputResult{Target: c.target, RecordBytes: c.o.RecordBytes, Window: window}
	n, el, err := c.Produce(ctx, d)
	if err != nil {
		return res, err
	}
	res.ProducedRecords, res.ProduceSeconds = n, el.Seconds()
	res.ProduceRecordsPerS = float64(n) / el.Seconds()
	res.ProduceMBps = float64(n*c.o.RecordBytes) / 1e6 / el.Seconds()
	n, el, err = c.Fetch(ctx, d)
	if err != nil {
		return res, err
	}
	res.FetchedRecords, res.FetchSeconds = n, el.Seconds()
	res.FetchRecordsPerS = float64(n) / el.Seconds()
	res.FetchMBps = float64(n*c.o.RecordBytes) / 1e6 / el.Seconds()
	return res, nil
}

// Spread is a figure over repeated runs: the median and the extremes, and for `go test` output the
// median's 95% confidence interval (benchstat's; Lo and Hi zero where not computed or infinite).
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Lo     float64 `json:"lo,omitempty"`
	Hi     float64 `json:"hi,omitempty"`
}

// ThroughputSummary is one target's figures for one record size over all its runs.
type ThroughputSummary struct {
	Target             string `json:"target"`
	RecordBytes        int    `json:"record_bytes"`
	Runs               int    `json:"runs"`
	ProduceMBps        Spread `json:"produce_mb_per_s"`
	ProduceRecordsPerS Spread `json:"produce_records_per_s"`
	FetchMBps          Spread `json:"fetch_mb_per_s"`
	FetchRecordsPerS   Spread `json:"fetch_records_per_s"`
}

// SummarizeThroughput groups results by (record size, target), in first-seen order, and gives each
// figure's median and min-max over the runs.
func SummarizeThroughput(results []ThroughputResult) []ThroughputSummary {
	type key struct {
		size   int
		target string
	}
	var order []key
	groups := map[key][]ThroughputResult{}
	for _, r := range results {
		k := key{r.RecordBytes, r.Target}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	spread := func(rs []ThroughputResult, f func(ThroughputResult) float64) Spread {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		m := v[len(v)/2]
		if len(v)%2 == 0 {
			m = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		return Spread{Median: m, Min: v[0], Max: v[len(v)-1]}
	}
	out := make([]ThroughputSummary, 0, len(order))
	for _, k := range order {
		rs := groups[k]
		out = append(out, ThroughputSummary{
			Target: k.target, RecordBytes: k.size, Runs: len(rs),
			ProduceMBps:        spread(rs, func(r ThroughputResult) float64 { return r.ProduceMBps }),
			ProduceRecordsPerS: spread(rs, func(r ThroughputResult) float64 { return r.ProduceRecordsPerS }),
			FetchMBps:          spread(rs, func(r ThroughputResult) float64 { return r.FetchMBps }),
			FetchRecordsPerS:   spread(rs, func(r ThroughputResult) float64 { return r.FetchRecordsPerS }),
		})
	}
	return out
}

// OursTarget is the target name of this project's broker in throughput results; the ratios of
// WriteThroughputTable are its medians over each other target's.
const OursTarget = "rebalancelab"

// WriteThroughputTable writes the medians per record size and target with their min-max spread, and
// after each size the ratios of OursTarget's medians to each peer's (above 1: OursTarget is faster);
// markdown selects a Markdown table (the performance page's), else aligned columns.
func WriteThroughputTable(w io.Writer, sum []ThroughputSummary, markdown bool) error {
	head := []string{"record bytes", "target", "produce MB/s (min-max)", "produce rec/s", "fetch MB/s (min-max)", "fetch rec/s"}
	ours := map[int]ThroughputSummary{}
	for _, r := range sum {
		if r.Target == OursTarget {
			ours[r.RecordBytes] = r
		}
	}
	// A figure without a spread (one run, or a history line that kept only the median) shows the
	// median alone.
	mbps := func(sp Spread) string {
		if sp.Min == sp.Max {
			return fmt.Sprintf("%.1f", sp.Median)
		}
		return fmt.Sprintf("%.1f (%.0f-%.0f)", sp.Median, sp.Min, sp.Max)
	}
	var rows [][]string
	for i, r := range sum {
		rows = append(rows, []string{strconv.Itoa(r.RecordBytes), r.Target,
			mbps(r.ProduceMBps), fmt.Sprintf("%.0f", r.ProduceRecordsPerS.Median),
			mbps(r.FetchMBps), fmt.Sprintf("%.0f", r.FetchRecordsPerS.Median)})
		if i+1 < len(sum) && sum[i+1].RecordBytes == r.RecordBytes {
			continue
		}
		a, ok := ours[r.RecordBytes]
		if !ok {
			continue
		}
		for _, p := range sum {
			if p.RecordBytes != r.RecordBytes || p.Target == OursTarget {
				continue
			}
			x := func(ours, peer float64) string { return fmt.Sprintf("%.2fx", ours/peer) }
			rows = append(rows, []string{strconv.Itoa(r.RecordBytes), OursTarget + "/" + p.Target,
				x(a.ProduceMBps.Median, p.ProduceMBps.Median), x(a.ProduceRecordsPerS.Median, p.ProduceRecordsPerS.Median),
				x(a.FetchMBps.Median, p.FetchMBps.Median), x(a.FetchRecordsPerS.Median, p.FetchRecordsPerS.Median)})
		}
	}
	return writeRows(w, markdown, head, rows)
}
