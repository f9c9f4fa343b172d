package scenarios

// Test hosts (Params.Hosts, scenario run --hosts N): the runner creates N network-namespace hosts
// (lab.CreateHosts), starts ZooKeeper and the broker inside h1 and every member as a process inside
// its host (m1 on h1, m2 on h2, ... round-robin), and measures each host's clock against its own at
// the start (lab.Host.ClockOffset: the sample with the shortest round trip). Records from a host's
// members carry its name (timeline.Record.Host) and that host's clock, uncorrected: the offset is
// reported beside the figures, and a figure that spans two hosts is off by at most the difference of
// their offsets plus its uncertainty (± RTT/2). Namespace hosts share this machine's clock, so their
// offsets are 0 within that uncertainty; on separate machines the same report says how far a
// sub-second figure can be trusted.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rebalancelab/rebalancelab/lab"
)

// HostInfo is one test host of a run (the result JSON's "hosts").
type HostInfo struct {
	Name      string   `json:"name"` // "h1"
	Addr      string   `json:"addr"`
	Namespace string   `json:"namespace"`
	Runs      []string `json:"runs"` // "zookeeper", "broker", and the members placed there
	// Clock is the host's clock against the runner's, measured at the start: offset (host − runner)
	// and the round trip of the best of the samples; the offset is known to ± RTT/2.
	Clock lab.ClockSample `json:"clock"`
}

// clockSamples is how many round trips the runner makes to each host's clock.
const clockSamples = 9

// checkHosts refuses options that cannot run on test hosts.
func checkHosts(o Options, p Params) error {
	if p.Hosts == 0 {
		return nil
	}
	switch {
	case o.MembersAs != MembersAsProcesses:
		return fmt.Errorf("--hosts %d: members run inside their hosts as processes: use --members-as processes", p.Hosts)
	case o.Bootstrap != "" || o.ExternalZK != "":
		return fmt.Errorf("--hosts %d: the test hosts run the lab's own ZooKeeper and broker (not --bootstrap or --zk)", p.Hosts)
	}
	return nil
}

// startHosts creates the run's test hosts and measures their clocks; the caller closes them.
func startHosts(ctx context.Context, o Options, res *RunResult, progress func(string, ...any)) (*lab.Hosts, error) {
	n := res.Params.Hosts
	hs, err := lab.CreateHosts(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("test hosts: %w", err)
	}
	caps := hs.Capabilities()
	res.HostCapabilities = &caps
	progress("%d test hosts (network namespaces %sh1..h%d on bridge %s, subnet %s)", n, hs.Prefix(), n, hs.BridgeAddr(), hs.Subnet())
	if !caps.Netem {
		note := "netem is not available in this kernel (" + caps.NetemReason + "): the kernel cannot delay or drop a host's packets " +
			"(lab.Host.Netem fails with ErrNoNetem); the scripts' latency steps use the runner's fault proxies, as without hosts"
		res.Notes = append(res.Notes, note)
		progress("%s", note)
	}
	for _, h := range hs.Hosts() {
		info := HostInfo{Name: h.Name(), Addr: h.Addr(), Namespace: h.Namespace()}
		if h.Index() == 1 {
			info.Runs = append(info.Runs, "zookeeper", "broker")
		}
		for i := 1; i <= res.Params.Consumers; i++ {
			if (i-1)%n+1 == h.Index() {
				info.Runs = append(info.Runs, memberName(i))
			}
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		s, err := h.ClockOffset(cctx, []string{o.MemberBinary, "clock"}, clockSamples)
		cancel()
		if err != nil {
			hs.Close()
			return nil, fmt.Errorf("test host %s: clock: %w", h.Name(), err)
		}
		info.Clock = s
		progress("host %s %s: clock offset %+.3f ms (± %.3f ms, best round trip of %d); runs %s", h.Name(), h.Addr(),
			s.OffsetMs, s.RTTMs/2, s.Samples, strings.Join(info.Runs, " "))
		res.Hosts = append(res.Hosts, info)
	}
	return hs, nil
}

// hostOf is the test host member name runs on (round-robin by its number), nil without hosts.
func (r *eraRunner) hostOf(name string) *lab.Host {
	if r.hosts == nil {
		return nil
	}
	k, err := strconv.Atoi(strings.TrimPrefix(name, "m"))
	if err != nil || k < 1 {
		return r.hosts.Host(1)
	}
	return r.hosts.Host((k-1)%len(r.hosts.Hosts()) + 1)
}

var errNeedsHosts = errors.New("needs test hosts (scenario run --hosts N)")

// hostStep performs host-down, host-up, partition and partition-heal, recording each as a fault
// window: fault{action: host-down, target: "h<i>"} (partition: "h<a>|h<b>") begins once the change is
// in force and ends once it is undone.
func (r *eraRunner) hostStep(ctx context.Context, st Step) {
	if r.hosts == nil {
		r.errorf("%s: %s", st, errNeedsHosts)
		return
	}
	h := r.hosts.Host(st.Host)
	if h == nil {
		r.errorf("%s: no such test host (1..%d)", st, len(r.hosts.Hosts()))
		return
	}
	var err error
	switch st.Action {
	case ActHostDown:
		if err = h.LinkDown(ctx); err == nil {
			r.nodeFault(true, string(ActHostDown), h.Name())
		}
	case ActHostUp:
		if err = h.LinkUp(ctx); err == nil {
			r.nodeFault(false, string(ActHostDown), h.Name())
		}
	case ActPartition, ActPartitionHeal:
		target := fmt.Sprintf("h%d|h%d", st.Host, st.Peer)
		if st.Action == ActPartition {
			if err = r.hosts.Partition(ctx, st.Host, st.Peer); err == nil {
				r.nodeFault(true, string(ActPartition), target)
			}
		} else if err = r.hosts.Heal(ctx, st.Host, st.Peer); err == nil {
			r.nodeFault(false, string(ActPartition), target)
		}
	}
	if err != nil {
		r.errorf("%s: %v", st, err)
	}
}

// healHosts brings every host back and removes every partition, so that the members can drain and
// say goodbye (the end of the script).
func (r *eraRunner) healHosts(ctx context.Context) {
	if r.hosts == nil {
		return
	}
	for _, st := range r.res.Script {
		switch st.Action {
		case ActHostDown:
			if h := r.hosts.Host(st.Host); h != nil && h.Down() {
				r.hostStep(ctx, Step{Action: ActHostUp, Host: st.Host})
			}
		case ActPartition:
			_ = r.hosts.Heal(ctx, st.Host, st.Peer)
		}
	}
}

// writeHosts prints the test hosts and their clock offsets beside the figures.
func (r *RunResult) writeHosts(w io.Writer) {
	if len(r.Hosts) == 0 {
		return
	}
	fmt.Fprintf(w, "test hosts (network namespaces; ts_ms are each host's clock, offsets measured at the start, host − runner):\n")
	for _, h := range r.Hosts {
		fmt.Fprintf(w, "  %s %-15s clock offset %+.3f ms ± %.3f ms   %s\n", h.Name, h.Addr, h.Clock.OffsetMs, h.Clock.RTTMs/2, strings.Join(h.Runs, " "))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}
