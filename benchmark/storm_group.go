package benchmark

// One storm run per (era, N): the three cells on one group, their windows and figures, the zk
// cross-check against ZooKeeper, and why a cell stopped.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rebalancelab/rebalancelab/scenarios"
	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// stormGroup is one (era, N) run: three cells on one group.
type stormGroup struct {
	o        StormOptions
	era      string
	n, p     int
	t        spec.Timing
	cancel   context.CancelCauseFunc
	progress func(k int, note string)

	triggerAt, settleAt [3]int // step indices of each cell's trigger and settle
	cells               [3]*StormCell
	st                  [3]cellState

	mu    sync.Mutex
	where string // the step running now, for the watchdog's message; and cells' ZKCrosscheck

	zkBefore report.ZKCounters
	zkAddrs  []string      // the lab's ZooKeeper nodes (zk era)
	ours     *groupWatcher // broker-side watch of our storm (peer eras)
}

type cellState struct {
	started, ended bool
	interrupted    bool // ended while the run was being stopped: finish gives the reason
	start          time.Time
	zkFrom         int64 // ms: the server's counters were read just before
	sampler        *sampler
	watchdog       *time.Timer
}

// stopCause is a cell's reason to stop the run (the run context's cause).
type stopCause struct{ reason string }

func (s *stopCause) Error() string { return s.reason }

func runStormGroup(ctx context.Context, o StormOptions, era string, n int, progress func(int, string)) []*StormCell {
	p := stormPartitions(o, n)
	g := &stormGroup{o: o, era: era, n: n, p: p, t: stormTiming(o), progress: progress}
	for k, c := range StormCases {
		g.cells[k] = &StormCell{Era: era, N: n, Case: c, Partitions: p, NotApplicable: figures.NotApplicable(era)}
	}
	if why := fdShortage(o, n); why != "" {
		for _, c := range g.cells {
			c.Figures, c.StoppedReason = nullFigures(), why
		}
		return g.cells[:]
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	g.cancel = cancel
	res, err := scenarios.Run(runCtx, scenarios.Options{
		Definition: g.scenario(), Eras: []string{era},
		Params:  spec.Params{Consumers: n, Partitions: p, Seed: o.Seed},
		Version: o.Version, Log: o.LabLog, LabLog: o.LabLog, Progress: o.RunnerProgress, OnStep: g.onStep,
		Broker: o.Broker, Bootstrap: o.Bootstrap, ExternalZK: o.ExternalZK, Keep: o.Keep,
		KafkaDefaults: o.KafkaDefaults, BrokerConfig: o.BrokerConfig,
		MembersPerProcess: o.MembersPerProcess, MemberBinary: o.MemberBinary, BrokersAs: brokersAs(o),
	})
	g.finish(runCtx, ctx, res, err)
	return g.cells[:]
}

// scenario is the bench's script: storm, join, leave, each followed by a settle bounded by the
// cell's deadline plus the quiet period the settle wants.
func (g *stormGroup) scenario() *catalog.Scenario {
	timeout := g.o.Deadline.Milliseconds() + g.t.QuietMs()
	settle := spec.Step{Action: spec.ActSettle, QuietMs: g.t.QuietMs(), TimeoutMs: timeout}
	member := func(i int) string { return "m" + strconv.Itoa(i) }
	var steps []spec.Step
	add := func(s spec.Step) { steps = append(steps, s) }
	return &catalog.Scenario{
		Name:                   "bench-storm",
		Description:            "N members start at once; one joins the stable group; one of the N leaves",
		Defaults:               spec.Params{Consumers: g.n, Partitions: g.p},
		MinConsumers:           1,
		MaxConsumers:           1 << 20,
		ZKNodes:                1,
		Brokers:                g.o.Brokers,
		TopicReplicationFactor: g.o.ReplicationFactor,
		Script: func(p spec.Params, t spec.Timing, r *rand.Rand) []spec.Step {
			steps = nil
			g.triggerAt[0] = len(steps)
			add(spec.Step{Action: spec.ActTrigger, Name: CaseStorm})
			for _, i := range r.Perm(p.Consumers) {
				add(spec.Step{Action: spec.ActStart, Member: member(i + 1)})
			}
			g.settleAt[0] = len(steps)
			add(settle)
			g.triggerAt[1] = len(steps)
			add(spec.Step{Action: spec.ActTrigger, Name: CaseJoin})
			add(spec.Step{Action: spec.ActStart, Member: member(p.Consumers + 1)})
			g.settleAt[1] = len(steps)
			add(settle)
			g.triggerAt[2] = len(steps)
			add(spec.Step{Action: spec.ActTrigger, Name: CaseLeave})
			// m1 sorts first by name: in the range eras it owns partition 0 (static members are sorted by
			// group.instance.id), so a static leave, which sends no LeaveGroup, still changes the
			// assignment once its session expires, however many members own nothing.
			add(spec.Step{Action: spec.ActStop, Member: member(1)})
			g.settleAt[2] = len(steps)
			add(settle)
			return steps
		},
	}
}

func (g *stormGroup) peerEra() bool {
	e := spec.Era(g.era)
	return g.o.Peer && e.GroupProtocol() == spec.GroupProtocolClassic && !e.Static()
}

func (g *stormGroup) onStep(ctx context.Context, s scenarios.StepInfo) {
	g.mu.Lock()
	g.where = s.Step.String()
	g.mu.Unlock()
	for k := range g.cells {
		switch {
		case s.Index == g.triggerAt[k] && !s.Done:
			g.startCell(ctx, k, s)
		case s.Index == g.settleAt[k] && s.Done:
			g.endCell(ctx, k, s)
		}
	}
}

func (g *stormGroup) startCell(ctx context.Context, k int, s scenarios.StepInfo) {
	c := g.cells[k]
	if k == 0 && g.peerEra() {
		g.progress(k, "kgo peer storm")
		c.Peer = g.runPeer(ctx, s)
	}
	if ctx.Err() != nil {
		return
	}
	g.progress(k, "")
	if k == 0 && !spec.Era(g.era).UsesZooKeeper() {
		g.readyCoordinator(ctx, s.Bootstrap, s.Group)
	}
	st := &g.st[k]
	if spec.Era(g.era).UsesZooKeeper() {
		st.zkFrom = time.Now().UnixMilli()
		g.zkAddrs = s.ZKAddrs
		g.zkBefore = scenarios.SnapshotZK(ctx, s.ZKAddrs)
	}
	debug.FreeOSMemory() // a GC that returns free memory: the cell's RSS samples start from a collected heap
	st.started = true
	st.start = time.Now()
	st.sampler = startSampler(g.o.SampleEvery, s.Processes)
	smp := st.sampler
	smp.limit(g.o.MaxRSS, func(rss int64) {
		// the note is taken now, while the lab's ZooKeeper still runs
		g.cancel(&stopCause{fmt.Sprintf("%s: stopped at %.1f GiB resident (this process and its member and broker processes), past the %.1f GiB bound (--max-rss): the harness holds every record of the timeline",
			c.Case, float64(rss)/(1<<30), float64(g.o.MaxRSS)/(1<<30)) + g.zkServerNote(k, smp.cpuSoFar(), time.Since(smp.started).Milliseconds())})
	})
	if k == 0 && g.peerEra() {
		g.ours = watchGroup(ctx, s.Bootstrap, s.Group, s.Topic, g.p, g.n, st.start, g.o.PollEvery, g.o.Deadline)
	}
	limit := g.o.Deadline + time.Duration(g.t.QuietMs())*time.Millisecond + stepGrace
	st.watchdog = time.AfterFunc(limit, func() {
		g.mu.Lock()
		where := g.where
		g.mu.Unlock()
		g.cancel(&stopCause{fmt.Sprintf("%s: still running after %s (deadline %s + quiet %d ms + %s grace), during step %q",
			c.Case, limit, g.o.Deadline, g.t.QuietMs(), stepGrace, where) + g.zkServerNote(k, smp.cpuSoFar(), time.Since(smp.started).Milliseconds())})
	})
}

func (g *stormGroup) endCell(ctx context.Context, k int, s scenarios.StepInfo) {
	st := &g.st[k]
	if !st.started || st.ended {
		return
	}
	st.ended = true
	st.watchdog.Stop()
	c := g.cells[k]
	c.ElapsedMs = time.Since(st.start).Milliseconds()
	rss, gor, cpu := st.sampler.Stop()
	c.Figures = resourceFigures(rss, gor, cpu)
	c.Figures[FigBrokerCPUMs] = st.sampler.brokerMs
	recs := s.Records()
	opts := figures.FigureOptions{Partitions: map[string][]int32{s.Topic: partitionIDs(g.p)}}
	ev, ok := findEvent(figures.Compute(recs, g.era, opts), c.Case)
	c.Errors, c.ErrorsTotal = errorsSince(recs, st.start.UnixMilli())
	if ctx.Err() != nil { // the watchdog or the caller stopped the run during the settle
		st.interrupted = true
		return
	}
	if reason := g.stopReason(k, ok, ev, recs); reason != "" {
		c.StoppedReason = reason + g.zkServerNote(k, cpu, c.ElapsedMs)
	} else if !s.Settled {
		c.Notes = append(c.Notes, fmt.Sprintf("stable after %d ms but not for the %d ms quiet period before the deadline", ev.Figures.TimeToStableMs, g.t.QuietMs()))
	}
	if spec.Era(g.era).UsesZooKeeper() && ok {
		g.zkCrosscheck(ctx, c, s, recs, st.zkFrom, ev)
	}
	if k == 0 && g.ours != nil {
		tts, why := g.ours.wait(10 * time.Second)
		g.ours = nil
		if c.Peer != nil {
			c.Peer.NewconsumerTimeToStableMs, c.Peer.NewconsumerStoppedReason = tts, why
			if tts > 0 && c.Peer.TimeToStableMs > 0 {
				c.Peer.Ratio = float64(tts) / float64(c.Peer.TimeToStableMs)
			}
		}
	}
	if g.o.OnCell != nil {
		if ok { // the window's figures as of now (finish sets the run's own, the same window)
			for _, name := range figures.FigureNames {
				v, _ := ev.Figures.Get(name)
				c.Figures[name] = &v
			}
			c.WindowEnd = ev.End
		}
		g.o.OnCell(c)
	}
	if c.StoppedReason != "" {
		g.cancel(&stopCause{c.StoppedReason})
	}
}

// stopReason says why cell k did not complete: no stable group within the deadline.
func (g *stormGroup) stopReason(k int, found bool, ev figures.Event, recs []timeline.Record) string {
	c := g.cells[k]
	if !found {
		return fmt.Sprintf("%s: no %s trigger in the timeline", c.Case, c.Case)
	}
	tts := ev.Figures.TimeToStableMs
	if ev.End == figures.EndStable && tts <= g.o.Deadline.Milliseconds() {
		return ""
	}
	state := g.groupState(recs)
	if ev.End == figures.EndStable {
		return fmt.Sprintf("%s: stable only after %d ms, past the %s deadline (%s)", c.Case, tts, g.o.Deadline, state)
	}
	msg := fmt.Sprintf("%s: not stable within the %s deadline (%s)", c.Case, g.o.Deadline, state)
	if len(c.Errors) > 0 {
		msg += fmt.Sprintf("; %d error(s), first: %s", c.ErrorsTotal, c.Errors[0])
	}
	return msg
}

// groupState summarises the members from the timeline: live members, how many have an assignment,
// how many are rebalancing.
func (g *stormGroup) groupState(recs []timeline.Record) string {
	type m struct{ live, assigned, rebalancing bool }
	ms := map[string]*m{}
	get := func(name string) *m {
		if ms[name] == nil {
			ms[name] = &m{}
		}
		return ms[name]
	}
	for _, r := range recs {
		switch r.Kind {
		case timeline.MemberStart:
			*get(r.Member) = m{live: true}
		case timeline.MemberStop:
			get(r.Member).live = false
		case timeline.Assigned:
			get(r.Member).assigned = true
		case timeline.RebalanceBegin:
			get(r.Member).rebalancing = true
		case timeline.RebalanceEnd:
			if r.OK != nil && *r.OK {
				get(r.Member).rebalancing = false
			}
		}
	}
	var live, assigned, rebalancing int
	for _, x := range ms {
		if x.live {
			live++
			if x.assigned {
				assigned++
			}
			if x.rebalancing {
				rebalancing++
			}
		}
	}
	return fmt.Sprintf("%d live members, %d with an assignment, %d rebalancing", live, assigned, rebalancing)
}

// zkCrosscheck compares the cell's ZooKeeper records with the server (the runner's cross-check over
// the cell's span) and, for join, checks zk_watch_events >= N on both sides.
func (g *stormGroup) zkCrosscheck(ctx context.Context, c *StormCell, s scenarios.StepInfo, recs []timeline.Record, fromMs int64, ev figures.Event) {
	after := scenarios.SnapshotZK(ctx, s.ZKAddrs)
	cc := s.ZKWatchers(ctx)
	for _, r := range recs {
		if r.TsMs < fromMs {
			continue
		}
		switch r.Kind {
		case timeline.ZKOp:
			cc.TimelineZKOps++
		case timeline.ZKWatch:
			cc.TimelineWatchEvents++
		}
	}
	cc.DiffCounters(s.ZKAddrs, g.zkBefore, after)
	g.mu.Lock()
	c.ZKCrosscheck = cc
	g.mu.Unlock()
	if c.Case != CaseJoin {
		return
	}
	n := int64(g.n)
	w := ev.Figures.ZKWatchEvents
	c.Checks = append(c.Checks,
		Check{Check: "join: zk_watch_events >= N", OK: w >= n, Got: fmt.Sprintf("%d (N=%d)", w, n)},
		Check{Check: "join: the server's watches fired >= N (mntr, over the cell's span)", OK: cc.Comparable && cc.ServerWatchesFired >= n,
			Got: fmt.Sprintf("%d (timeline over the same span: %d; comparable: %v)", cc.ServerWatchesFired, cc.TimelineWatchEvents, cc.Comparable)},
		Check{Check: "join: every live member's session watches the ids path (wchp)", OK: len(cc.MembersWithoutWatch) == 0 && cc.IdsWatchersExpected == g.n+1,
			Got: fmt.Sprintf("%d sessions watch %s, %d live members, without a watch: %v", cc.IdsWatchersServer, cc.IdsPath, cc.IdsWatchersExpected, cc.MembersWithoutWatch)})
}

// finish fills every cell once the run returned: final figures from the run's timeline, and the
// reasons of cells that stopped or did not run.
func (g *stormGroup) finish(runCtx, parent context.Context, res *scenarios.RunResult, runErr error) {
	var evs []figures.Event
	if res != nil && len(res.Eras) == 1 {
		evs = res.Eras[0].Result.Events
	}
	why := ""
	switch cause := context.Cause(runCtx); {
	case parent.Err() != nil:
		why = "interrupted: " + parent.Err().Error()
	case errors.As(cause, new(*stopCause)):
		why = cause.Error()
	case runErr != nil:
		why = runErr.Error()
	}
	stoppedAt := -1
	for k, c := range g.cells {
		st := &g.st[k]
		if !st.started {
			switch {
			case stoppedAt >= 0:
				c.StoppedReason = fmt.Sprintf("not run: %s stopped", g.cells[stoppedAt].Case)
			case why != "":
				c.StoppedReason = "not run: " + why
			default:
				c.StoppedReason = "not run"
			}
			c.Figures = nullFigures()
			if stoppedAt < 0 {
				stoppedAt = k
			}
			continue
		}
		if !st.ended || st.interrupted { // stopped in the middle: the watchdog, Ctrl-C, or a runner error
			if !st.ended {
				st.ended = true
				st.watchdog.Stop()
				c.ElapsedMs = time.Since(st.start).Milliseconds()
				rss, gor, cpu := st.sampler.Stop()
				c.Figures = resourceFigures(rss, gor, cpu)
				c.Figures[FigBrokerCPUMs] = st.sampler.brokerMs
			}
			c.StoppedReason = why
			if c.StoppedReason == "" {
				c.StoppedReason = c.Case + ": the run ended before the cell did"
			}
		}
		if ev, ok := findEvent(figures.Result{Events: evs}, c.Case); ok {
			for _, name := range figures.FigureNames {
				v, _ := ev.Figures.Get(name)
				c.Figures[name] = &v
			}
			c.WindowEnd = ev.End
		} else {
			for _, name := range figures.FigureNames {
				c.Figures[name] = nil
			}
			if c.StoppedReason == "" {
				c.StoppedReason = c.Case + ": no figures (the run returned no timeline)"
			}
		}
		if c.StoppedReason != "" && stoppedAt < 0 {
			stoppedAt = k
		}
	}
	if g.ours != nil { // the storm cell never ended: stop watching
		g.ours.wait(0)
	}
}

// zkServerNote is what a zk-era cell that stopped cost, by the servers' own counters since the cell
// began (mntr: packets received, sessions the server expired, watches fired) and the CPU its
// processes used (cpuMs over elapsedMs), as a sentence to append to the stop reason ("" in other
// eras). It asks ZooKeeper: call it while the lab runs.
func (g *stormGroup) zkServerNote(k int, cpuMs, elapsedMs int64) string {
	c := g.cells[k]
	if !spec.Era(g.era).UsesZooKeeper() || len(g.zkAddrs) == 0 {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc := &report.ZKCrosscheck{}
	cc.DiffCounters(g.zkAddrs, g.zkBefore, scenarios.SnapshotZK(ctx, g.zkAddrs))
	g.mu.Lock() // the watchdog's and the memory bound's goroutines call this beside the step's
	if c.ZKCrosscheck == nil {
		c.ZKCrosscheck = cc
	}
	g.mu.Unlock()
	note := fmt.Sprintf("; the ZooKeeper server over the cell: %d packets received (%d per member), %d sessions expired, %d watches fired",
		cc.ServerPacketsReceived, cc.ServerPacketsReceived/int64(max(1, g.n)), cc.ServerSessionsExpired, cc.ServerWatchesFired)
	if !cc.Comparable {
		note += " (partial: " + strings.Join(cc.Notes, "; ") + ")"
	}
	if elapsedMs > 0 {
		note += fmt.Sprintf("; CPU %.2f of %d cores (this process and its children, %d ms over %d ms)",
			float64(cpuMs)/float64(elapsedMs), runtime.NumCPU(), cpuMs, elapsedMs)
	}
	return note
}

func findEvent(r figures.Result, trigger string) (figures.Event, bool) {
	for _, ev := range r.Events {
		if ev.Trigger == trigger {
			return ev, true
		}
	}
	return figures.Event{}, false
}

func partitionIDs(p int) []int32 {
	out := make([]int32, p)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

func resourceFigures(rss, gor, cpu int64) map[string]*int64 {
	f := nullFigures()
	f[FigPeakRSSBytes], f[FigGoroutinesPeak], f[FigCPUMs] = &rss, &gor, &cpu
	return f
}

func nullFigures() map[string]*int64 {
	f := make(map[string]*int64, len(CellFigureNames))
	for _, name := range CellFigureNames {
		f[name] = nil
	}
	return f
}

// errorsSince returns the distinct texts of error records from fromMs on (at most 5) and their count.
func errorsSince(recs []timeline.Record, fromMs int64) ([]string, int) {
	var out []string
	seen := map[string]bool{}
	n := 0
	for _, r := range recs {
		if r.Kind != timeline.Error || r.TsMs < fromMs {
			continue
		}
		n++
		text := r.Text
		if r.Member != "" && r.Member != "runner" {
			text = r.Member + ": " + text
		}
		if len(out) < 5 && !seen[text] {
			seen[text] = true
			out = append(out, text)
		}
	}
	return out, n
}
