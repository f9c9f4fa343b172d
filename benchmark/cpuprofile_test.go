package benchmark

import (
	"context"
	"runtime/pprof"
	"sync"
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
	spin := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	pprof.Do(context.Background(), pprof.Labels(lab.BrokerProfileLabel, "1"), func(context.Context) {
		go func() { defer wg.Done(); spin(300 * time.Millisecond) }() // inherits the label
	})
	go func() { defer wg.Done(); spin(300 * time.Millisecond) }()
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
