package benchmark

// The broker-side view of a storm (DescribeGroups until stable) and franz-go kgo run beside ours.

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios"
)

// groupWatcher polls DescribeGroups for one group until brokerStable holds, from t0.
type groupWatcher struct {
	cancel context.CancelFunc
	done   chan struct{}
	tts    int64  // ms from t0; -1 until stable
	last   string // the last state seen, for a stopped reason
}

// watchGroup starts polling group every `every`; it gives up after deadline.
func watchGroup(ctx context.Context, bootstrap, group, topic string, partitions, n int, t0 time.Time, every, deadline time.Duration) *groupWatcher {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	w := &groupWatcher{cancel: cancel, done: make(chan struct{}), tts: -1, last: "not described yet"}
	go func() {
		defer close(w.done)
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
		if err != nil {
			w.last = err.Error()
			return
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
			gs, err := adm.DescribeGroups(dctx, group)
			dcancel()
			if err == nil {
				var ok bool
				ok, w.last = brokerStable(gs[group], topic, partitions, n)
				if ok {
					w.tts = time.Since(t0).Milliseconds()
					return
				}
			} else if ctx.Err() == nil {
				w.last = "DescribeGroups: " + err.Error()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// readyCoordinator waits (up to the deadline) until the group's coordinator answers DescribeGroups
// without an error: the first group of a lab makes the broker create and load __consumer_offsets
// (about 0.7 s here), a one-time cost that is not the storm's, so it is paid before the clock starts.
// A coordinator still not ready is left to the storm to show.
func (g *stormGroup) readyCoordinator(ctx context.Context, bootstrap, group string) {
	ctx, cancel := context.WithTimeout(ctx, g.o.Deadline)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		gs, err := adm.DescribeGroups(ctx, group)
		if err == nil && gs[group].Err == nil {
			return
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			return
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// wait waits up to d for the watcher, then stops it; it returns the time to stable (ms, -1: not
// seen) and, when not seen, why.
func (w *groupWatcher) wait(d time.Duration) (int64, string) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
	}
	w.cancel()
	<-w.done
	if w.tts >= 0 {
		return w.tts, ""
	}
	return -1, "not seen stable from the broker side (last: " + w.last + ")"
}

// brokerStable: the group, as DescribeGroups shows it, is Stable with n members and every partition
// 0..partitions-1 of topic assigned to exactly one of them. The second result describes the state.
func brokerStable(g kadm.DescribedGroup, topic string, partitions, n int) (bool, string) {
	if g.Err != nil {
		return false, "describe error: " + g.Err.Error()
	}
	as := make([]*kmsg.ConsumerMemberAssignment, len(g.Members))
	for i, m := range g.Members {
		as[i], _ = m.Assigned.AsConsumer()
	}
	return stableView(g.State, as, topic, partitions, n)
}

// stableView is brokerStable on the decoded view: the group's state and each member's assignment
// (nil: not a consumer assignment).
func stableView(groupState string, as []*kmsg.ConsumerMemberAssignment, topic string, partitions, n int) (bool, string) {
	state := fmt.Sprintf("%s with %d members", groupState, len(as))
	if groupState != "Stable" || len(as) != n {
		return false, state
	}
	count := make([]int, partitions)
	for i, ca := range as {
		if ca == nil {
			return false, fmt.Sprintf("%s, member %d has no consumer assignment", state, i)
		}
		for _, t := range ca.Topics {
			for _, p := range t.Partitions {
				if t.Topic != topic || p < 0 || int(p) >= partitions {
					return false, fmt.Sprintf("%s, unknown partition %s-%d assigned", state, t.Topic, p)
				}
				count[p]++
			}
		}
	}
	unassigned, twice := 0, 0
	for _, c := range count {
		switch {
		case c == 0:
			unassigned++
		case c > 1:
			twice++
		}
	}
	if unassigned > 0 || twice > 0 {
		return false, fmt.Sprintf("%s, %d partitions unassigned, %d assigned more than once", state, unassigned, twice)
	}
	return true, state
}

// runPeer runs the kgo storm: N kgo group members of their own group on the run's topic, created at
// once, each behind its own proxy (as our members are), polling; measured from the broker side, then
// closed (LeaveGroup) before our storm starts.
func (g *stormGroup) runPeer(ctx context.Context, s scenarios.StepInfo) *PeerStorm {
	balancer, bal := "range", kgo.RangeBalancer()
	if g.era == "cooperative" {
		balancer, bal = "cooperative-sticky", kgo.CooperativeStickyBalancer()
	}
	ps := &PeerStorm{Client: kgoClient(), Balancer: balancer, TimeToStableMs: -1, NewconsumerTimeToStableMs: -1,
		Measured: fmt.Sprintf("broker side: DescribeGroups every %s until Stable with N members and every partition assigned once", g.o.PollEvery)}
	if why := peerFDShortage(g.o, g.n); why != "" {
		ps.StoppedReason = why
		return ps
	}
	group := s.Group + ".kgo"
	g.readyCoordinator(ctx, s.Bootstrap, group)
	debug.FreeOSMemory()
	smp := startSampler(g.o.SampleEvery, s.Processes)
	t0 := time.Now()
	w := watchGroup(ctx, s.Bootstrap, group, s.Topic, g.p, g.n, t0, g.o.PollEvery, g.o.Deadline)
	pctx, stopPolling := context.WithCancel(ctx)
	var (
		wg      sync.WaitGroup
		clients []*kgo.Client
		links   []*lab.MemberLinks
		failed  string
	)
	for i := 1; i <= g.n; i++ {
		l := lab.NewMemberLinksFor(fmt.Sprintf("kgo/%s/k%d", g.era, i)) // never faulted: dials directly
		links = append(links, l)
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(strings.Split(s.Bootstrap, ",")...),
			kgo.Dialer(l.Dialer(lab.LinkFetch)),
			kgo.ClientID(fmt.Sprintf("k%d", i)),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(s.Topic), kgo.Balancers(bal),
			kgo.SessionTimeout(time.Duration(g.t.SessionTimeoutMs)*time.Millisecond),
			kgo.HeartbeatInterval(time.Duration(g.t.HeartbeatIntervalMs)*time.Millisecond),
			kgo.RebalanceTimeout(300*time.Second), // max.poll.interval.ms' default, newconsumer's rebalance timeout
			kgo.AutoCommitInterval(time.Duration(g.t.AutoCommitIntervalMs)*time.Millisecond),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(500*time.Millisecond), // fetch.max.wait.ms' default, as newconsumer
		)
		if err != nil {
			failed = fmt.Sprintf("kgo member k%d: %v", i, err)
			break
		}
		clients = append(clients, cl)
		wg.Add(1)
		go func() { // the application: poll until stopped
			defer wg.Done()
			for pctx.Err() == nil {
				if fs := cl.PollFetches(pctx); fs.IsClientClosed() {
					return
				}
			}
		}()
	}
	if failed != "" {
		w.wait(0)
		ps.StoppedReason = failed
	} else {
		tts, why := w.wait(g.o.Deadline)
		ps.TimeToStableMs = tts
		if tts < 0 {
			ps.StoppedReason = fmt.Sprintf("kgo storm: not stable within the %s deadline: %s", g.o.Deadline, why)
		}
	}
	rss, gor, cpu := smp.Stop()
	ps.Figures = map[string]int64{FigPeakRSSBytes: rss, FigGoroutinesPeak: gor, FigCPUMs: cpu}
	stopPolling()
	wg.Wait()
	var cw sync.WaitGroup
	for _, cl := range clients {
		cw.Add(1)
		go func() { defer cw.Done(); cl.Close() }() // LeaveGroup, as our members' graceful stop
	}
	cw.Wait()
	for _, l := range links {
		_ = l.Close()
	}
	return ps
}

// brokerParam is the bench JSON's "broker": the implementation the lab ran.
func brokerParam(b string) string {
	if b == "" {
		return "rebalancelab"
	}
	return b
}
