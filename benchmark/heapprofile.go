package benchmark

import (
	"context"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// liveHeapMetric is the heap the last GC found live, bytes (runtime/metrics).
const liveHeapMetric = "/gc/heap/live:bytes"

// PeakHeapProfile writes this process's heap profile (runtime/pprof "heap": the allocation sites of
// the objects live at the last GC) to path whenever the live heap has grown past 5/4 of what the
// profile last written held, checking every interval, until ctx ends. The file then shows where
// the heap stood at about its peak: a run's harness memory (the timeline's records, the figures'
// replay) rather than a snapshot taken after it was freed. It returns a function that waits for
// the watcher to end and gives its first write error.
func PeakHeapProfile(ctx context.Context, path string, interval time.Duration) (wait func() error) {
	done := make(chan error, 1)
	go func() {
		sample := []metrics.Sample{{Name: liveHeapMetric}}
		var written uint64
		var firstErr error
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				done <- firstErr
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				done <- fmt.Errorf("heap profile: runtime metric %s not supported", liveHeapMetric)
				return
			}
			if live := sample[0].Value.Uint64(); live > written+written/4 {
				if err := writeHeapProfile(path); err != nil && firstErr == nil {
					firstErr = err
				}
				written = live
			}
		}
	}()
	return func() error { return <-done }
}

// writeHeapProfile replaces path with the current heap profile (written beside it, then renamed,
// so a reader never sees half a profile).
func writeHeapProfile(path string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("heap profile: %w", err)
	}
	return os.Rename(tmp, path)
}
