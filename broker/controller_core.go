package broker

import (
	"slices"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The controller as a state machine (Kafka 3.9's ZooKeeper-mode KafkaController and its
// ControllerContext), in the group coordinator's shape (coordinator.Core.Step): controllerCore.step
// takes a ctrlEvent — what the driver read from ZooKeeper, the outcome of a znode write it asked
// for, a request to the controller — and returns ctrlEffects for the driver to carry out in order:
// znode writes with their expected versions, re-reads of znodes, LeaderAndIsr / UpdateMetadata /
// StopReplica sends, answers, log lines. The core does no I/O, holds no logger and reads no clock
// (the controller of 0.8.2/3.9-in-ZK-mode that this mirrors has no timer the lab runs: the
// preferred-leader check, autoLeaderRebalance, is decided but not scheduled); its decisions are
// controller.go's pure functions. The driver is the ZooKeeper loop (zk.go, controller_driver.go):
// it performs a ctrlWriteState and feeds the outcome back as ctrlStateWritten before anything else,
// so at most one write is in flight and the core sees the writes in the order it asked for them.
//
//	events                         effects
//	ctrlElected                    ctrlLog, ctrlRead (brokers, topics)
//	ctrlResigned                   -
//	ctrlBrokersRead                ctrlLog
//	ctrlTopicRead / ctrlTopicGone  ctrlLog, ctrlForgetTopic, ctrlRead
//	ctrlStateRead                  ctrlLog
//	ctrlReconcile                  ctrlWriteState ... ctrlReconciled
//	ctrlStateWritten               ctrlWriteState, ctrlRead, ctrlResign, ctrlLog, ctrlReconciled,
//	                               ctrlAlterAnswer, ctrlShutdownAnswer
//	ctrlPropagate                  ctrlSend
//	ctrlAlter                      ctrlAlterAnswer, or ctrlWriteState first
//	ctrlShutdown                   ctrlShutdownAnswer, or ctrlWriteState first

// ctrlEvent is an input to controllerCore.step.
type ctrlEvent interface{ isCtrlEvent() }

// ctrlElected: this broker won the election (created /controller) and wrote Epoch to
// /controller_epoch, now at znode version EpochVersion (KafkaController.onControllerFailover): the
// context starts empty and is read again, the first reconcile is the failover pass.
type ctrlElected struct{ Epoch, EpochVersion int32 }

// ctrlResigned: this broker is the controller no more (another broker's /controller, the session
// expired, or a write was fenced: onControllerResignation); the context is dropped.
type ctrlResigned struct{}

// ctrlBrokersRead: /brokers/ids and every registration, as read (ZkUtils.getAllBrokersInCluster):
// the live brokers and their broker epochs (registration czxids).
type ctrlBrokersRead struct {
	Live   map[int32]Node
	Epochs map[int32]int64
}

// ctrlTopicRead: /brokers/topics/<Topic> read, with its creation zxid; Unreadable is set (and
// Assignment nil) when its data did not decode.
type ctrlTopicRead struct {
	Topic      string
	Czxid      int64
	Assignment map[int32][]int32
	Unreadable error
}

// ctrlTopicGone: /brokers/topics/<Topic> is absent (listed no more, or NoNode on read).
type ctrlTopicGone struct{ Topic string }

// ctrlStateRead: a partition's state znode as read; Exists false when it is not written yet.
type ctrlStateRead struct {
	Topic     string
	Partition int32
	Exists    bool
	State     leaderAndISR
	Version   int32
}

// ctrlReconcile: the context is complete (no read pending); decide every partition's state
// (onBrokerStartup/Failure, onNewPartitionCreation, onControllerFailover's first pass).
type ctrlReconcile struct{}

// writeOutcome classifies a znode write's outcome as the controller reacts to it.
type writeOutcome int

const (
	writeOK       writeOutcome = iota
	writeFenced                // the /controller_epoch check failed: another controller took over
	writeConflict              // BADVERSION or NODEEXISTS: the znode moved under us
	writeNoNode                // the znode (or its topic) is gone
	writeFailed                // anything else (connection loss...): retried later
)

// ctrlStateWritten is the outcome of the last ctrlWriteState: the znode's new version when OK, the
// error otherwise (for the log).
type ctrlStateWritten struct {
	Outcome writeOutcome
	Version int32
	Err     error
}

// ctrlPropagate: send every live broker what changed since it was last told. Fresh are the
// brokers whose request queue is new (the driver's senders: controlChannel.sync).
type ctrlPropagate struct{ Fresh map[int32]bool }

// ctrlAlter is one partition of an AlterPartition request (KafkaController.processAlterPartition).
type ctrlAlter struct {
	BrokerID  int32 // the request's brokerId: the leader
	Version   int16 // the request version
	Topic     string
	Partition kmsg.AlterPartitionRequestTopicPartition
}

// ctrlShutdown is a ControlledShutdown request from broker ID (doControlledShutdown).
type ctrlShutdown struct{ ID int32 }

func (ctrlElected) isCtrlEvent()      {}
func (ctrlResigned) isCtrlEvent()     {}
func (ctrlBrokersRead) isCtrlEvent()  {}
func (ctrlTopicRead) isCtrlEvent()    {}
func (ctrlTopicGone) isCtrlEvent()    {}
func (ctrlStateRead) isCtrlEvent()    {}
func (ctrlReconcile) isCtrlEvent()    {}
func (ctrlStateWritten) isCtrlEvent() {}
func (ctrlPropagate) isCtrlEvent()    {}
func (ctrlAlter) isCtrlEvent()        {}
func (ctrlShutdown) isCtrlEvent()     {}

// ctrlEffect is an output of controllerCore.step, for the driver to carry out in order.
type ctrlEffect interface{ isCtrlEffect() }

// ctrlWriteState writes a partition's state znode in one ZooKeeper multi with a check of
// /controller_epoch at EpochVersion (fencing a stale controller): a create when Create (with its
// parents /partitions and /partitions/<p>, never the topic), else a set at expected Version. The
// driver answers with ctrlStateWritten before any other event.
type ctrlWriteState struct {
	Topic        string
	Partition    int32
	State        leaderAndISR
	Create       bool
	Version      int32
	EpochVersion int32
}

// ctrlRead asks the driver to read a znode again (and re-arm its watch): Kind taskTopic, taskState
// or taskBrokers/taskTopics. Stale: the watch counted as set must be counted as unset (the znode
// moved under a write). IfUnwatched: only when no watch is set on it in this session.
type ctrlRead struct {
	Kind        taskKind
	Topic       string
	Partition   int32
	Stale       bool
	IfUnwatched bool
}

// ctrlForgetTopic: the driver drops what it keeps about Topic's znodes (watches counted as armed,
// queued reads, logs it failed to open): the topic is gone or another incarnation replaced it.
type ctrlForgetTopic struct{ Topic string }

// ctrlResign: the controller is fenced by a newer epoch; the driver resigns (stops its senders,
// forgets the controller's reads, steps ctrlResigned) and runs an election.
type ctrlResign struct{}

// ctrlReconciled ends a ctrlReconcile: OK when every partition was decided and written (a failed
// write leaves it to the retry).
type ctrlReconciled struct{ OK bool }

// ctrlSend queues Req on broker To's ordered request queue.
type ctrlSend struct {
	To  int32
	Req kmsg.Request
}

// ctrlAlterAnswer answers a ctrlAlter: Code, and when 0 the committed state (PartitionEpoch = the
// state znode's version).
type ctrlAlterAnswer struct {
	Code           int16
	Leader         int32
	LeaderEpoch    int32
	ISR            []int32
	PartitionEpoch int32
}

// ctrlShutdownAnswer answers a ctrlShutdown: Code, and the partitions broker ID still leads.
type ctrlShutdownAnswer struct {
	Code      int16
	Remaining []partitionRef
}

// ctrlLog is a log line (logging is an effect: the core has no logger).
type ctrlLog struct {
	Level  logrus.Level
	Msg    string
	Fields logrus.Fields
	Err    error
}

func (ctrlWriteState) isCtrlEffect()     {}
func (ctrlRead) isCtrlEffect()           {}
func (ctrlForgetTopic) isCtrlEffect()    {}
func (ctrlResign) isCtrlEffect()         {}
func (ctrlReconciled) isCtrlEffect()     {}
func (ctrlSend) isCtrlEffect()           {}
func (ctrlAlterAnswer) isCtrlEffect()    {}
func (ctrlShutdownAnswer) isCtrlEffect() {}
func (ctrlLog) isCtrlEffect()            {}

// controllerCore is this broker as the controller: its epoch and the context it read from
// ZooKeeper (ControllerContext), while active (between ctrlElected and ctrlResigned).
type controllerCore struct {
	active       bool
	id           int32 // this broker: the controller id in its requests
	epoch        int32 // /controller_epoch value this controller wrote
	epochVersion int32 // its znode version; every state write checks it (fencing a stale controller)
	// failover: the first reconcile of this controller has not completed (onControllerFailover).
	failover bool
	// view is the controller's context: live brokers, topics, assignments and partition states;
	// brokerEpochs are the live brokers' registration czxids; sent is what each broker was last told.
	view         *clusterView
	brokerEpochs map[int32]int64
	sent         map[int32]*brokerSent
	// shuttingDown: brokers that asked for a controlled shutdown (by id). The map is the driver's and
	// outlives a tenure, as the lab has always kept it.
	shuttingDown map[int32]bool
	// unclean reports unclean.leader.election.enable for a topic with these overrides (the broker's
	// dynamic and static configs behind it: a pure lookup).
	unclean func(topic string, overrides map[string]string) bool

	// The write in flight and what it is for; the reconcile or controlled shutdown it belongs to.
	inflight *pendingWrite
	run      *reconcileRun
	shutdown *shutdownRun
}

// writeWhy says what a write is for, which decides how its outcome is handled.
type writeWhy int

const (
	whyOffline  writeWhy = iota // failover: dead replicas leave the ISR (then the election)
	whyNew                      // a new partition's first state
	whyElect                    // leader moved / dead ISR members removed (onBrokerChange)
	whyAlter                    // AlterPartition
	whyShutdown                 // controlled shutdown
)

type pendingWrite struct {
	w       ctrlWriteState
	why     writeWhy
	unclean bool
}

type reconcileRun struct {
	refs []partitionRef
	next int
	live map[int32]bool
}

type shutdownRun struct {
	id        int32
	writes    []partitionRef
	next      map[partitionRef]leaderAndISR
	i         int
	remaining []partitionRef
}

// newControllerCore is broker id's controller core, not the controller until ctrlElected.
// shuttingDown is the driver's map of brokers shutting down; unclean looks up
// unclean.leader.election.enable.
func newControllerCore(id int32, shuttingDown map[int32]bool, unclean func(string, map[string]string) bool) controllerCore {
	return controllerCore{id: id, shuttingDown: shuttingDown, unclean: unclean}
}

// elected starts a tenure: an empty context, read again (brokers, then topics), failover pending.
func (c *controllerCore) elected(ev ctrlElected) []ctrlEffect {
	*c = controllerCore{active: true, id: c.id, epoch: ev.Epoch, epochVersion: ev.EpochVersion, failover: true,
		view: emptyView(), brokerEpochs: map[int32]int64{}, sent: map[int32]*brokerSent{}, shuttingDown: c.shuttingDown, unclean: c.unclean}
	return []ctrlEffect{
		ctrlLog{Level: logrus.InfoLevel, Msg: "elected controller", Fields: logrus.Fields{"controller_epoch": c.epoch}},
		ctrlRead{Kind: taskBrokers},
		ctrlRead{Kind: taskTopics},
	}
}

// knowsPartition: the context has topic with partition p assigned (its state is worth reading).
func (c *controllerCore) knowsPartition(topic string, p int32) bool {
	if !c.active {
		return false
	}
	tv, ok := c.view.topics[topic]
	if !ok {
		return false
	}
	_, ok = tv.replicas[p]
	return ok
}

// step applies ev and returns the effects.
func (c *controllerCore) step(ev ctrlEvent) []ctrlEffect {
	switch ev := ev.(type) {
	case ctrlElected:
		return c.elected(ev)
	case ctrlResigned:
		*c = newControllerCore(c.id, c.shuttingDown, c.unclean)
		return nil
	case ctrlStateWritten:
		return c.written(ev)
	}
	if !c.active {
		switch ev.(type) {
		case ctrlAlter:
			return []ctrlEffect{ctrlAlterAnswer{Code: kerr.NotController.Code}}
		case ctrlShutdown:
			return []ctrlEffect{ctrlShutdownAnswer{Code: kerr.NotController.Code}}
		case ctrlReconcile:
			return []ctrlEffect{ctrlReconciled{OK: true}}
		}
		return nil
	}
	switch ev := ev.(type) {
	case ctrlBrokersRead:
		return c.brokersRead(ev)
	case ctrlTopicRead:
		return c.topicRead(ev)
	case ctrlTopicGone:
		return c.topicGone(ev.Topic, "topic deleted")
	case ctrlStateRead:
		return c.stateRead(ev)
	case ctrlPropagate:
		return c.propagate(ev.Fresh)
	case ctrlReconcile:
		c.run = &reconcileRun{live: c.view.liveSet()}
		for _, topic := range c.view.sortedTopics() {
			for _, p := range sortedPartitions(c.view.topics[topic].replicas) {
				c.run.refs = append(c.run.refs, partitionRef{topic, p})
			}
		}
		return c.advance(nil)
	case ctrlAlter:
		return c.alter(ev)
	case ctrlShutdown:
		return c.controlledShutdown(ev.ID)
	}
	return nil
}

func (c *controllerCore) brokersRead(ev ctrlBrokersRead) []ctrlEffect {
	var out []ctrlEffect
	if !sameBrokers(c.view.brokers, ev.Live) {
		out = append(out, ctrlLog{Level: logrus.InfoLevel, Msg: "controller: live brokers changed", Fields: logrus.Fields{"live": sortedIDs(ev.Live)}})
	}
	for id := range c.shuttingDown {
		if _, ok := ev.Live[id]; !ok || ev.Epochs[id] != c.brokerEpochs[id] {
			delete(c.shuttingDown, id) // it stopped; a new registration (new broker epoch) starts afresh
		}
	}
	c.view.brokers = ev.Live
	c.brokerEpochs = ev.Epochs
	return out
}

func (c *controllerCore) topicGone(topic, msg string) []ctrlEffect {
	var out []ctrlEffect
	if _, ok := c.view.topics[topic]; ok {
		out = append(out, ctrlLog{Level: logrus.InfoLevel, Msg: msg, Fields: logrus.Fields{"topic": topic}})
	}
	delete(c.view.topics, topic)
	return append(out, ctrlForgetTopic{Topic: topic})
}

// topicRead takes a topic znode's assignment and asks for the partition states not watched yet.
func (c *controllerCore) topicRead(ev ctrlTopicRead) []ctrlEffect {
	var out []ctrlEffect
	if tv, ok := c.view.topics[ev.Topic]; ok && tv.czxid != ev.Czxid {
		// Deleted and created again between two reads: the old incarnation is gone.
		out = c.topicGone(ev.Topic, "topic deleted and created again")
	}
	if ev.Unreadable != nil {
		return append(out, ctrlLog{Level: logrus.WarnLevel, Msg: "ignoring unreadable topic znode", Fields: logrus.Fields{"topic": ev.Topic}, Err: ev.Unreadable})
	}
	tv, ok := c.view.topics[ev.Topic]
	if !ok {
		tv = &topicView{states: map[int32]partitionView{}, czxid: ev.Czxid}
		c.view.topics[ev.Topic] = tv
		out = append(out, ctrlLog{Level: logrus.InfoLevel, Msg: "topic known", Fields: logrus.Fields{"topic": ev.Topic, "partitions": len(ev.Assignment)}})
	} else if len(ev.Assignment) != len(tv.replicas) {
		out = append(out, ctrlLog{Level: logrus.InfoLevel, Msg: "topic partitions changed", Fields: logrus.Fields{"topic": ev.Topic, "partitions": len(ev.Assignment)}})
	}
	tv.replicas = ev.Assignment
	for p := range tv.states {
		if _, ok := ev.Assignment[p]; !ok {
			delete(tv.states, p)
		}
	}
	for _, p := range sortedPartitions(ev.Assignment) {
		out = append(out, ctrlRead{Kind: taskState, Topic: ev.Topic, Partition: p, IfUnwatched: true})
	}
	return out
}

func (c *controllerCore) stateRead(ev ctrlStateRead) []ctrlEffect {
	tv, ok := c.view.topics[ev.Topic]
	if !ok {
		return nil
	}
	if _, ok := tv.replicas[ev.Partition]; !ok {
		return nil
	}
	if !ev.Exists {
		tv.states[ev.Partition] = partitionView{}
		return nil
	}
	var out []ctrlEffect
	old := tv.states[ev.Partition]
	if !old.exists || old.Leader != ev.State.Leader || old.LeaderEpoch != ev.State.LeaderEpoch {
		out = append(out, ctrlLog{Level: logrus.DebugLevel, Msg: "partition state", Fields: logrus.Fields{"topic": ev.Topic, "partition": ev.Partition, "leader": ev.State.Leader, "leader_epoch": ev.State.LeaderEpoch}})
	}
	tv.states[ev.Partition] = partitionView{leaderAndISR: ev.State, exists: true, version: ev.Version}
	return out
}

// ask makes w the write in flight.
func (c *controllerCore) ask(out []ctrlEffect, why writeWhy, unclean bool, ref partitionRef, st leaderAndISR, create bool, version int32) []ctrlEffect {
	w := ctrlWriteState{Topic: ref.Topic, Partition: ref.Partition, State: st, Create: create, Version: version, EpochVersion: c.epochVersion}
	c.inflight = &pendingWrite{w: w, why: why, unclean: unclean}
	return append(out, w)
}

// advance decides the reconcile's partitions from run.next on, until one needs a write (asked) or
// none is left (ctrlReconciled; the failover pass is over).
//
// Per partition (3.9's order): on a new controller's first pass, an existing state with dead ISR
// members first loses them (offlineReplicas, as ReplicaStateMachine.startup); then a partition without
// a state gets newPartitionState, and one with a state onBrokerChange's decision, each written
// conditionally on the state's version and on /controller_epoch's.
func (c *controllerCore) advance(out []ctrlEffect) []ctrlEffect {
	r := c.run
	for r.next < len(r.refs) {
		ref := r.refs[r.next]
		r.next++
		tv := c.view.topics[ref.Topic]
		if tv == nil {
			continue
		}
		cur, known := tv.states[ref.Partition]
		if !known {
			continue
		}
		if cur.exists && c.failover {
			if off, changed := offlineReplicas(cur.leaderAndISR, r.live, c.epoch); changed {
				return c.ask(out, whyOffline, false, ref, off, false, cur.version)
			}
		}
		if next := c.elect(out, ref, tv, cur); next != nil {
			return next
		}
	}
	c.run, c.failover = nil, false
	return append(out, ctrlReconciled{OK: true})
}

// elect asks the write newPartitionState or onBrokerChange decides for ref, or returns nil when none.
func (c *controllerCore) elect(out []ctrlEffect, ref partitionRef, tv *topicView, cur partitionView) []ctrlEffect {
	if !cur.exists {
		return c.ask(out, whyNew, false, ref, newPartitionState(tv.replicas[ref.Partition], c.run.live, c.epoch), true, 0)
	}
	unclean := c.unclean != nil && c.unclean(ref.Topic, tv.configs)
	ch := onBrokerChange(cur.leaderAndISR, tv.replicas[ref.Partition], c.run.live, unclean, c.epoch)
	if !ch.Changed {
		return nil
	}
	return c.ask(out, whyElect, ch.Unclean, ref, ch.Next, false, cur.version)
}

// written takes the outcome of the write in flight.
func (c *controllerCore) written(ev ctrlStateWritten) []ctrlEffect {
	pw := c.inflight
	c.inflight = nil
	if pw == nil || !c.active {
		return nil
	}
	ref := partitionRef{pw.w.Topic, pw.w.Partition}
	fields := logrus.Fields{"topic": ref.Topic, "partition": ref.Partition}
	var out []ctrlEffect
	if ev.Outcome == writeOK {
		// A create makes version 0; a set the version the znode now has.
		if tv := c.view.topics[ref.Topic]; tv != nil {
			tv.states[ref.Partition] = partitionView{leaderAndISR: pw.w.State, exists: true, version: ev.Version}
		}
	}
	switch pw.why {
	case whyAlter:
		return c.alterWritten(pw, ev, fields)
	case whyShutdown:
		return c.shutdownWritten(pw, ev, fields)
	}
	st := pw.w.State
	switch ev.Outcome {
	case writeOK:
		if pw.why == whyOffline {
			out = append(out, ctrlLog{Level: logrus.InfoLevel, Msg: "controller: offline replicas left the ISR", Fields: withFields(fields, logrus.Fields{"leader": st.Leader, "isr": st.ISR, "leader_epoch": st.LeaderEpoch})})
			tv := c.view.topics[ref.Topic]
			if next := c.elect(out, ref, tv, tv.states[ref.Partition]); next != nil {
				return next
			}
			return c.advance(out)
		}
		if pw.unclean {
			out = append(out, ctrlLog{Level: logrus.WarnLevel, Msg: "controller: unclean leader election: a replica outside the ISR leads; records only the old ISR had are lost", Fields: withFields(fields, logrus.Fields{"leader": st.Leader})})
		}
		out = append(out, ctrlLog{Level: logrus.InfoLevel, Msg: "controller: partition leader set", Fields: withFields(fields, logrus.Fields{"leader": st.Leader, "leader_epoch": st.LeaderEpoch})})
	case writeFenced:
		c.run = nil
		return append(out, ctrlLog{Level: logrus.WarnLevel, Msg: "controller: fenced by a newer controller epoch; resigning"}, ctrlResign{}, ctrlReconciled{OK: false})
	case writeConflict:
		out = append(out, ctrlRead{Kind: taskState, Topic: ref.Topic, Partition: ref.Partition, Stale: true})
	case writeNoNode:
		out = append(out, ctrlRead{Kind: taskTopic, Topic: ref.Topic}) // topic deleted meanwhile
	default:
		c.run = nil
		return append(out, ctrlLog{Level: logrus.DebugLevel, Msg: "controller: state write failed; will retry", Fields: fields, Err: ev.Err}, ctrlReconciled{OK: false})
	}
	if c.run == nil {
		return out
	}
	return c.advance(out)
}

// alter is KafkaController.processAlterPartition for one partition: checked by decideAlterPartition,
// written at the state znode's version.
func (c *controllerCore) alter(ev ctrlAlter) []ctrlEffect {
	p := ev.Partition
	tv, ok := c.view.topics[ev.Topic]
	if !ok {
		return []ctrlEffect{ctrlAlterAnswer{Code: kerr.UnknownTopicOrPartition.Code}}
	}
	cur, ok := tv.states[p.Partition]
	_, assigned := tv.replicas[p.Partition] // ZooKeeper-mode 3.9 does not check the ISR against the assignment
	if !ok || !assigned || !cur.exists {
		return []ctrlEffect{ctrlAlterAnswer{Code: kerr.UnknownTopicOrPartition.Code}}
	}
	next, code := decideAlterPartition(cur.leaderAndISR, cur.version, c.view.liveSet(), c.shuttingDown, alterPartitionReq{
		Leader: ev.BrokerID, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: p.NewISR,
		LeaderRecoveryState: p.LeaderRecoveryState, Version: ev.Version,
	}, c.epoch)
	if code != 0 {
		return []ctrlEffect{ctrlAlterAnswer{Code: code}}
	}
	return c.ask(nil, whyAlter, false, partitionRef{ev.Topic, p.Partition}, next, false, cur.version)
}

func (c *controllerCore) alterWritten(pw *pendingWrite, ev ctrlStateWritten, fields logrus.Fields) []ctrlEffect {
	st := pw.w.State
	switch ev.Outcome {
	case writeOK:
		return []ctrlEffect{
			ctrlLog{Level: logrus.InfoLevel, Msg: "controller: ISR changed by AlterPartition", Fields: withFields(fields, logrus.Fields{"isr": st.ISR, "leader_epoch": st.LeaderEpoch, "partition_epoch": ev.Version})},
			ctrlAlterAnswer{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: st.ISR, PartitionEpoch: ev.Version},
		}
	case writeFenced:
		return []ctrlEffect{ctrlResign{}, ctrlAlterAnswer{Code: kerr.NotController.Code}}
	case writeConflict:
		return []ctrlEffect{ctrlRead{Kind: taskState, Topic: pw.w.Topic, Partition: pw.w.Partition, Stale: true}, ctrlAlterAnswer{Code: kerr.InvalidUpdateVersion.Code}}
	}
	return []ctrlEffect{ctrlAlterAnswer{Code: kerr.NotController.Code}}
}

// controlledShutdown is doControlledShutdown: broker id is marked shutting down (its partitions no
// longer elect it, AlterPartition may not add it back), the states controlledShutdown decides are
// written (in partition order), its follower replicas are due a StopReplica(delete=false) (sent by the
// next propagate), and the answer lists the partitions it still leads.
func (c *controllerCore) controlledShutdown(id int32) []ctrlEffect {
	if _, ok := c.view.brokers[id]; !ok {
		return []ctrlEffect{ctrlShutdownAnswer{Code: kerr.BrokerNotAvailable.Code}}
	}
	c.shuttingDown[id] = true
	parts := map[partitionRef]partitionInfo{}
	for topic, tv := range c.view.topics {
		for p, replicas := range tv.replicas {
			st := tv.states[p]
			parts[partitionRef{topic, p}] = partitionInfo{Replicas: replicas, State: st.leaderAndISR, HasState: st.exists}
		}
	}
	next, remaining := controlledShutdown(id, parts, c.view.liveSet(), c.shuttingDown, c.epoch)
	sent := c.sent[id]
	if sent == nil || sent.epoch != c.brokerEpochs[id] {
		sent = &brokerSent{epoch: c.brokerEpochs[id], lai: map[topicPartition]sentPartition{}, meta: map[topicPartition]sentPartition{}}
		c.sent[id] = sent
	}
	var stops []topicPartition
	for ref, pi := range parts {
		if pi.HasState && len(pi.Replicas) > 1 && pi.State.Leader != id && slices.Contains(pi.Replicas, id) {
			stops = append(stops, topicPartition{ref.Topic, ref.Partition})
		}
	}
	sortTPs(stops)
	sent.stops = append(sent.stops, stops...)
	run := &shutdownRun{id: id, next: next, remaining: remaining}
	for ref := range next {
		run.writes = append(run.writes, ref)
	}
	sortRefs(run.writes)
	c.shutdown = run
	return c.shutdownAdvance(nil)
}

func (c *controllerCore) shutdownAdvance(out []ctrlEffect) []ctrlEffect {
	r := c.shutdown
	if r.i < len(r.writes) {
		ref := r.writes[r.i]
		r.i++
		cur := c.view.topics[ref.Topic].states[ref.Partition]
		return c.ask(out, whyShutdown, false, ref, r.next[ref], false, cur.version)
	}
	c.shutdown = nil
	sortRefs(r.remaining)
	return append(out, ctrlShutdownAnswer{Remaining: r.remaining})
}

func (c *controllerCore) shutdownWritten(pw *pendingWrite, ev ctrlStateWritten, fields logrus.Fields) []ctrlEffect {
	r := c.shutdown
	if r == nil {
		return nil
	}
	st := pw.w.State
	ref := partitionRef{pw.w.Topic, pw.w.Partition}
	var out []ctrlEffect
	switch ev.Outcome {
	case writeOK:
		out = append(out, ctrlLog{Level: logrus.InfoLevel, Msg: "controller: controlled shutdown moved the partition", Fields: withFields(fields, logrus.Fields{"leader": st.Leader, "isr": st.ISR, "leader_epoch": st.LeaderEpoch, "shutting_down": r.id})})
	case writeFenced:
		c.shutdown = nil
		return []ctrlEffect{ctrlResign{}, ctrlShutdownAnswer{Code: kerr.NotController.Code}}
	default:
		out = append(out, ctrlRead{Kind: taskState, Topic: ref.Topic, Partition: ref.Partition, Stale: true})
		if cur := c.view.topics[ref.Topic].states[ref.Partition]; st.Leader != r.id && cur.Leader == r.id {
			r.remaining = append(r.remaining, ref)
		}
	}
	return c.shutdownAdvance(out)
}

// withFields is a's fields plus b's (a new map).
func withFields(a, b logrus.Fields) logrus.Fields {
	out := make(logrus.Fields, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
