// Package zkdata decodes the brokers' znodes as every Kafka from 0.8 to 3.9 writes them in ZooKeeper
// mode (core kafka/zk/ZkData.scala in 3.9: BrokerIdZNode, TopicZNode; ZkUtils in 0.8.2), so that what
// reads ZooKeeper here — the ZooKeeper-era consumer and the broker — reads a real Kafka's cluster too.
package zkdata

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Broker is /brokers/ids/<id>, JSON versions 1–5 (BrokerIdZNode):
//
//	v1 {"version":1,"host":"h","port":9092,"jmx_port":-1,"timestamp":"<ms>"}
//	v2 + "endpoints":["PLAINTEXT://h:9092","SSL://h:9093"]
//	v3 + "rack":"dc1"
//	v4 + "listener_security_protocol_map":{"CLIENT":"PLAINTEXT","REPLICATION":"SSL"} (by listener name)
//	v5 + "features":{"<name>":{"min_version":1,"max_version":3}}
//
// From v2 the top-level host and port are those of the first PLAINTEXT endpoint, or null and -1
// when there is none (BrokerIdZNode.encode).
type Broker struct {
	Version   int
	Host      string // top-level host; "" when null
	Port      int    // top-level port; -1 when there is no PLAINTEXT endpoint (v2+)
	Endpoints []Endpoint
	Rack      string // v3+; "" when absent or null
}

// Endpoint is one advertised listener (v2+; v1's host and port are one PLAINTEXT endpoint).
type Endpoint struct {
	Listener         string // listener name, upper case ("PLAINTEXT", "CLIENT")
	SecurityProtocol string // "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"
	Host             string // "" binds every interface
	Port             int
}

// endpointRE is an endpoint's connection string, LISTENER://host:port with an IPv6 host in brackets
// or an empty host (SocketServerConfigs' uriParseExp).
var endpointRE = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9_]*)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$`)

// DecodeBroker decodes /brokers/ids/<id> as BrokerIdZNode.decode does: version 1 is its host and port
// (a PLAINTEXT endpoint); from version 2 the endpoints, whose security protocol is looked up in
// listener_security_protocol_map, or without one (v2, v3) is the listener's name (Kafka's default
// map). Errors: not JSON, version < 1, a v1 node without host and port, an endpoint that does not
// parse or whose listener is not in the map.
func DecodeBroker(data []byte) (Broker, error) {
	var raw struct {
		Version   int               `json:"version"`
		Host      *string           `json:"host"`
		Port      *int              `json:"port"`
		Endpoints []string          `json:"endpoints"`
		Rack      *string           `json:"rack"`
		Protocols map[string]string `json:"listener_security_protocol_map"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Broker{}, fmt.Errorf("broker registration %q: %w", data, err)
	}
	b := Broker{Version: raw.Version, Port: -1}
	if raw.Host != nil {
		b.Host = *raw.Host
	}
	if raw.Port != nil {
		b.Port = *raw.Port
	}
	if raw.Rack != nil {
		b.Rack = *raw.Rack
	}
	switch {
	case raw.Version < 1:
		return Broker{}, fmt.Errorf("broker registration %q: unsupported version %d", data, raw.Version)
	case raw.Version == 1:
		if b.Host == "" || b.Port <= 0 || b.Port > 65535 {
			return Broker{}, fmt.Errorf("broker registration %q: version 1 without host and port", data)
		}
		b.Endpoints = []Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: b.Host, Port: b.Port}}
		return b, nil
	}
	for _, s := range raw.Endpoints {
		m := endpointRE.FindStringSubmatch(s)
		if m == nil {
			return Broker{}, fmt.Errorf("broker registration %q: endpoint %q is not LISTENER://host:port", data, s)
		}
		port, err := strconv.Atoi(m[3])
		if err != nil || port < 0 || port > 65535 {
			return Broker{}, fmt.Errorf("broker registration %q: endpoint %q: bad port", data, s)
		}
		ep := Endpoint{Listener: strings.ToUpper(m[1]), Host: m[2], Port: port}
		ep.SecurityProtocol = ep.Listener
		if raw.Protocols != nil {
			p, ok := raw.Protocols[ep.Listener]
			if !ok {
				return Broker{}, fmt.Errorf("broker registration %q: listener %s has no security protocol in listener_security_protocol_map", data, ep.Listener)
			}
			ep.SecurityProtocol = strings.ToUpper(p)
		}
		b.Endpoints = append(b.Endpoints, ep)
	}
	return b, nil
}

// Plaintext is the address a PLAINTEXT-only client (0.8.2's, this project's) reaches the broker at:
// the first PLAINTEXT endpoint, as the top-level host and port are written. ok is false when the
// broker has none (top level null / -1).
func (b Broker) Plaintext() (host string, port int, ok bool) {
	for _, ep := range b.Endpoints {
		if ep.SecurityProtocol == "PLAINTEXT" && ep.Port > 0 {
			return ep.Host, ep.Port, true
		}
	}
	return "", 0, false
}

// DecodeTopicAssignment decodes /brokers/topics/<t>, JSON versions 1–3 (TopicZNode):
//
//	v1 {"version":1,"partitions":{"0":[1,2],"1":[2,3]}}
//	v2 + "topic_id":"<base64 uuid>"
//	v3 + "adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]} (a reassignment in flight)
//
// and returns partition → replicas (the "partitions" map, which during a reassignment already holds
// the adding replicas and still the removing ones, as TopicZNode.decode's ReplicaAssignment.replicas).
func DecodeTopicAssignment(data []byte) (map[int32][]int32, error) {
	var t struct {
		Partitions map[string][]int32 `json:"partitions"`
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("topic znode %q: %w", data, err)
	}
	out := make(map[int32][]int32, len(t.Partitions))
	for k, r := range t.Partitions {
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("topic znode %q: bad partition %q", data, k)
		}
		out[int32(p)] = r
	}
	return out, nil
}

// PartitionState is /brokers/topics/<t>/partitions/<p>/state, JSON version 1
// (TopicPartitionStateZNode; ZkUtils.leaderAndIsrZkData in 0.8.2):
//
//	{"version":1,"leader":1,"leader_epoch":3,"controller_epoch":2,"isr":[1,3]}
//	+ "leader_recovery_state":1 while a leader elected uncleanly is RECOVERING (3.9; absent: RECOVERED, 0)
//
// Leader -1: no leader.
type PartitionState struct {
	Leader              int32
	LeaderEpoch         int32
	ControllerEpoch     int32
	ISR                 []int32
	LeaderRecoveryState int8
}

// DecodePartitionState decodes a partition's state znode; a leader_recovery_state other than 0 or 1
// is an error (LeaderRecoveryState.of).
func DecodePartitionState(data []byte) (PartitionState, error) {
	var s struct {
		Leader              int32   `json:"leader"`
		LeaderEpoch         int32   `json:"leader_epoch"`
		ControllerEpoch     int32   `json:"controller_epoch"`
		ISR                 []int32 `json:"isr"`
		LeaderRecoveryState *int8   `json:"leader_recovery_state"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return PartitionState{}, fmt.Errorf("state znode %q: %w", data, err)
	}
	st := PartitionState{Leader: s.Leader, LeaderEpoch: s.LeaderEpoch, ControllerEpoch: s.ControllerEpoch, ISR: s.ISR}
	if s.LeaderRecoveryState != nil {
		if r := *s.LeaderRecoveryState; r != 0 && r != 1 {
			return PartitionState{}, fmt.Errorf("state znode %q: unknown leader_recovery_state %d", data, r)
		}
		st.LeaderRecoveryState = *s.LeaderRecoveryState
	}
	return st, nil
}

// DecodeController reads /controller, {"version":1,"brokerid":1,"timestamp":"<ms>"} (ControllerZNode),
// or the bare broker id that Kafka before 0.8.2 wrote (KafkaController.parseControllerId accepts both),
// and returns the controller's broker id. Errors: data that is neither, or JSON without "brokerid".
func DecodeController(data []byte) (int32, error) {
	if n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32); err == nil {
		return int32(n), nil
	}
	var c struct {
		BrokerID *int32 `json:"brokerid"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return -1, fmt.Errorf("controller znode %q: %w", data, err)
	}
	if c.BrokerID == nil {
		return -1, fmt.Errorf("controller znode %q: no brokerid", data)
	}
	return *c.BrokerID, nil
}
