package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/poll"
	"github.com/rebalancelab/rebalancelab/scenarios"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// ch3: the group management protocol on the wire. Three coordinator-era consumers (eager range)
// join group "invoices" one after another, then m2 leaves; every group request they make is in
// their timeline, which becomes a Mermaid sequence diagram and a table of generations.
func (g *generator) ch3(ctx context.Context) error {
	const group, topic, partitions = "invoices", "invoices", 6
	l, err := startLabWithTopic(ctx, topic, partitions)
	if err != nil {
		return err
	}
	defer l.Close()
	col := &timeline.Collector{}
	runner := &timeline.Recorder{Sink: col, Era: string(spec.Classic), Member: "runner"}
	var live []*coordMember
	var started []*coordMember
	defer func() {
		for _, m := range started {
			_ = m.close()
		}
	}()
	stable := func() bool { return coordStable(live, partitions) }
	for _, name := range []string{"m1", "m2", "m3"} {
		runner.Emit(timeline.Record{Kind: timeline.Trigger, Name: name + " starts"})
		m, err := startCoord(ctx, name, topic, coordProps(group, l.Bootstrap(), name, nil), &timeline.Recorder{Sink: col, Era: string(spec.Classic), Member: name})
		if err != nil {
			return err
		}
		live, started = append(live, m), append(started, m)
		if err := poll.Until(ctx, 60*time.Second, "the group to be stable with "+name, stable); err != nil {
			return err
		}
	}
	// A stable group: heartbeats and commits only.
	if err := awaitRoutine(ctx, col, live, time.Now().UnixMilli(), 3); err != nil {
		return err
	}
	runner.Emit(timeline.Record{Kind: timeline.Trigger, Name: "m2 leaves (close: LeaveGroup)"})
	if err := live[1].close(); err != nil {
		return err
	}
	live = []*coordMember{live[0], live[2]}
	if err := poll.Until(ctx, 60*time.Second, "the group to be stable without m2", stable); err != nil {
		return err
	}
	if err := awaitRoutine(ctx, col, live, time.Now().UnixMilli(), 2); err != nil {
		return err
	}
	recs := col.Records()
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].TsMs < recs[j].TsMs })

	diagram := sequenceDiagram(recs, []string{"m1", "m2", "m3"}, "coordinator on broker 1")
	if err := g.out.write("ch3-sequence.mmd", []byte(diagram)); err != nil {
		return err
	}
	if err := g.out.write("ch3-timeline.jsonl", jsonLines(recs)); err != nil {
		return err
	}
	g.out.block("ch3-sequence", "```mermaid\n"+diagram+"```")

	// Generations: who owned what in each.
	var gens strings.Builder
	gens.WriteString("| generation | member | member id (assigned by the coordinator) | partitions |\n|---|---|---|---|\n")
	apis := map[string]int{}
	rebalanceInProgress, maxGen := 0, int32(0)
	for _, r := range recs {
		switch r.Kind {
		case timeline.Assigned:
			if r.Generation == nil {
				continue
			}
			maxGen = max(maxGen, *r.Generation)
			fmt.Fprintf(&gens, "| %d | %s | `%s` | %s |\n", *r.Generation, r.Member, r.MemberID, shortPartitions(r.Partitions))
		case timeline.GroupRequest:
			apis[r.API]++
			if r.Err == "REBALANCE_IN_PROGRESS" {
				rebalanceInProgress++
			}
		}
	}
	if err := g.out.write("ch3-generations.md", []byte(gens.String())); err != nil {
		return err
	}
	g.out.block("ch3-generations", gens.String())
	g.out.block("ch3-summary", fmt.Sprintf("In this run three joins and one leave took the group through %d generations with %d JoinGroup, "+
		"%d SyncGroup, %d Heartbeat, %d LeaveGroup and %d OffsetCommit requests; %d heartbeats were answered "+
		"REBALANCE_IN_PROGRESS, which is how a member learns that it must rejoin.",
		maxGen, apis["JoinGroup"], apis["SyncGroup"], apis["Heartbeat"], apis["LeaveGroup"], apis["OffsetCommit"], rebalanceInProgress))
	return nil
}

// ch3Fencing: the classic era of split-brain-zombie. The zombie's coordinator link stalls while it
// fetches; the group moves on without it; when the link heals, its commits carry the old generation
// and member id and the coordinator refuses them.
func (g *generator) ch3Fencing() error {
	res := g.result(runZombie)
	e := eraOf(res, spec.Classic)
	if e == nil {
		return fmt.Errorf("split-brain-zombie did not run the classic era")
	}
	zombie, stallAt, healAt := zombieOf(res, e)
	var rejected *timeline.Record
	for i, r := range e.Records {
		if r.Kind == timeline.Commit && r.Member == zombie && r.Result == timeline.CommitRejected &&
			(r.Err == "UNKNOWN_MEMBER_ID" || r.Err == "ILLEGAL_GENERATION") {
			rejected = &e.Records[i]
			break
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# split-brain-zombie, classic era (seed %d, %d consumers, %d partitions of topic %s)\n",
		res.Seed, res.Params.Consumers, res.Params.Partitions, e.Topic)
	fmt.Fprintf(&b, "# %s's coordinator link stalls at +0 ms and heals at %+d ms; times are ms after the stall.\n", zombie, healAt-stallAt)
	b.WriteString(excerptLegend)
	end := lastAssigned(e.Records)
	for _, line := range shorten(excerpt(e.Records, stallAt, end, 60, map[string]bool{zombie: true}), e) {
		b.WriteString(line + "\n")
	}
	if err := g.out.write("ch3-fencing.txt", []byte(b.String())); err != nil {
		return err
	}
	g.out.block("ch3-fencing", "```text\n"+b.String()+"```")
	if rejected != nil {
		gen := "?"
		if rejected.Generation != nil {
			gen = fmt.Sprint(*rejected.Generation)
		}
		g.out.block("ch3-fencing-summary", fmt.Sprintf("In this run %s's first refused commit came %d ms after the stall: it carried "+
			"generation %s and member id `%s`, and the coordinator answered **%s**. The group had rebalanced without %s in the meantime, "+
			"so its member id and generation were no longer current.",
			zombie, rejected.TsMs-stallAt, gen, rejected.MemberID, rejected.Err, zombie))
		return nil
	}
	for _, r := range e.Records {
		if r.Kind == timeline.GroupRequest && r.Member == zombie && r.TsMs >= stallAt &&
			(r.Err == "UNKNOWN_MEMBER_ID" || r.Err == "ILLEGAL_GENERATION") {
			g.out.block("ch3-fencing-summary", fmt.Sprintf("In this run %s made no commit that the coordinator refused: its first "+
				"request refused for its stale identity was a %s, %d ms after the stall, answered **%s**. The group had rebalanced "+
				"without it in the meantime; it had to rejoin as a new member before it could commit again.",
				zombie, r.API, r.TsMs-stallAt, r.Err))
			return nil
		}
	}
	g.out.block("ch3-fencing-summary", fmt.Sprintf("In this run no request of %s was refused with UNKNOWN_MEMBER_ID or "+
		"ILLEGAL_GENERATION; the excerpt shows what happened instead.", zombie))
	return nil
}

// zombieOf returns the stalled member of a split-brain-zombie run and the times its stall began and
// ended (its fault records, stamped by the member's proxies).
func zombieOf(res *scenarios.RunResult, e *report.EraRun) (member string, stallAt, healAt int64) {
	for _, st := range res.Script {
		if st.Action == spec.ActStall {
			member = st.Member
			break
		}
	}
	for _, r := range e.Records {
		if r.Kind != timeline.Fault || !strings.HasPrefix(r.Target, member+"/") {
			continue
		}
		if r.Action != "stall" {
			continue
		}
		switch {
		case r.Phase == timeline.FaultBegin && stallAt == 0:
			stallAt = r.TsMs
		case r.Phase == timeline.FaultEnd && healAt == 0:
			healAt = r.TsMs
		}
	}
	return member, stallAt, healAt
}

// lastAssigned is the time of the last assigned record: the group's last settling.
func lastAssigned(recs []timeline.Record) int64 {
	var ts int64
	for _, r := range recs {
		if r.Kind == timeline.Assigned {
			ts = r.TsMs
		}
	}
	return ts
}
