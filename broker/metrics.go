package broker

import (
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/coordinator"
)

// metrics live on a private registry per broker, so that several brokers in one process (the lab's
// in-process mode, tests) never collide on global registration. Names follow Kafka's JMX meters
// (kafka.network RequestMetrics, kafka.server BrokerTopicMetrics) in Prometheus style.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec // api, error
	bytesIn  prometheus.Counter
	bytesOut prometheus.Counter
	closed   *prometheus.CounterVec // reason
	messages prometheus.Counter
	// purgatory counts the requests parked now, by delayed operation ("Fetch": long polls waiting
	// for MinBytes), as Kafka's DelayedOperationPurgatory PurgatorySize gauge.
	purgatory *prometheus.GaugeVec
	// coord is the group coordinator once started; groupCollector reads it at each scrape.
	coord atomic.Pointer[coordinator.Coordinator]
}

func newMetrics(id int32) *metrics {
	labels := prometheus.Labels{"broker": strconv.Itoa(int(id))}
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_server_requests_total", Help: "Requests handled, by API name and error (first error code of the response; NONE when none).",
			ConstLabels: labels,
		}, []string{"api", "error"}),
		bytesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kafka_server_bytes_in_total", Help: "Request bytes read from clients, size prefixes included.", ConstLabels: labels,
		}),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kafka_server_bytes_out_total", Help: "Response bytes written to clients, size prefixes included.", ConstLabels: labels,
		}),
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_network_connections_closed_total", Help: "Connections the broker closed because of the client's request, by reason.", ConstLabels: labels,
		}, []string{"reason"}),
		messages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kafka_server_messages_in_total", Help: "Records appended by Produce.", ConstLabels: labels,
		}),
		purgatory: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kafka_server_purgatory_size", Help: "Requests parked now, by delayed operation (Fetch: long polls waiting for data).", ConstLabels: labels,
		}, []string{"delayed_operation"}),
	}
	m.reg.MustRegister(m.requests, m.bytesIn, m.bytesOut, m.closed, m.messages, m.purgatory, newGroupCollector(m, labels))
	return m
}

// groupCollector exports the group coordinator's figures, read from coordinator.Stats at each scrape
// (the coordinator's lock is held only to count, never across the scrape's I/O), named after Kafka
// 3.9's meters: kafka.coordinator.group:type=GroupMetadataManager,name=NumGroups{,Empty,
// PreparingRebalance,CompletingRebalance,Stable,Dead} and NumOffsets, and
// kafka.coordinator.group:type=group-coordinator-metrics group-completed-rebalance-count and
// offset-commit-count. Before the coordinator starts it exports nothing.
type groupCollector struct {
	m                                     *metrics
	groups, numGroups, offsets, rebal, oc *prometheus.Desc
}

func newGroupCollector(m *metrics, labels prometheus.Labels) *groupCollector {
	return &groupCollector{
		m: m,
		groups: prometheus.NewDesc("kafka_coordinator_group_groups",
			"Groups the coordinator holds, by state (GroupMetadataManager NumGroups<State>).", []string{"state"}, labels),
		numGroups: prometheus.NewDesc("kafka_coordinator_group_num_groups",
			"Groups the coordinator holds (GroupMetadataManager NumGroups).", nil, labels),
		offsets: prometheus.NewDesc("kafka_coordinator_group_num_offsets",
			"Committed offsets the coordinator holds, over all groups (GroupMetadataManager NumOffsets).", nil, labels),
		rebal: prometheus.NewDesc("kafka_coordinator_group_completed_rebalances_total",
			"Rebalances completed: CompletingRebalance -> Stable transitions (group-coordinator-metrics group-completed-rebalance-count).", nil, labels),
		oc: prometheus.NewDesc("kafka_coordinator_group_offset_commits_total",
			"Partition offsets stored by OffsetCommit (group-coordinator-metrics offset-commit-count).", nil, labels),
	}
}

func (c *groupCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.groups
	ch <- c.numGroups
	ch <- c.offsets
	ch <- c.rebal
	ch <- c.oc
}

func (c *groupCollector) Collect(ch chan<- prometheus.Metric) {
	co := c.m.coord.Load()
	if co == nil {
		return
	}
	st := co.Stats()
	total := 0
	for _, s := range []coordinator.GroupState{coordinator.Empty, coordinator.PreparingRebalance,
		coordinator.CompletingRebalance, coordinator.Stable, coordinator.Dead} {
		n := st.GroupsByState[s]
		total += n
		ch <- prometheus.MustNewConstMetric(c.groups, prometheus.GaugeValue, float64(n), s.String())
	}
	ch <- prometheus.MustNewConstMetric(c.numGroups, prometheus.GaugeValue, float64(total))
	ch <- prometheus.MustNewConstMetric(c.offsets, prometheus.GaugeValue, float64(st.NumOffsets))
	ch <- prometheus.MustNewConstMetric(c.rebal, prometheus.CounterValue, float64(st.CompletedRebalances))
	ch <- prometheus.MustNewConstMetric(c.oc, prometheus.CounterValue, float64(st.OffsetCommits))
}

// responseErrorCode is the first non-zero error code in a response (0 if none), for the requests
// metric: the response's own ErrorCode, then, depth first in field order, those of its topics,
// partitions, groups, members, coordinators. One walk for every response type (errorWalk), planned
// once per type by reflection, instead of one hand-written walk per API.
func responseErrorCode(resp kmsg.Response) int16 {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0
	}
	return errorWalkFor(v.Type().Elem()).first(v.Elem())
}

// errorWalk is the plan for one struct type: where its ErrorCode is and which fields can hold
// more (slices of structs, structs), so a walk never touches record bytes or other fields.
type errorWalk struct {
	code     int // index of the int16 field ErrorCode; -1 when none
	children []errorChild
}

type errorChild struct {
	field int
	slice bool
	walk  *errorWalk
}

var errorWalks sync.Map // reflect.Type → *errorWalk

func errorWalkFor(t reflect.Type) *errorWalk {
	if w, ok := errorWalks.Load(t); ok {
		return w.(*errorWalk)
	}
	w := planErrorWalk(t, map[reflect.Type]*errorWalk{})
	errorWalks.Store(t, w)
	return w
}

// planErrorWalk returns t's plan, nil when no ErrorCode is reachable from t. seen breaks cycles.
func planErrorWalk(t reflect.Type, seen map[reflect.Type]*errorWalk) *errorWalk {
	if w, ok := seen[t]; ok {
		return w
	}
	w := &errorWalk{code: -1}
	seen[t] = w
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch {
		case f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16:
			w.code = i
		case f.Type.Kind() == reflect.Struct:
			if cw := planErrorWalk(f.Type, seen); cw != nil {
				w.children = append(w.children, errorChild{field: i, walk: cw})
			}
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			if cw := planErrorWalk(f.Type.Elem(), seen); cw != nil {
				w.children = append(w.children, errorChild{field: i, slice: true, walk: cw})
			}
		}
	}
	if w.code < 0 && len(w.children) == 0 {
		seen[t] = nil
		return nil
	}
	return w
}

func (w *errorWalk) first(v reflect.Value) int16 {
	if w.code >= 0 {
		if c := int16(v.Field(w.code).Int()); c != 0 {
			return c
		}
	}
	for _, ch := range w.children {
		f := v.Field(ch.field)
		if !ch.slice {
			if c := ch.walk.first(f); c != 0 {
				return c
			}
			continue
		}
		for i := 0; i < f.Len(); i++ {
			if c := ch.walk.first(f.Index(i)); c != 0 {
				return c
			}
		}
	}
	return 0
}
