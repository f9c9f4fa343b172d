package catalog

// A durability scenario's data (Scenario.Durability: the side topic's producers) and the figures and
// checks its relations read (report.EraRun.Durability, which the runner fills).

import (
	"github.com/rebalancelab/rebalancelab/scenarios/report"
)

// DurabilitySpec makes a scenario's runner write the side topic with Producers.
type DurabilitySpec struct {
	Producers []ProducerSpec
	// TopicConfigs are the side topic's configs (e.g. min.insync.replicas).
	TopicConfigs map[string]string
	// RecordsPerSec is each producer's rate, records per second, sent asynchronously (the producer
	// keeps its in-flight records, as an application does, rather than waiting for each).
	RecordsPerSec int
}

// ProducerSpec is one producer of the side topic.
type ProducerSpec struct {
	// Name keys the producer's records and prefixes its Extra figures ("acks_all": acks_all_lost).
	Name string
	// Acks is the producer's acks, as Kafka's producer config names it: "all" (with Kafka's default
	// enable.idempotence=true) or "1" (the leader alone; idempotence off, as Kafka requires).
	Acks string
}

// durabilityFigures are the Extra figures of the producers' checks: <producer>_acked, _lost,
// _lost_elsewhere, _duplicates, _failed, _max_ack_gap_ms, _max_partition_ack_gap_ms.
func durabilityFigures(e *eraRun) map[string]int64 {
	m := map[string]int64{}
	for _, c := range e.Durability {
		m[c.Producer+"_acked"] = c.Acked
		m[c.Producer+"_lost"] = c.Lost
		m[c.Producer+"_lost_elsewhere"] = c.LostElsewhere
		m[c.Producer+"_duplicates"] = c.Duplicates
		m[c.Producer+"_failed"] = c.Failed
		m[c.Producer+"_max_ack_gap_ms"] = c.MaxAckGapMs
		m[c.Producer+"_max_partition_ack_gap_ms"] = c.MaxPartitionAckGapMs
	}
	return m
}

// producerCheck is the era's check of producer name.
func (e *eraRun) producerCheck(name string) (report.ProducerCheck, bool) {
	for _, c := range e.Durability {
		if c.Producer == name {
			return c, true
		}
	}
	return report.ProducerCheck{}, false
}
