package benchmark

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
)

// TestStormInPools: the layout that fits 10,000 members under a per-process descriptor limit, at
// N=6 — members 4 to a `rebalancelab member-pool` process (2 pools), 3 broker processes — on the zk
// and classic eras: every cell completes with the counts its case fixes, and the resource figures
// cover the child processes: broker_cpu_ms is the broker processes' CPU (more than 0, less than
// cpu_ms, which adds the pools' and this process's), and the peak RSS holds at least the three
// brokers' and two pools' resident sets (each above 8 MiB). The kgo peer runs in pools too
// (member-pool --client kgo): its storm is stable, seen from the broker, and its resources count its
// two pool processes.
func TestStormInPools(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	const n = 6
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := RunStorm(ctx, StormOptions{Eras: []string{"zk", "classic"}, Consumers: []int{n}, Deadline: 60 * time.Second,
		Seed: 1, Version: "test", LabLog: quietLog(), Brokers: 3, MembersPerProcess: 4, MemberBinary: testutil.Binary(t),
		Peer: true})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	_ = res.WriteTable(&table, false)
	t.Logf("\n%s", table.String())
	if res.Params["brokers"] != 3 || res.Params["members_per_process"] != 4 {
		t.Errorf("params brokers %v, members_per_process %v", res.Params["brokers"], res.Params["members_per_process"])
	}
	if len(res.Cells) != 6 {
		t.Fatalf("%d cells, want 6", len(res.Cells))
	}
	participants := map[string]int64{CaseStorm: n, CaseJoin: n + 1, CaseLeave: n}
	for _, c := range res.Cells {
		name := c.Era + "/" + c.Case
		if c.StoppedReason != "" {
			t.Errorf("%s stopped: %s (errors %v)", name, c.StoppedReason, c.Errors)
			continue
		}
		if got, _ := c.Figure(figures.FigRebalanceParticipants); got != participants[c.Case] {
			t.Errorf("%s: rebalance_participants %d, want %d", name, got, participants[c.Case])
		}
		if got, _ := c.Figure(figures.FigLost); got != 0 {
			t.Errorf("%s: lost %d", name, got)
		}
		cpu, _ := c.Figure(FigCPUMs)
		broker, ok := c.Figure(FigBrokerCPUMs)
		if !ok || broker <= 0 || broker >= cpu {
			t.Errorf("%s: broker_cpu_ms %d (present %v), cpu_ms %d: want 0 < broker < cpu", name, broker, ok, cpu)
		}
		if rss, _ := c.Figure(FigPeakRSSBytes); rss < 5*8<<20 {
			t.Errorf("%s: peak_rss_bytes %d, want the brokers' and pools' too (> 40 MiB)", name, rss)
		}
		for _, ch := range c.Checks {
			if !ch.OK {
				t.Errorf("%s: check %q: %s", name, ch.Check, ch.Got)
			}
		}
		switch p := c.Peer; {
		case c.Era != "classic" || c.Case != CaseStorm:
			if p != nil {
				t.Errorf("%s: a peer storm %+v, want none", name, p)
			}
		case p == nil:
			t.Errorf("%s: no kgo peer storm", name)
		case p.StoppedReason != "" || p.TimeToStableMs <= 0 || p.NewconsumerTimeToStableMs <= 0 || p.Ratio <= 0:
			t.Errorf("%s: kgo peer %+v: want stable from the broker side, with ours and the ratio", name, p)
		case p.Processes != 2:
			t.Errorf("%s: kgo peer ran in %d pool processes, want 2 (6 members, 4 to a pool)", name, p.Processes)
		case p.Figures[FigPeakRSSBytes] < 5*8<<20:
			t.Errorf("%s: kgo peer peak_rss_bytes %d, want its two pools' and the brokers' too (> 40 MiB)", name, p.Figures[FigPeakRSSBytes])
		}
	}
}

// With member pools the descriptors that count are a pool's and the coordinator's broker's: a limit
// too low for the broker's share says so, naming the broker process, before anything starts.
func TestStormFDShortageInPools(t *testing.T) {
	lowerNoFile(t, 3000)
	for _, tc := range []struct {
		n, k int
		want string
	}{
		{1000, 250, "the coordinator's broker process needs about 4692 file descriptors for 1000 members and 1000 partitions at replication factor 3 over 3 brokers"},
		{1000, 2000, "a pool of 2000 members needs about 4512 file descriptors"},
	} {
		res, err := RunStorm(context.Background(), StormOptions{Eras: []string{"classic"}, Consumers: []int{tc.n},
			Brokers: 3, MembersPerProcess: tc.k, MemberBinary: "/nonexistent"})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range res.Cells {
			if !strings.Contains(c.StoppedReason, tc.want) || !strings.Contains(c.StoppedReason, "RLIMIT_NOFILE is 3000") {
				t.Errorf("K=%d %s: stopped_reason %q, want %q", tc.k, c.Case, c.StoppedReason, tc.want)
			}
		}
	}
	// The kgo peer in pools: a pool of kgo members, and the coordinator's broker, are held to the limit.
	if why := peerFDShortage(StormOptions{Brokers: 3, MembersPerProcess: 1000}, 200); !strings.Contains(why, "kgo peer not run: a pool of 1000 kgo members needs about 4512 file descriptors") {
		t.Errorf("kgo peer, K=1000: %q", why)
	}
	if why := peerFDShortage(StormOptions{Brokers: 3, MembersPerProcess: 250}, 1000); !strings.Contains(why, "kgo peer not run: the coordinator's broker process needs about 4692 file descriptors") {
		t.Errorf("kgo peer, N=1000 K=250: %q", why)
	}
	if why := peerFDShortage(StormOptions{Brokers: 3, MembersPerProcess: 250}, 200); why != "" {
		t.Errorf("kgo peer, N=200 K=250: %s", why)
	}
	// N=200 fits in the same layout: no reason up front.
	if why := fdShortage(StormOptions{Brokers: 3, MembersPerProcess: 250}, 200); why != "" {
		t.Errorf("N=200: %s", why)
	}
}
