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
	"strconv"
	"strings"
	"time"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// clockSamples is how many round trips the runner makes to each host's clock.
const clockSamples = 9

// checkHosts refuses options that cannot run on test hosts.
func checkHosts(o Options, p spec.Params) error {
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
	hc := report.HostCapabilities(caps)
	res.HostCapabilities = &hc
	progress("%d test hosts (network namespaces %sh1..h%d on bridge %s, subnet %s)", n, hs.Prefix(), n, hs.BridgeAddr(), hs.Subnet())
	if !caps.Netem {
		note := "netem is not available in this kernel (" + caps.NetemReason + "): the kernel cannot delay or drop a host's packets " +
			"(lab.Host.Netem fails with ErrNoNetem); the scripts' latency steps use the runner's fault proxies, as without hosts, " +
			"and host-delay and host-loss go on every proxy link of the host's members: a delay as netem's on the host's egress (each round trip " +
			"that much longer), a loss as TCP shows it (each chunk lost with the given probability waits a retransmission timeout of 200 ms, doubling, " +
			"and delays what follows it) rather than dropped packets; ZooKeeper's and the broker's own traffic to other hosts is not slowed"
		res.Notes = append(res.Notes, note)
		progress("%s", note)
	}
	for _, h := range hs.Hosts() {
		info := report.HostInfo{Name: h.Name(), Addr: h.Addr(), Namespace: h.Namespace()}
		if h.Index() == 1 {
			info.Runs = append(info.Runs, "zookeeper", "broker")
		}
		for i := 1; i <= res.Params.Consumers; i++ {
			if (i-1)%n+1 == h.Index() {
				info.Runs = append(info.Runs, spec.MemberName(i))
			}
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		s, err := h.ClockOffset(cctx, []string{o.MemberBinary, "clock"}, clockSamples)
		cancel()
		if err != nil {
			hs.Close()
			return nil, fmt.Errorf("test host %s: clock: %w", h.Name(), err)
		}
		info.Clock = report.ClockSample(s)
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
func (r *eraRunner) hostStep(ctx context.Context, st spec.Step) {
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
	case spec.ActHostDown:
		if err = h.LinkDown(ctx); err == nil {
			r.nodeFault(true, string(spec.ActHostDown), h.Name())
		}
	case spec.ActHostUp:
		if err = h.LinkUp(ctx); err == nil {
			r.nodeFault(false, string(spec.ActHostDown), h.Name())
		}
	case spec.ActHostDelay, spec.ActHostLoss:
		err = r.hostNetStep(ctx, h, st)
	case spec.ActPartition, spec.ActPartitionHeal:
		target := fmt.Sprintf("h%d|h%d", st.Host, st.Peer)
		if st.Action == spec.ActPartition {
			if err = r.hosts.Partition(ctx, st.Host, st.Peer); err == nil {
				r.nodeFault(true, string(spec.ActPartition), target)
			}
		} else if err = r.hosts.Heal(ctx, st.Host, st.Peer); err == nil {
			r.nodeFault(false, string(spec.ActPartition), target)
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
		case spec.ActHostDown:
			if h := r.hosts.Host(st.Host); h != nil && h.Down() {
				r.hostStep(ctx, spec.Step{Action: spec.ActHostUp, Host: st.Host})
			}
		case spec.ActPartition:
			_ = r.hosts.Heal(ctx, st.Host, st.Peer)
		}
	}
	for i := range r.hosts.Hosts() {
		if n := r.hostNetOf(i + 1); n.delay > 0 {
			r.hostStep(ctx, spec.Step{Action: spec.ActHostDelay, Host: i + 1})
		}
		if n := r.hostNetOf(i + 1); n.loss > 0 {
			r.hostStep(ctx, spec.Step{Action: spec.ActHostLoss, Host: i + 1})
		}
	}
}

// hostNet is the delay and loss in force on a test host (host-delay, host-loss).
type hostNet struct {
	delay time.Duration
	loss  float64 // percent
}

func (r *eraRunner) hostNetOf(i int) hostNet {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hostNet[i]
}

// hostNetViaProxies reports whether member name's links must go through proxies for its host's
// delay or loss: the script has a host-delay or host-loss step on its host and the kernel has no netem.
func (r *eraRunner) hostNetViaProxies(name string) bool {
	h := r.hostOf(name)
	if h == nil || r.hosts.Capabilities().Netem {
		return false
	}
	for _, st := range r.res.Script {
		if (st.Action == spec.ActHostDelay || st.Action == spec.ActHostLoss) && st.Host == h.Index() {
			return true
		}
	}
	return false
}

// membersOn lists the members the run places on host h (round-robin), those of the script's steps
// included.
func (r *eraRunner) membersOn(h *lab.Host) []string {
	seen := map[string]bool{}
	var out []string
	add := func(name string) {
		if name != "" && !seen[name] {
			if mh := r.hostOf(name); mh != nil && mh.Index() == h.Index() {
				out = append(out, name)
			}
			seen[name] = true
		}
	}
	for i := 1; i <= r.res.Params.Consumers; i++ {
		add(spec.MemberName(i))
	}
	for _, st := range r.res.Script {
		add(st.Member)
	}
	return out
}

// hostNetStep performs host-delay and host-loss on h: tc netem on the host's interface where the
// kernel has it (lab.Host.Netem, delay and loss together); else the same delay (the proxies' latency:
// every round trip takes it longer, as netem on the host's egress makes it) and loss (lab.Proxy.Loss:
// retransmission delays, since a TCP proxy cannot drop packets) on every proxy link of the host's
// members. The change is recorded as a fault window on the host: fault{action: "host-delay 300ms" or
// "host-loss 10%", target: "h<i>"}, begun once in force, ended when the value changes or goes to 0;
// without netem the links' own fault windows (member/link) are recorded too.
func (r *eraRunner) hostNetStep(ctx context.Context, h *lab.Host, st spec.Step) error {
	if st.LatencyMs < 0 || st.LossPct < 0 || st.LossPct > 100 {
		return fmt.Errorf("want a delay >= 0 and a loss in 0..100%%")
	}
	old := r.hostNetOf(h.Index())
	next := old
	if st.Action == spec.ActHostDelay {
		next.delay = time.Duration(st.LatencyMs) * time.Millisecond
	} else {
		next.loss = st.LossPct
	}
	if next == old {
		return nil
	}
	caps := r.hosts.Capabilities()
	via := "tc netem on " + h.Name() + "'s eth0"
	if caps.Netem {
		if err := h.Netem(ctx, next.delay, next.loss); err != nil {
			return err
		}
	} else {
		var errs []error
		names := r.membersOn(h)
		for _, name := range names {
			links := r.linksOf(name)
			for _, l := range crashLinks {
				if !links.Proxied(l) {
					continue
				}
				if st.Action == spec.ActHostDelay {
					errs = append(errs, links.Latency(l, next.delay))
				} else {
					errs = append(errs, links.Loss(l, next.loss))
				}
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		via = fmt.Sprintf("the fault proxies of every link of %s (no netem: %s)", strings.Join(names, " "), caps.NetemReason)
	}
	r.mu.Lock()
	if r.hostNet == nil {
		r.hostNet = map[int]hostNet{}
	}
	r.hostNet[h.Index()] = next
	r.mu.Unlock()
	label := func(n hostNet) string {
		if st.Action == spec.ActHostDelay {
			return fmt.Sprintf("%s %dms", spec.ActHostDelay, n.delay.Milliseconds())
		}
		return fmt.Sprintf("%s %s%%", spec.ActHostLoss, strconv.FormatFloat(n.loss, 'f', -1, 64))
	}
	oldOn, nextOn := old.delay > 0, next.delay > 0
	if st.Action == spec.ActHostLoss {
		oldOn, nextOn = old.loss > 0, next.loss > 0
	}
	if oldOn {
		r.nodeFault(false, label(old), h.Name())
	}
	if nextOn {
		r.nodeFault(true, label(next), h.Name())
		r.stepf("%s: by %s", st, via)
	}
	return nil
}
