package benchmark

// The broker-side view of a storm (DescribeGroups until stable) and franz-go kgo run beside ours.

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/poll"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios"
	"github.com/rebalancelab/rebalancelab/scenarios/members"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
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
		if !poll.Sleep(ctx, 50*time.Millisecond) {
			return
		}
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
// once, polling; measured from the broker side, then closed (LeaveGroup) before our storm starts. With
// --members-per-process K they run K to a `member-pool --client kgo` process, as ours do; otherwise in
// this process, each dialling through its own (never faulted) member links.
func (g *stormGroup) runPeer(ctx context.Context, s scenarios.StepInfo) *PeerStorm {
	balancer := spec.Era(g.era).Assignor() // kgo's balancer names are Kafka's assignor names
	ps := &PeerStorm{Client: kgoClient(), Balancer: balancer, TimeToStableMs: -1, NewconsumerTimeToStableMs: -1,
		Measured: fmt.Sprintf("broker side: DescribeGroups every %s until Stable with N members and every partition assigned once", g.o.PollEvery)}
	if why := peerFDShortage(g.o, g.n); why != "" {
		ps.StoppedReason = why
		return ps
	}
	group := s.Group + ".kgo"
	props := make([]map[string]string, g.n)
	for i := range props {
		props[i] = map[string]string{
			"bootstrap.servers": s.Bootstrap, "group.id": group, "client.id": fmt.Sprintf("k%d", i+1),
			"partition.assignment.strategy": balancer,
			"session.timeout.ms":            strconv.FormatInt(g.t.SessionTimeoutMs, 10),
			"heartbeat.interval.ms":         strconv.FormatInt(g.t.HeartbeatIntervalMs, 10),
			"auto.commit.interval.ms":       strconv.FormatInt(g.t.AutoCommitIntervalMs, 10),
			// max.poll.interval.ms (kgo's rebalance timeout) and fetch.max.wait.ms: Kafka's defaults, as newconsumer's
		}
	}
	g.readyCoordinator(ctx, s.Bootstrap, group)
	debug.FreeOSMemory()
	var run peerRun
	if g.o.MembersPerProcess > 1 {
		run = &pooledPeer{bin: g.o.MemberBinary, perProcess: g.o.MembersPerProcess, era: g.era, topic: s.Topic,
			log: g.o.LabLog}
	} else {
		run = &inProcessPeer{topic: s.Topic, era: g.era}
	}
	smp := startSampler(g.o.SampleEvery, func() []members.ChildProcess {
		return append(s.Processes(), run.processes()...)
	})
	t0 := time.Now()
	w := watchGroup(ctx, s.Bootstrap, group, s.Topic, g.p, g.n, t0, g.o.PollEvery, g.o.Deadline)
	if err := run.start(ctx, props); err != nil {
		w.wait(0)
		ps.StoppedReason = err.Error()
	} else {
		tts, why := w.wait(g.o.Deadline)
		ps.TimeToStableMs = tts
		if tts < 0 {
			ps.StoppedReason = fmt.Sprintf("kgo storm: not stable within the %s deadline: %s", g.o.Deadline, why)
			if n, first := run.ended(); n > 0 {
				ps.StoppedReason += fmt.Sprintf("; %d kgo members ended, first %s", n, first)
			}
		}
	}
	rss, gor, cpu := smp.Stop()
	ps.Figures = map[string]int64{FigPeakRSSBytes: rss, FigGoroutinesPeak: gor, FigCPUMs: cpu}
	ps.Processes = len(run.processes())
	run.close()
	return ps
}

// peerRun is where the kgo peer's members run: this process or member-pool processes.
type peerRun interface {
	start(ctx context.Context, props []map[string]string) error
	processes() []members.ChildProcess
	ended() (n int, first string) // members that ended before close
	close()                       // every member's graceful Close (LeaveGroup), waited for
}

// pooledPeer runs the peer in `member-pool --client kgo` processes.
type pooledPeer struct {
	bin        string
	perProcess int
	era, topic string
	log        *logrus.Entry
	pools      atomic.Pointer[members.KgoPools] // set by start; the sampler reads it meanwhile
}

func (p *pooledPeer) start(_ context.Context, props []map[string]string) error {
	kp, err := members.StartKgoPools(p.bin, p.perProcess, p.era, p.topic, props, p.log)
	if err != nil {
		return fmt.Errorf("kgo peer: %w", err)
	}
	p.pools.Store(kp)
	return nil
}

func (p *pooledPeer) processes() []members.ChildProcess {
	if kp := p.pools.Load(); kp != nil {
		return kp.Processes()
	}
	return nil
}

func (p *pooledPeer) ended() (int, string) {
	if kp := p.pools.Load(); kp != nil {
		return kp.Ended()
	}
	return 0, ""
}

func (p *pooledPeer) close() {
	if kp := p.pools.Load(); kp != nil {
		kp.Close()
	}
}

// inProcessPeer runs the peer's clients in this process, each polled by a goroutine.
type inProcessPeer struct {
	topic, era string
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	clients    []*kgo.Client
	links      []*lab.MemberLinks
}

func (p *inProcessPeer) start(ctx context.Context, props []map[string]string) error {
	pctx, cancel := context.WithCancel(ctx)
	p.cancel = cancel
	for _, pr := range props {
		l := lab.NewMemberLinksFor(fmt.Sprintf("kgo/%s/%s", p.era, pr["client.id"])) // never faulted: dials directly
		p.links = append(p.links, l)
		opts, err := members.KgoOptions(p.topic, pr, l.Dialer(lab.LinkFetch))
		var cl *kgo.Client
		if err == nil {
			cl, err = kgo.NewClient(opts...)
		}
		if err != nil {
			return fmt.Errorf("kgo member %s: %w", pr["client.id"], err)
		}
		p.clients = append(p.clients, cl)
		p.wg.Add(1)
		go func() { // the application: poll until stopped
			defer p.wg.Done()
			for pctx.Err() == nil {
				if fs := cl.PollFetches(pctx); fs.IsClientClosed() {
					return
				}
			}
		}()
	}
	return nil
}

func (p *inProcessPeer) processes() []members.ChildProcess { return nil }

func (p *inProcessPeer) ended() (int, string) { return 0, "" } // a kgo client in this process does not end by itself

func (p *inProcessPeer) close() {
	if p.cancel != nil {
		p.cancel()
	}
	p.wg.Wait()
	var cw sync.WaitGroup
	for _, cl := range p.clients {
		cw.Add(1)
		go func() { defer cw.Done(); cl.Close() }() // LeaveGroup, as our members' graceful stop
	}
	cw.Wait()
	for _, l := range p.links {
		_ = l.Close()
	}
}

// brokerParam is the bench JSON's "broker": the implementation the lab ran.
func brokerParam(b string) string {
	if b == "" {
		return "rebalancelab"
	}
	return b
}
