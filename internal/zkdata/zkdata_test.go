package zkdata

import (
	"reflect"
	"strings"
	"testing"
)

// TestDecodeBroker: /brokers/ids/<id> of every version, as BrokerIdZNode.encode writes them (the v5
// case byte for byte from a Kafka 3.9.2 broker in the lab; v1 as 0.8.2's ZkUtils writes it).
func TestDecodeBroker(t *testing.T) {
	pt := func(l, h string, p int) Endpoint { return Endpoint{l, "PLAINTEXT", h, p} }
	for _, c := range []struct {
		name, json string
		want       Broker
		host       string
		port       int
		ok         bool
	}{
		{"v1 (0.8.2)", `{"jmx_port":-1,"timestamp":"1796106322800","host":"10.0.0.1","version":1,"port":9092}`,
			Broker{1, "10.0.0.1", 9092, []Endpoint{pt("PLAINTEXT", "10.0.0.1", 9092)}, ""}, "10.0.0.1", 9092, true},
		{"v2", `{"jmx_port":-1,"timestamp":"1796106322800","endpoints":["SSL://10.0.0.2:9093","PLAINTEXT://10.0.0.2:9092"],"host":"10.0.0.2","version":2,"port":9092}`,
			Broker{2, "10.0.0.2", 9092, []Endpoint{{"SSL", "SSL", "10.0.0.2", 9093}, pt("PLAINTEXT", "10.0.0.2", 9092)}, ""}, "10.0.0.2", 9092, true},
		{"v3 rack", `{"jmx_port":-1,"timestamp":"1796106322800","endpoints":["PLAINTEXT://10.0.0.3:9092"],"rack":"dc1","host":"10.0.0.3","version":3,"port":9092}`,
			Broker{3, "10.0.0.3", 9092, []Endpoint{pt("PLAINTEXT", "10.0.0.3", 9092)}, "dc1"}, "10.0.0.3", 9092, true},
		{"v4 named listeners, host null", `{"listener_security_protocol_map":{"REPLICATION":"SSL","CLIENT":"PLAINTEXT"},"endpoints":["REPLICATION://10.0.0.4:9093","CLIENT://10.0.0.4:9094"],"rack":null,"jmx_port":-1,"port":-1,"host":null,"version":4,"timestamp":"1796106322800"}`,
			Broker{4, "", -1, []Endpoint{{"REPLICATION", "SSL", "10.0.0.4", 9093}, pt("CLIENT", "10.0.0.4", 9094)}, ""}, "10.0.0.4", 9094, true},
		{"v5 (3.9.2, as written)", `{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://127.0.0.1:35421"],"jmx_port":-1,"port":35421,"host":"127.0.0.1","version":5,"timestamp":"1796106322800"}`,
			Broker{5, "127.0.0.1", 35421, []Endpoint{pt("PLAINTEXT", "127.0.0.1", 35421)}, ""}, "127.0.0.1", 35421, true},
		{"v5 IPv6, features", `{"features":{"metadata.version":{"min_version":1,"max_version":21}},"listener_security_protocol_map":{"INTERNAL":"PLAINTEXT"},"endpoints":["INTERNAL://[::1]:9095"],"jmx_port":-1,"port":-1,"host":null,"version":5,"timestamp":"1"}`,
			Broker{5, "", -1, []Endpoint{pt("INTERNAL", "::1", 9095)}, ""}, "::1", 9095, true},
		{"v5 SSL only", `{"features":{},"listener_security_protocol_map":{"SSL":"SSL"},"endpoints":["SSL://10.0.0.7:9093"],"jmx_port":-1,"port":-1,"host":null,"version":5,"timestamp":"1"}`,
			Broker{5, "", -1, []Endpoint{{"SSL", "SSL", "10.0.0.7", 9093}}, ""}, "", 0, false},
	} {
		got, err := DecodeBroker([]byte(c.json))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: DecodeBroker = %+v, %v;\nwant %+v", c.name, got, err, c.want)
			continue
		}
		if h, p, ok := got.Plaintext(); h != c.host || p != c.port || ok != c.ok {
			t.Errorf("%s: Plaintext = %q %d %v, want %q %d %v", c.name, h, p, ok, c.host, c.port, c.ok)
		}
	}
	for _, bad := range []string{`not json`, `{"version":0,"host":"h","port":1}`, `{"version":1,"host":null,"port":-1}`,
		`{"version":5,"host":null,"port":-1,"endpoints":["PLAINTEXT:/h:1"]}`,
		`{"version":4,"host":null,"port":-1,"endpoints":["CLIENT://h:1"],"listener_security_protocol_map":{"OTHER":"SSL"}}`} {
		if b, err := DecodeBroker([]byte(bad)); err == nil {
			t.Errorf("DecodeBroker(%s) = %+v, no error", bad, b)
		}
	}
}

// TestDecodeTopicAssignment: /brokers/topics/<t> v1 (0.8.2), v2 (topic_id), v3 (a reassignment in
// flight, key order as 3.9's TopicZNode.encode writes them).
func TestDecodeTopicAssignment(t *testing.T) {
	for _, c := range []struct {
		name, json string
		want       map[int32][]int32
	}{
		{"v1", `{"version":1,"partitions":{"2":[1],"0":[1],"1":[1]}}`, map[int32][]int32{0: {1}, 1: {1}, 2: {1}}},
		{"v2", `{"version":2,"partitions":{"0":[1,2],"1":[2,1]},"topic_id":"5eCqhRbGRwq3fg9aijtzbg"}`, map[int32][]int32{0: {1, 2}, 1: {2, 1}}},
		{"v3", `{"partitions":{"0":[1,2,3],"1":[2]},"topic_id":"5eCqhRbGRwq3fg9aijtzbg","adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]},"version":3}`,
			map[int32][]int32{0: {1, 2, 3}, 1: {2}}},
		{"v3 as 3.9.2 wrote it", `{"partitions":{"0":[1]},"topic_id":"5eCqhRbGRwq3fg9aijtzbg","adding_replicas":{},"removing_replicas":{},"version":3}`,
			map[int32][]int32{0: {1}}},
	} {
		got, err := DecodeTopicAssignment([]byte(c.json))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	for _, bad := range []string{`[]`, `{"version":1,"partitions":{"x":[1]}}`, `{"version":1,"partitions":{"-1":[1]}}`} {
		if got, err := DecodeTopicAssignment([]byte(bad)); err == nil {
			t.Errorf("DecodeTopicAssignment(%s) = %v, no error", bad, got)
		}
	}
}

// TestDecodePartitionState: the state znode as 3.9 writes it, with and without leader_recovery_state;
// an unknown recovery state and bad JSON are errors.
func TestDecodePartitionState(t *testing.T) {
	s, err := DecodePartitionState([]byte(`{"controller_epoch":2,"leader":3,"version":1,"leader_epoch":5,"isr":[3,1]}`))
	if err != nil || s.Leader != 3 || s.LeaderEpoch != 5 || s.ControllerEpoch != 2 || len(s.ISR) != 2 || s.ISR[0] != 3 || s.ISR[1] != 1 || s.LeaderRecoveryState != 0 {
		t.Errorf("got %+v, %v", s, err)
	}
	s, err = DecodePartitionState([]byte(`{"controller_epoch":2,"leader":1,"version":1,"leader_epoch":6,"isr":[1],"leader_recovery_state":1}`))
	if err != nil || s.LeaderRecoveryState != 1 {
		t.Errorf("recovering: got %+v, %v", s, err)
	}
	if _, err := DecodePartitionState([]byte(`{"leader":1,"leader_epoch":6,"isr":[1],"leader_recovery_state":2}`)); err == nil ||
		!strings.Contains(err.Error(), "unknown leader_recovery_state 2") {
		t.Errorf("recovery state 2: %v", err)
	}
	if _, err := DecodePartitionState([]byte(`{"leader":`)); err == nil || !strings.HasPrefix(err.Error(), "state znode ") {
		t.Errorf("bad JSON: %v", err)
	}
}
