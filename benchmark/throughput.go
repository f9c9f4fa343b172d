// Package benchmark measures rebalancelab against peers measured in the same run: produce/fetch
// throughput of the broker (against Kafka 3.9 and franz-go's kfake) and rebalance storms per era.
package benchmark

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ThroughputOptions shapes one throughput measurement.
type ThroughputOptions struct {
	Topic       string // created by the caller, Partitions partitions
	Partitions  int32
	RecordBytes int // value size in bytes (uncompressed random bytes, no key)
	Records     int // records produced, then fetched back
}

// ThroughputResult is one target's figures for one record size. Rates are per second of wall time.
type ThroughputResult struct {
	Target             string  `json:"target"` // "rebalancelab", "kafka" or "kfake"
	RecordBytes        int     `json:"record_bytes"`
	Records            int     `json:"records"`
	ProduceMBps        float64 `json:"produce_mb_per_s"` // MB = 10^6 bytes of record values
	ProduceRecordsPerS float64 `json:"produce_records_per_s"`
	FetchMBps          float64 `json:"fetch_mb_per_s"`
	FetchRecordsPerS   float64 `json:"fetch_records_per_s"`
}

// MeasureThroughput produces o.Records random records of o.RecordBytes to o.Topic on bootstrap
// (host:port[,host:port...]) with one franz-go client (acks=all, idempotent as franz-go is by default, against every target),
// waits for every ack, then consumes
// them all back from the earliest offset with a direct (group-less) consumer. It returns an error
// if a produce fails or fewer records come back than were produced.
func MeasureThroughput(ctx context.Context, target, bootstrap string, o ThroughputOptions) (ThroughputResult, error) {
	res := ThroughputResult{Target: target, RecordBytes: o.RecordBytes, Records: o.Records}
	prod, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.MaxBufferedRecords(100_000),
	)
	if err != nil {
		return res, err
	}
	defer prod.Close()

	// Random values, generated before the clock starts; records reuse a pool of distinct values.
	const pool = 1024
	values := make([][]byte, pool)
	for i := range values {
		values[i] = make([]byte, o.RecordBytes)
		_, _ = rand.Read(values[i])
	}

	var failed atomic.Value
	start := time.Now()
	for i := 0; i < o.Records; i++ {
		prod.Produce(ctx, &kgo.Record{Topic: o.Topic, Value: values[i%pool]}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		return res, fmt.Errorf("%s: flush: %w", target, err)
	}
	elapsed := time.Since(start).Seconds()
	if err, _ := failed.Load().(error); err != nil {
		return res, fmt.Errorf("%s: produce: %w", target, err)
	}
	res.ProduceRecordsPerS = float64(o.Records) / elapsed
	res.ProduceMBps = float64(o.Records*o.RecordBytes) / 1e6 / elapsed

	parts := make(map[int32]kgo.Offset, o.Partitions)
	for p := int32(0); p < o.Partitions; p++ {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.Topic: parts}),
		kgo.FetchMaxBytes(50<<20),
	)
	if err != nil {
		return res, err
	}
	defer cons.Close()
	got := 0
	start = time.Now()
	for got < o.Records {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("%s: fetched %d of %d records: %w", target, got, o.Records, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("%s: fetch %s[%d]: %w", target, t, p, err) })
		if ferr != nil {
			return res, ferr
		}
		got += fs.NumRecords()
	}
	elapsed = time.Since(start).Seconds()
	if got != o.Records {
		return res, fmt.Errorf("%s: fetched %d records, produced %d", target, got, o.Records)
	}
	res.FetchRecordsPerS = float64(got) / elapsed
	res.FetchMBps = float64(got*o.RecordBytes) / 1e6 / elapsed
	return res, nil
}

// Spread is a figure over repeated runs: the median and the extremes.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
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
// markdown selects a Markdown table (README's), else aligned columns.
func WriteThroughputTable(w io.Writer, sum []ThroughputSummary, markdown bool) error {
	head := []string{"record bytes", "target", "produce MB/s (min-max)", "produce rec/s", "fetch MB/s (min-max)", "fetch rec/s"}
	ours := map[int]ThroughputSummary{}
	for _, r := range sum {
		if r.Target == OursTarget {
			ours[r.RecordBytes] = r
		}
	}
	var rows [][]string
	for i, r := range sum {
		rows = append(rows, []string{strconv.Itoa(r.RecordBytes), r.Target,
			fmt.Sprintf("%.1f (%.0f-%.0f)", r.ProduceMBps.Median, r.ProduceMBps.Min, r.ProduceMBps.Max),
			fmt.Sprintf("%.0f", r.ProduceRecordsPerS.Median),
			fmt.Sprintf("%.1f (%.0f-%.0f)", r.FetchMBps.Median, r.FetchMBps.Min, r.FetchMBps.Max),
			fmt.Sprintf("%.0f", r.FetchRecordsPerS.Median)})
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
