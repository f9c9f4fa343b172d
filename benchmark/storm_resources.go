package benchmark

// Process resources sampled during a storm cell: peak RSS, peak goroutines, CPU time.

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// sampler records the peak VmRSS and goroutine count of this process, and its CPU time, from start
// until Stop.
type sampler struct {
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
	cpu0     time.Duration
	peakRSS  int64
	peakGor  int64
	rss, gor int64 // results
	cpu      int64
	prof     *cellProfile // nil: no broker CPU figure
	brokerMs *int64
}

func startSampler(every time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{}), cpu0: processCPU(), prof: startCellProfile()}
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *sampler) sample() {
	if v := vmRSS(); v > s.peakRSS {
		s.peakRSS = v
	}
	if g := int64(runtime.NumGoroutine()); g > s.peakGor {
		s.peakGor = g
	}
}

// Stop ends the sampling (once; later calls return the same) and returns peak RSS (bytes), peak
// goroutines and CPU ms.
func (s *sampler) Stop() (rss, goroutines, cpuMs int64) {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		s.sample()
		s.rss, s.gor = s.peakRSS, s.peakGor
		s.cpu = (processCPU() - s.cpu0).Milliseconds()
		if ms, ok := s.prof.stop(); ok {
			s.brokerMs = &ms
		}
	})
	return s.rss, s.gor, s.cpu
}

// vmRSS is this process's resident set (VmRSS in /proc/self/status), bytes; 0 where unreadable.
func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest) // "12345 kB"
			if len(f) == 2 && f[1] == "kB" {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// processCPU is user + system CPU time of this process (getrusage RUSAGE_SELF).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
