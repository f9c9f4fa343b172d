package benchmark

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

const goBenchOutput = `goos: linux
goarch: amd64
pkg: github.com/rebalancelab/rebalancelab/benchmark
cpu: Test CPU @ 2.00GHz
BenchmarkAssignor/range/fresh-2   3   21600000 ns/op   21.6 ms-rebalancelab/op   22.8 ms-kgo/op   0.95 x-rebalancelab-vs-kgo
    assignor_bench_test.go:74: range/fresh: 10000 members, 10000 partitions: both valid
BenchmarkAssignor/range/fresh-2   3   21000000 ns/op   21.0 ms-rebalancelab/op   23.0 ms-kgo/op   0.91 x-rebalancelab-vs-kgo
BenchmarkAssignor/range/fresh-2   3   22000000 ns/op   22.0 ms-rebalancelab/op   20.0 ms-kgo/op   1.10 x-rebalancelab-vs-kgo
BenchmarkAssignor/range/fresh-2   3   20000000 ns/op   20.0 ms-rebalancelab/op   21.0 ms-kgo/op   0.95 x-rebalancelab-vs-kgo
BenchmarkAssignor/range/fresh-2   3   23000000 ns/op   23.0 ms-rebalancelab/op   24.0 ms-kgo/op   0.96 x-rebalancelab-vs-kgo
BenchmarkAssignor/range/fresh-2   3   19000000 ns/op   19.0 ms-rebalancelab/op   25.0 ms-kgo/op   0.76 x-rebalancelab-vs-kgo
PASS
BenchmarkFetchAnswer/zerocopy/4KiB-2   60000   19310 ns/op   1273.00 MB/s   3513 B/op   23 allocs/op
ok  	github.com/rebalancelab/rebalancelab/benchmark	12.0s
`

// TestReadGoBench: six runs of one benchmark and one of another, read from real `go test -bench`
// lines: names without the GOMAXPROCS suffix, units as printed (ns/op not turned into seconds, the
// benchmark's own units kept), medians, min-max, and a finite 95% interval only with six runs.
func TestReadGoBench(t *testing.T) {
	sums, cfg, err := ReadGoBench(strings.NewReader(goBenchOutput), "test")
	if err != nil {
		t.Fatal(err)
	}
	if cfg["cpu"] != "Test CPU @ 2.00GHz" || cfg["goos"] != "linux" {
		t.Fatalf("config %v", cfg)
	}
	if len(sums) != 2 || sums[0].Name != "Assignor/range/fresh" || sums[0].Runs != 6 ||
		sums[1].Name != "FetchAnswer/zerocopy/4KiB" || sums[1].Runs != 1 {
		t.Fatalf("summaries %+v", sums)
	}
	var units []string
	for _, m := range sums[0].Metrics {
		units = append(units, m.Unit)
	}
	if got := strings.Join(units, " "); got != "ns/op ms-rebalancelab/op ms-kgo/op x-rebalancelab-vs-kgo" {
		t.Fatalf("units %q", got)
	}
	ns, kgo := sums[0].Metrics[0], sums[0].Metrics[2]
	if ns.Median != 21300000 || ns.Min != 19000000 || ns.Max != 23000000 {
		t.Fatalf("ns/op median %v min %v max %v; want 21300000 19000000 23000000", ns.Median, ns.Min, ns.Max)
	}
	if kgo.Median != 22.9 || math.IsInf(kgo.Lo, 0) || math.IsInf(kgo.Hi, 0) || kgo.Lo > kgo.Median || kgo.Hi < kgo.Median {
		t.Fatalf("ms-kgo/op %+v: want median 22.9 inside a finite interval", kgo)
	}
	one := sums[1].Metrics[0]
	if one.Unit != "ns/op" || one.Median != 19310 || !math.IsInf(one.Lo, -1) {
		t.Fatalf("one run: %+v; want ns/op 19310 with no interval", one)
	}
	if c := one.Cell(); c != "19310" {
		t.Fatalf("one run's cell %q, want 19310", c)
	}
	if c := kgo.Cell(); !strings.HasPrefix(c, "22.9 (20.0-25.0) ±13%") {
		t.Fatalf("six runs' cell %q", c)
	}

	var md bytes.Buffer
	if err := WriteGoBenchTables(&md, sums, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| Assignor | runs | ms-rebalancelab/op | ms-kgo/op | x-rebalancelab-vs-kgo |",
		"| range/fresh | 6 | 21.3 (19.0-23.0) ±", "| FetchAnswer | runs | ns/op | MB/s | B/op | allocs/op |",
		"| zerocopy/4KiB | 1 | 19310 | 1273 | 3513 | 23 |"} {
		if !strings.Contains(md.String(), want) {
			t.Fatalf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if _, _, err := ReadGoBench(strings.NewReader("PASS\nok  \tx\t1s\n"), "empty"); err == nil {
		t.Fatal("no benchmark lines: no error")
	}
}
