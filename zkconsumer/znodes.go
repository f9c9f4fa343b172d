package zkconsumer

// The brokers' znodes as every Kafka from 0.8 to 3.9 writes them (core kafka/zk/ZkData.scala in 3.9,
// ZkUtils in 0.8.2): the consumer reads /brokers/ids/<id> to find a broker to ask for metadata and
// /brokers/topics/<t> for a topic's partitions.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// brokerRegistration is /brokers/ids/<id>, JSON versions 1–5 (BrokerIdZNode):
//
//	v1 {"version":1,"host":"h","port":9092,"jmx_port":-1,"timestamp":"..."}
//	v2 + "endpoints":["PLAINTEXT://h:9092","SSL://h:9093"]
//	v3 + "rack":"dc1"
//	v4 + "listener_security_protocol_map":{"CLIENT":"PLAINTEXT","REPLICATION":"SSL"} (listener names)
//	v5 + "features":{"name":{"min_version":1,"max_version":3}}
//
// From v2 the top-level host and port are those of the first PLAINTEXT endpoint, null and -1 when
// there is none (BrokerIdZNode.encode).
type brokerRegistration struct {
	Version   int               `json:"version"`
	Host      *string           `json:"host"`
	Port      int               `json:"port"`
	Endpoints []string          `json:"endpoints"`
	Protocols map[string]string `json:"listener_security_protocol_map"`
}

// endpointRE is an endpoint's connection string, LISTENER://host:port with an IPv6 host in brackets
// or an empty host (SocketServerConfigs' uriParseExp).
var endpointRE = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9_]*)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$`)

// parseBrokerRegistration decodes /brokers/ids/<id> (versions 1–5) and returns the broker's PLAINTEXT
// address, the one this consumer (plaintext only, like 0.8.2's) can reach: the top-level host and port
// when set, else the first endpoint whose listener's security protocol is PLAINTEXT (v4+: the
// listener_security_protocol_map; before: the listener name is the protocol, as Kafka's default map).
// ok is false for a registration without a PLAINTEXT endpoint (host null, port -1, no PLAINTEXT
// listener). An error: not JSON, version < 1, or a PLAINTEXT endpoint that does not parse.
func parseBrokerRegistration(data []byte) (host string, port int, ok bool, err error) {
	var reg brokerRegistration
	if err := json.Unmarshal(data, &reg); err != nil {
		return "", 0, false, fmt.Errorf("not a broker registration: %w", err)
	}
	if reg.Version < 1 {
		return "", 0, false, fmt.Errorf("unsupported broker registration version %d", reg.Version)
	}
	if reg.Host != nil && *reg.Host != "" && reg.Port > 0 {
		return *reg.Host, reg.Port, true, nil
	}
	if reg.Version == 1 {
		return "", 0, false, fmt.Errorf("version 1 registration without host and port")
	}
	for _, ep := range reg.Endpoints {
		m := endpointRE.FindStringSubmatch(ep)
		if m == nil {
			return "", 0, false, fmt.Errorf("endpoint %q: want LISTENER://host:port", ep)
		}
		listener := strings.ToUpper(m[1])
		protocol := listener // Kafka's default map: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL name themselves
		if reg.Protocols != nil {
			protocol = strings.ToUpper(reg.Protocols[listener])
		}
		if protocol != "PLAINTEXT" {
			continue
		}
		p, err := strconv.Atoi(m[3])
		if err != nil || p <= 0 || p > 65535 {
			return "", 0, false, fmt.Errorf("endpoint %q: bad port", ep)
		}
		return m[2], p, true, nil
	}
	return "", 0, false, nil
}

// parseTopicPartitions decodes /brokers/topics/<t>, JSON versions 1–3 (TopicZNode):
//
//	v1 {"version":1,"partitions":{"0":[1,2],"1":[2,3]}}
//	v2 + "topic_id":"<base64 uuid>"
//	v3 + "adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]} (a reassignment in flight)
//
// and returns the partition ids; the replica lists (with adding and removing replicas) do not
// matter to the consumer, which asks the brokers for leaders.
func parseTopicPartitions(data []byte) ([]int32, error) {
	var tz struct {
		Partitions map[string][]int32 `json:"partitions"`
	}
	if err := json.Unmarshal(data, &tz); err != nil {
		return nil, fmt.Errorf("partition map %q: %w", data, err)
	}
	out := make([]int32, 0, len(tz.Partitions))
	for p := range tz.Partitions {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("partition id %q is not a number", p)
		}
		out = append(out, int32(n))
	}
	return out, nil
}
