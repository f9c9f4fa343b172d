package scenarios

// The cluster scenarios (issue #15): a three-broker lab whose topic and __consumer_offsets have
// replication factor 3, and a broker killed with SIGKILL or stopped under the group. broker-failure
// kills a partition leader that does not coordinate the group; coordinator-failover kills the
// coordinator's broker; durability kills a partition leader under an acks=all and an acks=1 producer
// (durability.go); broker-rolling-bounce stops and restarts each broker in turn. Every killed broker is
// restarted at the end, so that the next era starts on three brokers.

import (
	"fmt"

	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// clusterBrokers is the cluster scenarios' lab: three brokers, so that every partition (the topic's
// and __consumer_offsets') has three replicas and survives one broker.
const clusterBrokers = 3

// clusterMemberProps gives the coordinator eras' members a session that outlasts a broker's death
// going unnoticed (with the lab's 2 s sessions a run saw commits time out and members removed). Our
// reading of why, not yet compared with Kafka 3.9's brokers: until the dead broker's ZooKeeper session expires it stays in the ISRs of
// __consumer_offsets, so a commit to a partition it follows waits for it (acks=all, up to
// offsets.commit.timeout.ms, 5 s), and the member's heartbeats wait behind that commit on the same
// connection (Kafka's broker reads a connection's next request only once it answered the last). The
// session is therefore at least the brokers' ZooKeeper session plus that commit timeout plus a
// heartbeat interval's margin (10 s with the lab's 2 s broker sessions, within the 6–10 s Kafka's
// system tests use; Kafka's own 45 s with --kafka-defaults).
func clusterMemberProps(era string, t Timing) map[string]string {
	if spec.Era(era).UsesZooKeeper() {
		return nil
	}
	session := max(t.SessionTimeoutMs, t.BrokerZKSessionTimeoutMs+offsetsCommitTimeoutMs+3*t.HeartbeatIntervalMs)
	return map[string]string{"session.timeout.ms": fmt.Sprint(session)}
}

// offsetsCommitTimeoutMs is Kafka's offsets.commit.timeout.ms default, which the lab keeps.
const offsetsCommitTimeoutMs = 5000

// clusterScenario is the base of the cluster scenarios: 3 consumers on 6 partitions by default, one
// ZooKeeper node, clusterBrokers brokers, and the coordinator eras' longer session
// (clusterMemberProps). Each scenario adds its script and relations.
func clusterScenario(name, description string) *Scenario {
	return &Scenario{Name: name, Description: description, Defaults: Params{Consumers: 3, Partitions: 6},
		Small:        Params{Consumers: 3, Partitions: 6},
		MinConsumers: 1, ZKNodes: 1, Brokers: clusterBrokers, MemberProps: clusterMemberProps}
}

// zeroIn is the relation "figure name is 0 in the window of trigger", on every era.
func zeroIn(trigger, name string) Relation {
	return eventFig(nil, trigger, name, eq, "0")
}

// killBroker appends the kill -9 of the broker in role, a wait past the brokers' ZooKeeper session
// (the controller learns of the death only when the session expires) and a settle.
func (s *script) killBroker(role string) *script {
	s.add(Step{Action: ActBrokerKill, Broker: role})
	// Past the broker's zookeeper.session.timeout.ms and a commit timeout: the controller has moved
	// the leaderships and shrunk the ISRs, and the commits that waited for the dead follower answered.
	s.add(Step{DelayMs: s.t.BrokerZKSessionTimeoutMs + offsetsCommitTimeoutMs, Action: ActSettle,
		QuietMs: s.t.QuietMs(), TimeoutMs: s.t.SettleTimeoutMs() + 2*s.t.BrokerZKSessionTimeoutMs})
	return s
}

// restartDown appends the restart of the broker killed last and a settle.
func (s *script) restartDown() *script {
	s.add(Step{Action: ActBrokerStart, Broker: BrokerRoleDown})
	return s.settle()
}

// brokerFailure: kill -9 of a partition leader that is not the coordinator. The coordinator eras run
// no rebalance (the group's coordinator is alive; the members' fetchers find the new leaders through
// Metadata) and lose nothing; the zk era's connector does not watch /brokers/ids (0.8.2's
// ZookeeperConsumerConnector registers no broker listener), so it does not rebalance either: its
// LeaderFinderThread moves the fetchers of the dead broker's partitions to their new leaders.
func brokerFailure() *Scenario {
	sc := clusterScenario("broker-failure", "3 brokers, replication factor 3: kill -9 of a partition leader that is not the coordinator; "+
		"no era rebalances, the fetchers find the new leaders, nothing acknowledged is lost")
	sc.Script = func(p Params, t Timing, r *scriptRand) []Step {
		s := &script{t: t}
		s.startAll(p.Consumers)
		s.trigger("broker-failure").killBroker(BrokerRoleLeader)
		s.trigger("broker-return").restartDown()
		return s.steps
	}
	sc.Extra = func(e *EraRun) map[string]int64 {
		return map[string]int64{
			"partitions_delivered_after_failure": e.partitionsDeliveredBetween("broker-failure", "broker-return"),
		}
	}
	sc.Relations = []Relation{
		zeroIn("broker-failure", FigRebalanceParticipants),
		zeroIn("broker-return", FigRebalanceParticipants),
		namedRel(nil, false, "failure: every partition delivers again before the broker returns (the fetchers found the new leaders)", relDeliversAgainBeforeReturn, nil),
		// Duplicates are counted per window: the start-up rebalances (before the kill) may
		// deliver again what a revoked partition's owner had not committed, as in any scenario.
		zeroIn("broker-failure", FigDuplicates),
		zeroIn("broker-return", FigDuplicates),
		ownedOnce(nil),
		totalFig(nil, FigLost, eq, 0),
	}
	return sc
}

// coordinatorFailover: kill -9 of the broker that coordinates the group. The controller elects a new
// leader for the group's __consumer_offsets partition once the dead broker's ZooKeeper session expires;
// that broker loads the group and its offsets from the log (GroupMetadataManager.loadGroupsAndOffsets,
// COORDINATOR_LOAD_IN_PROGRESS meanwhile) and the members, whose requests fail, look the coordinator up
// again. Loading restarts every member's session timer, so a group that finds its coordinator within a
// session does not rebalance; a member that does not is removed and the group rebalances, and then the
// new owners start from the offsets committed before the kill: duplicates are bounded by the records
// delivered past those commits. The zk era has no coordinator (its group and offsets live in
// ZooKeeper); broker-failure shows what a broker's death does to it.
func coordinatorFailover() *Scenario {
	sc := clusterScenario("coordinator-failover", "3 brokers, replication factor 3: kill -9 of the group coordinator's broker; the members find "+
		"the new coordinator, the group is stable again, commits are kept, duplicates bounded by the uncommitted records")
	sc.NotApplicable = map[spec.Era]string{
		spec.ZK: "the zk era has no group coordinator: its group and offsets live in ZooKeeper (broker-failure covers a broker's death there)",
	}
	sc.Script = func(p Params, t Timing, r *scriptRand) []Step {
		s := &script{t: t}
		s.startAll(p.Consumers)
		// Commits on record before the kill: two auto-commit intervals.
		s.add(Step{DelayMs: 2 * t.AutoCommitIntervalMs, Action: ActTrigger, Name: "coordinator-failover"})
		s.killBroker(BrokerRoleCoordinator)
		s.trigger("coordinator-return").restartDown()
		return s.steps
	}
	sc.Extra = func(e *EraRun) map[string]int64 {
		return map[string]int64{
			"coordinator_found_ms": e.coordinatorFoundMs("coordinator-failover"),
			"uncommitted_at_kill":  e.uncommittedAt("coordinator-failover", "coordinator-return"),
		}
	}
	sc.Relations = []Relation{
		namedRel(nil, false, "failover: every member looks the coordinator up again and reaches it (coordinator_found_ms >= 0)", relCoordinatorFoundAgain, nil),
		namedRel(nil, false, "failover: the group is stable again, or never stopped being (time_to_stable_ms is not never)", relStableAfterFailover, nil),
		namedRel(nil, false, "failover: duplicates <= records delivered past the commits acknowledged before the kill", relDuplicatesBoundedByUncommitted, nil),
		ownedOnce(nil),
		totalFig(nil, FigLost, eq, 0),
	}
	return sc
}

// brokerRollingBounce: each broker in turn stopped gracefully and restarted, as an operator upgrades
// a cluster. A stop is controlled shutdown first (ControlledShutdown to the controller, which moves
// the broker's leaderships away and takes it out of the ISRs, KafkaServer.controlledShutdown), so
// the group's coordinator moves without a kill and the members' requests get NOT_COORDINATOR rather
// than silence. The coordinator eras must not rebalance (Kafka's system tests bounce brokers under
// a group with a session timeout that leaves room for the group's load on its new coordinator); the zk
// era's connector does not watch the brokers and must not either.
func brokerRollingBounce() *Scenario {
	sc := clusterScenario("broker-rolling-bounce", "3 brokers, replication factor 3: each broker stopped (controlled shutdown) and restarted in turn; "+
		"no era rebalances, nothing acknowledged is lost")
	sc.Script = func(p Params, t Timing, r *scriptRand) []Step {
		s := &script{t: t}
		s.startAll(p.Consumers)
		for i := 0; i < clusterBrokers; i++ {
			s.trigger(bounceTrigger(i))
			s.add(Step{Action: ActBrokerStop, Node: i})
			s.add(Step{DelayMs: 1000, Action: ActBrokerStart, Node: i})
			s.settle()
		}
		return s.steps
	}
	for i := 0; i < clusterBrokers; i++ {
		sc.Relations = append(sc.Relations, zeroIn(bounceTrigger(i), FigRebalanceParticipants))
	}
	sc.Relations = append(sc.Relations, ownedOnce(nil), totalFig(nil, FigLost, eq, 0))
	return sc
}

// durability: kill -9 of a partition leader while, beside the group's producer, two producers write
// the side topic (replication factor 3, min.insync.replicas 2) at 10,000 records/s each, one with
// acks=all and one with acks=1. With acks=all a record is acknowledged once every in-sync replica has
// it, so the replica the controller elects has it too: nothing acknowledged is lost, and with two of
// three replicas alive the producer carries on. With acks=1 the leader acknowledges on its own append:
// what it acknowledged and its followers had not fetched yet dies with it, and when it returns it
// truncates those records away (the new leader has written others at their offsets). That loss is the
// measurement; the relation is that it happens only on partitions the killed broker led. The group's
// own producer (acks=all, one record at a time) and members are judged as in every scenario.
func durability() *Scenario {
	sc := clusterScenario("durability", "3 brokers, replication factor 3, min.insync.replicas 2: kill -9 of a partition leader "+
		"under an acks=all and an acks=1 producer; acks=all loses nothing acknowledged, acks=1's loss is measured")
	sc.Durability = &DurabilitySpec{
		Producers:     []ProducerSpec{{Name: "acks_all", Acks: "all"}, {Name: "acks_1", Acks: "1"}},
		TopicConfigs:  map[string]string{"min.insync.replicas": "2"},
		RecordsPerSec: 10000,
	}
	sc.Script = func(p Params, t Timing, r *scriptRand) []Step {
		s := &script{t: t}
		s.startAll(p.Consumers)
		s.trigger("leader-kill").killBroker(BrokerRoleLeader)
		s.trigger("leader-return").restartDown()
		return s.steps
	}
	sc.Extra = durabilityFigures
	sc.Relations = []Relation{
		producerRel("acks=all: every acknowledged record is in the log (acks_all_lost == 0, acks_all_acked > 0)", "acks_all",
			relProducerKeptAcknowledged),
		producerRel("acks=all: the producer carried on with one of three replicas down (acknowledged after the kill > 0)", "acks_all",
			relProducerCarriedOn),
		producerRel("acks=1: records lost only on the partitions the killed broker led (acks_1_lost_elsewhere == 0); acks_1_lost is the measurement", "acks_1",
			relProducerLostOnlyWhereDownLed),
		ownedOnce(nil),
		totalFig(nil, FigLost, eq, 0),
	}
	return sc
}

// producerRel is the registered relation rel on the durability check of producer name, on every era.
func producerRel(text, name, rel string) Relation {
	return namedRel(nil, false, text, rel, map[string]string{"producer": name})
}

// onProducer is a registered relation on the durability check of the producer args["producer"].
func onProducer(f func(ProducerCheck) (bool, string)) namedRelation {
	return func(x checkCtx, args map[string]string) (bool, string, bool) {
		c, ok := x.era.producerCheck(args["producer"])
		if !ok {
			return false, "no durability check of producer " + args["producer"], false
		}
		ok, got := f(c)
		return ok, got, false
	}
}

// producerKeptAcknowledged: every record the producer saw acknowledged is in the log.
func producerKeptAcknowledged(c ProducerCheck) (bool, string) {
	return c.Lost == 0 && c.Acked > 0, fmt.Sprintf("%d lost of %d acknowledged", c.Lost, c.Acked)
}

// producerCarriedOn: the producer had records acknowledged after the broker's kill.
func producerCarriedOn(c ProducerCheck) (bool, string) {
	return c.AckedAfterDown > 0, fmt.Sprintf("%d acknowledged after the kill", c.AckedAfterDown)
}

// producerLostOnlyWhereDownLed: records were lost only on the partitions the killed broker led.
func producerLostOnlyWhereDownLed(c ProducerCheck) (bool, string) {
	return len(c.DownLedPartitions) > 0 && c.LostElsewhere == 0,
		fmt.Sprintf("%d lost of %d acknowledged, on partitions %v; the killed broker led %v; %d elsewhere",
			c.Lost, c.Acked, c.LostPartitions, c.DownLedPartitions, c.LostElsewhere)
}

// bounceTrigger names the window of broker i's bounce (0-based i, 1-based name).
func bounceTrigger(i int) string { return fmt.Sprintf("bounce-%d", i+1) }

// partitionsDeliveredBetween counts the partitions with a delivery between the triggers from and to.
func (e *EraRun) partitionsDeliveredBetween(from, to string) int64 {
	start, ok := e.triggerTs(from)
	if !ok {
		return -1
	}
	end, ok := e.triggerTs(to)
	if !ok {
		end = 1 << 62
	}
	seen := map[int32]bool{}
	for _, r := range e.Records {
		if r.Kind == timeline.Deliver && r.TsMs >= start && r.TsMs < end && r.Partition != nil {
			seen[*r.Partition] = true
		}
	}
	return int64(len(seen))
}

// coordinatorFoundMs is how long after the broker kill following trigger every member live then had a
// group request answered by the new coordinator: the largest, over those members, of the time to
// their first group request (other than FindCoordinator) answered without error after their first
// FindCoordinator since the kill (the old coordinator is dead: a member must look it up again). -1
// when a live member never got one, or there was no kill.
func (e *EraRun) coordinatorFoundMs(trigger string) int64 {
	start, ok := e.triggerTs(trigger)
	if !ok {
		return -1
	}
	killTs := e.killAfter(start)
	if killTs < 0 {
		return -1
	}
	live := map[string]bool{}
	for _, r := range e.Records {
		if r.TsMs > killTs {
			break
		}
		switch r.Kind {
		case timeline.MemberStart:
			live[r.Member] = true
		case timeline.MemberStop:
			delete(live, r.Member)
		}
	}
	if len(live) == 0 {
		return -1
	}
	lookedUp := map[string]bool{}
	found := map[string]int64{}
	for _, r := range e.Records {
		if r.TsMs <= killTs || r.Kind != timeline.GroupRequest || !live[r.Member] {
			continue
		}
		if _, done := found[r.Member]; done {
			continue
		}
		switch {
		case r.API == "FindCoordinator":
			lookedUp[r.Member] = true
		case lookedUp[r.Member] && r.Err == "":
			found[r.Member] = r.TsMs - killTs
		}
	}
	var worst int64
	for m := range live {
		ms, ok := found[m]
		if !ok {
			return -1
		}
		worst = max(worst, ms)
	}
	return worst
}

// killAfter is the time of the first broker kill after ts (its fault record), -1 when there is none.
func (e *EraRun) killAfter(ts int64) int64 {
	for _, r := range e.Records {
		if r.TsMs > ts && r.Kind == timeline.Fault && r.Action == string(ActBrokerKill) {
			return r.TsMs
		}
	}
	return -1
}

// uncommittedAt bounds the redeliveries a failover at trigger from can cause: per partition, the
// deliveries up to trigger to of offsets at or past the last commit acknowledged (applied) before
// the broker kill. If the group restarted every partition from those commits, it would deliver these
// records again and nothing more. -1 without the triggers.
func (e *EraRun) uncommittedAt(from, to string) int64 {
	start, ok := e.triggerTs(from)
	if !ok {
		return -1
	}
	end, ok := e.triggerTs(to)
	if !ok {
		return -1
	}
	killTs := e.killAfter(start)
	if killTs < 0 {
		return -1
	}
	committed := map[int32]int64{}
	for _, r := range e.Records {
		if r.TsMs > killTs {
			break
		}
		if r.Kind == timeline.Commit && r.Result == timeline.CommitApplied && r.Partition != nil && r.Offset != nil {
			committed[*r.Partition] = max(committed[*r.Partition], *r.Offset)
		}
	}
	type po struct {
		p int32
		o int64
	}
	seen := map[po]bool{}
	for _, r := range e.Records {
		if r.TsMs >= end {
			break
		}
		if r.Kind == timeline.Deliver && r.Partition != nil && r.Offset != nil && *r.Offset >= committed[*r.Partition] {
			seen[po{*r.Partition, *r.Offset}] = true
		}
	}
	return int64(len(seen))
}
