package benchmark

import (
	"context"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/lab"
)

// TestCellProfileBrokerLabel: a cell profile counts the CPU of goroutines labelled
// lab.BrokerProfileLabel (and of the goroutines they start), not the others'.
func TestCellProfileBrokerLabel(t *testing.T) {
	p := startCellProfile()
	if p == nil {
		t.Fatal("a CPU profile is already running in this test binary: run it without -cpuprofile")
	}
	// Each goroutine does the same work, about 300 ms of CPU on this machine, so that each spends
	// the same CPU however the machine shares its cores (spinning for 300 ms of wall time would not:
	// on a loaded machine one goroutine may be scheduled far less than the other).
	n := spinFor(300 * time.Millisecond)
	var wg sync.WaitGroup
	wg.Add(2)
	pprof.Do(context.Background(), pprof.Labels(lab.BrokerProfileLabel, "1"), func(context.Context) {
		go func() { defer wg.Done(); spin(n) }() // inherits the label
	})
	go func() { defer wg.Done(); spin(n) }()
	wg.Wait()
	pprof.StopCPUProfile()
	labelled, all, err := labelledCPU(p.buf.Bytes(), lab.BrokerProfileLabel)
	if err != nil {
		t.Fatal(err)
	}
	// The two goroutines spin alike (whatever else the machine runs): the labelled one is half.
	if all <= 0 || float64(labelled) < 0.3*float64(all) || float64(labelled) > 0.7*float64(all) {
		t.Fatalf("labelled CPU %d ns of %d, want about half", labelled, all)
	}
}

// spinSink keeps spin's result, so that its loop is not optimised away.
var spinSink atomic.Uint64

// spin runs n rounds of a linear congruential generator: CPU work and nothing else.
func spin(n int) {
	x := uint64(1)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	spinSink.Add(x)
}

// spinFor returns the rounds of spin that take about d here: doubled from 2^16 until a run takes
// at least d/10, then scaled.
func spinFor(d time.Duration) int {
	for n := 1 << 16; ; n *= 2 {
		start := time.Now()
		spin(n)
		if took := time.Since(start); took >= d/10 {
			return int(float64(n) * float64(d) / float64(took))
		}
	}
}
