package broker_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestReadsKafka39Registrations: another broker's registration written as Kafka 3.9 writes it (JSON
// version 4/5 with named listeners, top-level host null and port -1: no listener is called PLAINTEXT)
// is read through listener_security_protocol_map: Metadata lists broker 7 at its PLAINTEXT (CLIENT)
// endpoint, and broker 8, which has only an SSL listener, not at all.
func TestReadsKafka39Registrations(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka)
	z := startZK(t)
	b1 := startBroker(t, z.Connect(), 1, nil)
	zc := zkClient(t, z.Connect())
	// 8 first: the pass that lists 7 has 8 in the same listing, so 7 showing up is the barrier for 8.
	for _, n := range []struct{ path, data string }{
		{"/brokers/ids/8", `{"listener_security_protocol_map":{"SSL":"SSL"},"endpoints":["SSL://127.0.0.8:9093"],"rack":"dc1","jmx_port":-1,"port":-1,"host":null,"version":4,"timestamp":"1796106322800"}`},
		{"/brokers/ids/7", `{"features":{},"listener_security_protocol_map":{"REPLICATION":"SSL","CLIENT":"PLAINTEXT"},"endpoints":["REPLICATION://127.0.0.7:9093","CLIENT://127.0.0.7:9094"],"jmx_port":-1,"port":-1,"host":null,"version":5,"timestamp":"1796106322800"}`},
	} {
		if _, err := zc.Create(n.path, []byte(n.data), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	c := dial(t, b1.addr())
	brokers := func() map[int32]string {
		out := map[int32]string{}
		for _, b := range metadata(t, c).Brokers {
			out[b.NodeID] = b.Host + ":" + strconv.Itoa(int(b.Port))
		}
		return out
	}
	testutil.WaitFor(t, 20*time.Second, "broker 7 in Metadata", func() bool { return brokers()[7] != "" })
	got := brokers()
	if len(got) != 2 || got[7] != "127.0.0.7:9094" || got[1] != b1.addr() {
		t.Fatalf("Metadata brokers = %v; want 1 at %s and 7 at 127.0.0.7:9094 (8 has no PLAINTEXT listener)", got, b1.addr())
	}
}
