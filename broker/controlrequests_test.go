package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/lab"
)

// controlSweep sends one version of LeaderAndIsr, UpdateMetadata or StopReplica twice: from a
// controller epoch older than the broker's (the whole request is fenced: STALE_CONTROLLER_EPOCH), and
// at the current controller epoch with what the broker already has (LeaderAndIsr: the partition's
// current leader epoch, ignored per partition with STALE_CONTROLLER_EPOCH; UpdateMetadata: the live
// broker alone; StopReplica: delete=false at the current leader epoch, answered NONE). Metadata
// answers the same afterwards.
func controlSweep(t *testing.T, c *wire.Conn, key, v int16, name, topic string, ctrlEpoch int32, self kmsg.MetadataResponseBroker) bool {
	t.Helper()
	before := metadata(t, c, topic)
	mp := before.Topics[0].Partitions[0]
	for _, epoch := range []int32{ctrlEpoch - 1, ctrlEpoch} {
		stale := epoch < ctrlEpoch
		var top int16
		var parts []int16
		switch kmsg.Key(key) {
		case kmsg.LeaderAndISR:
			r := kmsg.NewPtrLeaderAndISRRequest()
			r.ControllerID, r.ControllerEpoch, r.BrokerEpoch = 1, epoch, -1
			ps := kmsg.LeaderAndISRRequestTopicPartition{Topic: topic, Partition: 0, ControllerEpoch: epoch, Leader: 1, LeaderEpoch: mp.LeaderEpoch, ISR: []int32{1}, Replicas: []int32{1}}
			if v <= 1 {
				r.PartitionStates = []kmsg.LeaderAndISRRequestTopicPartition{ps}
			} else {
				r.TopicStates = []kmsg.LeaderAndISRRequestTopicState{{Topic: topic, PartitionStates: []kmsg.LeaderAndISRRequestTopicPartition{ps}}}
			}
			r.LiveLeaders = []kmsg.LeaderAndISRRequestLiveLeader{{BrokerID: 1, Host: self.Host, Port: self.Port}}
			resp := request[*kmsg.LeaderAndISRResponse](t, c, r, v)
			top = resp.ErrorCode
			for _, p := range resp.Partitions {
				parts = append(parts, p.ErrorCode)
			}
			for _, rt := range resp.Topics {
				for _, p := range rt.Partitions {
					parts = append(parts, p.ErrorCode)
				}
			}
			if !stale && !slices.Equal(parts, []int16{kerr.StaleControllerEpoch.Code}) {
				t.Fatalf("%s: partition errors %v; want [STALE_CONTROLLER_EPOCH] (leader epoch %d not above the current one)", name, parts, mp.LeaderEpoch)
			}
		case kmsg.UpdateMetadata:
			r := kmsg.NewPtrUpdateMetadataRequest()
			r.ControllerID, r.ControllerEpoch, r.BrokerEpoch = 1, epoch, -1
			lb := kmsg.UpdateMetadataRequestLiveBroker{ID: 1, Host: self.Host, Port: self.Port}
			if v >= 1 {
				lb.Endpoints = []kmsg.UpdateMetadataRequestLiveBrokerEndpoint{{Host: self.Host, Port: self.Port, ListenerName: "PLAINTEXT"}}
			}
			r.LiveBrokers = []kmsg.UpdateMetadataRequestLiveBroker{lb}
			top = request[*kmsg.UpdateMetadataResponse](t, c, r, v).ErrorCode
		case kmsg.StopReplica:
			r := kmsg.NewPtrStopReplicaRequest()
			r.ControllerID, r.ControllerEpoch, r.BrokerEpoch = 1, epoch, -1
			rt := kmsg.StopReplicaRequestTopic{Topic: topic}
			switch {
			case v == 0:
				rt.Partition = 0
			case v <= 2:
				rt.Partitions = []int32{0}
			default:
				rt.PartitionStates = []kmsg.StopReplicaRequestTopicPartitionState{{Partition: 0, LeaderEpoch: mp.LeaderEpoch}}
			}
			r.Topics = []kmsg.StopReplicaRequestTopic{rt}
			resp := request[*kmsg.StopReplicaResponse](t, c, r, v)
			top = resp.ErrorCode
			for _, p := range resp.Partitions {
				parts = append(parts, p.ErrorCode)
			}
			if !stale && !slices.Equal(parts, []int16{0}) {
				t.Fatalf("%s: partition errors %v; want [NONE]", name, parts)
			}
		default:
			return false
		}
		want := int16(0)
		if stale {
			want = kerr.StaleControllerEpoch.Code
		}
		if top != want {
			t.Fatalf("%s at controller epoch %d (current %d): %v; want %v", name, epoch, ctrlEpoch, kerr.ErrorForCode(top), kerr.ErrorForCode(want))
		}
	}
	after := metadata(t, c, topic)
	ap := after.Topics[0].Partitions[0]
	if ap.Leader != mp.Leader || ap.LeaderEpoch != mp.LeaderEpoch || len(after.Brokers) != len(before.Brokers) {
		t.Fatalf("%s changed the metadata: leader %d epoch %d, %d brokers; was %d, %d, %d", name, ap.Leader, ap.LeaderEpoch, len(after.Brokers), mp.Leader, mp.LeaderEpoch, len(before.Brokers))
	}
	return true
}

// readControllerEpoch is /controller_epoch.
func readControllerEpoch(t *testing.T, c *zk.Conn) int32 {
	t.Helper()
	data, _ := getZ(t, c, "/controller_epoch")
	e, err := strconv.ParseInt(string(data), 10, 32)
	if err != nil {
		t.Fatalf("/controller_epoch %q: %v", data, err)
	}
	return int32(e)
}

// tryControllerID is the broker id in /controller.
func tryControllerID(zc *zk.Conn) (int32, error) {
	data, _, err := zc.Get("/controller")
	if err != nil {
		return -1, err
	}
	var ctl struct {
		BrokerID int32 `json:"brokerid"`
	}
	if err := json.Unmarshal(data, &ctl); err != nil {
		return -1, err
	}
	return ctl.BrokerID, nil
}

func controllerID(t *testing.T, zc *zk.Conn) int32 {
	t.Helper()
	id, err := tryControllerID(zc)
	if err != nil {
		t.Fatalf("/controller: %v", err)
	}
	return id
}

// controlRequests is how many requests of api broker b answered (any error).
func controlRequests(t *testing.T, tb *testBroker, api string) float64 {
	t.Helper()
	mfs, err := tb.b.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "kafka_server_requests_total" {
			continue
		}
		for _, m := range mf.Metric {
			if hasLabel(m, "api", api) {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// TestControllerTellsBrokersOverTheWire: on three brokers, the partition states reach the brokers
// as LeaderAndIsr and UpdateMetadata from the controller, and only the controller's ZooKeeper session
// watches the state znodes and /brokers/topics (the four-letter word wchp, ZooKeeper's own list of
// watches). A controlled shutdown has the controller send StopReplica(delete=false) to the stopping
// broker; a topic deletion, StopReplica(delete=true) to its replicas, whose logs go. After the
// controller's broker is killed, the new controller's session is the only one watching.
func TestControllerTellsBrokersOverTheWire(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	zc := zkClient(t, z.Connect())
	var tbs []*testBroker
	for id := int32(1); id <= 3; id++ {
		tbs = append(tbs, startBroker(t, z.Connect(), id, nil))
	}
	c := dial(t, tbs[0].addr())
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "wire", NumPartitions: 3, ReplicationFactor: 3}, {Topic: "doomed", NumPartitions: 2, ReplicationFactor: 3}}
	for _, rt := range request[*kmsg.CreateTopicsResponse](t, c, req, 7).Topics {
		if rt.ErrorCode != 0 {
			t.Fatalf("create %s: %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
		}
	}
	// Every broker's metadata shows every partition led (UpdateMetadata reached each).
	for _, tb := range tbs {
		bc := dial(t, tb.addr())
		testutil.WaitFor(t, 15*time.Second, fmt.Sprintf("broker %d's metadata to show 5 led partitions", tb.id), func() bool {
			n := 0
			for _, mt := range metadata(t, bc, "wire", "doomed").Topics {
				for _, p := range mt.Partitions {
					if p.ErrorCode == 0 && p.Leader > 0 && len(p.ISR) == 3 {
						n++
					}
				}
			}
			return n == 5
		})
	}
	for _, tb := range tbs {
		if got := controlRequests(t, tb, "LeaderAndISR"); got < 1 {
			t.Errorf("broker %d answered %v LeaderAndIsr; want at least 1", tb.id, got)
		}
		if got := controlRequests(t, tb, "UpdateMetadata"); got < 1 {
			t.Errorf("broker %d answered %v UpdateMetadata; want at least 1", tb.id, got)
		}
	}
	assertOnlyControllerWatches(t, z, zc, "wire")

	// Topic deletion: StopReplica(delete=true) to the three replicas; their logs are removed.
	dirs := map[int32]string{}
	for _, tb := range tbs {
		dirs[tb.id] = tb.props["log.dirs"]
	}
	before := map[int32]float64{}
	for _, tb := range tbs {
		before[tb.id] = controlRequests(t, tb, "StopReplica")
	}
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TimeoutMillis = 15000
	dt.TopicNames = []string{"doomed"}
	if code := request[*kmsg.DeleteTopicsResponse](t, c, dt, 4).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("delete doomed: %v", kerr.ErrorForCode(code))
	}
	for _, tb := range tbs {
		testutil.WaitFor(t, 15*time.Second, fmt.Sprintf("broker %d: StopReplica for the deleted topic, its logs removed", tb.id), func() bool {
			if controlRequests(t, tb, "StopReplica") <= before[tb.id] {
				return false
			}
			for p := 0; p < 2; p++ {
				if _, err := os.Stat(fmt.Sprintf("%s/doomed-%d", dirs[tb.id], p)); err == nil {
					return false
				}
			}
			return true
		})
	}

	// Controlled shutdown of a broker that is not the controller (its ControlledShutdown request,
	// sent here as the broker's Close sends it): the controller moves its leaderships and sends it
	// StopReplica(delete=false) for the partitions it follows.
	ctrl := controllerID(t, zc)
	var stopping, controller *testBroker
	for _, tb := range tbs {
		if tb.id != ctrl && stopping == nil {
			stopping = tb
		}
		if tb.id == ctrl {
			controller = tb
		}
	}
	sr := controlRequests(t, stopping, "StopReplica")
	cs := kmsg.NewPtrControlledShutdownRequest()
	cs.BrokerID, cs.BrokerEpoch = stopping.id, -1
	if resp := request[*kmsg.ControlledShutdownResponse](t, dial(t, controller.addr()), cs, 3); resp.ErrorCode != 0 || len(resp.PartitionsRemaining) != 0 {
		t.Fatalf("ControlledShutdown of broker %d: %v, %d remaining", stopping.id, kerr.ErrorForCode(resp.ErrorCode), len(resp.PartitionsRemaining))
	}
	testutil.WaitFor(t, 15*time.Second, fmt.Sprintf("broker %d to get StopReplica(delete=false)", stopping.id), func() bool {
		return controlRequests(t, stopping, "StopReplica") > sr
	})
	stopping.stop()
	stopping.start()

	// The controller's broker stops: another broker becomes controller and is the only one watching.
	for _, tb := range tbs {
		if tb.id == ctrl {
			tb.stop()
		}
	}
	testutil.WaitFor(t, 30*time.Second, "a new controller", func() bool {
		id, err := tryControllerID(zc)
		return err == nil && id != ctrl
	})
	assertOnlyControllerWatches(t, z, zc, "wire")
}

// assertOnlyControllerWatches checks, with wchp, that the state znodes of topic and /brokers/topics
// are watched by the controller's session and by no other (the test's own session aside).
func assertOnlyControllerWatches(t *testing.T, z *lab.ZooKeeper, zc *zk.Conn, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last string
	err := testutil.Await(ctx, 15*time.Second, "only the controller's session to watch the state znodes", func() bool {
		_, st, err := zc.Get("/controller")
		if err != nil {
			last = err.Error()
			return false
		}
		out, err := lab.FourLetter(ctx, z.Connect(), "wchp")
		if err != nil {
			last = err.Error()
			return false
		}
		watches := lab.ParseWatchesByPath(out)
		for path, sessions := range watches {
			if path != "/brokers/topics" && !(strings.HasPrefix(path, "/brokers/topics/"+topic+"/partitions/") && strings.HasSuffix(path, "/state")) {
				continue
			}
			for _, sid := range sessions {
				if sid != st.EphemeralOwner && sid != zc.SessionID() {
					last = fmt.Sprintf("%s watched by session 0x%x, not the controller's 0x%x", path, sid, st.EphemeralOwner)
					return false
				}
			}
		}
		for p := 0; p < 3; p++ {
			path := fmt.Sprintf("/brokers/topics/%s/partitions/%d/state", topic, p)
			if !slices.Contains(watches[path], st.EphemeralOwner) {
				last = fmt.Sprintf("%s not watched by the controller's session 0x%x (%v)", path, st.EphemeralOwner, watches[path])
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("%v: %s", err, last)
	}
}

// TestControlRequestFencing: requests from a stale controller or for a stale broker epoch change
// nothing. A LeaderAndIsr from an older controller epoch is STALE_CONTROLLER_EPOCH; one at the
// current epoch whose leader epoch is not above the partition's is ignored per partition
// (STALE_CONTROLLER_EPOCH); an UpdateMetadata for an older registration of the broker (broker epoch
// below the czxid of /brokers/ids/1) is STALE_BROKER_EPOCH; a StopReplica with a leader epoch below
// the replica's is FENCED_LEADER_EPOCH, and the log stays. A LeaderAndIsr with a newer leader epoch
// is applied (answered NONE).
func TestControlRequestFencing(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	zc := zkClient(t, z.Connect())
	tb := startBroker(t, z.Connect(), 1, nil)
	createTopic(t, tb.addr(), "fenced", 1)
	c := dial(t, tb.addr())
	mp := metadata(t, c, "fenced").Topics[0].Partitions[0]
	epoch := readControllerEpoch(t, zc)
	_, reg := getZ(t, zc, "/brokers/ids/1")
	host, portS, _ := net.SplitHostPort(tb.b.AdvertisedAddr())
	port, _ := strconv.Atoi(portS)

	lai := func(ctrlEpoch, leaderEpoch int32) *kmsg.LeaderAndISRResponse {
		r := kmsg.NewPtrLeaderAndISRRequest()
		r.ControllerID, r.ControllerEpoch, r.BrokerEpoch = 1, ctrlEpoch, reg.Czxid
		r.TopicStates = []kmsg.LeaderAndISRRequestTopicState{{Topic: "fenced", PartitionStates: []kmsg.LeaderAndISRRequestTopicPartition{{Partition: 0, ControllerEpoch: ctrlEpoch, Leader: 1, LeaderEpoch: leaderEpoch, ISR: []int32{1}, Replicas: []int32{1}}}}}
		return request[*kmsg.LeaderAndISRResponse](t, c, r, 7)
	}
	if r := lai(epoch-1, mp.LeaderEpoch+5); r.ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("LeaderAndIsr from controller epoch %d (current %d): %v; want STALE_CONTROLLER_EPOCH", epoch-1, epoch, kerr.ErrorForCode(r.ErrorCode))
	}
	if r := lai(epoch, mp.LeaderEpoch); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("LeaderAndIsr at the current leader epoch %d: %v / %+v; want NONE with the partition STALE_CONTROLLER_EPOCH", mp.LeaderEpoch, kerr.ErrorForCode(r.ErrorCode), r.Topics)
	}
	if got := metadata(t, c, "fenced").Topics[0].Partitions[0]; got.LeaderEpoch != mp.LeaderEpoch || got.Leader != 1 {
		t.Fatalf("after fenced requests: leader %d epoch %d; want 1, %d", got.Leader, got.LeaderEpoch, mp.LeaderEpoch)
	}
	// A newer leader epoch is applied: the replica's leader epoch becomes mp.LeaderEpoch+2.
	if r := lai(epoch, mp.LeaderEpoch+2); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("LeaderAndIsr at leader epoch %d (current %d): %v / %+v; want NONE", mp.LeaderEpoch+2, mp.LeaderEpoch, kerr.ErrorForCode(r.ErrorCode), r.Topics)
	}

	um := kmsg.NewPtrUpdateMetadataRequest()
	um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = 1, epoch, reg.Czxid-1
	um.LiveBrokers = []kmsg.UpdateMetadataRequestLiveBroker{{ID: 1, Endpoints: []kmsg.UpdateMetadataRequestLiveBrokerEndpoint{{Host: host, Port: int32(port), ListenerName: "PLAINTEXT"}}}}
	if code := request[*kmsg.UpdateMetadataResponse](t, c, um, 8).ErrorCode; code != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("UpdateMetadata for broker epoch %d (registration czxid %d): %v; want STALE_BROKER_EPOCH", reg.Czxid-1, reg.Czxid, kerr.ErrorForCode(code))
	}

	sr := kmsg.NewPtrStopReplicaRequest()
	sr.ControllerID, sr.ControllerEpoch, sr.BrokerEpoch = 1, epoch, reg.Czxid
	sr.Topics = []kmsg.StopReplicaRequestTopic{{Topic: "fenced", PartitionStates: []kmsg.StopReplicaRequestTopicPartitionState{{Partition: 0, LeaderEpoch: mp.LeaderEpoch + 1, Delete: true}}}}
	resp := request[*kmsg.StopReplicaResponse](t, c, sr, 4)
	if resp.ErrorCode != 0 || len(resp.Partitions) != 1 || resp.Partitions[0].ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("StopReplica(delete) at leader epoch %d (current %d): %v / %+v; want the partition FENCED_LEADER_EPOCH", mp.LeaderEpoch+1, mp.LeaderEpoch+2, kerr.ErrorForCode(resp.ErrorCode), resp.Partitions)
	}
	// The log is still there and served.
	if _, err := tb.b.PartitionLog("fenced", 0); err != nil {
		t.Fatalf("after a fenced StopReplica(delete): %v", err)
	}
}
