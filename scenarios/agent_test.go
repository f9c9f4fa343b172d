package scenarios

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"net"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// startMemberHost starts `rebalancelab member-pool --listen 127.0.0.1:0` as a process of its own (a
// member host, as on another machine) and returns the address it printed; the test's cleanup stops it
// with SIGTERM and wants exit status 0.
func startMemberHost(t *testing.T) string {
	t.Helper()
	return startMemberHostIn(t, nil)
}

// startMemberHostIn is startMemberHost inside test host h (nil: this host), listening on its address.
func startMemberHostIn(t *testing.T, h *lab.Host) string {
	t.Helper()
	argv := []string{testutil.Binary(t), "member-pool", "--listen", "127.0.0.1:0"}
	if h != nil {
		argv = h.Argv(testutil.Binary(t), "member-pool", "--listen", net.JoinHostPort(h.Addr(), "0"))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("member host %d after SIGTERM: %v, want exit status 0", cmd.Process.Pid, err)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	var hello struct{ Listen string }
	if err != nil || json.Unmarshal([]byte(line), &hello) != nil || hello.Listen == "" {
		t.Fatalf("member host printed %q (%v), want {\"listen\":\"HOST:PORT\"}", line, err)
	}
	return hello.Listen
}

// TestMemberHosts: herd-effect on the zk and classic eras with its members on two member hosts (each
// a `member-pool --listen` process reached over TCP, as a machine of its own would be): the runner
// measures both clocks at the start (9 samples; on this one machine the offset is 0 within half the
// best round trip), places the pools round-robin (m1 m2 and the joining m5 on agent1, m3 m4 on
// agent2), every record a member wrote carries its host's name, each pool ended when the runner
// closed its connection, and every relation of the scenario holds. The hosts outlive the run
// (they serve the next era's pools too) and stop with exit status 0 on SIGTERM.
func TestMemberHosts(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Root)
	a1, a2 := startMemberHost(t), startMemberHost(t)
	res := runScenarioWith(t, "herd-effect", spec.Params{Consumers: 4, Partitions: 8, Seed: 1}, func(o *Options) {
		o.Eras, o.MemberBinary, o.MemberHosts = []string{"zk", "classic"}, testutil.Binary(t), []string{a1, a2}
	})
	if len(res.Hosts) != 2 {
		t.Fatalf("hosts %+v, want agent1 and agent2", res.Hosts)
	}
	want := map[string][]string{"agent1": {"m1", "m2", "m5"}, "agent2": {"m3", "m4"}}
	hostOf := map[string]string{}
	for i, h := range res.Hosts {
		if wantName, wantAddr := []string{"agent1", "agent2"}[i], []string{a1, a2}[i]; h.Name != wantName || h.Addr != wantAddr {
			t.Errorf("host %d: %s at %s, want %s at %s", i, h.Name, h.Addr, wantName, wantAddr)
		}
		c := h.Clock
		if c.Samples != 9 || c.RTTMs <= 0 || c.RTTMs > 1000 || math.Abs(c.OffsetMs) > c.RTTMs/2+0.01 {
			t.Errorf("%s: clock %+v: want 9 samples, a round trip in (0, 1000] ms and an offset within ± RTT/2 of 0 (one machine)", h.Name, c)
		}
		runs := slices.Clone(h.Runs)
		slices.Sort(runs)
		if !slices.Equal(runs, want[h.Name]) {
			t.Errorf("%s runs %v, want %v", h.Name, runs, want[h.Name])
		}
		for _, m := range h.Runs {
			hostOf[m] = h.Name
		}
	}
	for _, e := range res.Eras {
		seen := map[string]int{}
		for _, r := range e.Records {
			if !strings.HasPrefix(r.Member, "m") || r.Kind == timeline.MemberStart || r.Kind == timeline.MemberStop {
				continue // member_start and member_stop are the runner's records, stamped by its clock
			}
			seen[r.Member]++
			if want := hostOf[r.Member]; r.Host != want {
				t.Fatalf("%s: %s's %s record stamped host %q, want %q", e.Era, r.Member, r.Kind, r.Host, want)
			}
		}
		if len(seen) != 5 {
			t.Errorf("%s: records of %v, want m1..m5", e.Era, seen)
		}
		for _, p := range e.Processes {
			if p.Stop != "stop" || p.PID != 0 || (p.Host != "agent1" && p.Host != "agent2") {
				t.Errorf("%s: pool %+v, want one on a member host ended by the runner's stop", e.Era, p)
			}
		}
		if len(e.Processes) != 3 {
			t.Errorf("%s: %d pools %+v, want 3 (m1 m2, m3 m4, m5)", e.Era, len(e.Processes), e.Processes)
		}
		if len(e.Errors) > 0 {
			t.Errorf("%s: runner errors %v", e.Era, e.Errors)
		}
	}
}

// A script with a crash needs the runner's fault proxies, which member hosts cannot reach: refused
// before anything starts, naming the step; so is a member host on another machine with the lab (its
// ZooKeeper and brokers on loopback); an unreachable member host is an error naming it.
func TestMemberHostsRefused(t *testing.T) {
	o := Options{Scenario: "consumer-crash", Eras: []string{"classic"}, MemberBinary: testutil.Binary(t), MemberHosts: []string{"127.0.0.1:1"},
		Log: quietLog(), LabLog: quietLog()}
	if _, err := Run(t.Context(), o); err == nil || !strings.Contains(err.Error(), "the script's crash step needs the runner's fault proxies") {
		t.Errorf("consumer-crash on member hosts: %v", err)
	}
	o.Scenario = "herd-effect"
	o.MemberHosts = []string{"192.0.2.7:7000"} // TEST-NET-1: never dialled, refused first
	if _, err := Run(t.Context(), o); err == nil || !strings.Contains(err.Error(), "member host 192.0.2.7:7000: the lab's ZooKeeper and brokers listen on this machine's loopback") {
		t.Errorf("a lab with a member host on another machine: %v", err)
	}
	o.MemberHosts = []string{"127.0.0.1:1"}
	start := time.Now()
	if _, err := Run(t.Context(), o); err == nil || !strings.Contains(err.Error(), "member host 127.0.0.1:1") {
		t.Errorf("herd-effect on an unreachable member host: %v", err)
	} else if time.Since(start) > 2*time.Minute {
		t.Errorf("the refusal took %s", time.Since(start))
	}
}

// TestMemberHostsAcrossNamespaces: the same over real network namespaces (two test hosts on a bridge,
// lab.CreateHosts): ZooKeeper and a broker process run inside h1, the member host inside h2, and the
// runner in this namespace reaches both over the bridge. herd-effect on the zk and classic eras runs
// against h1's cluster (--bootstrap, --zk, as a cluster on another machine) with every member on h2:
// h2's clock is measured over the bridge, all of m1..m5 run there and stamp their records with its
// name, every relation holds, and the run leaves no topic behind.
func TestMemberHostsAcrossNamespaces(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Root)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	hs, err := lab.CreateHosts(ctx, 2)
	if err != nil {
		t.Fatalf("CreateHosts(2): %v", err) // never a skip: the reason is the failure
	}
	t.Cleanup(func() {
		if err := hs.Close(); err != nil {
			t.Errorf("Hosts.Close: %v", err)
		}
	})
	l, err := lab.Start(ctx, lab.Options{Host: hs.Host(1), BrokerBinary: testutil.Binary(t), Log: quietLog()})
	if err != nil {
		t.Fatalf("lab in h1: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	agent := startMemberHostIn(t, hs.Host(2))
	if host, _, _ := net.SplitHostPort(agent); host != hs.Host(2).Addr() {
		t.Fatalf("member host listens on %s, want h2's address %s", agent, hs.Host(2).Addr())
	}
	res := runScenarioWith(t, "herd-effect", spec.Params{Consumers: 4, Partitions: 8, Seed: 1}, func(o *Options) {
		o.Eras, o.MemberBinary, o.MemberHosts = []string{"zk", "classic"}, testutil.Binary(t), []string{agent}
		o.Bootstrap, o.ExternalZK = l.Bootstrap(), l.ZKConnect()
	})
	if len(res.Hosts) != 1 || res.Hosts[0].Name != "agent1" || res.Hosts[0].Addr != agent {
		t.Fatalf("hosts %+v, want agent1 at %s", res.Hosts, agent)
	}
	if c := res.Hosts[0].Clock; c.Samples != 9 || c.RTTMs <= 0 || math.Abs(c.OffsetMs) > c.RTTMs/2+0.01 {
		t.Errorf("h2's clock %+v: want 9 samples and an offset within ± RTT/2 of 0 (one kernel clock)", c)
	}
	for _, e := range res.Eras {
		members := map[string]bool{}
		for _, r := range e.Records {
			if !strings.HasPrefix(r.Member, "m") || r.Kind == timeline.MemberStart || r.Kind == timeline.MemberStop {
				continue
			}
			members[r.Member] = true
			if r.Host != "agent1" {
				t.Fatalf("%s: %s's %s record stamped %q, want agent1", e.Era, r.Member, r.Kind, r.Host)
			}
		}
		if len(members) != 5 {
			t.Errorf("%s: records of %v, want m1..m5", e.Era, members)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(l.Bootstrap()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range topics.Names() {
		if strings.HasPrefix(name, ExternalPrefix) {
			t.Errorf("topic %s left behind on h1's cluster", name)
		}
	}
}
