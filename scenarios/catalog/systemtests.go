package catalog

// The Go of Kafka's own consumer system tests (tests/kafkatest/tests/client/consumer_test.py,
// OffsetValidationTest): the per-partition relation and the partitions' ends. The scenarios are files
// (catalog/consumer-bounce-*.yaml, static-member-bounce.yaml, static-fencing.yaml,
// consumer-failure*.yaml), each with that test's relation, on every era where it applies. Kafka runs them
// with 3 consumers on a 1-partition topic and 5 bounces; here the defaults are 3 consumers, Kafka's
// partition count where the relation reads one partition, and 2 bounces, so that a run takes seconds.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

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
func (e *eraRun) partitionEnds() map[string]partitionEnd {
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
func (e *eraRun) allRecords() []timeline.Record {
	return append(append([]timeline.Record(nil), e.Records...), e.ShutdownRecords...)
}

// revocationsSince counts the partitions member revoked from trigger from on (-1 without it).
func (e *eraRun) revocationsSince(from, member string) int64 {
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
