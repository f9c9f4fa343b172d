package timeline

import (
	"bytes"
	"sync"
	"testing"
)

// fill emits n records numbered 0..n-1 in Offset and TsMs.
func fill(c *Collector, n int) {
	for i := 0; i < n; i++ {
		c.Emit(Record{TsMs: int64(i), Kind: Deliver, Offset: I64(int64(i))})
	}
}

func checkRun(t *testing.T, what string, recs []Record, from, n int) {
	t.Helper()
	if len(recs) != n {
		t.Fatalf("%s: %d records, want %d", what, len(recs), n)
	}
	for i, r := range recs {
		if *r.Offset != int64(from+i) {
			t.Fatalf("%s: record %d has offset %d, want %d", what, i, *r.Offset, from+i)
		}
	}
}

// The Collector's chunks are invisible to readers: records come back in arrival order across chunk
// boundaries, from any mark.
func TestCollectorAcrossChunks(t *testing.T) {
	const n = 2*collectorChunk + 17
	var c Collector
	fill(&c, n)
	if c.Mark() != n {
		t.Fatalf("Mark = %d, want %d", c.Mark(), n)
	}
	checkRun(t, "Records", c.Records(), 0, n)
	for _, mark := range []int{0, 1, collectorChunk - 1, collectorChunk, collectorChunk + 1, 2 * collectorChunk, n - 1, n} {
		checkRun(t, "Since", c.Since(mark), mark, n-mark)
	}
	checkRun(t, "Since(past the end)", c.Since(n+5), n, 0)
	checkRun(t, "Since(-1)", c.Since(-1), 0, n)
	if got := c.Latest(Deliver); got != n-1 {
		t.Fatalf("Latest(deliver) = %d, want %d", got, n-1)
	}
}

// Sorted merges by TsMs, keeping arrival order within a millisecond, across chunks, and leaves room
// for spare records, so that a probe appended afterwards does not copy the timeline again.
func TestCollectorSorted(t *testing.T) {
	var c Collector
	const n = collectorChunk + 100
	// Arrival order: ts descending in blocks of 3 records that share a ts, numbered in arrival order.
	for i := 0; i < n; i++ {
		c.Emit(Record{TsMs: int64((n - i) / 3), Kind: Deliver, Offset: I64(int64(i))})
	}
	out := c.Sorted(1)
	if len(out) != n || cap(out) < n+1 {
		t.Fatalf("Sorted(1): len %d cap %d, want len %d and cap at least %d", len(out), cap(out), n, n+1)
	}
	for k := 1; k < n; k++ {
		a, b := out[k-1], out[k]
		if a.TsMs > b.TsMs || a.TsMs == b.TsMs && *a.Offset > *b.Offset {
			t.Fatalf("Sorted: record %d (ts %d, arrived %d) before record %d (ts %d, arrived %d)",
				k-1, a.TsMs, *a.Offset, k, b.TsMs, *b.Offset)
		}
	}
	before := &out[0]
	out = append(out, Record{Kind: Trigger, Name: "probe"})
	if &out[0] != before {
		t.Fatal("appending one record after Sorted(1) copied the slice")
	}
	// A copy is the caller's: changing it leaves the collection as it was.
	out[0].Offset = I64(-1)
	checkRun(t, "Records after the caller's change", c.Records(), 0, n)
}

// TakeSorted gives the records up: the same merge as Sorted, then an empty Collector that goes on
// collecting from Mark 0.
func TestCollectorTakeSorted(t *testing.T) {
	var c Collector
	const n = collectorChunk + 5
	for i := 0; i < n; i++ {
		c.Emit(Record{TsMs: int64(n - i), Kind: Deliver, Offset: I64(int64(n - i))})
	}
	want := c.Sorted(0)
	got := c.TakeSorted()
	if len(got) != n || got[0].TsMs != 1 || got[n-1].TsMs != n {
		t.Fatalf("TakeSorted: %d records from ts %d to %d, want %d from 1 to %d", len(got), got[0].TsMs, got[len(got)-1].TsMs, n, n)
	}
	for i := range want {
		if *got[i].Offset != *want[i].Offset {
			t.Fatalf("record %d: TakeSorted offset %d, Sorted %d", i, *got[i].Offset, *want[i].Offset)
		}
	}
	if c.Mark() != 0 || len(c.Records()) != 0 || c.Latest(Deliver) != 0 {
		t.Fatalf("after TakeSorted: Mark %d, %d records, latest deliver %d; want 0, 0, 0", c.Mark(), len(c.Records()), c.Latest(Deliver))
	}
	c.Emit(Record{TsMs: 7, Kind: Trigger})
	if recs := c.Since(0); len(recs) != 1 || recs[0].TsMs != 7 {
		t.Fatalf("after TakeSorted and one Emit: %+v, want the one record", recs)
	}
}

// SortInPlace gives what SortedCopy gives, in the caller's slice: stamped with the new times and
// stable within a millisecond, whatever the permutation's cycles.
func TestSortInPlaceMatchesSortedCopy(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 1000} {
		recs := make([]Record, n)
		for i := range recs {
			recs[i] = Record{TsMs: int64((i * 7919) % 13), Offset: I64(int64(i))}
		}
		ts := func(i int) int64 { return recs[i].TsMs * 2 } // a new time, as a redated commit gets
		want := SortedCopy(n, func(i int) *Record { return &recs[i] }, ts, 0)
		SortInPlace(recs, ts)
		for i := range want {
			if recs[i].TsMs != want[i].TsMs || *recs[i].Offset != *want[i].Offset {
				t.Fatalf("n=%d, record %d: in place (ts %d, offset %d), copy (ts %d, offset %d)",
					n, i, recs[i].TsMs, *recs[i].Offset, want[i].TsMs, *want[i].Offset)
			}
			if i > 0 && (want[i-1].TsMs > want[i].TsMs || want[i-1].TsMs == want[i].TsMs && *want[i-1].Offset > *want[i].Offset) {
				t.Fatalf("n=%d: SortedCopy out of order at %d", n, i)
			}
		}
	}
}

// Emit from many goroutines while readers copy: under -race, and every record arrives once.
func TestCollectorConcurrent(t *testing.T) {
	var c Collector
	var wg sync.WaitGroup
	const writers, each = 4, collectorChunk / 2
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				c.Emit(Record{Kind: Deliver})
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c.Mark() < writers*each {
			_ = c.Since(c.Mark() / 2)
			_ = c.Sorted(0)
		}
	}()
	wg.Wait()
	<-done
	if got := len(c.Records()); got != writers*each {
		t.Fatalf("%d records, want %d", got, writers*each)
	}
}

// A Writer's lines read back as the same records.
func TestWriterRead(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Emit(Record{TsMs: 5, Era: "classic", Member: "m1", Kind: Assigned, Partitions: map[string][]int32{"t": {0, 2}}, Generation: I32(0)})
	w.Emit(Record{TsMs: 6, Era: "classic", Member: "m1", Kind: Deliver, Topic: "t", Partition: I32(0), Offset: I64(0)})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	recs, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || *recs[0].Generation != 0 || len(recs[0].Partitions["t"]) != 2 || *recs[1].Partition != 0 || *recs[1].Offset != 0 {
		t.Fatalf("read back %+v", recs)
	}
}
