package broker

import (
	"hash/fnv"
	"math/rand/v2"
)

// assignRandFor is the random source for a new topic's replica placement (assignReplicas with
// fixedStartIndex -1), from rebalancelab.replica.assignment.seed:
//   - seed >= 0: a PCG source seeded with (seed, FNV-1a of the topic name), so that the same seed places
//     the same topic the same way whatever was created before it;
//   - seed < 0: seeded from nowNanos (the caller's clock reading), as Kafka's AdminUtils.RAND
//     (java.util.Random seeded from the clock) is.
//
// Kafka keeps one process-wide Random; the lab derives one per topic so that a fixed seed makes each
// placement reproducible on its own. The source is used by one call only, so it needs no lock.
func assignRandFor(seed int64, topic string, nowNanos int64) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(topic))
	if seed < 0 {
		return rand.New(rand.NewPCG(uint64(nowNanos), h.Sum64()))
	}
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// replicaAssignmentStart is what createTopic passes to assignReplicas as (fixedStartIndex, rnd): with
// rebalancelab.replica.assignment.seed given, -1 and assignRandFor's source (Kafka 3.9's random
// start); without it, the lab's fixed start index 0 and no source.
func replicaAssignmentStart(cfg Config, topic string, nowNanos int64) (int, *rand.Rand) {
	if !cfg.ReplicaAssignmentRandom {
		return 0, nil
	}
	return -1, assignRandFor(cfg.ReplicaAssignmentSeed, topic, nowNanos)
}
