package scenarios

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// hostEras are the eras TestHostLinkDown runs (REBALANCELAB_ERAS overrides): the zk era and every
// coordinator era.
func hostEras() []string {
	if v := os.Getenv("REBALANCELAB_ERAS"); v != "" {
		return strings.Split(v, ",")
	}
	return []string{"zk", "classic", "cooperative", "static"}
}

// TestHostLinkDown: host-link-down over three network-namespace hosts (ZooKeeper and the broker on h1,
// m1..m6 round-robin: h3 runs m3 and m6), h3's link down past the session timeout, then back. Every
// relation of the scenario holds on every era: just before the link comes back m1, m2, m4 and m5 own
// every partition exactly once, taken over no sooner than a session timeout less one liveness interval
// after the link went down (the server expired the downed members: it could not know sooner), and in
// the range eras exactly range's assignment over m1 m2 m4 m5 (p0,p1→m1 p2,p3→m2 p4→m4 p5→m5); once
// back, m3 and m6 learn their sessions are gone (zk session_expired; UNKNOWN_MEMBER_ID or
// ILLEGAL_GENERATION from the coordinator) and revoke everything they owned; at the end every
// partition is owned once and nothing is lost. Beside that: each member process ran in its host and
// its records carry that host's name; every host's clock offset was measured and is 0 within ± RTT/2
// (one kernel clock); the link-down is a fault window on h3.
func TestHostLinkDown(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Root)
	bin := testutil.Binary(t)
	res := runScenarioWith(t, "host-link-down", small(t, "host-link-down"), func(o *Options) {
		o.Eras, o.MembersAs, o.MemberBinary = hostEras(), MembersAsProcesses, bin
	})
	if len(res.Hosts) != 3 {
		t.Fatalf("hosts %+v, want 3", res.Hosts)
	}
	wantRuns := map[string]string{"h1": "zookeeper broker m1 m4", "h2": "m2 m5", "h3": "m3 m6"}
	for _, h := range res.Hosts {
		if got := strings.Join(h.Runs, " "); got != wantRuns[h.Name] {
			t.Errorf("host %s runs %q, want %q", h.Name, got, wantRuns[h.Name])
		}
		if c := h.Clock; c.Samples != clockSamples || c.RTTMs <= 0 || max(c.OffsetMs, -c.OffsetMs) > c.RTTMs/2+0.01 {
			t.Errorf("host %s clock %+v: want %d samples and |offset| within RTT/2 (the same clock)", h.Name, c, clockSamples)
		}
	}
	if res.HostCapabilities == nil || !res.HostCapabilities.Netns || !res.HostCapabilities.Veth || !res.HostCapabilities.Bridge {
		t.Fatalf("host capabilities %+v", res.HostCapabilities)
	}
	hostOf := map[string]string{"m1": "h1", "m4": "h1", "m2": "h2", "m5": "h2", "m3": "h3", "m6": "h3"}
	for _, e := range res.Eras {
		if !e.Applies {
			continue
		}
		for _, p := range e.Processes {
			if p.Host != hostOf[p.Member] {
				t.Errorf("%s: process of %s ran in %q, want %s", e.Era, p.Member, p.Host, hostOf[p.Member])
			}
		}
		perMember := map[string]int{}
		for _, r := range e.Records {
			if h, ok := hostOf[r.Member]; ok {
				if r.Kind == timeline.MemberStart || r.Kind == timeline.MemberStop {
					h = "" // the runner stamps these, on its own clock
				}
				if r.Host != h {
					t.Fatalf("%s: record of %s stamped by host %q, want %s: %+v", e.Era, r.Member, r.Host, h, r)
				}
				perMember[r.Member]++
			} else if r.Host != "" {
				t.Fatalf("%s: runner record with host %q: %+v", e.Era, r.Host, r)
			}
		}
		if len(perMember) != 6 {
			t.Errorf("%s: records from %v, want all six members", e.Era, perMember)
		}
		found := false
		for _, f := range e.Result.Faults {
			if f.Action == string(spec.ActHostDown) && f.Target == "h3" && !f.Open {
				found = true
				if f.DurationMs < res.Timing.MaxSessionMs() {
					t.Errorf("%s: host-down window %d ms, want at least the session timeout %d ms", e.Era, f.DurationMs, res.Timing.MaxSessionMs())
				}
			}
		}
		if !found {
			t.Errorf("%s: no closed host-down h3 fault window in %s", e.Era, fmt.Sprint(e.Result.Faults))
		}
	}
}

// TestHostSlowLink: host-slow-link over three network-namespace hosts, h3 (m3, m6) given 200 ms of
// delay and 5% loss for 4 s: both are closed fault windows on h3 of at least the hold; where the kernel
// has no netem (as here) the run says so and every link of m3 and m6 had the same latency and loss
// through its proxies; the group stays whole (every partition owned once at the end, nothing lost).
func TestHostSlowLink(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Root)
	bin := testutil.Binary(t)
	res := runScenarioWith(t, "host-slow-link", small(t, "host-slow-link"), func(o *Options) {
		o.Eras, o.MembersAs, o.MemberBinary = hostEras(), MembersAsProcesses, bin
	})
	if res.HostCapabilities == nil {
		t.Fatal("no host capabilities")
	}
	if !res.HostCapabilities.Netem {
		found := false
		for _, n := range res.Notes {
			found = found || strings.Contains(n, "host-delay and host-loss go on every proxy link")
		}
		if !found {
			t.Errorf("no netem, and no note saying the proxies stand in: %q", res.Notes)
		}
	}
	for _, e := range res.Eras {
		for _, rel := range e.Relations {
			t.Logf("%s: %s: ok=%v %s", e.Era, rel.Relation, rel.OK, rel.Got)
		}
	}
}
