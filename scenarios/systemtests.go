package scenarios

// The scenarios of Kafka's own consumer system tests (tests/kafkatest/tests/client/consumer_test.py,
// OffsetValidationTest), each with that test's relation, on every era where it applies. Kafka runs them
// with 3 consumers on a 1-partition topic and 5 bounces; here the defaults are 3 consumers, Kafka's
// partition count where the relation reads one partition, and 2 bounces, so that a run takes seconds.

import (
	"fmt"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// systemTestBounces is how many times each bounce scenario bounces its members (Kafka: num_bounces=5).
const systemTestBounces = 2

// consumerBounce is test_consumer_bounce: the members are stopped and started again — cleanly
// (graceful stop) or hard (a crash: no commit, no goodbye), all at once or one after the other — while
// the producer goes on. Clean: the group's consumed position equals the records consumed (nothing is
// consumed twice); hard: the position is not ahead of them (duplicates allowed, nothing skipped).
func consumerBounce(clean bool, mode string) *Scenario {
	how, stop := "hard", ActCrash
	if clean {
		how, stop = "clean", ActStop
	}
	rel := Relation{Text: "after the bounces: consumed position == records consumed (no record consumed twice)",
		check: positionVsConsumed(eq)}
	if !clean {
		rel = Relation{Text: "after the bounces: consumed position <= records consumed (nothing skipped)",
			check: positionVsConsumed(le)}
	}
	return &Scenario{
		Name: fmt.Sprintf("consumer-bounce-%s-%s", how, mode),
		Description: fmt.Sprintf("Kafka's test_consumer_bounce: every member stopped (%s) and started again, %s, %d times",
			map[bool]string{true: "gracefully", false: "by a crash"}[clean],
			map[string]string{"all": "all at once", "rolling": "one after the other"}[mode], systemTestBounces),
		Defaults:     Params{Consumers: 3, Partitions: 1},
		MinConsumers: 1,
		ZKNodes:      1,
		Script: func(p Params, t Timing, r *scriptRand) []Step {
			s := &script{t: t}
			s.startAll(p.Consumers)
			for round := 1; round <= systemTestBounces; round++ {
				if mode == "all" {
					s.trigger(fmt.Sprintf("bounce-all-%d", round))
					for i := 1; i <= p.Consumers; i++ {
						s.member(0, stop, memberName(i))
					}
					for i := 1; i <= p.Consumers; i++ {
						s.member(0, ActStart, memberName(i))
					}
					s.settle()
					continue
				}
				for i := 1; i <= p.Consumers; i++ {
					m := memberName(i)
					s.trigger(fmt.Sprintf("bounce-%d-%s", round, m)).member(0, stop, m).member(0, ActStart, m).settle()
				}
			}
			return s.steps
		},
		Extra: func(e *EraRun) map[string]int64 {
			pos, consumed := e.positionAndConsumed()
			return map[string]int64{"consumed_position": pos, "records_consumed": consumed}
		},
		Relations: []Relation{rel, totalFig(nil, FigLost, eq, 0), ownedOnce(nil)},
	}
}

// staticMemberBounce is test_static_consumer_bounce with eager assignment: every member but m1 is
// stopped gracefully, kept down for half the session timeout, and started again, one after the other.
// With static membership (KIP-345) the member that is never bounced sees no revocation — the group
// does not rebalance while a static member is away for less than its session; without it (the zk and
// classic eras) every bounce rebalances the group and m1 revokes its partitions each time.
func staticMemberBounce() *Scenario {
	kept := memberName(1)
	return &Scenario{
		Name: "static-member-bounce",
		Description: fmt.Sprintf("Kafka's test_static_consumer_bounce: members other than %s stopped, kept down "+
			"(--down-ms, default half the session timeout) and started again, one after the other, %d times; eager range assignment", kept, systemTestBounces),
		Defaults:     Params{Consumers: 3, Partitions: 3},
		MinConsumers: 2,
		ZKNodes:      1,
		NotApplicable: map[string]string{
			"cooperative": "Kafka's test uses eager assignment: cooperative rebalancing never revokes what does not move",
		},
		Script: func(p Params, t Timing, r *scriptRand) []Step {
			s := &script{t: t}
			s.startAll(p.Consumers)
			for round := 1; round <= systemTestBounces; round++ {
				for i := 2; i <= p.Consumers; i++ {
					m := memberName(i)
					s.trigger(fmt.Sprintf("bounce-%d-%s", round, m)).member(0, ActStop, m).
						member(p.downMs(t), ActStart, m).settle()
				}
			}
			return s.steps
		},
		Extra: func(e *EraRun) map[string]int64 {
			return map[string]int64{"revocations_of_" + kept: e.revocationsSince("bounce-1-"+memberName(2), kept)}
		},
		Relations: []Relation{
			extraFig([]string{"static"}, "revocations_of_"+kept, eq, 0,
				"bounces: the member never bounced revokes nothing (static membership: no rebalance)"),
			extraFig([]string{"zk", "classic"}, "revocations_of_"+kept, ge, 1,
				"bounces: the member never bounced revokes its partitions (every bounce rebalances)"),
			totalFig(nil, FigLost, eq, 0),
			ownedOnce(nil),
		},
	}
}

// staticFencing is test_fencing_static_consumer in its "stable" stage: while the static group is
// stable, a newcomer starts with the group.instance.id of m1. The coordinator gives it m1's member
// slot and assignment without a rebalance; m1's next request is answered FENCED_INSTANCE_ID and it
// dies (the application's poll fails).
func staticFencing() *Scenario {
	const victim, newcomer = "m1", "fencer"
	return &Scenario{
		Name: "static-fencing",
		Description: "Kafka's test_fencing_static_consumer: a newcomer with m1's group.instance.id joins the stable " +
			"group: m1 is fenced (FENCED_INSTANCE_ID) and the group does not rebalance",
		Defaults:     Params{Consumers: 3, Partitions: 3},
		MinConsumers: 2,
		ZKNodes:      1,
		NotApplicable: map[string]string{
			"zk":          "no group.instance.id: the 0.8 connector has no static membership",
			"classic":     "no group.instance.id: dynamic members cannot collide",
			"cooperative": "no group.instance.id: dynamic members cannot collide",
		},
		// m1 delivers its partitions until its next request is fenced, after the newcomer got them: the
		// classic protocol fences commits, not fetches.
		ByDesign: map[string][]string{"static": {FigInvConsumedUnowned}},
		Script: func(p Params, t Timing, r *scriptRand) []Step {
			s := &script{t: t}
			s.startAll(p.Consumers)
			s.trigger("fence").add(Step{Action: ActStart, Member: newcomer, As: victim}).settle()
			return s.steps
		},
		Extra: func(e *EraRun) map[string]int64 {
			var fenced, stopped, othersRebalancing int64
			start, _ := e.triggerTs("fence")
			for _, r := range e.Records {
				if r.TsMs < start {
					continue
				}
				switch {
				case r.Member == victim && r.Kind == timeline.GroupRequest && r.Err == "FENCED_INSTANCE_ID":
					fenced++
				case r.Member == victim && r.Kind == timeline.MemberStop:
					stopped++
				case r.Member != victim && r.Member != newcomer && r.Kind == timeline.RebalanceBegin:
					othersRebalancing++
				}
			}
			return map[string]int64{"fenced_requests_of_" + victim: fenced, victim + "_stopped": stopped,
				"rebalances_of_the_others": othersRebalancing}
		},
		Relations: []Relation{
			extraFig(nil, "fenced_requests_of_"+victim, ge, 1, victim+" is answered FENCED_INSTANCE_ID"),
			extraFig(nil, victim+"_stopped", eq, 1, victim+" dies (its poll fails with FENCED_INSTANCE_ID)"),
			extraFig(nil, "rebalances_of_the_others", eq, 0, "fence: the other members do not rebalance"),
			ownedOnce(nil),
			totalFig(nil, FigLost, eq, 0),
		},
	}
}

// consumerFailure is test_consumer_failure: a member crashes (no goodbye); its partitions get a new
// owner within 2 × session timeout + 5 s. Without auto-commit (every member commits after each poll),
// once every member has stopped the last commit of every partition equals the group's consumed
// position.
func consumerFailure(autoCommit bool) *Scenario {
	name := "consumer-failure"
	rels := []Relation{
		{Text: "crash: time_to_stable_ms <= 2 x session timeout + 5 s", check: func(x checkCtx) (bool, string, bool) {
			ev, ok := x.era.eventNamed("crash")
			if !ok {
				return false, "no crash event", false
			}
			session := x.t.SessionTimeoutMs
			if x.era.Era == "zk" {
				session = x.t.ZKSessionTimeoutMs
			}
			bound, got := 2*session+5000, ev.Figures.TimeToStableMs
			return got >= 0 && got <= bound, fmt.Sprintf("%d ms (bound %d ms)", got, bound), false
		}},
		totalFig(nil, FigLost, eq, 0),
		ownedOnce(nil),
	}
	if !autoCommit {
		name = "consumer-failure-manual-commit"
		rels = append(rels, Relation{Text: "after the stop: last commit == consumed position, every partition",
			check: func(x checkCtx) (bool, string, bool) {
				pos, last := x.era.positionsAndLastCommits()
				ok := len(pos) > 0
				for tp, p := range pos {
					ok = ok && last[tp] == p
				}
				return ok, fmt.Sprintf("positions %v, last commits %v", pos, last), false
			}})
	}
	return &Scenario{
		Name: name,
		Description: "Kafka's test_consumer_failure: a member crashes; its partitions get a new owner within " +
			"2 x session timeout + 5 s" + map[bool]string{true: "", false: "; members commit after every poll (no auto-commit)"}[autoCommit],
		Defaults:     Params{Consumers: 3, Partitions: 3},
		MinConsumers: 2,
		ZKNodes:      1,
		MemberProps: func(era string, t Timing) map[string]string {
			switch {
			case autoCommit:
				return nil
			case era == "zk":
				return map[string]string{"auto.commit.enable": "false"} // 0.8.2's key
			}
			return map[string]string{"enable.auto.commit": "false"}
		},
		Script: func(p Params, t Timing, r *scriptRand) []Step {
			s := &script{t: t}
			s.startAll(p.Consumers)
			s.trigger("crash").member(0, ActCrash, memberName(1+r.IntN(p.Consumers))).settle()
			return s.steps
		},
		Relations: rels,
	}
}

// positionVsConsumed compares the group's consumed position with the records consumed.
func positionVsConsumed(c cmp) func(x checkCtx) (bool, string, bool) {
	return func(x checkCtx) (bool, string, bool) {
		pos, consumed := x.era.positionAndConsumed()
		return c.holds(pos, consumed), fmt.Sprintf("position %d, consumed %d", pos, consumed), false
	}
}

// positionAndConsumed: the group's consumed position, Σ over partitions of the highest delivered
// offset + 1 (VerifiableConsumer's current_position, summed), and the number of deliveries
// (total_consumed). The lab's topics start at offset 0, so the two are equal exactly when no record
// was consumed twice and none was skipped.
func (e *EraRun) positionAndConsumed() (position, consumed int64) {
	pos, _ := e.positionsAndLastCommits()
	for _, p := range pos {
		position += p
	}
	for _, r := range e.allRecords() {
		if r.Kind == timeline.Deliver {
			consumed++
		}
	}
	return position, consumed
}

// positionsAndLastCommits: per partition ("<topic>-<p>"), the highest delivered offset + 1, and the
// offset of the last applied commit, over the whole run including the members' final stop.
func (e *EraRun) positionsAndLastCommits() (position, lastCommit map[string]int64) {
	position, lastCommit = map[string]int64{}, map[string]int64{}
	for _, r := range e.allRecords() {
		if r.Partition == nil || r.Offset == nil {
			continue
		}
		k := fmt.Sprintf("%s-%d", r.Topic, *r.Partition)
		switch {
		case r.Kind == timeline.Deliver && *r.Offset+1 > position[k]:
			position[k] = *r.Offset + 1
		case r.Kind == timeline.Commit && r.Result == timeline.CommitApplied:
			lastCommit[k] = *r.Offset
		}
	}
	return position, lastCommit
}

// allRecords is the scenario's records followed by the members' final stop.
func (e *EraRun) allRecords() []timeline.Record {
	return append(append([]timeline.Record(nil), e.Records...), e.ShutdownRecords...)
}

// revocationsSince counts the partitions member revoked from trigger from on (-1 without it).
func (e *EraRun) revocationsSince(from, member string) int64 {
	start, ok := e.triggerTs(from)
	if !ok {
		return -1
	}
	var n int64
	for _, r := range e.Records {
		if r.Kind == timeline.Revoked && r.Member == member && r.TsMs >= start {
			for _, ps := range r.Partitions {
				n += int64(len(ps))
			}
		}
	}
	return n
}
