package broker_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

// TestStrayReplicasOfADeletionTheControllerMissed: the controller (broker 1) loses ZooKeeper and the
// topic is deleted through broker 2 meanwhile, so the old controller never tells anyone. Once its
// session expires, the new controller sends brokers 2 and 3 a FULL LeaderAndIsr without the topic and
// a full UpdateMetadata: their Metadata drops the topic, and their replicas of it are strays — no
// longer served (ListOffsets replica -2: UNKNOWN_TOPIC_OR_PARTITION) and their log directories gone.
func TestStrayReplicasOfADeletionTheControllerMissed(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	zc := zkClient(t, z.Connect())
	proxy, err := lab.NewProxy("stray-ctrl-zk", z.Connect())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	extra := map[string]string{"replica.fetch.wait.max.ms": "100"}
	b1 := startBroker(t, proxy.Addr(), 1, extra) // the controller: first to register
	b2 := startBroker(t, z.Connect(), 2, extra)
	b3 := startBroker(t, z.Connect(), 3, extra)
	t.Cleanup(func() { proxy.Heal() }) // before the brokers stop (cleanups run last-in first)
	if id := controllerID(t, zc); id != 1 {
		t.Fatalf("controller %d, want 1", id)
	}
	c2 := dial(t, b2.addr())
	const topic = "doomed"
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: topic, NumPartitions: 2, ReplicationFactor: 3}}
	if r := request[*kmsg.CreateTopicsResponse](t, c2, req, 7).Topics[0]; r.ErrorCode != 0 {
		t.Fatalf("create %s: %v", topic, kerr.ErrorForCode(r.ErrorCode))
	}
	for _, tb := range []*testBroker{b1, b2, b3} {
		c := dial(t, tb.addr())
		testutil.WaitFor(t, 15*time.Second, fmt.Sprintf("broker %d to host both partitions", tb.id), func() bool {
			for p := int32(0); p < 2; p++ {
				if _, code := partitionLogEndOffset(t, c, topic, p); code != 0 {
					return false
				}
			}
			return true
		})
	}

	if err := proxy.Cut(); err != nil {
		t.Fatal(err)
	}
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TopicNames = []string{topic} // TimeoutMillis 0: answered once deleted from ZooKeeper
	if code := request[*kmsg.DeleteTopicsResponse](t, c2, dt, 4).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	testutil.WaitFor(t, 20*time.Second, "a new controller", func() bool {
		id, err := tryControllerID(zc)
		return err == nil && id != 1
	})
	for _, tb := range []*testBroker{b2, b3} {
		c := dial(t, tb.addr())
		dir := tb.props["log.dirs"]
		testutil.WaitFor(t, 15*time.Second, fmt.Sprintf("broker %d to drop the deleted topic: Metadata, replicas, log dirs", tb.id), func() bool {
			m := metadata(t, c, topic)
			if len(m.Topics) != 1 || m.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
				return false
			}
			for p := int32(0); p < 2; p++ {
				if _, code := partitionLogEndOffset(t, c, topic, p); code != kerr.UnknownTopicOrPartition.Code {
					return false
				}
				if _, err := os.Stat(fmt.Sprintf("%s/%s-%d", dir, topic, p)); err == nil {
					return false
				}
			}
			return true
		})
	}
}
