package scenarios

// The scenarios of Kafka's own consumer system tests (tests/kafkatest/tests/client/consumer_test.py,
// OffsetValidationTest), each with that test's relation, on every era where it applies. Kafka runs them
// with 3 consumers on a 1-partition topic and 5 bounces; here the defaults are 3 consumers, Kafka's
// partition count where the relation reads one partition, and 2 bounces, so that a run takes seconds.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// systemTestBounces is how many times each bounce scenario bounces its members (Kafka: num_bounces=5).
const systemTestBounces = 2

// consumerBounce is test_consumer_bounce: the members are stopped and started again — cleanly
// (graceful stop) or hard (a crash: no commit, no goodbye), all at once or one after the other — while
// the producer goes on. Kafka 3.9's test (one partition) asserts, once every member has stopped,
// `consumer.current_position(partition) == consumer.total_consumed()` after a clean bounce and
// `current_position(partition) <= total_consumed()` after a hard one, where current_position is
// VerifiableConsumer's global_position (the offset after the last record consumed) and total_consumed
// counts every record consumed. Here both are checked for every partition, and beside them the committed
// position the issue asks for, from the commits as acknowledged (applied commit records): clean, the last
// commit of every partition equals its consumed position (a clean stop commits what it consumed); hard,
// it is not ahead of it (VerifiableConsumer's "Committed offset ... is ahead of the current position").
func consumerBounce(clean bool, mode string) *Scenario {
	how, stop := "hard", ActCrash
	if clean {
		how, stop = "clean", ActStop
	}
	rels := []Relation{
		perPartitionRel("after the bounces, every partition: consumed position == records consumed (no record consumed twice)",
			endPosition, eq, endConsumed),
		perPartitionRel("after the bounces, every partition: last acknowledged commit == consumed position",
			endLastCommit, eq, endPosition),
	}
	if !clean {
		rels = []Relation{
			perPartitionRel("after the bounces, every partition: consumed position <= records consumed (duplicates allowed)",
				endPosition, le, endConsumed),
			perPartitionRel("after the bounces, every partition: last acknowledged commit <= consumed position",
				endLastCommit, le, endPosition),
		}
	}
	return &Scenario{
		Name: fmt.Sprintf("consumer-bounce-%s-%s", how, mode),
		Description: fmt.Sprintf("Kafka's test_consumer_bounce: every member stopped (%s) and started again, %s, %d times",
			map[bool]string{true: "gracefully", false: "by a crash"}[clean],
			map[string]string{"all": "all at once", "rolling": "one after the other"}[mode], systemTestBounces),
		Defaults:     Params{Consumers: 3, Partitions: 1},
		Small:        Params{Consumers: 2, Partitions: 1},
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
			var pos, consumed, committed int64
			for _, p := range e.partitionEnds() {
				pos, consumed, committed = pos+p.position, consumed+p.consumed, committed+p.lastCommit
			}
			return map[string]int64{"consumed_position": pos, "records_consumed": consumed, "committed_position": committed}
		},
		Relations: append(rels, totalFig(nil, FigLost, eq, 0), ownedOnce(nil)),
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
		Small:        Params{Consumers: 3, Partitions: 3},
		MinConsumers: 2,
		ZKNodes:      1,
		NotApplicable: map[spec.Era]string{
			spec.Cooperative: "Kafka's test uses eager assignment: cooperative rebalancing never revokes what does not move",
		},
		Script: func(p Params, t Timing, r *scriptRand) []Step {
			s := &script{t: t}
			s.startAll(p.Consumers)
			for round := 1; round <= systemTestBounces; round++ {
				for i := 2; i <= p.Consumers; i++ {
					m := memberName(i)
					s.trigger(fmt.Sprintf("bounce-%d-%s", round, m)).member(0, ActStop, m).
						member(p.DownMsOr(t), ActStart, m).settle()
				}
			}
			return s.steps
		},
		Extra: func(e *EraRun) map[string]int64 {
			return map[string]int64{"revocations_of_" + kept: e.revocationsSince("bounce-1-"+memberName(2), kept)}
		},
		Relations: []Relation{
			extraFig([]spec.Era{spec.Static}, "revocations_of_"+kept, eq, 0,
				"bounces: the member never bounced revokes nothing (static membership: no rebalance)"),
			extraFig([]spec.Era{spec.ZK, spec.Classic}, "revocations_of_"+kept, ge, 1,
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
		Small:        Params{Consumers: 2, Partitions: 2},
		MinConsumers: 2,
		ZKNodes:      1,
		NotApplicable: map[spec.Era]string{
			spec.ZK:          "no group.instance.id: the 0.8 connector has no static membership",
			spec.Classic:     "no group.instance.id: dynamic members cannot collide",
			spec.Cooperative: "no group.instance.id: dynamic members cannot collide",
		},
		// m1 delivers its partitions until its next request is fenced, after the newcomer got them: the
		// classic protocol fences commits, not fetches.
		ByDesign: map[spec.Era][]string{spec.Static: {FigInvConsumedUnowned}},
		GivesUp:  []string{victim}, // its poll fails with FENCED_INSTANCE_ID: the measurement
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
		namedRel(nil, false, "crash: time_to_stable_ms <= 2 x session timeout + 5 s", relCrashStableWithinTwoSessions, nil),
		totalFig(nil, FigLost, eq, 0),
		ownedOnce(nil),
	}
	if !autoCommit {
		name = "consumer-failure-manual-commit"
		// Kafka: `consumer.last_commit(partition) == consumer.current_position(partition)`, the last
		// acknowledged commit against the consumed position.
		rels = append(rels, perPartitionRel("after the stop, every partition: last acknowledged commit == consumed position",
			endLastCommit, eq, endPosition))
	}
	return &Scenario{
		Name: name,
		Description: "Kafka's test_consumer_failure: a member crashes; its partitions get a new owner within " +
			"2 x session timeout + 5 s" + map[bool]string{true: "", false: "; members commit after every poll (no auto-commit)"}[autoCommit],
		Defaults:     Params{Consumers: 3, Partitions: 3},
		Small:        Params{Consumers: 2, Partitions: 2},
		MinConsumers: 2,
		ZKNodes:      1,
		MemberProps: func(era string, t Timing) map[string]string {
			switch {
			case autoCommit:
				return nil
			case spec.Era(era).UsesZooKeeper():
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

// partitionEnd is one partition at the end of a run (the members' final stop included), as
// VerifiableConsumer's event handlers see it: position is the offset after the last record consumed
// (current_position: global_position, set to maxOffset + 1 by each records_consumed event), consumed the
// records consumed from it (its share of total_consumed), lastCommit the offset of its last acknowledged
// commit (last_commit: global_committed, set by each successful offsets_committed event), 0 without one.
type partitionEnd struct{ position, consumed, lastCommit int64 }

// The quantities of a partition's end that the per-partition relation compares (its args "a", "b").
const (
	endPosition   = "position"    // the offset after the partition's last delivery
	endConsumed   = "consumed"    // the records of the partition delivered
	endLastCommit = "last_commit" // the last applied commit's offset
)

// of returns the partition end's quantity named name (endPosition, endConsumed, endLastCommit).
func (p partitionEnd) of(name string) (int64, bool) {
	switch name {
	case endPosition:
		return p.position, true
	case endConsumed:
		return p.consumed, true
	case endLastCommit:
		return p.lastCommit, true
	}
	return 0, false
}

// perPartitionRel is the registered relation per-partition (checkPerPartition): a c b for every
// partition anything was consumed from, a and b quantities of the partition's end.
func perPartitionRel(text, a string, c cmp, b string) Relation {
	return namedRel(nil, false, text, relPerPartition, map[string]string{"a": a, "cmp": string(c), "b": b})
}

// checkPerPartition checks args "a" against "b" with "cmp" for every partition anything was consumed
// from (false when nothing was); a and b name quantities of the partition's end (partitionEnd.of).
func checkPerPartition(x checkCtx, args map[string]string) (bool, string, bool) {
	c, err := spec.ParseCmp(args["cmp"])
	if err != nil {
		return false, err.Error(), false
	}
	for _, q := range []string{args["a"], args["b"]} {
		if _, ok := (partitionEnd{}).of(q); !ok {
			return false, fmt.Sprintf("unknown quantity %q (want %s, %s or %s)", q, endPosition, endConsumed, endLastCommit), false
		}
	}
	ends := x.era.partitionEnds()
	keys := make([]string, 0, len(ends))
	for k := range ends {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ok := len(keys) > 0
	var got []string
	for _, k := range keys {
		a, _ := ends[k].of(args["a"])
		b, _ := ends[k].of(args["b"])
		ok = ok && c.Holds(a, b)
		got = append(got, fmt.Sprintf("%s: %d %s %d", k, a, c, b))
	}
	if len(got) == 0 {
		return false, "nothing consumed", false
	}
	return ok, strings.Join(got, "; "), false
}

// partitionEnds: per partition ("<topic>-<p>") with a delivery, its end (partitionEnd), from the merged
// timeline in its order. The position is the offset after the partition's last delivery in that order,
// as in Kafka, where a re-delivery after a hard bounce moves it back until the consumer catches up.
func (e *EraRun) partitionEnds() map[string]partitionEnd {
	ends := map[string]partitionEnd{}
	committed := map[string]int64{}
	for _, r := range e.allRecords() {
		if r.Partition == nil || r.Offset == nil {
			continue
		}
		k := fmt.Sprintf("%s-%d", r.Topic, *r.Partition)
		switch {
		case r.Kind == timeline.Deliver:
			p := ends[k]
			p.position, p.consumed = *r.Offset+1, p.consumed+1
			ends[k] = p
		case r.Kind == timeline.Commit && r.Result == timeline.CommitApplied:
			committed[k] = *r.Offset
		}
	}
	for k, p := range ends {
		p.lastCommit = committed[k]
		ends[k] = p
	}
	return ends
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
