package benchmark

// Rebalance storms (issue #6, `rebalancelab bench storm`). For each N and era, one scenario run
// (scenarios.Run with its own script) measures three cells in a row on the same group:
//
//	storm: N members start at once, until the group is stable;
//	join:  one member joins that stable group of N;
//	leave: m1, one of the N original members, leaves the group of N+1 (m1 sorts first by name: in the
//	range eras it owns partition 0 whatever N and P, so that even a static leave, which sends no
//	LeaveGroup, changes the assignment when its session expires).
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
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios"
	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/env"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
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
	// FigBrokerCPUMs: the part of cpu_ms spent by the in-process broker's goroutines (its request
	// handlers and the group coordinator; lab.BrokerProfileLabel), from a CPU profile of the cell
	// (benchmark/cpuprofile.go): the coordinator's CPU. Null when no profile could run (bench storm
	// --cpuprofile holds the profiler) or the broker is not in this process.
	FigBrokerCPUMs = "broker_cpu_ms"
)

// CellFigureNames are the keys of every cell's figures: figures.FigureNames, then the resource
// figures.
var CellFigureNames = append(append([]string(nil), figures.FigureNames...), FigPeakRSSBytes, FigGoroutinesPeak, FigCPUMs, FigBrokerCPUMs)

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
	// Partitions of each run's topic; 0: N (one partition per member, at most 1000), at most
	// catalog.MaxPartitions.
	Partitions int
	// KafkaDefaults: Kafka's own timing (spec.KafkaTiming: 45 s sessions, 3 s heartbeats, the
	// default 300 s max.poll.interval.ms and so rebalance timeout; 0.8.2's 6 s ZooKeeper sessions and
	// 2 s rebalance.backoff.ms) instead of the lab's short one, on the members and the broker.
	KafkaDefaults bool
	// BrokerConfig: server.properties keys for the lab's broker (scenarios.Options.BrokerConfig), e.g.
	// message.max.bytes raised so that a 10,000-member group record fits.
	BrokerConfig map[string]string
	// Deadline per cell: the group must be stable within it (time_to_stable_ms <= Deadline), else the
	// cell stops; 0: DefaultStormDeadline.
	Deadline time.Duration
	Seed     int64
	// Peer runs franz-go kgo storms beside ours in the classic and cooperative eras.
	Peer bool
	// Broker is the lab's broker implementation (scenarios.Options.Broker): "" or "rebalancelab", or
	// "kafka" (a real Kafka 3.9 JVM; its resources are not in this process's figures).
	Broker string
	// Bootstrap, ExternalZK and Keep run every cell on an existing cluster instead of a lab
	// (scenarios.Options' fields of the same names): nothing is started, the run's topics and groups
	// (the kgo peer's too) are removed after each (era, N) unless Keep; the zk era needs ExternalZK.
	Bootstrap  string
	ExternalZK string
	Keep       bool
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
	// OnCell, when set, gets each cell as soon as it has ended (its figures, checks and stop reason
	// known), so that a run killed later keeps what it measured.
	OnCell func(*StormCell)
	// Brokers is the lab's number of brokers (0: 1). With more than one the topic and
	// __consumer_offsets get replication factor min(3, Brokers), and the members' metadata
	// connections spread over the brokers (as the Java client's leastLoadedNode does), so that the
	// coordinator's broker does not hold every member's two connections.
	Brokers int
	// ReplicationFactor of the storm's topic (0: min(3, Brokers)), at most Brokers. __consumer_offsets
	// keeps min(3, Brokers).
	ReplicationFactor int
	// MembersPerProcess, above 1, runs the members K to a `rebalancelab member-pool` process, and
	// the lab's brokers as processes too (scenarios.Options.MembersPerProcess, BrokersAs): each
	// process's RLIMIT_NOFILE then holds a share of the connections, which is what 10,000 members
	// need on a machine whose limit cannot be raised. MemberBinary is the rebalancelab binary.
	MembersPerProcess int
	MemberBinary      string
	// MaxRSS bounds, in bytes, the resident memory of this process and its member and broker
	// processes during a cell: past it the run stops with the reason (and, in the zk era, the
	// ZooKeeper server's counters) instead of being killed by the machine. 0: three quarters of
	// MemTotal; negative: no bound.
	MaxRSS int64
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
	// time_to_stable_ms is figures.NeverStable (-1) when the group did not become stable.
	Figures map[string]*int64 `json:"figures"`
	// NotApplicable: figures the era cannot produce (0 here, no evidence): figures.NotApplicable.
	NotApplicable []string `json:"not_applicable"`
	// StoppedReason is "" when the cell completed (stable within the deadline); otherwise where and why
	// it stopped, or why it did not run.
	StoppedReason string `json:"stopped_reason"`
	// WindowEnd is the figures window's end (figures.EndStable, EndNextTrigger, EndOfRun).
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
	ZKCrosscheck *report.ZKCrosscheck `json:"zk_crosscheck,omitempty"`
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
	// Processes: the member-pool processes its members ran in (--members-per-process), 0: this process.
	Processes int `json:"processes"`
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
	if o.Bootstrap != "" && o.ExternalZK == "" && slices.ContainsFunc(eras, func(e string) bool { return spec.Era(e).UsesZooKeeper() }) {
		return nil, scenarios.ErrExternalNeedsZK
	}
	ns := append([]int(nil), o.Consumers...)
	sort.Ints(ns)
	for _, n := range ns {
		if n < 1 {
			return nil, fmt.Errorf("--consumers %d: want N >= 1", n)
		}
	}
	if o.Partitions < 0 || o.Partitions > catalog.MaxPartitions {
		return nil, fmt.Errorf("--partitions %d: want 1..%d (0: N)", o.Partitions, catalog.MaxPartitions)
	}
	if o.Deadline < 0 {
		return nil, fmt.Errorf("deadline %s: want > 0", o.Deadline)
	}
	if o.Brokers < 0 || o.Brokers > 5 {
		return nil, fmt.Errorf("--brokers %d: want 1..5", o.Brokers)
	}
	if o.ReplicationFactor < 0 || o.ReplicationFactor > max(1, o.Brokers) {
		return nil, fmt.Errorf("--replication-factor %d: want 1..%d (the brokers; 0: min(3, brokers))", o.ReplicationFactor, max(1, o.Brokers))
	}
	if o.MembersPerProcess < 0 {
		return nil, fmt.Errorf("--members-per-process %d: want 1 or more (0 or 1: members in this process)", o.MembersPerProcess)
	}
	if (o.Brokers > 1 || o.MembersPerProcess > 1) && (o.Bootstrap != "" || o.Broker == "kafka") {
		return nil, errors.New("--brokers and --members-per-process shape the lab's own rebalancelab brokers: not with --bootstrap or --broker kafka")
	}
	if o.Deadline == 0 {
		o.Deadline = DefaultStormDeadline
	}
	switch {
	case o.MaxRSS == 0:
		o.MaxRSS = defaultMaxRSS()
	case o.MaxRSS < 0:
		o.MaxRSS = 0
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = 50 * time.Millisecond
	}
	if o.PollEvery <= 0 {
		o.PollEvery = 20 * time.Millisecond
	}
	t := o.withDefaults()
	res := &StormResult{Params: map[string]any{
		"eras": eras, "consumers": ns, "partitions": partitionsParam(o.Partitions), "seed": o.Seed,
		"cell_deadline_ms": o.Deadline.Milliseconds(), "settle_quiet_ms": t.QuietMs(),
		"zookeeper.session.timeout.ms": t.ZKSessionTimeoutMs, "rebalance.backoff.ms": t.RebalanceBackoffMs,
		"session.timeout.ms": t.SessionTimeoutMs, "heartbeat.interval.ms": t.HeartbeatIntervalMs,
		"produce_interval_ms": t.ProduceIntervalMs, "kafka_defaults": o.KafkaDefaults, "broker_config": o.BrokerConfig, "sample_every_ms": o.SampleEvery.Milliseconds(),
		"describe_groups_every_ms": o.PollEvery.Milliseconds(), "peer": peerParam(o.Peer),
		"rebalancelab": o.Version, "go": runtime.Version(), "cpus": runtime.NumCPU(), "broker": brokerParam(o.Broker),
		"resources": "peak_rss_bytes, goroutines_peak: sampled in this process (members, broker, proxies) and its member-pool and broker processes, summed, every sample_every_ms; cpu_ms: getrusage delta plus the child processes' /proc CPU; the ZooKeeper JVM excluded",
		"brokers":   max(1, o.Brokers), "replication_factor": replicationFactorParam(o), "members_per_process": membersPerProcessParam(o.MembersPerProcess), "max_rss_bytes": o.MaxRSS,
		"cases": "storm: N members start at once; join: one joins the stable group of N; leave: one of the N leaves the group of N+1",
	}}
	if o.Bootstrap != "" {
		res.Params["broker"], res.Params["bootstrap"] = scenarios.BrokerExternal, o.Bootstrap
	}
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

// withDefaults fills LabLog (env.Defaults, quiet: errors only) and returns the members' timing: the
// lab's, or Kafka's own with KafkaDefaults. The broker stays as given ("": the lab's default, which
// the parameters name as such).
func (o *StormOptions) withDefaults() spec.Timing {
	d := env.Defaults{LabLog: o.LabLog, Quiet: true, KafkaDefaults: o.KafkaDefaults}
	t := d.Fill()
	o.LabLog = d.LabLog
	return t
}

// stormTiming is the members' timing (withDefaults' on a copy of o).
func stormTiming(o StormOptions) spec.Timing {
	return o.withDefaults()
}

// replicationFactorParam is the storm topic's replication factor: StormOptions.ReplicationFactor, or
// the lab's own (min(3, brokers), as __consumer_offsets').
func replicationFactorParam(o StormOptions) int {
	if o.ReplicationFactor > 0 {
		return o.ReplicationFactor
	}
	return lab.OffsetsTopicReplicationFactor(o.Brokers)
}

// stormPartitions is P of an (era, N) run: StormOptions.Partitions, or N at most 1000.
func stormPartitions(o StormOptions, n int) int {
	if o.Partitions > 0 {
		return o.Partitions
	}
	return min(n, 1000)
}

func membersPerProcessParam(k int) any {
	if k <= 1 {
		return "all in this process"
	}
	return k
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
