package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	}
	m.reg.MustRegister(m.requests, m.bytesIn, m.bytesOut, m.closed, m.messages)
	return m
}

// responseErrorCode is the first non-zero error code in a response (0 if none), for the requests metric.
func responseErrorCode(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.ApiVersionsResponse:
		return r.ErrorCode
	case *kmsg.MetadataResponse:
		for _, t := range r.Topics {
			if t.ErrorCode != 0 {
				return t.ErrorCode
			}
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
	case *kmsg.ProduceResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
	case *kmsg.FetchResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
	case *kmsg.ListOffsetsResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode != 0 {
				return t.ErrorCode
			}
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode != 0 {
				return t.ErrorCode
			}
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode != 0 {
				return t.ErrorCode
			}
		}
	case *kmsg.FindCoordinatorResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for _, c := range r.Coordinators {
			if c.ErrorCode != 0 {
				return c.ErrorCode
			}
		}
	case *kmsg.JoinGroupResponse:
		return r.ErrorCode
	case *kmsg.SyncGroupResponse:
		return r.ErrorCode
	case *kmsg.HeartbeatResponse:
		return r.ErrorCode
	case *kmsg.LeaveGroupResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for _, m := range r.Members {
			if m.ErrorCode != 0 {
				return m.ErrorCode
			}
		}
	case *kmsg.OffsetCommitResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
	case *kmsg.OffsetFetchResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
		for _, g := range r.Groups {
			if g.ErrorCode != 0 {
				return g.ErrorCode
			}
		}
	case *kmsg.DescribeGroupsResponse:
		for _, g := range r.Groups {
			if g.ErrorCode != 0 {
				return g.ErrorCode
			}
		}
	case *kmsg.ListGroupsResponse:
		return r.ErrorCode
	case *kmsg.DeleteGroupsResponse:
		for _, g := range r.Groups {
			if g.ErrorCode != 0 {
				return g.ErrorCode
			}
		}
	}
	return 0
}
