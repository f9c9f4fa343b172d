package broker

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/rebalancelab/rebalancelab/internal/zkdata"
)

// ZooKeeper paths and znode values, exactly as Kafka 0.8.2's ZkUtils.scala writes them (docs/design.md
// "ZooKeeper layout"; key order is free, parsed fields and types must match):
//
//	/brokers/ids/<id>                              ephemeral  {"version":1,"host":H,"port":P,"jmx_port":-1,"timestamp":"<ms>"}
//	/brokers/topics/<topic>                        persistent {"version":1,"partitions":{"0":[<replica ids>],...}}
//	/brokers/topics/<topic>/partitions/<p>/state   persistent {"version":1,"leader":L,"leader_epoch":E,"controller_epoch":C,"isr":[...]} (+ "leader_recovery_state":1 when RECOVERING, 3.9)
//	/controller                                    ephemeral  {"version":1,"brokerid":B,"timestamp":"<ms>"}
//	/controller_epoch                              persistent <integer>
const (
	brokersPath         = "/brokers"
	brokerIDsPath       = "/brokers/ids"
	brokerTopicsPath    = "/brokers/topics"
	consumersPath       = "/consumers"
	controllerPath      = "/controller"
	controllerEpochPath = "/controller_epoch"
)

// OffsetsTopic is Kafka's internal topic holding group metadata and committed offsets
// (GroupMetadataTopicName).
const OffsetsTopic = "__consumer_offsets"

func brokerPath(id int32) string          { return brokerIDsPath + "/" + strconv.Itoa(int(id)) }
func topicPath(t string) string           { return brokerTopicsPath + "/" + t }
func topicPartitionsPath(t string) string { return topicPath(t) + "/partitions" }
func partitionPath(t string, p int32) string {
	return topicPartitionsPath(t) + "/" + strconv.Itoa(int(p))
}
func statePath(t string, p int32) string { return partitionPath(t, p) + "/state" }

// brokerZNode is /brokers/ids/<id> (ZkUtils.registerBrokerInZk, 0.8.2).
type brokerZNode struct {
	Version   int    `json:"version"`
	Host      string `json:"host"`
	Port      int    `json:"port"`
	JMXPort   int    `json:"jmx_port"`
	Timestamp string `json:"timestamp"` // ms since the epoch, as a string
}

// controllerZNode is /controller (ZkUtils.controllerZkData / KafkaController.parseControllerId).
type controllerZNode struct {
	Version   int    `json:"version"`
	BrokerID  int32  `json:"brokerid"`
	Timestamp string `json:"timestamp"`
}

// topicZNode is /brokers/topics/<t> (ZkUtils.replicaAssignmentZkData).
type topicZNode struct {
	Version    int                `json:"version"`
	Partitions map[string][]int32 `json:"partitions"`
}

// stateZNode is a partition's state (ZkUtils.leaderAndIsrZkData).
type stateZNode struct {
	Version         int     `json:"version"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	ControllerEpoch int32   `json:"controller_epoch"`
	ISR             []int32 `json:"isr"`
	// LeaderRecoveryState is written only when not RECOVERED (0), as 3.9's
	// TopicPartitionStateZNode.encode does; absent reads as RECOVERED.
	LeaderRecoveryState *int8 `json:"leader_recovery_state,omitempty"`
}

func msString(ms int64) string { return strconv.FormatInt(ms, 10) }

func encodeBroker(host string, port int, nowMs int64) []byte {
	b, _ := json.Marshal(brokerZNode{Version: 1, Host: host, Port: port, JMXPort: -1, Timestamp: msString(nowMs)})
	return b
}

func encodeController(id int32, nowMs int64) []byte {
	b, _ := json.Marshal(controllerZNode{Version: 1, BrokerID: id, Timestamp: msString(nowMs)})
	return b
}

// encodeAssignment writes partition -> replicas, partition ids as decimal strings.
func encodeAssignment(replicas map[int32][]int32) []byte {
	m := make(map[string][]int32, len(replicas))
	for p, r := range replicas {
		if r == nil {
			r = []int32{}
		}
		m[strconv.Itoa(int(p))] = r
	}
	b, _ := json.Marshal(topicZNode{Version: 1, Partitions: m})
	return b
}

func encodeState(s leaderAndISR) []byte {
	isr := s.ISR
	if isr == nil {
		isr = []int32{}
	}
	z := stateZNode{Version: 1, Leader: s.Leader, LeaderEpoch: s.LeaderEpoch, ControllerEpoch: s.ControllerEpoch, ISR: isr}
	if s.LeaderRecoveryState != leaderRecovered {
		r := s.LeaderRecoveryState
		z.LeaderRecoveryState = &r
	}
	b, _ := json.Marshal(z)
	return b
}

// decodeBroker reads another broker's registration, of any version Kafka writes (1–5: a real Kafka
// 3.9 broker's too, zkdata.DecodeBroker), as its PLAINTEXT address, the only listener this broker
// speaks to; one without a PLAINTEXT endpoint is an error.
func decodeBroker(data []byte) (brokerZNode, error) {
	b, err := zkdata.DecodeBroker(data)
	if err != nil {
		return brokerZNode{}, err
	}
	host, port, ok := b.Plaintext()
	if !ok {
		return brokerZNode{}, fmt.Errorf("broker znode %q: no PLAINTEXT endpoint", data)
	}
	return brokerZNode{Version: b.Version, Host: host, Port: port}, nil
}

// decodeController reads /controller (zkdata.DecodeController).
func decodeController(data []byte) (int32, error) { return zkdata.DecodeController(data) }

// decodeAssignment reads /brokers/topics/<t> of any version Kafka writes (1–3,
// zkdata.DecodeTopicAssignment): partition → replicas.
func decodeAssignment(data []byte) (map[int32][]int32, error) {
	return zkdata.DecodeTopicAssignment(data)
}

// decodeState reads a partition's state znode (zkdata.DecodePartitionState).
func decodeState(data []byte) (leaderAndISR, error) {
	s, err := zkdata.DecodePartitionState(data)
	if err != nil {
		return leaderAndISR{}, err
	}
	return leaderAndISR{Leader: s.Leader, LeaderEpoch: s.LeaderEpoch, ControllerEpoch: s.ControllerEpoch, ISR: s.ISR,
		LeaderRecoveryState: s.LeaderRecoveryState}, nil
}

// sortedPartitions returns the partition ids of an assignment in ascending order.
func sortedPartitions(m map[int32][]int32) []int32 {
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}
