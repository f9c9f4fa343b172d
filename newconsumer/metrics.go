package newconsumer

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// rebalanceCounts are counted from the records the member emits (emit), so that the metrics
// count exactly what the timeline's rebalance_attempts and rebalance_failures read.
type rebalanceCounts struct {
	begun, ok, failed atomic.Int64
}

func (rc *rebalanceCounts) note(r timeline.Record) {
	switch r.Kind {
	case timeline.RebalanceBegin:
		rc.begun.Add(1)
	case timeline.RebalanceEnd:
		if r.OK != nil && *r.OK {
			rc.ok.Add(1)
		} else {
			rc.failed.Add(1)
		}
	}
}

// Collector is the member's Prometheus metrics, named after Kafka 3.9's consumer meters
// (kafka.consumer:type=consumer-coordinator-metrics and consumer-fetch-manager-metrics, client-id
// tag) in Prometheus style, with the labels client_id and group:
//
//	kafka_consumer_coordinator_rebalance_total         counter  rebalance-total: JoinGroup+SyncGroup rounds that completed (rebalance_end ok)
//	kafka_consumer_coordinator_failed_rebalance_total  counter  failed-rebalance-total: rounds that had to rejoin (rebalance_end not ok)
//	kafka_consumer_coordinator_rebalance_started_total counter  rebalances begun (onJoinPrepare; no Kafka meter: rebalance_begin records)
//	kafka_consumer_coordinator_assigned_partitions     gauge    assigned-partitions
//	kafka_consumer_coordinator_generation              gauge    the generation of the last completed rebalance, -1 when none (no Kafka meter)
//	kafka_consumer_fetch_manager_records_lag           gauge    records-lag{topic,partition}: high watermark of the last fetch − position
//	kafka_consumer_fetch_manager_records_lag_max       gauge    records-lag-max: the largest records-lag now (Kafka's is a windowed max)
//
// A partition's lag is exported once a fetch of it answered (its high watermark is known). Every
// value is read at the scrape: the member's lock is held only to copy them.
func (c *Consumer) Collector() prometheus.Collector {
	labels := prometheus.Labels{"client_id": c.clientID, "group": c.cfg.GroupID}
	d := func(name, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, vars, labels)
	}
	return &consumerCollector{c: c,
		rebalances: d("kafka_consumer_coordinator_rebalance_total", "Rebalance rounds (JoinGroup+SyncGroup) completed (consumer-coordinator-metrics rebalance-total)."),
		failed:     d("kafka_consumer_coordinator_failed_rebalance_total", "Rebalance rounds that failed and rejoin (consumer-coordinator-metrics failed-rebalance-total)."),
		started:    d("kafka_consumer_coordinator_rebalance_started_total", "Rebalances begun (onJoinPrepare)."),
		assigned:   d("kafka_consumer_coordinator_assigned_partitions", "Partitions assigned to this member (consumer-coordinator-metrics assigned-partitions)."),
		generation: d("kafka_consumer_coordinator_generation", "Generation of the member's last completed rebalance; -1 when none."),
		lag:        d("kafka_consumer_fetch_manager_records_lag", "High watermark of the partition's last fetch minus the position (consumer-fetch-manager-metrics records-lag).", "topic", "partition"),
		lagMax:     d("kafka_consumer_fetch_manager_records_lag_max", "Largest records-lag over the assigned partitions now (consumer-fetch-manager-metrics records-lag-max)."),
	}
}

type consumerCollector struct {
	c                                                              *Consumer
	rebalances, failed, started, assigned, generation, lag, lagMax *prometheus.Desc
}

func (cc *consumerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cc.rebalances, cc.failed, cc.started, cc.assigned, cc.generation, cc.lag, cc.lagMax} {
		ch <- d
	}
}

func (cc *consumerCollector) Collect(ch chan<- prometheus.Metric) {
	c := cc.c
	type lag struct {
		tp  TopicPartition
		lag int64
	}
	c.mu.Lock()
	gen := c.m.gen.id
	n := len(c.owned)
	var lags []lag
	for _, tp := range c.ownedLocked() {
		if st := c.owned[tp]; st.hwm >= 0 && st.position >= 0 {
			lags = append(lags, lag{tp, max(st.hwm-st.position, 0)})
		}
	}
	c.mu.Unlock()
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	counter(cc.rebalances, c.rebalances.ok.Load())
	counter(cc.failed, c.rebalances.failed.Load())
	counter(cc.started, c.rebalances.begun.Load())
	ch <- prometheus.MustNewConstMetric(cc.assigned, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(cc.generation, prometheus.GaugeValue, float64(gen))
	var most int64
	for _, l := range lags {
		most = max(most, l.lag)
		ch <- prometheus.MustNewConstMetric(cc.lag, prometheus.GaugeValue, float64(l.lag), l.tp.Topic, strconv.Itoa(int(l.tp.Partition)))
	}
	ch <- prometheus.MustNewConstMetric(cc.lagMax, prometheus.GaugeValue, float64(most))
}
