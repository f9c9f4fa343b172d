package main

// Chapter 8: replication and coordinator failover. Three scenario runs on three-broker labs
// (broker-failure, coordinator-failover, durability); around their broker kill the generator reads
// the partitions' state znodes from the lab's ZooKeeper (scenarios.Options.OnStep), so that the
// chapter shows who led what, and which replicas were in sync, as the controller wrote it.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/broker/coordinator"
	"github.com/rebalancelab/rebalancelab/internal/poll"
	"github.com/rebalancelab/rebalancelab/internal/zkdata"
	"github.com/rebalancelab/rebalancelab/internal/zklog"
	"github.com/rebalancelab/rebalancelab/scenarios"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// Keys of chapter 8's runs.
const (
	runBrokerFailure = "broker-failure"
	runCoordFailover = "coordinator-failover"
	runDurability    = "durability"
)

// coordinatorEras are the eras with a group coordinator.
var coordinatorEras = spec.Names(slices.DeleteFunc(spec.Eras(), func(e spec.Era) bool { return !e.Coordinated() }))

// clusterSnapshot is what the lab's ZooKeeper and brokers said at one moment of an era's run.
type clusterSnapshot struct {
	when           string                          // "before the kill", ...
	assignment     map[int32][]int32               // the era's topic: partition → replicas
	states         map[int32]zkdata.PartitionState // the era's topic: partition → state znode
	offsets        int32                           // the group's __consumer_offsets partition, -1 when not read
	offsetReplicas []int32                         // its replicas
	offsetState    zkdata.PartitionState           // its state znode
	coordinator    int32                           // FindCoordinator's answer, -1 when it had none
	controller     int32                           // /controller's broker id
	errs           []string                        // what could not be read
	// waitedMs: after the return, how long after the settle every replica was in the ISR again (or
	// isrRejoinDeadline passed: fullISR says which).
	waitedMs int64
}

// isrRejoinDeadline bounds the wait for the returned broker to rejoin every ISR.
const isrRejoinDeadline = 60 * time.Second

// fullISR reports whether every partition of the era's topic, and the group's __consumer_offsets
// partition, has all its replicas in the ISR.
func (c clusterSnapshot) fullISR() bool {
	if len(c.states) == 0 || len(c.states) != len(c.assignment) || c.offsets < 0 {
		return false
	}
	for p, st := range c.states {
		if len(st.ISR) != len(c.assignment[p]) {
			return false
		}
	}
	return len(c.offsetState.ISR) == len(c.offsetReplicas)
}

// snapshots collects the clusterSnapshots of chapter 8's runs: run key → era → in time order.
type snapshots struct {
	mu  sync.Mutex
	got map[string]map[string][]clusterSnapshot
}

func (s *snapshots) add(run, era string, c clusterSnapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.got == nil {
		s.got = map[string]map[string][]clusterSnapshot{}
	}
	if s.got[run] == nil {
		s.got[run] = map[string][]clusterSnapshot{}
	}
	s.got[run][era] = append(s.got[run][era], c)
}

func (s *snapshots) of(run, era string) []clusterSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got[run][era])
}

// onStep returns the scenarios.Options.OnStep of run: a snapshot before the broker kill, and after
// each settle that follows it (the kill's, then the return's).
func (s *snapshots) onStep(run string) func(ctx context.Context, info scenarios.StepInfo) {
	killed := map[string]bool{} // era → the kill step has run (the runner's goroutine calls us, one era at a time)
	return func(ctx context.Context, info scenarios.StepInfo) {
		switch {
		case info.Step.Action == spec.ActBrokerKill && !info.Done:
			s.add(run, info.Era, snapshot(ctx, info, "before the kill"))
			killed[info.Era] = true
		case info.Step.Action == spec.ActSettle && info.Done && killed[info.Era]:
			if len(s.of(run, info.Era)) == 1 {
				s.add(run, info.Era, snapshot(ctx, info, "after the kill"))
				return
			}
			// After the return: once every replica is back in the ISR, or after isrRejoinDeadline (or
			// ctx's end): the snapshot taken last is the figure either way, and fullISR says which.
			start := time.Now()
			var c clusterSnapshot
			every200ms := poll.Backoff{First: 200 * time.Millisecond, Max: 200 * time.Millisecond}
			_ = every200ms.Until(ctx, isrRejoinDeadline, "every replica back in the ISR", func() bool {
				c = snapshot(ctx, info, "after the return")
				return c.fullISR()
			})
			c.waitedMs = time.Since(start).Milliseconds()
			s.add(run, info.Era, c)
		}
	}
}

// snapshot reads the era's topic's assignment and state znodes, the group's __consumer_offsets
// partition and its state, /controller, and the group's coordinator.
func snapshot(ctx context.Context, info scenarios.StepInfo, when string) clusterSnapshot {
	c := clusterSnapshot{when: when, states: map[int32]zkdata.PartitionState{}, offsets: -1, coordinator: -1, controller: -1}
	fail := func(format string, a ...any) { c.errs = append(c.errs, fmt.Sprintf(format, a...)) }
	z, _, err := zk.Connect(info.ZKAddrs, 10*time.Second, zk.WithLogger(zklog.Discard))
	if err != nil {
		fail("zookeeper: %v", err)
		return c
	}
	defer z.Close()
	state := func(topic string, p int32) (zkdata.PartitionState, bool) {
		data, _, err := z.Get(fmt.Sprintf("/brokers/topics/%s/partitions/%d/state", topic, p))
		if err != nil {
			fail("state of %s-%d: %v", topic, p, err)
			return zkdata.PartitionState{}, false
		}
		st, err := zkdata.DecodePartitionState(data)
		if err != nil {
			fail("%v", err)
			return zkdata.PartitionState{}, false
		}
		return st, true
	}
	if data, _, err := z.Get("/brokers/topics/" + info.Topic); err != nil {
		fail("assignment of %s: %v", info.Topic, err)
	} else if c.assignment, err = zkdata.DecodeTopicAssignment(data); err != nil {
		fail("%v", err)
	}
	for p := range c.assignment {
		if st, ok := state(info.Topic, p); ok {
			c.states[p] = st
		}
	}
	if data, _, err := z.Get("/controller"); err != nil {
		fail("/controller: %v", err)
	} else if id, err := zkdata.DecodeController(data); err != nil {
		fail("%v", err)
	} else {
		c.controller = id
	}
	if data, _, err := z.Get("/brokers/topics/__consumer_offsets"); err == nil {
		if a, err := zkdata.DecodeTopicAssignment(data); err == nil && len(a) > 0 {
			c.offsets = coordinator.PartitionFor(info.Group, int32(len(a)))
			c.offsetReplicas = a[c.offsets]
			if st, ok := state("__consumer_offsets", c.offsets); ok {
				c.offsetState = st
			}
		}
	}
	if !spec.Era(info.Era).UsesZooKeeper() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if id, err := scenarios.GroupCoordinator(cctx, info.Bootstrap, info.Group); err != nil {
			fail("%v", err)
		} else {
			c.coordinator = id
		}
	}
	return c
}

// ids formats broker ids as [1 2 3].
func ids(v []int32) string { return fmt.Sprint(v) }

// stateCell is a state znode as the table shows it: leader, ISR and leader epoch.
func stateCell(st zkdata.PartitionState, ok bool) string {
	if !ok {
		return "(not read)"
	}
	leader := fmt.Sprint(st.Leader)
	if st.Leader < 0 {
		leader = "none"
	}
	return fmt.Sprintf("%s · %s · %d", leader, ids(st.ISR), st.LeaderEpoch)
}

// ch8Era is the era whose snapshots chapter 8's leader table shows: the first coordinator era that ran
// with them (the zk era's group has no __consumer_offsets partition), else the zk era.
func ch8Era(res *scenarios.RunResult, snaps *snapshots, run string) (*report.EraRun, []clusterSnapshot) {
	for _, coordinatorEra := range []bool{true, false} {
		for _, era := range erasRun(res) {
			if s := snaps.of(run, era); len(s) > 0 && spec.Era(era).Coordinated() == coordinatorEra {
				return eraOf(res, spec.Era(era)), s
			}
		}
	}
	return nil, nil
}

func (g *generator) ch8() error {
	bf, cf, du := g.result(runBrokerFailure), g.result(runCoordFailover), g.result(runDurability)
	if bf == nil || cf == nil || du == nil {
		return fmt.Errorf("chapter 8 needs the runs %s, %s and %s", runBrokerFailure, runCoordFailover, runDurability)
	}

	// Who leads what: broker-failure, its first era.
	e, snaps := ch8Era(bf, &g.snaps, runBrokerFailure)
	if e == nil {
		return fmt.Errorf("%s: no era with state snapshots", runBrokerFailure)
	}
	var b strings.Builder
	killed := killTarget(e)
	fmt.Fprintf(&b, "Era `%s`, topic `%s`; %s killed with SIGKILL. Each cell: leader · ISR · leader epoch, as the state znode `/brokers/topics/<topic>/partitions/<p>/state` read then.\n\n",
		e.Era, e.Topic, killed)
	b.WriteString("| partition | replicas |")
	for _, s := range snaps {
		fmt.Fprintf(&b, " %s |", s.when)
	}
	b.WriteString("\n|---|---|")
	for range snaps {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	parts := make([]int32, 0, len(snaps[0].assignment))
	for p := range snaps[0].assignment {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		fmt.Fprintf(&b, "| %d | %s |", p, ids(snaps[0].assignment[p]))
		for _, s := range snaps {
			st, ok := s.states[p]
			fmt.Fprintf(&b, " %s |", stateCell(st, ok))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "| `__consumer_offsets`-%d (the group's) | %s |", snaps[0].offsets, ids(snaps[0].offsetReplicas))
	for _, s := range snaps {
		fmt.Fprintf(&b, " %s |", stateCell(s.offsetState, s.offsets >= 0))
	}
	b.WriteString("\n\nThe controller: ")
	var ctl []string
	for _, s := range snaps {
		ctl = append(ctl, fmt.Sprintf("broker %d %s", s.controller, s.when))
	}
	b.WriteString(strings.Join(ctl, ", ") + ".")
	if last := snaps[len(snaps)-1]; last.when == "after the return" {
		if last.fullISR() {
			fmt.Fprintf(&b, " The returned broker was back in every ISR %d ms after the run settled from its restart.", last.waitedMs)
		} else {
			fmt.Fprintf(&b, " The returned broker was not back in every ISR %d ms after the run settled from its restart.", last.waitedMs)
		}
	}
	for _, s := range snaps {
		for _, msg := range s.errs {
			fmt.Fprintf(&b, "\n\nNot read %s: %s.", s.when, msg)
		}
	}
	if err := g.out.write("ch8-leaders.md", []byte(b.String())); err != nil {
		return err
	}
	g.out.block("ch8-leaders", b.String())

	// broker-failure's figures, every era.
	b.Reset()
	b.WriteString("| era | broker killed | members rebalancing (failure, return) | partitions delivering before the return | duplicates (failure, return) | lost |\n|---|---|---|---|---|---|\n")
	for _, era := range erasRun(bf) {
		e := eraOf(bf, spec.Era(era))
		fail, _ := event(e, "broker-failure")
		ret, _ := event(e, "broker-return")
		fmt.Fprintf(&b, "| %s | %s | %d, %d | %d of %d | %d, %d | %d |\n", era, killTarget(e),
			fail.Figures.RebalanceParticipants, ret.Figures.RebalanceParticipants,
			e.Extra["partitions_delivered_after_failure"], bf.Params.Partitions,
			fail.Figures.Duplicates, ret.Figures.Duplicates, e.Result.Totals.Lost)
	}
	g.out.block("ch8-broker-failure", b.String())

	// coordinator-failover: the coordinator before and after, and the time to find it.
	b.Reset()
	b.WriteString("| era | coordinator before → after | controller before → after | `__consumer_offsets` partition: leader epoch before → after | coordinator found after the kill | members rebalancing | duplicates (bound: delivered past the last commits) | lost |\n|---|---|---|---|---|---|---|---|\n")
	for _, era := range erasRun(cf) {
		e := eraOf(cf, spec.Era(era))
		ev, _ := event(e, "coordinator-failover")
		ss := g.snaps.of(runCoordFailover, era)
		coord, ctl, epoch := "(not read)", "(not read)", "(not read)"
		if len(ss) >= 2 {
			coord = fmt.Sprintf("%d → %d", ss[0].coordinator, ss[1].coordinator)
			ctl = fmt.Sprintf("%d → %d", ss[0].controller, ss[1].controller)
			epoch = fmt.Sprintf("%d → %d", ss[0].offsetState.LeaderEpoch, ss[1].offsetState.LeaderEpoch)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d ms | %d | %d (%d) | %d |\n", era, coord, ctl, epoch, e.Extra["coordinator_found_ms"],
			ev.Figures.RebalanceParticipants, e.Result.Totals.Duplicates, e.Extra["uncommitted_at_kill"], e.Result.Totals.Lost)
	}
	if err := g.out.write("ch8-coordinator-failover.md", []byte(b.String())); err != nil {
		return err
	}
	g.out.block("ch8-coordinator-failover", b.String())

	// durability: acks=all against acks=1.
	b.Reset()
	b.WriteString("| era | producer | acknowledged | lost | lost on partitions | the killed broker led | written twice | longest without an acknowledgment: the producer | : its worst partition |\n|---|---|---|---|---|---|---|---|---|\n")
	var lost1, acked1 int64
	for _, era := range erasRun(du) {
		e := eraOf(du, spec.Era(era))
		for _, c := range e.Durability {
			fmt.Fprintf(&b, "| %s | acks=%s | %d | %d | %s | %s | %d | %d ms | %d ms |\n", era, c.Acks, c.Acked, c.Lost, ids(c.LostPartitions),
				ids(c.DownLedPartitions), c.Duplicates, c.MaxAckGapMs, c.MaxPartitionAckGapMs)
			if c.Acks == "1" {
				lost1 += c.Lost
				acked1 += c.Acked
			}
		}
	}
	if err := g.out.write("ch8-durability.md", []byte(b.String())); err != nil {
		return err
	}
	g.out.block("ch8-durability", b.String())

	var sum strings.Builder
	fmt.Fprintf(&sum, "Over the %d eras of this durability run, acks=1 lost %d of %d acknowledged records.", len(erasRun(du)), lost1, acked1)
	fmt.Fprintf(&sum, "\n\n- broker-failure: %s\n- coordinator-failover: %s\n- durability: %s",
		relationsSentence(bf), relationsSentence(cf), relationsSentence(du))
	g.out.block("ch8-summary", sum.String())
	return nil
}

// killTarget is the era's broker-kill fault target ("broker/2"), "no broker" when there was none.
func killTarget(e *report.EraRun) string {
	for _, r := range e.Records {
		if r.Kind == timeline.Fault && r.Action == string(spec.ActBrokerKill) && r.Phase == timeline.FaultBegin {
			return "`" + r.Target + "`"
		}
	}
	return "no broker"
}
