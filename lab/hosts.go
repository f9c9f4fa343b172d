package lab

// Test hosts as Linux network namespaces: N hosts, each a namespace with one veth pair whose outer end
// is a port of one bridge, addressed in a private /24 that exists only inside these namespaces and on
// the bridge (10.213.X.0/24: hosts .1...N, the bridge, i.e. this process's side, .254). The namespaces
// have no default route, so nothing in them can reach any other address.
//
// Every name carries the run's prefix, rbl<pid base 36>.<seq base 36>-: namespaces <prefix>h<i>,
// outer veth ends <prefix>v<i>, the bridge <prefix>br. Close removes them all; CreateHosts first
// removes those of runs whose process is gone (a killed run), found by that prefix.
//
// Faults as the network does them: LinkDown sets the host's outer veth end down (its TCP connections
// stay open and silent, new ones time out, as with a pulled cable); Partition adds blackhole routes
// between two hosts inside both namespaces (packets between their addresses are dropped, the other
// hosts still reach both); Netem sets a netem qdisc (delay, loss) on the host's interface when the
// kernel has sch_netem (Capabilities.Netem), else it fails with ErrNoNetem.
//
// Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and Debian's iproute2 (`ip`, `tc`).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// HostSubnetBase is the /16 the hosts' /24s come from (one /24 per Hosts, chosen unused).
const HostSubnetBase = "10.213"

// hostBridgeOctet is the bridge's address in each /24 (the runner's side).
const hostBridgeOctet = 254

// MaxHosts bounds CreateHosts' n (addresses .1 to .MaxHosts; names stay within 15 bytes).
const MaxHosts = 64

// ErrNoNetem: the kernel offers no netem qdisc here (no sch_netem module); delay and loss must come
// from elsewhere (the runner uses its proxies for delay).
var ErrNoNetem = errors.New("lab: no netem qdisc in this kernel (tc: \"Specified qdisc kind is unknown\"; sch_netem is not available)")

// Capabilities is what the kernel offers for test hosts, as ProbeHosts found it.
type Capabilities struct {
	Netns  bool `json:"netns"`
	Veth   bool `json:"veth"`
	Bridge bool `json:"bridge"`
	Netem  bool `json:"netem"`
	// NetemReason says why Netem is false ("" when it is true).
	NetemReason string `json:"netem_reason,omitempty"`
}

// Hosts is a set of test hosts (network namespaces on one bridge) created by CreateHosts.
type Hosts struct {
	prefix     string
	bridge     string
	subnet     string // "10.213.X"
	bridgeAddr string
	hosts      []*Host
	caps       Capabilities

	closeOnce sync.Once
	closeErr  error
}

// Host is one test host: a network namespace with one interface, eth0, at Addr.
type Host struct {
	hs    *Hosts
	index int // 1-based
	ns    string
	veth  string // outer end, a bridge port, in this process's namespace
	addr  string

	mu          sync.Mutex
	down        bool
	partitioned map[int]bool
	netem       bool
}

var hostSeq atomic.Int64

// hostNameRE matches the names this package creates: prefix rbl<pid36>.<seq36>- and a role.
var hostNameRE = regexp.MustCompile(`^rbl([0-9a-z]+)\.([0-9a-z]+)-(h[0-9]+|v[0-9]+|br|p[hv])$`)

func runPrefix() string {
	return fmt.Sprintf("rbl%s.%s-", strconv.FormatInt(int64(os.Getpid()), 36), strconv.FormatInt(hostSeq.Add(1), 36))
}

// ipCmd runs `ip args...` (or another iproute2 tool) and returns its error with the output.
func ipCmd(ctx context.Context, tool string, args ...string) error {
	out, err := exec.CommandContext(ctx, tool, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", tool, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// needIPRoute2 fails naming the package when `ip` or `tc` is missing.
func needIPRoute2() error {
	for _, t := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("lab: test hosts need %s (Debian's iproute2: apt-get install iproute2): %w", t, err)
		}
	}
	return nil
}

// ProbeHosts finds what the kernel offers for test hosts by making one of each (a namespace, a veth
// pair into it, a bridge, a netem qdisc) and removing them. It fails, naming the reason, when
// namespaces, veth pairs or bridges cannot be made (not root, no iproute2, a kernel without them);
// a missing netem is no error: Capabilities.Netem is false with NetemReason.
func ProbeHosts(ctx context.Context) (Capabilities, error) {
	var c Capabilities
	if err := needIPRoute2(); err != nil {
		return c, err
	}
	p := runPrefix()
	ns, br, veth := p+"ph", p+"br", p+"pv"
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = ipCmd(cctx, "ip", "link", "del", veth)
		_ = ipCmd(cctx, "ip", "link", "del", br)
		_ = ipCmd(cctx, "ip", "netns", "del", ns)
	}()
	if err := ipCmd(ctx, "ip", "netns", "add", ns); err != nil {
		return c, fmt.Errorf("lab: test hosts need network namespaces (root, CAP_SYS_ADMIN): %w", err)
	}
	c.Netns = true
	if err := ipCmd(ctx, "ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns); err != nil {
		return c, fmt.Errorf("lab: test hosts need veth pairs (CONFIG_VETH): %w", err)
	}
	c.Veth = true
	if err := ipCmd(ctx, "ip", "link", "add", br, "type", "bridge"); err != nil {
		return c, fmt.Errorf("lab: test hosts need a bridge (CONFIG_BRIDGE): %w", err)
	}
	c.Bridge = true
	if err := ipCmd(ctx, "ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", "root", "netem", "delay", "1ms"); err != nil {
		c.NetemReason = err.Error()
	} else {
		c.Netem = true
	}
	return c, nil
}

// CreateHosts probes the kernel (ProbeHosts), removes what killed runs left (RemoveStaleHosts), and
// creates n hosts on a new bridge in an unused 10.213.X.0/24. Every host reaches every other and the
// bridge address (BridgeAddr, this process's side); nothing else. On error whatever was made is removed.
func CreateHosts(ctx context.Context, n int) (*Hosts, error) {
	if n < 1 || n > MaxHosts {
		return nil, fmt.Errorf("lab: %d test hosts: want 1..%d", n, MaxHosts)
	}
	if _, err := RemoveStaleHosts(ctx); err != nil {
		return nil, err
	}
	caps, err := ProbeHosts(ctx)
	if err != nil {
		return nil, err
	}
	hs := &Hosts{prefix: runPrefix(), caps: caps}
	hs.bridge = hs.prefix + "br"
	unlock, err := lockSubnets()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if hs.subnet, err = freeSubnet(); err != nil {
		return nil, err
	}
	hs.bridgeAddr = fmt.Sprintf("%s.%d", hs.subnet, hostBridgeOctet)
	fail := func(err error) (*Hosts, error) {
		hs.Close()
		return nil, err
	}
	steps := [][]string{
		{"link", "add", hs.bridge, "type", "bridge"},
		{"addr", "add", hs.bridgeAddr + "/24", "dev", hs.bridge},
		{"link", "set", hs.bridge, "up"},
	}
	for _, s := range steps {
		if err := ipCmd(ctx, "ip", s...); err != nil {
			return fail(fmt.Errorf("lab: bridge: %w", err))
		}
	}
	for i := 1; i <= n; i++ {
		h := &Host{hs: hs, index: i, ns: fmt.Sprintf("%sh%d", hs.prefix, i), veth: fmt.Sprintf("%sv%d", hs.prefix, i),
			addr: fmt.Sprintf("%s.%d", hs.subnet, i), partitioned: map[int]bool{}}
		hs.hosts = append(hs.hosts, h)
		if err := ipCmd(ctx, "ip", "netns", "add", h.ns); err != nil {
			return fail(fmt.Errorf("lab: host %d: %w", i, err))
		}
		for _, s := range [][]string{
			{"link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.ns},
			{"link", "set", h.veth, "master", hs.bridge},
			{"link", "set", h.veth, "up"},
			{"netns", "exec", h.ns, "ip", "link", "set", "lo", "up"},
			{"netns", "exec", h.ns, "ip", "addr", "add", h.addr + "/24", "dev", "eth0"},
			{"netns", "exec", h.ns, "ip", "link", "set", "eth0", "up"},
		} {
			if err := ipCmd(ctx, "ip", s...); err != nil {
				return fail(fmt.Errorf("lab: host %d: %w", i, err))
			}
		}
	}
	return hs, nil
}

// lockSubnets serialises the choice of a /24 among processes on this machine (flock on a file in
// /run/lock or the temp dir).
func lockSubnets() (func(), error) {
	dir := "/run/lock"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = os.TempDir()
	}
	f, err := os.OpenFile(dir+"/rebalancelab-hosts.lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lab: hosts lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lab: hosts lock: %w", err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// freeSubnet returns a 10.213.X with no address of this machine's namespace in 10.213.X.0/24.
func freeSubnet() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", fmt.Errorf("lab: interface addresses: %w", err)
	}
	used := map[string]bool{}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip4 := ipn.IP.To4(); ip4 != nil {
				used[fmt.Sprintf("%d.%d.%d", ip4[0], ip4[1], ip4[2])] = true
			}
		}
	}
	start := os.Getpid() % 250
	for k := range 250 {
		s := fmt.Sprintf("%s.%d", HostSubnetBase, 1+(start+k)%250)
		if !used[s] {
			return s, nil
		}
	}
	return "", fmt.Errorf("lab: no free /24 in %s.0.0/16 for test hosts", HostSubnetBase)
}

// RemoveStaleHosts removes the namespaces and links left by runs whose process is gone (their names'
// prefix carries the pid), and returns their names.
func RemoveStaleHosts(ctx context.Context) ([]string, error) {
	if err := needIPRoute2(); err != nil {
		return nil, err
	}
	stale := func(name string) bool {
		m := hostNameRE.FindStringSubmatch(name)
		if m == nil {
			return false
		}
		pid, err := strconv.ParseInt(m[1], 36, 64)
		return err == nil && (int(pid) != os.Getpid() && !processAlive(int(pid)))
	}
	var removed []string
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("lab: ip netns list: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && stale(f[0]) {
			if err := ipCmd(ctx, "ip", "netns", "del", f[0]); err != nil {
				return removed, fmt.Errorf("lab: remove stale namespace: %w", err)
			}
			removed = append(removed, f[0])
		}
	}
	links, err := net.Interfaces()
	if err != nil {
		return removed, fmt.Errorf("lab: interfaces: %w", err)
	}
	for _, l := range links {
		if stale(l.Name) {
			// A veth end may already be gone with its namespace's peer.
			if err := ipCmd(ctx, "ip", "link", "del", l.Name); err == nil {
				removed = append(removed, l.Name)
			}
		}
	}
	return removed, nil
}

// Capabilities is what ProbeHosts found.
func (hs *Hosts) Capabilities() Capabilities { return hs.caps }

// Prefix is the run's name prefix ("rbl<pid36>.<seq36>-").
func (hs *Hosts) Prefix() string { return hs.prefix }

// Subnet is the hosts' /24, "10.213.X.0/24".
func (hs *Hosts) Subnet() string { return hs.subnet + ".0/24" }

// BridgeAddr is this process's address on the hosts' network ("10.213.X.254"): where proxies the
// hosts must reach listen.
func (hs *Hosts) BridgeAddr() string { return hs.bridgeAddr }

// Hosts returns the hosts in order (Hosts()[0] is host 1).
func (hs *Hosts) Hosts() []*Host { return hs.hosts }

// Host returns host i (1-based), or nil.
func (hs *Hosts) Host(i int) *Host {
	if i < 1 || i > len(hs.hosts) {
		return nil
	}
	return hs.hosts[i-1]
}

// Close removes every namespace, veth pair and the bridge (processes still running inside a
// namespace keep it alive, unnamed, until they exit). Safe to call twice.
func (hs *Hosts) Close() error {
	hs.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var errs []error
		for _, h := range hs.hosts {
			if err := ipCmd(ctx, "ip", "netns", "del", h.ns); err != nil {
				errs = append(errs, err)
			}
			if err := delLink(ctx, h.veth); err != nil {
				errs = append(errs, err)
			}
		}
		if err := delLink(ctx, hs.bridge); err != nil {
			errs = append(errs, err)
		}
		hs.closeErr = errors.Join(errs...)
	})
	return hs.closeErr
}

// delLink deletes link name unless it is gone. A veth end goes by itself, asynchronously, once the
// namespace holding its peer is deleted and cleaned up by the kernel: it may vanish between the
// look-up and the delete, and a delete that fails because it has is no error.
func delLink(ctx context.Context, name string) error {
	if _, err := net.InterfaceByName(name); err != nil {
		return nil
	}
	err := ipCmd(ctx, "ip", "link", "del", name)
	if err == nil {
		return nil
	}
	if _, lookErr := net.InterfaceByName(name); lookErr != nil {
		return nil // gone meanwhile
	}
	return err
}

// Partition drops every packet between hosts a and b (blackhole routes to each other's address inside
// both namespaces); each still reaches the other hosts and the bridge.
func (hs *Hosts) Partition(ctx context.Context, a, b int) error { return hs.partition(ctx, a, b, true) }

// Heal removes the partition between a and b.
func (hs *Hosts) Heal(ctx context.Context, a, b int) error { return hs.partition(ctx, a, b, false) }

func (hs *Hosts) partition(ctx context.Context, a, b int, on bool) error {
	ha, hb := hs.Host(a), hs.Host(b)
	if ha == nil || hb == nil || a == b {
		return fmt.Errorf("lab: partition %d/%d: want two distinct hosts of 1..%d", a, b, len(hs.hosts))
	}
	verb := map[bool]string{true: "add", false: "del"}[on]
	for _, p := range [][2]*Host{{ha, hb}, {hb, ha}} {
		p[0].mu.Lock()
		already := p[0].partitioned[p[1].index]
		p[0].mu.Unlock()
		if already == on {
			continue
		}
		if err := ipCmd(ctx, "ip", "netns", "exec", p[0].ns, "ip", "route", verb, "blackhole", p[1].addr+"/32"); err != nil {
			return fmt.Errorf("lab: partition host %d from %d: %w", p[0].index, p[1].index, err)
		}
		p[0].mu.Lock()
		p[0].partitioned[p[1].index] = on
		p[0].mu.Unlock()
	}
	return nil
}

// Index is the host's number, 1-based.
func (h *Host) Index() int { return h.index }

// Name is "h<index>".
func (h *Host) Name() string { return fmt.Sprintf("h%d", h.index) }

// Namespace is the network namespace's name (for `ip netns exec`).
func (h *Host) Namespace() string { return h.ns }

// Addr is the host's address (its eth0).
func (h *Host) Addr() string { return h.addr }

// Argv is argv run inside the host's namespace: `ip netns exec <ns> argv...` (the same process: ip
// execs argv, so its pid, process group and parent-death signal are argv's).
func (h *Host) Argv(argv ...string) []string {
	return append([]string{"ip", "netns", "exec", h.ns}, argv...)
}

// Command is exec.Command of argv inside the host.
func (h *Host) Command(argv ...string) *exec.Cmd {
	a := h.Argv(argv...)
	return exec.Command(a[0], a[1:]...)
}

// Exec runs argv inside the host and returns its combined output.
func (h *Host) Exec(ctx context.Context, argv ...string) ([]byte, error) {
	a := h.Argv(argv...)
	out, err := exec.CommandContext(ctx, a[0], a[1:]...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("lab: host %d: %s: %v: %s", h.index, strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// LinkDown takes the host off the network: its bridge-side veth end goes down, so nothing it sends
// leaves and nothing reaches it; TCP connections stay open on both sides and go silent.
func (h *Host) LinkDown(ctx context.Context) error { return h.setLink(ctx, false) }

// LinkUp puts the host back on the network.
func (h *Host) LinkUp(ctx context.Context) error { return h.setLink(ctx, true) }

func (h *Host) setLink(ctx context.Context, up bool) error {
	if err := ipCmd(ctx, "ip", "link", "set", h.veth, map[bool]string{true: "up", false: "down"}[up]); err != nil {
		return fmt.Errorf("lab: host %d link: %w", h.index, err)
	}
	h.mu.Lock()
	h.down = !up
	h.mu.Unlock()
	return nil
}

// Down reports whether LinkDown is in force.
func (h *Host) Down() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down
}

// Netem delays every packet the host sends by delay and drops loss percent of them (tc netem on its
// eth0; delay 0 and loss 0 remove it). ErrNoNetem when the kernel has no netem qdisc.
func (h *Host) Netem(ctx context.Context, delay time.Duration, lossPct float64) error {
	if !h.hs.caps.Netem {
		return fmt.Errorf("%w: %s", ErrNoNetem, h.hs.caps.NetemReason)
	}
	h.mu.Lock()
	on := h.netem
	h.mu.Unlock()
	if delay == 0 && lossPct == 0 {
		if !on {
			return nil
		}
		if _, err := h.Exec(ctx, "tc", "qdisc", "del", "dev", "eth0", "root"); err != nil {
			return err
		}
	} else {
		args := []string{"tc", "qdisc", "replace", "dev", "eth0", "root", "netem",
			"delay", fmt.Sprintf("%dus", delay.Microseconds()), "loss", strconv.FormatFloat(lossPct, 'f', -1, 64) + "%"}
		if _, err := h.Exec(ctx, args...); err != nil {
			return err
		}
	}
	h.mu.Lock()
	h.netem = delay != 0 || lossPct != 0
	h.mu.Unlock()
	return nil
}

// ---- clocks ----

// ClockSample is one measurement of a host's clock against this process's.
type ClockSample struct {
	OffsetMs float64 `json:"offset_ms"` // host clock − local clock at the midpoint of the round trip
	RTTMs    float64 `json:"rtt_ms"`    // the round trip of the best sample
	Samples  int     `json:"samples"`
}

// MeasureClock asks a clock server (ServeClock, on rw) for its time n times and returns the offset
// of the sample with the shortest round trip (NTP's choice): the host's clock minus this process's
// at the midpoint of that round trip. The offset is known to ± RTTMs/2.
func MeasureClock(rw io.ReadWriter, n int) (ClockSample, error) {
	if n < 1 {
		n = 1
	}
	br := bufio.NewReader(rw)
	best := ClockSample{RTTMs: -1, Samples: n}
	for range n {
		t0 := time.Now()
		if _, err := io.WriteString(rw, "t\n"); err != nil {
			return best, fmt.Errorf("lab: clock: %w", err)
		}
		line, err := br.ReadString('\n')
		t1 := time.Now()
		if err != nil {
			return best, fmt.Errorf("lab: clock: %w", err)
		}
		remote, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil {
			return best, fmt.Errorf("lab: clock: answer %q: %w", strings.TrimSpace(line), err)
		}
		rtt := t1.Sub(t0)
		mid := t0.UnixNano() + rtt.Nanoseconds()/2
		if ms := float64(rtt.Nanoseconds()) / 1e6; best.RTTMs < 0 || ms < best.RTTMs {
			best.RTTMs = ms
			best.OffsetMs = float64(remote-mid) / 1e6
		}
	}
	return best, nil
}

// ServeClock answers every line read from r with this host's time (Unix nanoseconds, one line), until
// r ends: the other side of MeasureClock (`rebalancelab clock`).
func ServeClock(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if _, err := fmt.Fprintf(w, "%d\n", time.Now().UnixNano()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// ClockOffset measures the host's clock against this process's: it runs clockArgv (a clock server,
// `rebalancelab clock`) inside the host and exchanges n samples over its stdin and stdout.
func (h *Host) ClockOffset(ctx context.Context, clockArgv []string, n int) (ClockSample, error) {
	a := h.Argv(clockArgv...)
	cmd := exec.CommandContext(ctx, a[0], a[1:]...)
	cmd.SysProcAttr = childSysProcAttr()
	in, err := cmd.StdinPipe()
	if err != nil {
		return ClockSample{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return ClockSample{}, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return ClockSample{}, fmt.Errorf("lab: host %d clock: %w", h.index, err)
	}
	s, merr := MeasureClock(struct {
		io.Reader
		io.Writer
	}{out, in}, n)
	in.Close()
	werr := cmd.Wait()
	if merr != nil {
		return s, fmt.Errorf("lab: host %d clock: %w (%v: %s)", h.index, merr, werr, strings.TrimSpace(stderr.String()))
	}
	return s, nil
}

// hostsNames lists this Hosts' namespace names (tests).
func (hs *Hosts) namespaces() []string {
	var out []string
	for _, h := range hs.hosts {
		out = append(out, h.ns)
	}
	return slices.Clip(out)
}
