package benchmark

// Rebalance storms (issue #6, `rebalancelab bench storm`). For each N and era, one scenario run
// (scenarios.Run with its own script) measures three cells in a row on the same group:
//
//	storm: N members start at once, until the group is stable;
//	join:  one member joins that stable group of N;
//	leave: one of the N original members (chosen by the seed) leaves the group of N+1.
//
// Each cell's figures are docs/design.md's, computed from the timeline window of its trigger (scenarios.
// Compute), plus process resources sampled during the cell. A cell that cannot become stable within
// the per-cell deadline, or whose step blocks past it, stops the run of its (era, N) and says where
// and why; the cells after it are not run. In the classic and cooperative eras franz-go's kgo runs the
// same storm beside ours on the same broker, both measured from the broker side.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// The cases of a storm benchmark, in the order they run.
const (
	CaseStorm = "storm"
	CaseJoin  = "join"
	CaseLeave = "leave"
)

// StormCases lists the cases in run order.
var StormCases = []string{CaseStorm, CaseJoin, CaseLeave}

// Resource figures added to docs/design.md's in every cell.
const (
	// FigPeakRSSBytes: the highest VmRSS (/proc/self/status) sampled during the cell, bytes. Members,
	// the broker and the proxies all run in this process, so it is process-wide; VmHWM cannot be
	// reset between cells, hence sampling (every StormOptions.SampleEvery) after a GC that returns
	// free memory to the OS at the cell's start. The ZooKeeper server (a JVM) is not included.
	FigPeakRSSBytes = "peak_rss_bytes"
	// FigGoroutinesPeak: the most goroutines of this process sampled during the cell.
	FigGoroutinesPeak = "goroutines_peak"
	// FigCPUMs: user+system CPU of this process (getrusage RUSAGE_SELF) during the cell, ms: members,
	// broker, proxies, runner. The ZooKeeper server's CPU is not included.
	FigCPUMs = "cpu_ms"
)

// CellFigureNames are the keys of every cell's figures: scenarios.FigureNames, then the resource
// figures.
var CellFigureNames = append(append([]string(nil), scenarios.FigureNames...), FigPeakRSSBytes, FigGoroutinesPeak, FigCPUMs)

// DefaultStormDeadline is the per-cell deadline when StormOptions.Deadline is 0.
const DefaultStormDeadline = 120 * time.Second

// stepGrace is how long past deadline + quiet a cell's steps may block before the watchdog stops
// the run: a graceful leave (Close, LeaveGroup; zk Shutdown, closeSession) is not bounded by the
// settle's timeout.
const stepGrace = 15 * time.Second

// StormOptions configures RunStorm.
type StormOptions struct {
	// Eras as scenarios.ResolveEras takes them; nil or {"all"}: every implemented era.
	Eras []string
	// Consumers: the N of each group of cells, e.g. {10, 100, 1000}; each >= 1.
	Consumers []int
	// Partitions of each run's topic; 0: N (one partition per member), at most 1000 (the runner's bound).
	Partitions int
	// Deadline per cell: the group must be stable within it (time_to_stable_ms <= Deadline), else the
	// cell stops; 0: DefaultStormDeadline.
	Deadline time.Duration
	Seed     int64
	// Peer runs franz-go kgo storms beside ours in the classic and cooperative eras.
	Peer bool
	// Broker is the lab's broker implementation (scenarios.Options.Broker): "" or "rebalancelab", or
	// "kafka" (a real Kafka 3.9 JVM; its resources are not in this process's figures).
	Broker string
	// SampleEvery: resource sampling period, 0: 50 ms. PollEvery: the broker-side DescribeGroups poll
	// period, 0: 20 ms.
	SampleEvery time.Duration
	PollEvery   time.Duration
	Version     string
	// LabLog is the lab's, the members' and the runner's log; nil: errors only, on stderr.
	LabLog *logrus.Entry
	// RunnerProgress gets the runner's step lines; nil: none.
	RunnerProgress io.Writer
	// Progress is called when a cell (or a peer storm) starts and when everything is done.
	Progress func(StormProgress)
}

// StormProgress is one progress report: Done of Total cells are over; Era, N and Case name the one
// starting (Case "" and Era "": all done); Note says what it does first ("kgo peer storm").
type StormProgress struct {
	Done, Total int
	Era         string
	N           int
	Case        string
	Note        string
}

// StormResult is docs/design.md's bench JSON: {"params": {...}, "cells": [...]}.
type StormResult struct {
	Params map[string]any `json:"params"`
	Cells  []*StormCell   `json:"cells"`
}

// StormCell is one (era, N, case).
type StormCell struct {
	Era        string `json:"era"`
	N          int    `json:"n"`
	Case       string `json:"case"`
	Partitions int    `json:"partitions"`
	// Figures has every key of CellFigureNames; a value is null only when the cell did not run.
	// time_to_stable_ms is scenarios.NeverStable (-1) when the group did not become stable.
	Figures map[string]*int64 `json:"figures"`
	// NotApplicable: figures the era cannot produce (0 here, no evidence): scenarios.NotApplicable.
	NotApplicable []string `json:"not_applicable"`
	// StoppedReason is "" when the cell completed (stable within the deadline); otherwise where and why
	// it stopped, or why it did not run.
	StoppedReason string `json:"stopped_reason"`
	// WindowEnd is the figures window's end (scenarios.EndStable, EndNextTrigger, EndOfRun).
	WindowEnd string `json:"window_end,omitempty"`
	// ElapsedMs: wall time of the cell, from its trigger until the group had stayed stable for the
	// settle's quiet period (or the cell stopped).
	ElapsedMs int64 `json:"elapsed_ms"`
	// Errors: the error records (members', runner's) during the cell, at most 5, and how many there were.
	Errors      []string `json:"errors,omitempty"`
	ErrorsTotal int      `json:"errors_total,omitempty"`
	Notes       []string `json:"notes,omitempty"`
	// Checks the cell must show (zk join: zk_watch_events >= N, cross-checked with the server).
	Checks []Check `json:"checks,omitempty"`
	// ZKCrosscheck (zk era): the server's counters (mntr, wchp) over the cell's span against the
	// timeline's records over the same span (trigger until settled, so it can exceed the window).
	ZKCrosscheck *scenarios.ZKCrosscheck `json:"zk_crosscheck,omitempty"`
	// Peer (storm cells of classic and cooperative): franz-go kgo's storm on the same broker.
	Peer *PeerStorm `json:"peer,omitempty"`
}

// Check is one relation a cell must show.
type Check struct {
	Check string `json:"check"`
	OK    bool   `json:"ok"`
	Got   string `json:"got"`
}

// Figure returns the figure named name; ok=false when missing or null.
func (c *StormCell) Figure(name string) (int64, bool) {
	v := c.Figures[name]
	if v == nil {
		return 0, false
	}
	return *v, true
}

// PeerStorm is the same storm with N franz-go kgo group members (same balancer, session and heartbeat
// settings, same topic, its own group) against the same broker, run just before ours, and both
// groups' time to stable measured the same way from the broker side: DescribeGroups polled every
// PollEvery until the group is Stable with N members and every partition assigned exactly once.
type PeerStorm struct {
	Client   string `json:"client"`   // "franz-go kgo <module version>"
	Balancer string `json:"balancer"` // range | cooperative-sticky
	Measured string `json:"measured"`
	// TimeToStableMs: the kgo group's; NewconsumerTimeToStableMs: ours in this cell; -1: not stable
	// within the deadline (then the matching stopped reason says why).
	TimeToStableMs            int64 `json:"time_to_stable_ms"`
	NewconsumerTimeToStableMs int64 `json:"newconsumer_time_to_stable_ms"`
	// Ratio = newconsumer / kgo (above 1: ours slower); 0 when either did not become stable.
	Ratio float64 `json:"ratio_newconsumer_to_peer"`
	// Figures of the kgo storm: peak_rss_bytes, goroutines_peak, cpu_ms (as the cell's).
	Figures                  map[string]int64 `json:"figures"`
	StoppedReason            string           `json:"stopped_reason"`
	NewconsumerStoppedReason string           `json:"newconsumer_stopped_reason,omitempty"`
}

// RunStorm runs every (N, era) of o, smallest N first, and returns the cells in that order (cases in
// StormCases order). A cell that stops is not an error: its StoppedReason says why. Errors: bad
// options; ctx cancelled (the result then holds every cell, those not run saying so).
func RunStorm(ctx context.Context, o StormOptions) (*StormResult, error) {
	eras, err := scenarios.ResolveEras(o.Eras)
	if err != nil {
		return nil, err
	}
	if len(o.Consumers) == 0 {
		return nil, errors.New("no consumer counts (--consumers N,...)")
	}
	ns := append([]int(nil), o.Consumers...)
	sort.Ints(ns)
	for _, n := range ns {
		if n < 1 {
			return nil, fmt.Errorf("--consumers %d: want N >= 1", n)
		}
	}
	if o.Partitions < 0 || o.Partitions > 1000 {
		return nil, fmt.Errorf("--partitions %d: want 1..1000 (0: N)", o.Partitions)
	}
	if o.Deadline < 0 {
		return nil, fmt.Errorf("deadline %s: want > 0", o.Deadline)
	}
	if o.Deadline == 0 {
		o.Deadline = DefaultStormDeadline
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = 50 * time.Millisecond
	}
	if o.PollEvery <= 0 {
		o.PollEvery = 20 * time.Millisecond
	}
	if o.LabLog == nil {
		l := logrus.New()
		l.SetOutput(os.Stderr)
		l.SetLevel(logrus.ErrorLevel)
		o.LabLog = logrus.NewEntry(l)
	}
	t := scenarios.LabTiming()
	res := &StormResult{Params: map[string]any{
		"eras": eras, "consumers": ns, "partitions": partitionsParam(o.Partitions), "seed": o.Seed,
		"cell_deadline_ms": o.Deadline.Milliseconds(), "settle_quiet_ms": t.QuietMs(),
		"zookeeper.session.timeout.ms": t.ZKSessionTimeoutMs, "rebalance.backoff.ms": t.RebalanceBackoffMs,
		"session.timeout.ms": t.SessionTimeoutMs, "heartbeat.interval.ms": t.HeartbeatIntervalMs,
		"produce_interval_ms": t.ProduceIntervalMs, "sample_every_ms": o.SampleEvery.Milliseconds(),
		"describe_groups_every_ms": o.PollEvery.Milliseconds(), "peer": peerParam(o.Peer),
		"rebalancelab": o.Version, "go": runtime.Version(), "cpus": runtime.NumCPU(), "broker": brokerParam(o.Broker),
		"resources": "peak_rss_bytes, goroutines_peak: sampled in this process (members, broker, proxies) every sample_every_ms; cpu_ms: getrusage delta; the ZooKeeper JVM excluded",
		"cases":     "storm: N members start at once; join: one joins the stable group of N; leave: one of the N leaves the group of N+1",
	}}
	total := len(ns) * len(eras) * len(StormCases)
	done := 0
	for _, n := range ns {
		for _, era := range eras {
			cells := runStormGroup(ctx, o, era, n, func(k int, note string) {
				if o.Progress != nil {
					o.Progress(StormProgress{Done: done + k, Total: total, Era: era, N: n, Case: StormCases[k], Note: note})
				}
			})
			res.Cells = append(res.Cells, cells...)
			done += len(cells)
		}
	}
	if o.Progress != nil {
		o.Progress(StormProgress{Done: done, Total: total})
	}
	return res, ctx.Err()
}

func partitionsParam(p int) any {
	if p == 0 {
		return "N (one per member)"
	}
	return p
}

func peerParam(on bool) string {
	if !on {
		return "off"
	}
	return kgoClient() + " in classic (range) and cooperative (cooperative-sticky)"
}

// kgoClient names the franz-go module this binary was built with.
func kgoClient() string {
	v := "(unknown version)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/twmb/franz-go" {
				v = d.Version
			}
		}
	}
	return "franz-go kgo " + v
}

// stormGroup is one (era, N) run: three cells on one group.
type stormGroup struct {
	o        StormOptions
	era      string
	n, p     int
	t        scenarios.Timing
	cancel   context.CancelCauseFunc
	progress func(k int, note string)

	triggerAt, settleAt [3]int // step indices of each cell's trigger and settle
	cells               [3]*StormCell
	st                  [3]cellState

	mu    sync.Mutex
	where string // the step running now, for the watchdog's message

	zkBefore scenarios.ZKCounters
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
	p := o.Partitions
	if p == 0 {
		p = min(n, 1000)
	}
	g := &stormGroup{o: o, era: era, n: n, p: p, t: scenarios.LabTiming(), progress: progress}
	for k, c := range StormCases {
		g.cells[k] = &StormCell{Era: era, N: n, Case: c, Partitions: p, NotApplicable: scenarios.NotApplicable(era)}
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	g.cancel = cancel
	res, err := scenarios.Run(runCtx, scenarios.Options{
		Definition: g.scenario(), Eras: []string{era},
		Params:  scenarios.Params{Consumers: n, Partitions: p, Seed: o.Seed},
		Version: o.Version, Log: o.LabLog, LabLog: o.LabLog, Progress: o.RunnerProgress, OnStep: g.onStep,
		Broker: o.Broker,
	})
	g.finish(runCtx, ctx, res, err)
	return g.cells[:]
}

// scenario is the bench's script: storm, join, leave, each followed by a settle bounded by the
// cell's deadline plus the quiet period the settle wants.
func (g *stormGroup) scenario() *scenarios.Scenario {
	timeout := g.o.Deadline.Milliseconds() + g.t.QuietMs()
	settle := scenarios.Step{Action: scenarios.ActSettle, QuietMs: g.t.QuietMs(), TimeoutMs: timeout}
	member := func(i int) string { return "m" + strconv.Itoa(i) }
	var steps []scenarios.Step
	add := func(s scenarios.Step) { steps = append(steps, s) }
	return &scenarios.Scenario{
		Name:         "bench-storm",
		Description:  "N members start at once; one joins the stable group; one of the N leaves",
		Defaults:     scenarios.Params{Consumers: g.n, Partitions: g.p},
		MinConsumers: 1,
		MaxConsumers: 1 << 20,
		ZKNodes:      1,
		Script: func(p scenarios.Params, t scenarios.Timing, r *rand.Rand) []scenarios.Step {
			steps = nil
			g.triggerAt[0] = len(steps)
			add(scenarios.Step{Action: scenarios.ActTrigger, Name: CaseStorm})
			for _, i := range r.Perm(p.Consumers) {
				add(scenarios.Step{Action: scenarios.ActStart, Member: member(i + 1)})
			}
			g.settleAt[0] = len(steps)
			add(settle)
			g.triggerAt[1] = len(steps)
			add(scenarios.Step{Action: scenarios.ActTrigger, Name: CaseJoin})
			add(scenarios.Step{Action: scenarios.ActStart, Member: member(p.Consumers + 1)})
			g.settleAt[1] = len(steps)
			add(settle)
			g.triggerAt[2] = len(steps)
			add(scenarios.Step{Action: scenarios.ActTrigger, Name: CaseLeave})
			add(scenarios.Step{Action: scenarios.ActStop, Member: member(1 + r.IntN(p.Consumers))})
			g.settleAt[2] = len(steps)
			add(settle)
			return steps
		},
	}
}

func (g *stormGroup) peerEra() bool {
	return g.o.Peer && (g.era == "classic" || g.era == "cooperative")
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
	if k == 0 && g.era != "zk" {
		g.readyCoordinator(ctx, s.Bootstrap, s.Group)
	}
	st := &g.st[k]
	if g.era == "zk" {
		st.zkFrom = time.Now().UnixMilli()
		g.zkBefore = scenarios.SnapshotZK(ctx, s.ZKAddrs)
	}
	debug.FreeOSMemory() // a GC that returns free memory: the cell's RSS samples start from a collected heap
	st.started = true
	st.start = time.Now()
	st.sampler = startSampler(g.o.SampleEvery)
	if k == 0 && g.peerEra() {
		g.ours = watchGroup(ctx, s.Bootstrap, s.Group, s.Topic, g.p, g.n, st.start, g.o.PollEvery, g.o.Deadline)
	}
	limit := g.o.Deadline + time.Duration(g.t.QuietMs())*time.Millisecond + stepGrace
	st.watchdog = time.AfterFunc(limit, func() {
		g.mu.Lock()
		where := g.where
		g.mu.Unlock()
		g.cancel(&stopCause{fmt.Sprintf("%s: still running after %s (deadline %s + quiet %d ms + %s grace), during step %q",
			c.Case, limit, g.o.Deadline, g.t.QuietMs(), stepGrace, where)})
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
	recs := s.Records()
	opts := scenarios.FigureOptions{Partitions: map[string][]int32{s.Topic: partitionIDs(g.p)}}
	ev, ok := findEvent(scenarios.Compute(recs, g.era, opts), c.Case)
	c.Errors, c.ErrorsTotal = errorsSince(recs, st.start.UnixMilli())
	if ctx.Err() != nil { // the watchdog or the caller stopped the run during the settle
		st.interrupted = true
		return
	}
	if reason := g.stopReason(k, ok, ev, recs); reason != "" {
		c.StoppedReason = reason
	} else if !s.Settled {
		c.Notes = append(c.Notes, fmt.Sprintf("stable after %d ms but not for the %d ms quiet period before the deadline", ev.Figures.TimeToStableMs, g.t.QuietMs()))
	}
	if g.era == "zk" && ok {
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
	if c.StoppedReason != "" {
		g.cancel(&stopCause{c.StoppedReason})
	}
}

// stopReason says why cell k did not complete: no stable group within the deadline.
func (g *stormGroup) stopReason(k int, found bool, ev scenarios.Event, recs []timeline.Record) string {
	c := g.cells[k]
	if !found {
		return fmt.Sprintf("%s: no %s trigger in the timeline", c.Case, c.Case)
	}
	tts := ev.Figures.TimeToStableMs
	if ev.End == scenarios.EndStable && tts <= g.o.Deadline.Milliseconds() {
		return ""
	}
	state := g.groupState(recs)
	if ev.End == scenarios.EndStable {
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
func (g *stormGroup) zkCrosscheck(ctx context.Context, c *StormCell, s scenarios.StepInfo, recs []timeline.Record, fromMs int64, ev scenarios.Event) {
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
	c.ZKCrosscheck = cc
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
	var evs []scenarios.Event
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
			}
			c.StoppedReason = why
			if c.StoppedReason == "" {
				c.StoppedReason = c.Case + ": the run ended before the cell did"
			}
		}
		if ev, ok := findEvent(scenarios.Result{Events: evs}, c.Case); ok {
			for _, name := range scenarios.FigureNames {
				v, _ := ev.Figures.Get(name)
				c.Figures[name] = &v
			}
			c.WindowEnd = ev.End
		} else {
			for _, name := range scenarios.FigureNames {
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

func findEvent(r scenarios.Result, trigger string) (scenarios.Event, bool) {
	for _, ev := range r.Events {
		if ev.Trigger == trigger {
			return ev, true
		}
	}
	return scenarios.Event{}, false
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

// ---- resources ----

// sampler records the peak VmRSS and goroutine count of this process, and its CPU time, from start
// until Stop.
type sampler struct {
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
	cpu0     time.Duration
	peakRSS  int64
	peakGor  int64
	rss, gor int64 // results
	cpu      int64
}

func startSampler(every time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{}), cpu0: processCPU()}
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *sampler) sample() {
	if v := vmRSS(); v > s.peakRSS {
		s.peakRSS = v
	}
	if g := int64(runtime.NumGoroutine()); g > s.peakGor {
		s.peakGor = g
	}
}

// Stop ends the sampling (once; later calls return the same) and returns peak RSS (bytes), peak
// goroutines and CPU ms.
func (s *sampler) Stop() (rss, goroutines, cpuMs int64) {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		s.sample()
		s.rss, s.gor = s.peakRSS, s.peakGor
		s.cpu = (processCPU() - s.cpu0).Milliseconds()
	})
	return s.rss, s.gor, s.cpu
}

// vmRSS is this process's resident set (VmRSS in /proc/self/status), bytes; 0 where unreadable.
func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest) // "12345 kB"
			if len(f) == 2 && f[1] == "kB" {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// processCPU is user + system CPU time of this process (getrusage RUSAGE_SELF).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ---- broker-side view and the kgo peer ----

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
	group := s.Group + ".kgo"
	g.readyCoordinator(ctx, s.Bootstrap, group)
	debug.FreeOSMemory()
	smp := startSampler(g.o.SampleEvery)
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
