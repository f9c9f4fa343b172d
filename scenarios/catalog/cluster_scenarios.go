package catalog

// The cluster scenarios' Go (issue #15): the relations registered for them and the counters their
// files name. The scenarios are files (catalog/broker-failure.yaml, coordinator-failover.yaml,
// broker-rolling-bounce.yaml, durability.yaml): a three-broker lab whose topic and __consumer_offsets
// have replication factor 3, and a broker killed with SIGKILL or stopped under the group; every killed
// broker is restarted at the end, so that the next era starts on three brokers.

import (
	"fmt"

	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// onProducer is a registered relation on the durability check of the producer args["producer"].
func onProducer(f func(report.ProducerCheck) (bool, string)) namedRelation {
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
func producerKeptAcknowledged(c report.ProducerCheck) (bool, string) {
	return c.Lost == 0 && c.Acked > 0, fmt.Sprintf("%d lost of %d acknowledged", c.Lost, c.Acked)
}

// producerCarriedOn: the producer had records acknowledged after the broker's kill.
func producerCarriedOn(c report.ProducerCheck) (bool, string) {
	return c.AckedAfterDown > 0, fmt.Sprintf("%d acknowledged after the kill", c.AckedAfterDown)
}

// producerLostOnlyWhereDownLed: records were lost only on the partitions the killed broker led.
func producerLostOnlyWhereDownLed(c report.ProducerCheck) (bool, string) {
	return len(c.DownLedPartitions) > 0 && c.LostElsewhere == 0,
		fmt.Sprintf("%d lost of %d acknowledged, on partitions %v; the killed broker led %v; %d elsewhere",
			c.Lost, c.Acked, c.LostPartitions, c.DownLedPartitions, c.LostElsewhere)
}

// partitionsDeliveredBetween counts the partitions with a delivery between the triggers from and to.
func (e *eraRun) partitionsDeliveredBetween(from, to string) int64 {
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
func (e *eraRun) coordinatorFoundMs(trigger string) int64 {
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
func (e *eraRun) killAfter(ts int64) int64 {
	for _, r := range e.Records {
		if r.TsMs > ts && r.Kind == timeline.Fault && r.Action == string(spec.ActBrokerKill) {
			return r.TsMs
		}
	}
	return -1
}

// uncommittedAt bounds the redeliveries a failover at trigger from can cause: per partition, the
// deliveries up to trigger to of offsets at or past the last commit acknowledged (applied) before
// the broker kill. If the group restarted every partition from those commits, it would deliver these
// records again and nothing more. -1 without the triggers.
func (e *eraRun) uncommittedAt(from, to string) int64 {
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
