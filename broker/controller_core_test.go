package broker

import (
	"reflect"
	"slices"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The controller core's tests: no ZooKeeper, no network, no clock. Each feeds the core what the driver
// would read and asserts the exact effects: which state is written at which znode version, what is
// re-read, which request goes to which broker.

const (
	tcEpoch        int32 = 3 // the /controller_epoch the test controller wrote
	tcEpochVersion int32 = 2 // its znode version, checked by every write
)

// testCore is controller 0 elected with epoch 3 (znode version 2); unclean lists the topics with
// unclean.leader.election.enable.
func testCore(unclean ...string) *controllerCore {
	c := newControllerCore(0, map[int32]bool{}, func(topic string, _ map[string]string) bool {
		return slices.Contains(unclean, topic)
	})
	c.step(ctrlElected{Epoch: tcEpoch, EpochVersion: tcEpochVersion})
	return &c
}

func nodes(ids ...int32) ctrlBrokersRead {
	ev := ctrlBrokersRead{Live: map[int32]Node{}, Epochs: map[int32]int64{}}
	for _, id := range ids {
		ev.Live[id] = Node{ID: id, Host: "127.0.0.1", Port: 9000 + id}
		ev.Epochs[id] = 1000 + int64(id)
	}
	return ev
}

// nonLog drops the log effects.
func nonLog(effs []ctrlEffect) []ctrlEffect {
	var out []ctrlEffect
	for _, e := range effs {
		if _, ok := e.(ctrlLog); !ok {
			out = append(out, e)
		}
	}
	return out
}

// logs are the log effects' messages at level.
func logs(effs []ctrlEffect, level logrus.Level) []string {
	var out []string
	for _, e := range effs {
		if l, ok := e.(ctrlLog); ok && l.Level == level {
			out = append(out, l.Msg)
		}
	}
	return out
}

func wantEffects(t *testing.T, what string, got []ctrlEffect, want ...ctrlEffect) {
	t.Helper()
	if g := nonLog(got); !reflect.DeepEqual(g, want) {
		t.Fatalf("%s:\n got  %#v\n want %#v", what, g, want)
	}
}

// known gives the core topic (czxid 100) with assignment, each partition's state as states says
// (absent: not written yet), every write settled (the failover pass done).
func known(t *testing.T, c *controllerCore, topic string, assignment map[int32][]int32, states map[int32]partitionView) {
	t.Helper()
	c.step(ctrlTopicRead{Topic: topic, Czxid: 100, Assignment: assignment})
	for p := range assignment {
		st, ok := states[p]
		c.step(ctrlStateRead{Topic: topic, Partition: p, Exists: ok, State: st.leaderAndISR, Version: st.version})
	}
}

func state(leader, epoch int32, version int32, isr ...int32) partitionView {
	return partitionView{leaderAndISR: leaderAndISR{Leader: leader, LeaderEpoch: epoch, ControllerEpoch: 1, ISR: isr}, exists: true, version: version}
}

func write(topic string, p int32, st leaderAndISR, create bool, version int32) ctrlWriteState {
	return ctrlWriteState{Topic: topic, Partition: p, State: st, Create: create, Version: version, EpochVersion: tcEpochVersion}
}

// sendsTo lists the requests of sends by destination, as "To:Name".
func sendsTo(effs []ctrlEffect) []string {
	var out []string
	for _, e := range effs {
		if s, ok := e.(ctrlSend); ok {
			out = append(out, string(rune('0'+s.To))+":"+kmsg.NameForKey(s.Req.Key()))
		}
	}
	return out
}

func TestControllerCoreNewTopicFirstLeadership(t *testing.T) {
	c := testCore()
	c.step(nodes(1, 2, 3))
	effs := c.step(ctrlTopicRead{Topic: "t", Czxid: 100, Assignment: map[int32][]int32{0: {2, 3, 1}, 1: {3, 1, 2}}})
	wantEffects(t, "topic read", effs,
		ctrlRead{Kind: taskState, Topic: "t", Partition: 0, IfUnwatched: true},
		ctrlRead{Kind: taskState, Topic: "t", Partition: 1, IfUnwatched: true})
	if got := logs(effs, logrus.InfoLevel); !slices.Equal(got, []string{"topic known"}) {
		t.Fatalf("topic read logs %q", got)
	}
	c.step(ctrlStateRead{Topic: "t", Partition: 0})
	c.step(ctrlStateRead{Topic: "t", Partition: 1})

	// The first live replica in assignment order leads; the live replicas are the ISR; leader epoch 0.
	wantEffects(t, "reconcile", c.step(ctrlReconcile{}),
		write("t", 0, leaderAndISR{Leader: 2, ControllerEpoch: tcEpoch, ISR: []int32{2, 3, 1}}, true, 0))
	wantEffects(t, "after t-0", c.step(ctrlStateWritten{Outcome: writeOK, Version: 0}),
		write("t", 1, leaderAndISR{Leader: 3, ControllerEpoch: tcEpoch, ISR: []int32{3, 1, 2}}, true, 0))
	effs = c.step(ctrlStateWritten{Outcome: writeOK, Version: 0})
	wantEffects(t, "after t-1", effs, ctrlReconciled{OK: true})
	if got := logs(effs, logrus.InfoLevel); !slices.Equal(got, []string{"controller: partition leader set"}) {
		t.Fatalf("logs %q", got)
	}
	if c.failover {
		t.Fatal("failover pass not over after a complete reconcile")
	}

	// Every broker new to this controller: a FULL LeaderAndIsr, then UpdateMetadata, in broker order.
	effs = c.step(ctrlPropagate{Fresh: map[int32]bool{1: true, 2: true, 3: true}})
	if got, want := sendsTo(effs), []string{"1:LeaderAndISR", "1:UpdateMetadata", "2:LeaderAndISR", "2:UpdateMetadata", "3:LeaderAndISR", "3:UpdateMetadata"}; !slices.Equal(got, want) {
		t.Fatalf("sends %q, want %q", got, want)
	}
	lai := effs[2].(ctrlSend).Req.(*kmsg.LeaderAndISRRequest)
	if lai.ControllerID != 0 || lai.ControllerEpoch != tcEpoch || lai.BrokerEpoch != 1002 || lai.Type != controlTypeFull {
		t.Fatalf("LeaderAndIsr to 2: controller %d epoch %d broker epoch %d type %d", lai.ControllerID, lai.ControllerEpoch, lai.BrokerEpoch, lai.Type)
	}
	if len(lai.TopicStates) != 1 || lai.TopicStates[0].TopicID != topicIDOf(100) || len(lai.TopicStates[0].PartitionStates) != 2 {
		t.Fatalf("LeaderAndIsr to 2: topic states %+v", lai.TopicStates)
	}
	p0 := lai.TopicStates[0].PartitionStates[0]
	if p0.Partition != 0 || p0.Leader != 2 || p0.LeaderEpoch != 0 || p0.ZKVersion != 0 || !slices.Equal(p0.ISR, []int32{2, 3, 1}) || !slices.Equal(p0.Replicas, []int32{2, 3, 1}) {
		t.Fatalf("LeaderAndIsr to 2, t-0: %+v", p0)
	}
	var leaders []int32
	for _, l := range lai.LiveLeaders {
		leaders = append(leaders, l.BrokerID)
	}
	if !slices.Equal(leaders, []int32{2, 3}) {
		t.Fatalf("live leaders %v", leaders)
	}
	um := effs[5].(ctrlSend).Req.(*kmsg.UpdateMetadataRequest)
	if len(um.LiveBrokers) != 3 || len(um.TopicStates) != 1 || len(um.TopicStates[0].PartitionStates) != 2 {
		t.Fatalf("UpdateMetadata to 3: %d live brokers, topics %+v", len(um.LiveBrokers), um.TopicStates)
	}
	// Nothing changed since: nothing is sent.
	if effs := c.step(ctrlPropagate{}); len(effs) != 0 {
		t.Fatalf("second propagate sent %q", sendsTo(effs))
	}
}

// settled is controller 0 with brokers 1-3 live and topic t (replicas [1,2,3]) led by 1, ISR [1,2,3],
// leader epoch 5, znode version 7, the failover pass done and every broker told.
func settled(t *testing.T, unclean ...string) *controllerCore {
	t.Helper()
	c := testCore(unclean...)
	c.step(nodes(1, 2, 3))
	known(t, c, "t", map[int32][]int32{0: {1, 2, 3}}, map[int32]partitionView{0: state(1, 5, 7, 1, 2, 3)})
	wantEffects(t, "settled reconcile", c.step(ctrlReconcile{}), ctrlReconciled{OK: true})
	c.step(ctrlPropagate{Fresh: map[int32]bool{1: true, 2: true, 3: true}})
	return c
}

func TestControllerCoreBrokerDeathMovesLeadership(t *testing.T) {
	c := settled(t)
	c.step(nodes(2, 3)) // broker 1's registration is gone
	// The next ISR member in assignment order leads; the dead one leaves the ISR; epoch + 1; the write
	// is conditional on the state's version 7.
	wantEffects(t, "reconcile", c.step(ctrlReconcile{}),
		write("t", 0, leaderAndISR{Leader: 2, LeaderEpoch: 6, ControllerEpoch: tcEpoch, ISR: []int32{2, 3}}, false, 7))
	wantEffects(t, "written", c.step(ctrlStateWritten{Outcome: writeOK, Version: 8}), ctrlReconciled{OK: true})

	effs := c.step(ctrlPropagate{})
	if got, want := sendsTo(effs), []string{"2:LeaderAndISR", "2:UpdateMetadata", "3:LeaderAndISR", "3:UpdateMetadata"}; !slices.Equal(got, want) {
		t.Fatalf("sends %q, want %q", got, want)
	}
	lai := effs[0].(ctrlSend).Req.(*kmsg.LeaderAndISRRequest)
	if lai.Type == controlTypeFull || len(lai.TopicStates) != 1 {
		t.Fatalf("LeaderAndIsr to 2: type %d, %d topics", lai.Type, len(lai.TopicStates))
	}
	if ps := lai.TopicStates[0].PartitionStates[0]; ps.Leader != 2 || ps.LeaderEpoch != 6 || ps.ZKVersion != 8 || !slices.Equal(ps.ISR, []int32{2, 3}) {
		t.Fatalf("LeaderAndIsr to 2: %+v", ps)
	}
	um := effs[3].(ctrlSend).Req.(*kmsg.UpdateMetadataRequest)
	if ps := um.TopicStates[0].PartitionStates[0]; ps.Leader != 2 || !slices.Equal(ps.OfflineReplicas, []int32{1}) || len(um.LiveBrokers) != 2 {
		t.Fatalf("UpdateMetadata to 3: %+v, %d live brokers", ps, len(um.LiveBrokers))
	}
	if _, ok := c.sent[1]; ok {
		t.Fatal("what was sent to the dead broker is still kept")
	}

	// A write that finds the znode moved is re-read, not retried blindly; the reconcile goes on.
	c.step(nodes(3))
	wantEffects(t, "reconcile 2", c.step(ctrlReconcile{}),
		write("t", 0, leaderAndISR{Leader: 3, LeaderEpoch: 7, ControllerEpoch: tcEpoch, ISR: []int32{3}}, false, 8))
	wantEffects(t, "conflict", c.step(ctrlStateWritten{Outcome: writeConflict}),
		ctrlRead{Kind: taskState, Topic: "t", Partition: 0, Stale: true}, ctrlReconciled{OK: true})
	// A newer controller's epoch fences the write: resign.
	wantEffects(t, "reconcile 3", c.step(ctrlReconcile{}),
		write("t", 0, leaderAndISR{Leader: 3, LeaderEpoch: 7, ControllerEpoch: tcEpoch, ISR: []int32{3}}, false, 8))
	wantEffects(t, "fenced", c.step(ctrlStateWritten{Outcome: writeFenced}), ctrlResign{}, ctrlReconciled{OK: false})
}

func TestControllerCoreISRShrinkAndExpand(t *testing.T) {
	c := settled(t)
	alter := func(isr []int32, partitionEpoch int32) ctrlAlter {
		p := kmsg.NewAlterPartitionRequestTopicPartition()
		p.Partition, p.LeaderEpoch, p.PartitionEpoch, p.NewISR = 0, 5, partitionEpoch, isr
		return ctrlAlter{BrokerID: 1, Version: 1, Topic: "t", Partition: p}
	}
	// Shrink: written at the znode's version 7, answered with the new partition epoch 8.
	wantEffects(t, "shrink", c.step(alter([]int32{1, 2}, 7)),
		write("t", 0, leaderAndISR{Leader: 1, LeaderEpoch: 5, ControllerEpoch: tcEpoch, ISR: []int32{1, 2}}, false, 7))
	wantEffects(t, "shrink written", c.step(ctrlStateWritten{Outcome: writeOK, Version: 8}),
		ctrlAlterAnswer{Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2}, PartitionEpoch: 8})
	// The leadership did not move: only UpdateMetadata, to every live broker.
	effs := c.step(ctrlPropagate{})
	if got, want := sendsTo(effs), []string{"1:UpdateMetadata", "2:UpdateMetadata", "3:UpdateMetadata"}; !slices.Equal(got, want) {
		t.Fatalf("sends %q, want %q", got, want)
	}
	if ps := effs[1].(ctrlSend).Req.(*kmsg.UpdateMetadataRequest).TopicStates[0].PartitionStates[0]; !slices.Equal(ps.ISR, []int32{1, 2}) || ps.ZKVersion != 8 {
		t.Fatalf("UpdateMetadata to 2: %+v", ps)
	}
	// A stale partition epoch is refused without a write.
	wantEffects(t, "stale", c.step(alter([]int32{1, 2, 3}, 7)), ctrlAlterAnswer{Code: kerr.InvalidUpdateVersion.Code})
	// Expand: version 8 → 9.
	wantEffects(t, "expand", c.step(alter([]int32{1, 2, 3}, 8)),
		write("t", 0, leaderAndISR{Leader: 1, LeaderEpoch: 5, ControllerEpoch: tcEpoch, ISR: []int32{1, 2, 3}}, false, 8))
	wantEffects(t, "expand written", c.step(ctrlStateWritten{Outcome: writeOK, Version: 9}),
		ctrlAlterAnswer{Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2, 3}, PartitionEpoch: 9})
	// A write that loses the race answers INVALID_UPDATE_VERSION and re-reads the state.
	c.step(alter([]int32{1, 3}, 9))
	wantEffects(t, "lost race", c.step(ctrlStateWritten{Outcome: writeConflict}),
		ctrlRead{Kind: taskState, Topic: "t", Partition: 0, Stale: true}, ctrlAlterAnswer{Code: kerr.InvalidUpdateVersion.Code})
	// The state znode changed under the controller (its watch fired, the driver re-read it): every
	// live broker hears of it.
	c.step(ctrlStateRead{Topic: "t", Partition: 0, Exists: true, State: leaderAndISR{Leader: 1, LeaderEpoch: 5, ControllerEpoch: tcEpoch, ISR: []int32{1, 3}}, Version: 10})
	effs = c.step(ctrlPropagate{})
	if got, want := sendsTo(effs), []string{"1:UpdateMetadata", "2:UpdateMetadata", "3:UpdateMetadata"}; !slices.Equal(got, want) {
		t.Fatalf("sends after the notification %q, want %q", got, want)
	}
	if ps := effs[0].(ctrlSend).Req.(*kmsg.UpdateMetadataRequest).TopicStates[0].PartitionStates[0]; !slices.Equal(ps.ISR, []int32{1, 3}) || ps.ZKVersion != 10 {
		t.Fatalf("UpdateMetadata after the notification: %+v", ps)
	}
	// A broker shutting down may not join the ISR (KIP-841): v1 answers OPERATION_NOT_ATTEMPTED.
	c.shuttingDown[2] = true
	wantEffects(t, "shutting down", c.step(alter([]int32{1, 2, 3}, 10)), ctrlAlterAnswer{Code: kerr.OperationNotAttempted.Code})
	// Not the controller.
	var none controllerCore
	wantEffects(t, "not controller", none.step(alter([]int32{1}, 10)), ctrlAlterAnswer{Code: kerr.NotController.Code})
}

func TestControllerCoreFailoverRereadsState(t *testing.T) {
	// A new controller reads everything again, then, before any election, takes the dead replicas out
	// of the ISRs (onControllerFailover: ReplicaStateMachine.startup, then PartitionStateMachine).
	c := testCore()
	// An earlier tenure's context is dropped: the election starts from nothing.
	c.step(nodes(1, 2, 3))
	known(t, c, "old", map[int32][]int32{0: {1}}, map[int32]partitionView{0: state(1, 1, 1, 1)})
	c.step(ctrlResigned{})
	if c.active || c.knowsPartition("old", 0) {
		t.Fatal("a resigned controller still acts on its context")
	}
	wantEffects(t, "resigned reconcile", c.step(ctrlReconcile{}), ctrlReconciled{OK: true})
	effs := c.step(ctrlElected{Epoch: tcEpoch, EpochVersion: tcEpochVersion})
	wantEffects(t, "elected", effs, ctrlRead{Kind: taskBrokers}, ctrlRead{Kind: taskTopics})
	if !c.failover || len(c.view.topics) != 0 || len(c.view.brokers) != 0 {
		t.Fatalf("a new controller starts with an empty context and the failover pass: %+v", c.view)
	}
	c.step(nodes(2, 3))
	known(t, c, "t", map[int32][]int32{0: {1, 2, 3}, 1: {2, 3}}, map[int32]partitionView{
		0: state(1, 4, 3, 1, 2), // led by the dead broker 1
		1: state(2, 9, 11, 2, 3),
	})
	wantEffects(t, "offline", c.step(ctrlReconcile{}),
		write("t", 0, leaderAndISR{Leader: -1, LeaderEpoch: 5, ControllerEpoch: tcEpoch, ISR: []int32{2}}, false, 3))
	effs = c.step(ctrlStateWritten{Outcome: writeOK, Version: 4})
	wantEffects(t, "election", effs,
		write("t", 0, leaderAndISR{Leader: 2, LeaderEpoch: 6, ControllerEpoch: tcEpoch, ISR: []int32{2}}, false, 4))
	if got := logs(effs, logrus.InfoLevel); !slices.Equal(got, []string{"controller: offline replicas left the ISR"}) {
		t.Fatalf("logs %q", got)
	}
	wantEffects(t, "elected t-0", c.step(ctrlStateWritten{Outcome: writeOK, Version: 5}), ctrlReconciled{OK: true})
	if c.failover {
		t.Fatal("failover pass not over")
	}
	if got := c.view.topics["t"].states[0]; got.version != 5 || got.Leader != 2 {
		t.Fatalf("context after the writes: %+v", got)
	}
	wantEffects(t, "settled", c.step(ctrlReconcile{}), ctrlReconciled{OK: true})

	// A failed write (connection loss) keeps the failover pass for the retry.
	c2 := testCore()
	c2.step(nodes(2, 3))
	known(t, c2, "t", map[int32][]int32{0: {1, 2, 3}}, map[int32]partitionView{0: state(1, 4, 3, 1, 2)})
	c2.step(ctrlReconcile{})
	wantEffects(t, "failed", c2.step(ctrlStateWritten{Outcome: writeFailed}), ctrlReconciled{OK: false})
	if !c2.failover {
		t.Fatal("failover pass dropped after a failed write")
	}
	// The topic re-created meanwhile (another czxid): the old incarnation is forgotten first.
	effs = c2.step(ctrlTopicRead{Topic: "t", Czxid: 200, Assignment: map[int32][]int32{0: {3}}})
	wantEffects(t, "recreated", effs, ctrlForgetTopic{Topic: "t"}, ctrlRead{Kind: taskState, Topic: "t", Partition: 0, IfUnwatched: true})
	if tv := c2.view.topics["t"]; tv.czxid != 200 || len(tv.states) != 0 {
		t.Fatalf("re-created topic: %+v", tv)
	}
}

func TestControllerCoreUncleanElectionRefused(t *testing.T) {
	// Replicas [1,2], ISR [1]: when 1 dies, 2 is outside the ISR.
	setup := func(unclean ...string) *controllerCore {
		c := testCore(unclean...)
		c.step(nodes(1, 2))
		known(t, c, "t", map[int32][]int32{0: {1, 2}}, map[int32]partitionView{0: state(1, 2, 5, 1)})
		wantEffects(t, "settled", c.step(ctrlReconcile{}), ctrlReconciled{OK: true})
		c.step(nodes(2))
		return c
	}
	// Refused (the default): no leader; the last ISR member stays; epoch + 1.
	c := setup()
	wantEffects(t, "clean", c.step(ctrlReconcile{}),
		write("t", 0, leaderAndISR{Leader: -1, LeaderEpoch: 3, ControllerEpoch: tcEpoch, ISR: []int32{1}}, false, 5))
	effs := c.step(ctrlStateWritten{Outcome: writeOK, Version: 6})
	wantEffects(t, "clean written", effs, ctrlReconciled{OK: true})
	if got := logs(effs, logrus.WarnLevel); len(got) != 0 {
		t.Fatalf("warnings %q", got)
	}
	// Settled: nothing more is written while the ISR has no live member.
	wantEffects(t, "still refused", c.step(ctrlReconcile{}), ctrlReconciled{OK: true})

	// With unclean.leader.election.enable on the topic: 2 leads, alone, RECOVERING, with a warning.
	c = setup("t")
	wantEffects(t, "unclean", c.step(ctrlReconcile{}),
		write("t", 0, leaderAndISR{Leader: 2, LeaderEpoch: 3, ControllerEpoch: tcEpoch, ISR: []int32{2}, LeaderRecoveryState: leaderRecovering}, false, 5))
	effs = c.step(ctrlStateWritten{Outcome: writeOK, Version: 6})
	if got := logs(effs, logrus.WarnLevel); len(got) != 1 {
		t.Fatalf("unclean election warnings %q", got)
	}
}

func TestControllerCoreControlledShutdown(t *testing.T) {
	c := settled(t)
	known(t, c, "u", map[int32][]int32{0: {2, 1}}, map[int32]partitionView{0: state(2, 1, 4, 2, 1)})
	// 1 leads t-0 (moved to 2) and follows u-0 (leaves its ISR); writes in partition order.
	wantEffects(t, "shutdown", c.step(ctrlShutdown{ID: 1}),
		write("t", 0, leaderAndISR{Leader: 2, LeaderEpoch: 6, ControllerEpoch: tcEpoch, ISR: []int32{2, 3}}, false, 7))
	wantEffects(t, "t-0 written", c.step(ctrlStateWritten{Outcome: writeOK, Version: 8}),
		write("u", 0, leaderAndISR{Leader: 2, LeaderEpoch: 2, ControllerEpoch: tcEpoch, ISR: []int32{2}}, false, 4))
	wantEffects(t, "u-0 written", c.step(ctrlStateWritten{Outcome: writeOK, Version: 5}), ctrlShutdownAnswer{})
	if !c.shuttingDown[1] {
		t.Fatal("broker 1 not marked shutting down")
	}
	// Its follower replica stops fetching: StopReplica(delete=false) after the metadata.
	effs := c.step(ctrlPropagate{})
	got := sendsTo(effs)
	if want := []string{"1:LeaderAndISR", "1:UpdateMetadata", "1:StopReplica"}; len(got) < 3 || !slices.Equal(got[:3], want) {
		t.Fatalf("sends to 1 %q, want %q first", got, want)
	}
	sr := effs[2].(ctrlSend).Req.(*kmsg.StopReplicaRequest)
	if len(sr.Topics) != 1 || sr.Topics[0].Topic != "u" || sr.Topics[0].PartitionStates[0].Delete || sr.Topics[0].PartitionStates[0].LeaderEpoch != 2 {
		t.Fatalf("StopReplica to 1: %+v", sr.Topics)
	}
	wantEffects(t, "unknown broker", c.step(ctrlShutdown{ID: 9}), ctrlShutdownAnswer{Code: kerr.BrokerNotAvailable.Code})
}

func TestControllerCoreTopicDeleted(t *testing.T) {
	c := settled(t)
	effs := c.step(ctrlTopicGone{Topic: "t"})
	wantEffects(t, "gone", effs, ctrlForgetTopic{Topic: "t"})
	if got := logs(effs, logrus.InfoLevel); !slices.Equal(got, []string{"topic deleted"}) {
		t.Fatalf("logs %q", got)
	}
	// Each replica deletes its log (StopReplica delete=true, leader epoch -2) before the metadata names
	// the partition deleted (leader -2, leader epoch + 1).
	effs = c.step(ctrlPropagate{})
	if got, want := sendsTo(effs), []string{"1:StopReplica", "1:UpdateMetadata", "2:StopReplica", "2:UpdateMetadata", "3:StopReplica", "3:UpdateMetadata"}; !slices.Equal(got, want) {
		t.Fatalf("sends %q, want %q", got, want)
	}
	sr := effs[0].(ctrlSend).Req.(*kmsg.StopReplicaRequest)
	if ps := sr.Topics[0].PartitionStates[0]; !ps.Delete || ps.LeaderEpoch != epochDuringDelete {
		t.Fatalf("StopReplica: %+v", ps)
	}
	um := effs[1].(ctrlSend).Req.(*kmsg.UpdateMetadataRequest)
	if ps := um.TopicStates[0].PartitionStates[0]; ps.Leader != leaderDuringDelete || ps.LeaderEpoch != 6 || um.TopicStates[0].TopicID != topicIDOf(100) {
		t.Fatalf("UpdateMetadata: %+v", um.TopicStates[0])
	}
	if effs := c.step(ctrlPropagate{}); len(effs) != 0 {
		t.Fatalf("deleted twice: %q", sendsTo(effs))
	}
}

func TestControllerCoreNotController(t *testing.T) {
	c := newControllerCore(0, map[int32]bool{}, nil)
	for _, ev := range []ctrlEvent{nodes(1), ctrlTopicRead{Topic: "t", Assignment: map[int32][]int32{0: {1}}}, ctrlTopicGone{Topic: "t"},
		ctrlStateRead{Topic: "t"}, ctrlPropagate{Fresh: map[int32]bool{1: true}}, ctrlStateWritten{}} {
		if effs := c.step(ev); len(effs) != 0 {
			t.Fatalf("%T: %#v", ev, effs)
		}
	}
	wantEffects(t, "reconcile", c.step(ctrlReconcile{}), ctrlReconciled{OK: true})
	wantEffects(t, "shutdown", c.step(ctrlShutdown{ID: 1}), ctrlShutdownAnswer{Code: kerr.NotController.Code})
}
