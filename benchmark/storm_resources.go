package benchmark

// Process resources sampled during a storm cell: peak RSS, peak goroutines, CPU time.

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/members"
)

// sampler records, from start until Stop, the peak VmRSS and goroutine count of this process plus
// its child processes (member pools and broker processes, scenarios.StepInfo.Processes: their RSS
// summed, the pools' goroutines as they report them) and the CPU time of all of them; the broker's
// share is the in-process broker's profile or the broker processes' CPU.
type sampler struct {
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
	cpu0     time.Duration
	children func() []members.ChildProcess // nil: none

	mu       sync.Mutex
	peakRSS  int64
	peakGor  int64
	child0   map[int]time.Duration // each child's CPU when first seen (0 if it started during the cell)
	childCPU map[int]time.Duration // and when last seen
	brokers  map[int]bool

	rss, gor int64 // results
	cpu      int64
	prof     *cellProfile // nil: no broker CPU figure
	brokerMs *int64

	started time.Time
	maxRSS  int64           // 0: no bound
	onLimit func(rss int64) // called once when a sample passes maxRSS
	tripped bool
}

// limit calls onLimit once, from the sampling goroutine, when the summed RSS passes maxRSS bytes
// (0: never).
func (s *sampler) limit(maxRSS int64, onLimit func(rss int64)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxRSS, s.onLimit = maxRSS, onLimit
}

func startSampler(every time.Duration, children func() []members.ChildProcess) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{}), cpu0: processCPU(), children: children, started: time.Now(),
		child0: map[int]time.Duration{}, childCPU: map[int]time.Duration{}, brokers: map[int]bool{}}
	if children != nil {
		for _, c := range children() { // running at the cell's start: only their CPU from now counts
			s.child0[c.PID] = pidCPU(c.PID)
		}
	}
	if !s.hasBrokerProcess() {
		s.prof = startCellProfile()
	}
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

func (s *sampler) hasBrokerProcess() bool {
	if s.children == nil {
		return false
	}
	for _, c := range s.children() {
		if c.Kind == "broker" {
			return true
		}
	}
	return false
}

func (s *sampler) sample() {
	rss, gor := vmRSS(), int64(runtime.NumGoroutine())
	var kids []members.ChildProcess
	if s.children != nil {
		kids = s.children()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range kids {
		rss += pidRSS(c.PID)
		gor += c.Goroutines
		if cpu := pidCPU(c.PID); cpu > 0 {
			s.childCPU[c.PID] = cpu
		}
		if c.Kind == "broker" {
			s.brokers[c.PID] = true
		}
	}
	s.peakRSS = max(s.peakRSS, rss)
	s.peakGor = max(s.peakGor, gor)
	if s.maxRSS > 0 && rss > s.maxRSS && !s.tripped && s.onLimit != nil {
		s.tripped = true
		go s.onLimit(rss) // it cancels the run, which stops this sampler: not under its lock
	}
}

// defaultMaxRSS is the RSS bound of a storm when StormOptions.MaxRSS is 0: three quarters of the
// machine's memory (MemTotal), so that a run past it stops with its reason instead of being killed.
func defaultMaxRSS() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			if f := strings.Fields(rest); len(f) == 2 && f[1] == "kB" {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024 * 3 / 4
			}
		}
	}
	return 0
}

// cpuSoFar is the CPU ms of this process and the children seen, since the start.
func (s *sampler) cpuSoFar() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	cpu := processCPU() - s.cpu0
	for pid, last := range s.childCPU {
		cpu += last - s.child0[pid]
	}
	return cpu.Milliseconds()
}

// Stop ends the sampling (once; later calls return the same) and returns peak RSS (bytes), peak
// goroutines and CPU ms.
func (s *sampler) Stop() (rss, goroutines, cpuMs int64) {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		s.sample()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.rss, s.gor = s.peakRSS, s.peakGor
		cpu := processCPU() - s.cpu0
		var brokers time.Duration
		for pid, last := range s.childCPU {
			d := last - s.child0[pid]
			cpu += d
			if s.brokers[pid] {
				brokers += d
			}
		}
		s.cpu = cpu.Milliseconds()
		if len(s.brokers) > 0 {
			ms := brokers.Milliseconds()
			s.brokerMs = &ms
		} else if ms, ok := s.prof.stop(); ok {
			s.brokerMs = &ms
		}
	})
	return s.rss, s.gor, s.cpu
}

// pidRSS is a process's resident set (VmRSS in /proc/PID/status), bytes; 0 where unreadable (gone).
func pidRSS(pid int) int64 { return statusRSS("/proc/" + strconv.Itoa(pid) + "/status") }

// pidCPU is a process's user + system CPU time (/proc/PID/stat utime and stime, in clock ticks of
// 1/100 s: USER_HZ on Linux); 0 where unreadable.
func pidCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')') // comm may hold spaces; the fields follow its ')'
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 { // state is field 3, utime 14 and stime 15 of the whole line
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// vmRSS is this process's resident set (VmRSS in /proc/self/status), bytes; 0 where unreadable.
func vmRSS() int64 { return statusRSS("/proc/self/status") }

// statusRSS reads VmRSS from a /proc/.../status file, bytes; 0 where unreadable.
func statusRSS(path string) int64 {
	b, err := os.ReadFile(path)
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

// fdShortage says why N members cannot run in this layout ("" when they can). RLIMIT_NOFILE is per
// process: with the members and the broker in this process every member costs fdsPerMember here; with
// member pools (MembersPerProcess) a pool holds the client ends of its K members' two connections, and
// the coordinator's broker process the server ends of every member's coordinator connection plus its
// share (1/Brokers) of their metadata and fetch connections. Past the limit the broker fails its own
// writes (EMFILE: "too many open files" on __consumer_offsets) instead of the protocol being
// measured. Go raises the soft limit to the hard one at start; raising the hard one needs
// CAP_SYS_RESOURCE (prlimit --nofile).
func fdShortage(o StormOptions, n int) string {
	if o.Bootstrap != "" || o.Broker == "kafka" {
		return ""
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return ""
	}
	if o.MembersPerProcess <= 1 {
		need := uint64(fdsPerMember*(n+1) + 2048) // + ZooKeeper client, logs, segments, the runner
		if need <= lim.Cur {
			return ""
		}
		return fmt.Sprintf("not run: %d members need about %d file descriptors in this process (%d each: a bootstrap/fetch and a coordinator connection, both ends, with the broker in-process) and RLIMIT_NOFILE is %d (hard %d; raising it needs CAP_SYS_RESOURCE, e.g. prlimit --nofile; or spread them: --members-per-process K --brokers 3)",
			n, need, fdsPerMember, lim.Cur, lim.Max)
	}
	k := o.MembersPerProcess
	if need := uint64(2*k + 512); need > lim.Cur {
		return fmt.Sprintf("not run: a pool of %d members needs about %d file descriptors (2 connections each) and RLIMIT_NOFILE is %d: lower --members-per-process", k, need, lim.Cur)
	}
	return coordinatorFDShortage(o, n, lim)
}

// coordinatorFDShortage says why the coordinator's broker process cannot hold a group of n members
// in pools ("" when it can).
func coordinatorFDShortage(o StormOptions, n int, lim syscall.Rlimit) string {
	b := max(1, o.Brokers)
	p := stormPartitions(o, n)
	rf := replicationFactorParam(o)
	// a coordinator connection per member, its share of their metadata connections and of the owners'
	// fetch connections, two files (.log, .index) per replica it holds, and the rest (replica
	// fetchers, __consumer_offsets, ZooKeeper, logs)
	need := uint64(n + 1 + (n+b)/b + min(n, p)/b + 2*p*rf/b + 1024)
	if need <= lim.Cur {
		return ""
	}
	return fmt.Sprintf("not run: the coordinator's broker process needs about %d file descriptors for %d members and %d partitions at replication factor %d over %d brokers (a coordinator connection per member, 1/%d of their metadata and fetch connections, two files per replica) and RLIMIT_NOFILE is %d (hard %d): more --brokers or a lower --replication-factor spread the rest, the coordinator's connections stay on one broker",
		need, n, p, rf, b, b, lim.Cur, lim.Max)
}

// brokersAs is how the lab's brokers run: as processes with member pools (their descriptors are
// then not this process's), in this process otherwise.
func brokersAs(o StormOptions) string {
	if o.MembersPerProcess > 1 {
		return lab.BrokersProcess
	}
	return ""
}

// peerFDsPerMember: a kgo member keeps a connection for its group requests apart from the one for
// metadata and fetches, and more while it rebalances (measured: EMFILE at N=3,000 beside ours here).
const peerFDsPerMember = 8

// peerPoolFDsPerMember: a kgo member in a pool, whose brokers are other processes: one end of each
// of those connections.
const peerPoolFDsPerMember = peerFDsPerMember / 2

// peerFDShortage says why the kgo peer storm of N cannot run here ("" when it can). In this process its
// connections and ours (started after it, while its members are still closing) must fit under
// RLIMIT_NOFILE; in pools (--members-per-process), each pool's and the coordinator's broker's.
func peerFDShortage(o StormOptions, n int) string {
	if o.Bootstrap != "" || o.Broker == "kafka" {
		return ""
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return ""
	}
	if k := o.MembersPerProcess; k > 1 {
		if need := uint64(peerPoolFDsPerMember*k + 512); need > lim.Cur {
			return fmt.Sprintf("kgo peer not run: a pool of %d kgo members needs about %d file descriptors (%d each) and RLIMIT_NOFILE is %d: lower --members-per-process",
				k, need, peerPoolFDsPerMember, lim.Cur)
		}
		if why := coordinatorFDShortage(o, n, lim); why != "" {
			return "kgo peer " + why
		}
		return ""
	}
	need := uint64(peerFDsPerMember*n + 2048)
	if need <= lim.Cur {
		return ""
	}
	return fmt.Sprintf("kgo peer not run: %d kgo members need about %d file descriptors in this process (%d each with the broker in-process) and RLIMIT_NOFILE is %d (hard %d; or run them in pools: --members-per-process K)",
		n, need, peerFDsPerMember, lim.Cur, lim.Max)
}
