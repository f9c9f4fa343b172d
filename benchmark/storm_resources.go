package benchmark

// Process resources sampled during a storm cell: peak RSS, peak goroutines, CPU time.

import (
	"fmt"
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

// fdsPerMember is how many file descriptors a member costs this process with the lab's broker in it:
// its bootstrap/fetch and coordinator connections (Kafka's clients keep the coordinator's apart), both
// ends of each.
const fdsPerMember = 4

// fdShortage says why N members cannot run in this process ("" when they can): with the lab's
// broker in-process every member's connections cost fdsPerMember descriptors, and past RLIMIT_NOFILE
// the broker fails its own writes (EMFILE: "too many open files" on __consumer_offsets) instead of the
// protocol being measured. Go raises the soft limit to the hard one at start; raising the hard one
// needs CAP_SYS_RESOURCE (prlimit --nofile).
func fdShortage(o StormOptions, n int) string {
	if o.Bootstrap != "" || o.Broker == "kafka" {
		return ""
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return ""
	}
	need := uint64(fdsPerMember*(n+1) + 2048) // + ZooKeeper client, logs, segments, the runner
	if need <= lim.Cur {
		return ""
	}
	return fmt.Sprintf("not run: %d members need about %d file descriptors in this process (%d each: a bootstrap/fetch and a coordinator connection, both ends, with the broker in-process) and RLIMIT_NOFILE is %d (hard %d; raising it needs CAP_SYS_RESOURCE, e.g. prlimit --nofile)",
		n, need, fdsPerMember, lim.Cur, lim.Max)
}

// peerFDsPerMember: a kgo member keeps a connection for its group requests apart from the one for
// metadata and fetches, and more while it rebalances (measured: EMFILE at N=3,000 beside ours here).
const peerFDsPerMember = 8

// peerFDShortage says why the kgo peer storm of N cannot run here ("" when it can): its connections
// and ours (started after it, while its members are still closing) must fit under RLIMIT_NOFILE.
func peerFDShortage(o StormOptions, n int) string {
	if o.Bootstrap != "" || o.Broker == "kafka" {
		return ""
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return ""
	}
	need := uint64(peerFDsPerMember*n + 2048)
	if need <= lim.Cur {
		return ""
	}
	return fmt.Sprintf("kgo peer not run: %d kgo members need about %d file descriptors in this process (%d each with the broker in-process) and RLIMIT_NOFILE is %d (hard %d)",
		n, need, peerFDsPerMember, lim.Cur, lim.Max)
}
