package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"

	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// hostHelper runs in a copy of the test binary inside a test host (LAB_TEST_HOST_HELPER):
// "listen:ADDR" accepts and closes connections on ADDR, printing "listening" once bound; "dial:ADDR"
// dials ADDR with a 1 s timeout and prints "ok" or "err <error>"; "clock" serves the clock protocol.
func hostHelper(mode string) {
	switch {
	case strings.HasPrefix(mode, "listen:"):
		l, err := net.Listen("tcp", strings.TrimPrefix(mode, "listen:"))
		if err != nil {
			fmt.Println("err", err)
			os.Exit(1)
		}
		fmt.Println("listening")
		for {
			c, err := l.Accept()
			if err != nil {
				os.Exit(0)
			}
			c.Close()
		}
	case strings.HasPrefix(mode, "dial:"):
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(mode, "dial:"), time.Second)
		if err != nil {
			fmt.Println("err", err)
			os.Exit(0)
		}
		c.Close()
		fmt.Println("ok")
	case mode == "clock":
		_ = ServeClock(os.Stdin, os.Stdout)
	}
	os.Exit(0)
}

func helperArgv(mode string) []string {
	return []string{"env", "LAB_TEST_HOST_HELPER=" + mode, os.Args[0], "-test.run=^$"}
}

// dialFrom dials addr from inside h (nil: from this process) and returns "ok" or the error.
func dialFrom(t *testing.T, h *Host, addr string) string {
	t.Helper()
	if h == nil {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return "err " + err.Error()
		}
		c.Close()
		return "ok"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := h.Exec(ctx, helperArgv("dial:"+addr)...)
	if err != nil {
		t.Fatalf("dial helper in host %d: %v", h.Index(), err)
	}
	return strings.TrimSpace(string(out))
}

func createHosts(t *testing.T, n int) *Hosts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hs, err := CreateHosts(ctx, n)
	if err != nil {
		t.Fatalf("CreateHosts(%d): %v", n, err) // never a skip: the reason is the failure
	}
	t.Cleanup(func() {
		if err := hs.Close(); err != nil {
			t.Errorf("Hosts.Close: %v", err)
		}
	})
	return hs
}

// leftovers lists the namespaces and links whose names start with prefix.
func leftovers(t *testing.T, prefix string) []string {
	t.Helper()
	var out []string
	b, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			out = append(out, "netns "+f[0])
		}
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, prefix) {
			out = append(out, "link "+i.Name)
		}
	}
	return out
}

func isOK(s string) bool { return s == "ok" }

// TestHostsNetwork: three hosts reach each other and the bridge; a partition drops exactly the
// pair's traffic; a link down cuts the host off from everyone; Close leaves no namespace or link.
func TestHostsNetwork(t *testing.T) {
	testutil.Needs(t, testutil.Root)
	hs := createHosts(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if got := len(leftovers(t, hs.Prefix())); got != 3+3+1 { // 3 namespaces, 3 outer veth ends, the bridge
		t.Fatalf("after CreateHosts(3): %d namespaces and links with prefix %s, want 7: %v", got, hs.Prefix(), leftovers(t, hs.Prefix()))
	}
	if !strings.HasPrefix(hs.Subnet(), HostSubnetBase+".") || !strings.HasSuffix(hs.Subnet(), ".0/24") {
		t.Fatalf("Subnet() = %q", hs.Subnet())
	}
	for i, h := range hs.Hosts() {
		if want := strings.TrimSuffix(hs.Subnet(), "0/24") + strconv.Itoa(i+1); h.Addr() != want {
			t.Fatalf("host %d Addr() = %q, want %q", i+1, h.Addr(), want)
		}
		// A namespace has no default route: only its /24 and loopback.
		out, err := h.Exec(ctx, "ip", "-4", "route", "show")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); strings.Contains(got, "default") || !strings.HasPrefix(got, strings.TrimSuffix(hs.Subnet(), "/24")+"/24 dev eth0") {
			t.Fatalf("host %d routes: %q, want only %s dev eth0", i+1, got, hs.Subnet())
		}
	}
	// A listener on host 2 (a helper process inside its namespace).
	h1, h2, h3 := hs.Host(1), hs.Host(2), hs.Host(3)
	addr := net.JoinHostPort(h2.Addr(), "7070")
	l := h2.Command(helperArgv("listen:" + addr)...)
	out, err := l.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Process.Kill(); _ = l.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "listening" {
		t.Fatalf("listener in host 2: %q %v", line, err)
	}
	check := func(stage string, from *Host, want bool) {
		t.Helper()
		got := dialFrom(t, from, addr)
		name := "this process (bridge)"
		if from != nil {
			name = fmt.Sprintf("host %d", from.Index())
		}
		if isOK(got) != want {
			t.Fatalf("%s: dial %s from %s: %s, want reachable=%v", stage, addr, name, got, want)
		}
	}
	check("start", h1, true)
	check("start", h3, true)
	check("start", nil, true)

	if err := hs.Partition(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	check("partition 1|2", h1, false)
	check("partition 1|2", h3, true)
	check("partition 1|2", nil, true)
	if err := hs.Heal(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	check("healed 1|2", h1, true)

	if err := h2.LinkDown(ctx); err != nil {
		t.Fatal(err)
	}
	if !h2.Down() {
		t.Fatal("Down() = false after LinkDown")
	}
	check("host 2 link down", h1, false)
	check("host 2 link down", h3, false)
	check("host 2 link down", nil, false)
	if err := h2.LinkUp(ctx); err != nil {
		t.Fatal(err)
	}
	// The link's carrier comes back within moments of `ip link set up`.
	testutil.WaitFor(t, 10*time.Second, "host 2 reachable again after LinkUp", func() bool { return isOK(dialFrom(t, h1, addr)) })
	check("host 2 link up", nil, true)

	// Netem: as the probe found it.
	err = h3.Netem(ctx, 20*time.Millisecond, 0)
	if caps := hs.Capabilities(); !caps.Netem {
		if !errors.Is(err, ErrNoNetem) || caps.NetemReason == "" {
			t.Fatalf("Netem without the qdisc: %v (reason %q), want ErrNoNetem with the probe's reason", err, caps.NetemReason)
		}
	} else if err != nil {
		t.Fatalf("Netem: %v", err)
	} else if err := h3.Netem(ctx, 0, 0); err != nil {
		t.Fatalf("Netem off: %v", err)
	}

	_ = l.Process.Kill()
	_ = l.Wait()
	if err := hs.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if left := leftovers(t, hs.Prefix()); len(left) != 0 {
		t.Fatalf("after Close: %v", left)
	}
}

// TestStaleHostsRemoved: names left by a run whose process is gone are removed at the next start;
// those of a live process are not.
func TestStaleHostsRemoved(t *testing.T) {
	testutil.Needs(t, testutil.Root)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dead := 0
	for pid := 4_000_000; pid > 1; pid-- { // a pid no process has
		if !processAlive(pid) {
			dead = pid
			break
		}
	}
	stale := fmt.Sprintf("rbl%s.1-", strconv.FormatInt(int64(dead), 36))
	live := fmt.Sprintf("rbl%s.zz-", strconv.FormatInt(int64(os.Getpid()), 36))
	for _, p := range []string{stale, live} {
		if err := ipCmd(ctx, "ip", "netns", "add", p+"h1"); err != nil {
			t.Fatal(err)
		}
		if err := ipCmd(ctx, "ip", "link", "add", p+"br", "type", "bridge"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = ipCmd(context.Background(), "ip", "netns", "del", live+"h1")
		_ = ipCmd(context.Background(), "ip", "link", "del", live+"br")
	})
	removed, err := RemoveStaleHosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{stale + "h1", stale + "br"} {
		found := false
		for _, r := range removed {
			found = found || r == n
		}
		if !found {
			t.Fatalf("RemoveStaleHosts removed %v, want %s among them", removed, n)
		}
	}
	if left := leftovers(t, stale); len(left) != 0 {
		t.Fatalf("stale names left: %v", left)
	}
	if left := leftovers(t, live); len(left) != 2 {
		t.Fatalf("a live process's names: %v, want its namespace and bridge kept", left)
	}
}

// TestHostClockOffset: a namespace host shares this machine's clock, so the measured offset is
// within the round trip's uncertainty (± RTT/2) of 0.
func TestHostClockOffset(t *testing.T) {
	testutil.Needs(t, testutil.Root)
	hs := createHosts(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := hs.Host(1).ClockOffset(ctx, helperArgv("clock"), 9)
	if err != nil {
		t.Fatal(err)
	}
	if s.Samples != 9 || s.RTTMs <= 0 || s.RTTMs > 1000 {
		t.Fatalf("clock sample %+v: want 9 samples and a round trip in (0, 1000] ms", s)
	}
	if abs := max(s.OffsetMs, -s.OffsetMs); abs > s.RTTMs/2+0.01 {
		t.Fatalf("offset %.3f ms outside ± RTT/2 (%.3f ms) of 0 on the same clock", s.OffsetMs, s.RTTMs/2)
	}
}

// TestLabInHost: ZooKeeper and a broker process run inside host 1, on its address; another host and
// this process (over the bridge) reach both; host 1's link down cuts them off from host 2.
func TestLabInHost(t *testing.T) {
	testutil.Needs(t, testutil.Root, testutil.ZooKeeper)
	hs := createHosts(t, 2)
	bin := rebalancelabBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h1, h2 := hs.Host(1), hs.Host(2)
	l, err := Start(ctx, Options{Host: h1, BrokerBinary: bin, Log: testLog(t)})
	if err != nil {
		t.Fatalf("lab in host 1: %v", err)
	}
	defer l.Close()
	zkAddr, bAddr := l.ZKConnect(), l.Bootstrap()
	for _, a := range []string{zkAddr, bAddr} {
		if host, _, _ := net.SplitHostPort(a); host != h1.Addr() {
			t.Fatalf("lab address %s: want host 1's %s", a, h1.Addr())
		}
	}
	if pid := l.Brokers()[0].PID(); pid == 0 {
		t.Fatal("broker inside a host: not a process")
	}
	if out, err := FourLetter(ctx, zkAddr, "ruok"); err != nil || out != "imok" {
		t.Fatalf("ruok over the bridge: %q %v", out, err)
	}
	for _, a := range []string{zkAddr, bAddr} {
		if got := dialFrom(t, h2, a); got != "ok" {
			t.Fatalf("dial %s from host 2: %s", a, got)
		}
	}
	if err := h1.LinkDown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := dialFrom(t, h2, bAddr); got == "ok" {
		t.Fatalf("dial %s from host 2 with host 1's link down: ok, want a timeout", bAddr)
	}
	if err := h1.LinkUp(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "the broker reachable from host 2 again", func() bool { return dialFrom(t, h2, bAddr) == "ok" })
	if err := l.Close(); err != nil {
		t.Fatalf("lab Close: %v", err)
	}
}
