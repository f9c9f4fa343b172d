package zkconsumer

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// rebalanceTimer is 0.8.2's RebalanceRateAndTime timer, measured from the records the connector
// emits (emit): one event per syncedRebalance (rebalance_begin), timed until an attempt succeeds
// (a rebalance given up adds no time); attempts and failed attempts as the
// timeline's rebalance_attempts counts them.
type rebalanceTimer struct {
	mu                    sync.Mutex
	began                 time.Time // zero: no rebalance running
	count, attempts, fail int64
	seconds               float64 // Σ durations of finished rebalances
}

func (rt *rebalanceTimer) note(r timeline.Record) {
	if r.Kind != timeline.RebalanceBegin && r.Kind != timeline.RebalanceEnd {
		return
	}
	now := time.Now()
	if r.TsMs != 0 {
		now = time.UnixMilli(r.TsMs)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	switch r.Kind {
	case timeline.RebalanceBegin:
		rt.count++
		rt.began = now
	case timeline.RebalanceEnd:
		rt.attempts++
		ok := r.OK != nil && *r.OK
		if !ok {
			rt.fail++
		}
		if ok && !rt.began.IsZero() { // a failed attempt is retried or given up: not timed
			rt.seconds += now.Sub(rt.began).Seconds()
			rt.began = time.Time{}
		}
	}
}

// Collector is the connector's Prometheus metrics, named after Kafka 0.8.2's meters of the old
// consumer in Prometheus style, with the labels client_id and group:
//
//	kafka_consumer_zookeeper_consumer_connector_rebalance_rate_and_time_seconds  summary  kafka.consumer:type=ZookeeperConsumerConnector,name=RebalanceRateAndTime: _count = syncedRebalance calls, _sum = seconds of those that succeeded
//	kafka_consumer_zookeeper_consumer_connector_rebalance_attempts_total          counter  passes of the rebalance.max.retries loop (no 0.8.2 meter: rebalance_end records)
//	kafka_consumer_zookeeper_consumer_connector_rebalance_failed_attempts_total   counter  those that failed
//	kafka_consumer_zookeeper_consumer_connector_owned_partitions                 gauge    partitions whose owner znode names one of its threads (no 0.8.2 meter)
//	kafka_server_fetcher_lag_metrics_consumer_lag                                gauge    kafka.server:type=FetcherLagMetrics,name=ConsumerLag{topic,partition}: high watermark − fetch offset
//	kafka_consumer_consumer_fetcher_manager_max_lag                              gauge    kafka.consumer:type=ConsumerFetcherManager,name=MaxLag: the largest ConsumerLag
//
// As in 0.8.2, lag is measured from the fetcher's offset (what was fetched), not from what the
// application consumed. Read at the scrape; the connector's lock is held only to copy the registry.
func (c *Connector) Collector() prometheus.Collector {
	labels := prometheus.Labels{"client_id": c.clientID, "group": c.cfg.GroupID}
	d := func(name, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, vars, labels)
	}
	return &connectorCollector{c: c,
		rebalance: d("kafka_consumer_zookeeper_consumer_connector_rebalance_rate_and_time_seconds",
			"syncedRebalance calls (count) and the seconds the successful ones took (sum) (ZookeeperConsumerConnector RebalanceRateAndTime)."),
		attempts: d("kafka_consumer_zookeeper_consumer_connector_rebalance_attempts_total", "Rebalance attempts (passes of the rebalance.max.retries loop)."),
		failed:   d("kafka_consumer_zookeeper_consumer_connector_rebalance_failed_attempts_total", "Rebalance attempts that failed."),
		owned:    d("kafka_consumer_zookeeper_consumer_connector_owned_partitions", "Partitions this connector owns (its owner znodes)."),
		lag: d("kafka_server_fetcher_lag_metrics_consumer_lag",
			"High watermark of the partition's last fetch minus the fetch offset (FetcherLagMetrics ConsumerLag).", "topic", "partition"),
		maxLag: d("kafka_consumer_consumer_fetcher_manager_max_lag", "Largest ConsumerLag over the owned partitions (ConsumerFetcherManager MaxLag)."),
	}
}

type connectorCollector struct {
	c                                               *Connector
	rebalance, attempts, failed, owned, lag, maxLag *prometheus.Desc
}

func (cc *connectorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cc.rebalance, cc.attempts, cc.failed, cc.owned, cc.lag, cc.maxLag} {
		ch <- d
	}
}

func (cc *connectorCollector) Collect(ch chan<- prometheus.Metric) {
	c := cc.c
	c.mu.Lock()
	tps := keys(c.topicRegistry)
	infos := make([]*partitionInfo, len(tps))
	for i, tp := range tps {
		infos[i] = c.topicRegistry[tp]
	}
	c.mu.Unlock()
	rt := &c.rebalances
	rt.mu.Lock()
	count, attempts, fail, secs := rt.count, rt.attempts, rt.fail, rt.seconds
	rt.mu.Unlock()
	ch <- prometheus.MustNewConstSummary(cc.rebalance, uint64(count), secs, nil)
	ch <- prometheus.MustNewConstMetric(cc.attempts, prometheus.CounterValue, float64(attempts))
	ch <- prometheus.MustNewConstMetric(cc.failed, prometheus.CounterValue, float64(fail))
	ch <- prometheus.MustNewConstMetric(cc.owned, prometheus.GaugeValue, float64(len(tps)))
	var most int64
	for _, pi := range infos {
		hw := pi.hw.Load()
		if hw < 0 {
			continue
		}
		lag := max(hw-pi.fetched.Load(), 0)
		most = max(most, lag)
		ch <- prometheus.MustNewConstMetric(cc.lag, prometheus.GaugeValue, float64(lag), pi.tp.Topic, strconv.Itoa(int(pi.tp.Partition)))
	}
	ch <- prometheus.MustNewConstMetric(cc.maxLag, prometheus.GaugeValue, float64(most))
}
