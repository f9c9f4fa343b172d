package zkconsumer

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

// Registrations as the Kafka releases write them (core kafka/zk/ZkData.scala BrokerIdZNode.encode; v5
// copied byte for byte from a Kafka 3.9.2 broker's /brokers/ids/1 in the lab; v1 is 0.8.2's). The
// decoding itself is zkdata's (tested there); this is what the connector makes of it.
var brokerRegistrations = []struct {
	name      string
	json      string
	host      string
	port      int
	reachable bool
}{
	{"v1 (0.8.2)", `{"jmx_port":-1,"timestamp":"1796106322800","host":"10.0.0.1","version":1,"port":9092}`, "10.0.0.1", 9092, true},
	{"v2 endpoints", `{"jmx_port":-1,"timestamp":"1796106322800","endpoints":["PLAINTEXT://10.0.0.2:9092","SSL://10.0.0.2:9093"],"host":"10.0.0.2","version":2,"port":9092}`, "10.0.0.2", 9092, true},
	{"v3 rack", `{"jmx_port":-1,"timestamp":"1796106322800","endpoints":["PLAINTEXT://10.0.0.3:9092"],"rack":"dc1","host":"10.0.0.3","version":3,"port":9092}`, "10.0.0.3", 9092, true},
	// v4 with named listeners: no listener is called PLAINTEXT, so the top level is null / -1 and
	// only the map says CLIENT speaks PLAINTEXT.
	{"v4 named listeners, host null", `{"listener_security_protocol_map":{"REPLICATION":"SSL","CLIENT":"PLAINTEXT"},"endpoints":["REPLICATION://10.0.0.4:9093","CLIENT://10.0.0.4:9094"],"rack":"dc1","jmx_port":-1,"port":-1,"host":null,"version":4,"timestamp":"1796106322800"}`, "10.0.0.4", 9094, true},
	{"v5 (3.9.2, as written)", `{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://127.0.0.1:35421"],"jmx_port":-1,"port":35421,"host":"127.0.0.1","version":5,"timestamp":"1796106322800"}`, "127.0.0.1", 35421, true},
	{"v5 IPv6 endpoint, host null", `{"features":{"metadata.version":{"min_version":1,"max_version":21}},"listener_security_protocol_map":{"INTERNAL":"PLAINTEXT"},"endpoints":["INTERNAL://[::1]:9095"],"jmx_port":-1,"port":-1,"host":null,"version":5,"timestamp":"1796106322800"}`, "::1", 9095, true},
	{"v5 SSL only", `{"features":{},"listener_security_protocol_map":{"SSL":"SSL"},"endpoints":["SSL://10.0.0.7:9093"],"jmx_port":-1,"port":-1,"host":null,"version":5,"timestamp":"1796106322800"}`, "", 0, false},
}

// TestAllBrokersEveryRegistrationVersion: the connector's broker list (ZkUtils.getAllBrokersInCluster)
// over registrations of every version in a real ZooKeeper: each broker with a PLAINTEXT endpoint at
// its address, the SSL-only one left out (this consumer, like 0.8.2's, speaks PLAINTEXT only).
func TestAllBrokersEveryRegistrationVersion(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	var want []brokerInfo
	for i, c := range brokerRegistrations {
		a.create(brokerIdsPath+"/"+strconv.Itoa(i+1), []byte(c.json), zk.FlagEphemeral)
		if c.reachable {
			want = append(want, brokerInfo{int32(i + 1), c.host, c.port})
		}
	}
	m := newMember(t, z.Connect(), "g", "c1", nil)
	got, err := m.allBrokers()
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("allBrokers = %v, %v;\nwant %v", got, err, want)
	}
	if got[5].addr() != "[::1]:9095" {
		t.Fatalf("IPv6 broker address %q, want [::1]:9095", got[5].addr())
	}
}

// TestZKConsumerOnKafka39: the connector on a real Kafka 3.9 broker (ZooKeeper mode): it reads the
// broker's version-5 registration and the topic's version-3 partition map that Kafka wrote, finds
// the leaders, and delivers exactly the records produced to every partition, from offset 0.
func TestZKConsumerOnKafka39(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := lab.Start(ctx, lab.Options{Broker: lab.BrokerKafka, Log: testLog()})
	if err != nil {
		t.Fatalf("starting a Kafka 3.9 lab: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	cl := labClient(t, l)
	const topic, parts = "t39", 3
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	a := newAdmin(t, l.ZKConnect())
	var reg struct {
		Version int `json:"version"`
	}
	data, _, err := a.conn.Get(brokerIdsPath + "/1")
	if err != nil || json.Unmarshal(data, &reg) != nil || reg.Version != 5 {
		t.Fatalf("/brokers/ids/1 = %s (%v): want Kafka 3.9's version 5", data, err)
	}
	data, _, err = a.conn.Get(brokerTopicsPath + "/" + topic)
	if err != nil || json.Unmarshal(data, &reg) != nil || reg.Version != 3 {
		t.Fatalf("/brokers/topics/%s = %s (%v): want version 3", topic, data, err)
	}
	recs := produceEach(t, cl, topic, parts, "k39")

	m := newMember(t, l.ZKConnect(), "g39", "c1", map[string]string{"auto.offset.reset": "smallest"})
	brokers, err := m.allBrokers()
	if err != nil || len(brokers) != 1 || brokers[0].addr() != l.Brokers()[0].Addr() {
		t.Fatalf("allBrokers = %v, %v; want broker 1 at %s", brokers, err, l.Brokers()[0].Addr())
	}
	s := drain(allStreams(createStreams(t, m, map[string]int{topic: 1}))...)
	var want []string
	for _, r := range recs {
		want = append(want, msgs(topic, r.partition, r.offset, r.value)...)
	}
	slices.Sort(want)
	testutil.WaitFor(t, 60*time.Second, fmt.Sprintf("delivery of %v", want), func() bool { return slices.Equal(s.got(), want) })
}
