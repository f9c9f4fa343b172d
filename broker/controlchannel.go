package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/wire"
)

// The controller tells the brokers what to do over the wire, as Kafka 3.9's ZooKeeper-mode controller
// does (kafka.controller.ControllerChannelManager, ControllerBrokerRequestBatch):
//   - LeaderAndIsr to the replicas of every partition whose leader, leader epoch, replicas or topic
//     incarnation changed (the broker becomes leader or follower: controlrequests.go);
//   - UpdateMetadata to every live broker, with every partition state that changed and the live
//     brokers (the broker's metadata cache, which Metadata answers from);
//   - StopReplica to a replica that must stop fetching (controlled shutdown: delete=false) or delete
//     its log (topic deletion: delete=true, leader epoch -2).
//
// Each live broker, the controller's own included, has one queue and one sender goroutine (Kafka's
// RequestSendThread): requests reach it in order, each retried until it is answered or the broker
// leaves /brokers/ids (a new registration — a new broker epoch — gets a new queue). The controller
// computes what to send after every change (propagate), from what it last sent to each broker; the
// first requests of a queue carry everything (a new controller, or a broker that registered again).

// Versions the controller sends: Kafka 3.9's with inter.broker.protocol.version 3.9.
const (
	leaderAndIsrVersion   int16 = 7
	updateMetadataVersion int16 = 8
	stopReplicaVersion    int16 = 4
)

// Sentinels of kafka.api.LeaderAndIsr and AbstractControlRequest.
const (
	leaderDuringDelete int32 = -2 // UpdateMetadata: the partition's topic is deleted
	epochDuringDelete  int32 = -2 // StopReplica: delete whatever leader epoch the replica has
	noEpoch            int32 = -1 // StopReplica v0-v2: no leader epoch, not checked
	controlTypeFull    int8  = 2  // LeaderAndIsr v5+ Type: the request lists every partition of the broker
	unknownBrokerEpoch int64 = -1 // AbstractControlRequest.UNKNOWN_BROKER_EPOCH: not checked
)

// controllerSocketTimeout is controller.socket.timeout.ms (Kafka's default 30000); controllerRetryBackoff
// spaces the sender's retries (RequestSendThread backs off 100 ms).
const (
	controllerSocketTimeout = 30 * time.Second
	controllerRetryBackoff  = 100 * time.Millisecond
)

// topicIDOf is the topic id the controller sends for a topic incarnation: the topic znode's creation
// zxid in the low 8 bytes (0.8.2's layout has no topic_id; never the zero or the metadata topic's id,
// as a czxid is above 1). czxidOf inverts it; 0 for the zero id (a request without topic ids).
func topicIDOf(czxid int64) [16]byte {
	var id [16]byte
	binary.BigEndian.PutUint64(id[8:], uint64(czxid))
	return id
}

func czxidOf(id [16]byte) int64 {
	if binary.BigEndian.Uint64(id[:8]) != 0 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(id[8:]))
}

// controllerChannel holds the controller's senders, by broker id. Used by the ZooKeeper loop only.
type controllerChannel struct {
	b       *Broker
	senders map[int32]*requestSender
}

func newControllerChannel(b *Broker) *controllerChannel {
	return &controllerChannel{b: b, senders: map[int32]*requestSender{}}
}

// requestSender is one broker's queue and the goroutine that delivers it.
type requestSender struct {
	b      *Broker
	to     Node
	epoch  int64 // the broker epoch (registration czxid) this queue is for
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	queue  []kmsg.Request
	wake   chan struct{}
}

// sync keeps one sender per live broker: senders of brokers gone, moved or registered again stop; new
// ones start. It reports the brokers whose sender is new (they are sent everything).
func (c *controllerChannel) sync(live map[int32]Node, epochs map[int32]int64) map[int32]bool {
	for id, r := range c.senders {
		if n, ok := live[id]; !ok || n != r.to || epochs[id] != r.epoch {
			r.cancel()
			delete(c.senders, id)
		}
	}
	fresh := map[int32]bool{}
	for id, n := range live {
		if _, ok := c.senders[id]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(c.b.ctx)
		r := &requestSender{b: c.b, to: n, epoch: epochs[id], ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1)}
		if !c.b.spawn(r.run) {
			cancel()
			continue
		}
		c.senders[id] = r
		fresh[id] = true
	}
	return fresh
}

// closeAll stops every sender (the broker resigned as controller); queued requests are dropped.
func (c *controllerChannel) closeAll() {
	for id, r := range c.senders {
		r.cancel()
		delete(c.senders, id)
	}
}

// send queues req for broker id (dropped when it has no sender: it is not live).
func (c *controllerChannel) send(id int32, req kmsg.Request) {
	r, ok := c.senders[id]
	if !ok {
		return
	}
	r.mu.Lock()
	r.queue = append(r.queue, req)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *requestSender) head() kmsg.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) == 0 {
		return nil
	}
	return r.queue[0]
}

func (r *requestSender) pop() {
	r.mu.Lock()
	r.queue = r.queue[1:]
	r.mu.Unlock()
}

func (r *requestSender) run() {
	var conn *wire.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	log := r.b.log.WithField("to_broker", r.to.ID)
	for {
		req := r.head()
		if req == nil {
			select {
			case <-r.ctx.Done():
				return
			case <-r.wake:
				continue
			}
		}
		var err error
		if conn == nil {
			conn, err = wire.Dial(r.ctx, nil, net.JoinHostPort(r.to.Host, strconv.Itoa(int(r.to.Port))), fmt.Sprintf("controller-%d-to-broker-%d", r.b.id, r.to.ID))
		}
		var resp kmsg.Response
		if err == nil {
			ctx, cancel := context.WithTimeout(r.ctx, controllerSocketTimeout)
			resp, err = conn.Request(ctx, req)
			cancel()
		}
		if err != nil {
			if conn != nil {
				conn.Close()
				conn = nil
			}
			if r.ctx.Err() != nil {
				return
			}
			log.WithError(err).Debugf("controller: %s not delivered; retrying", kmsg.NameForKey(req.Key()))
			select {
			case <-r.ctx.Done():
				return
			case <-time.After(controllerRetryBackoff):
			}
			continue
		}
		r.pop()
		if code := controlResponseError(resp); code != 0 {
			log.Warnf("controller: %s answered %s", kmsg.NameForKey(req.Key()), errorLabel(code))
		}
	}
}

// controlResponseError is a control response's top-level error code.
func controlResponseError(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.LeaderAndISRResponse:
		return r.ErrorCode
	case *kmsg.UpdateMetadataResponse:
		return r.ErrorCode
	case *kmsg.StopReplicaResponse:
		return r.ErrorCode
	}
	return 0
}

// sentPartition is what the controller last sent a broker about one partition.
type sentPartition struct {
	st       leaderAndISR
	version  int32
	replicas []int32
	czxid    int64
}

// leadershipChanged: a LeaderAndIsr is due (the leader, its epoch, the replicas or the incarnation moved).
func (a sentPartition) leadershipChanged(b sentPartition) bool {
	return a.czxid != b.czxid || a.st.Leader != b.st.Leader || a.st.LeaderEpoch != b.st.LeaderEpoch || !slices.Equal(a.replicas, b.replicas)
}

// metadataChanged: an UpdateMetadata entry is due.
func (a sentPartition) metadataChanged(b sentPartition) bool {
	return a.leadershipChanged(b) || a.version != b.version || !a.st.equal(b.st)
}

// brokerSent is what the controller last sent one broker (for this broker epoch).
type brokerSent struct {
	epoch   int64
	lai     map[topicPartition]sentPartition // partitions it replicates, as last sent in LeaderAndIsr
	meta    map[topicPartition]sentPartition // every partition, as last sent in UpdateMetadata
	brokers map[int32]Node                   // live brokers last sent
	stops   []topicPartition                 // StopReplica(delete=false) due (controlled shutdown)
}

// propagate sends every live broker what changed since the controller last told it (Kafka sends as
// it changes things: onBrokerStartup/Failure, onNewPartitionCreation, processAlterPartition,
// doControlledShutdown, TopicDeletionManager). Per broker, in order: StopReplica(delete) for logs of
// deleted topic incarnations, LeaderAndIsr, UpdateMetadata, StopReplica(no delete)
// (ControllerBrokerRequestBatch.sendRequestsToBrokers' order), so that a broker's metadata never
// names it the leader before it leads. A broker new to this controller gets LeaderAndIsr typed FULL,
// even when empty, and an UpdateMetadata with every partition (onBrokerStartup sends the
// UpdateMetadata first; here the LeaderAndIsr's live leaders tell a follower where its leader is).
func (b *Broker) propagate(s *zkState) {
	cc := s.ctrl.view
	fresh := s.chans.sync(cc.brokers, s.ctrl.brokerEpochs)
	for _, id := range cc.liveIDs() {
		sent := s.ctrl.sent[id]
		isFresh := fresh[id]
		if isFresh || sent == nil || sent.epoch != s.ctrl.brokerEpochs[id] {
			var stops []topicPartition
			if sent != nil && sent.epoch == s.ctrl.brokerEpochs[id] {
				stops = sent.stops
			}
			sent = &brokerSent{epoch: s.ctrl.brokerEpochs[id], lai: map[topicPartition]sentPartition{}, meta: map[topicPartition]sentPartition{}, stops: stops}
			s.ctrl.sent[id] = sent
			isFresh = true
		}
		var deletes, lai, meta, gone []topicPartition
		cur := map[topicPartition]sentPartition{}
		for topic, tv := range cc.topics {
			for p, st := range tv.states {
				if !st.exists {
					continue
				}
				tp := topicPartition{topic, p}
				now := sentPartition{st: st.leaderAndISR, version: st.version, replicas: tv.replicas[p], czxid: tv.czxid}
				cur[tp] = now
				if slices.Contains(now.replicas, id) {
					old, ok := sent.lai[tp]
					if ok && old.czxid != now.czxid {
						deletes = append(deletes, tp)
					}
					if !ok || old.leadershipChanged(now) {
						lai = append(lai, tp)
						sent.lai[tp] = now
					}
				}
				if old, ok := sent.meta[tp]; !ok || old.metadataChanged(now) {
					meta = append(meta, tp)
					sent.meta[tp] = now
				}
			}
		}
		for tp := range sent.lai {
			if now, ok := cur[tp]; !ok || !slices.Contains(now.replicas, id) {
				deletes = append(deletes, tp)
				delete(sent.lai, tp)
			}
		}
		for tp := range sent.meta {
			if _, ok := cur[tp]; !ok {
				gone = append(gone, tp)
			}
		}
		brokersChanged := !sameBrokers(sent.brokers, cc.brokers)
		sent.brokers = cc.brokers
		stops := sent.stops
		sent.stops = nil

		if len(deletes) > 0 {
			s.chans.send(id, b.stopReplicaRequest(s, id, deletes, nil, true))
		}
		if len(lai) > 0 || isFresh {
			s.chans.send(id, b.leaderAndIsrRequest(s, id, cur, lai, isFresh))
		}
		if isFresh || len(meta) > 0 || len(gone) > 0 || brokersChanged {
			s.chans.send(id, b.updateMetadataRequest(s, id, cur, meta, gone, sent))
			for _, tp := range gone {
				delete(sent.meta, tp)
			}
		}
		if len(stops) > 0 {
			s.chans.send(id, b.stopReplicaRequest(s, id, stops, cur, false))
		}
	}
	for id := range s.ctrl.sent {
		if _, ok := cc.brokers[id]; !ok {
			delete(s.ctrl.sent, id)
		}
	}
}

func sortTPs(tps []topicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
}

// leaderAndIsrRequest is LeaderAndIsr v7 for broker id with the partitions tps (their current state).
func (b *Broker) leaderAndIsrRequest(s *zkState, id int32, cur map[topicPartition]sentPartition, tps []topicPartition, full bool) *kmsg.LeaderAndISRRequest {
	cc := s.ctrl.view
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.SetVersion(leaderAndIsrVersion)
	req.ControllerID = b.id
	req.ControllerEpoch = s.ctrl.epoch
	req.BrokerEpoch = s.ctrl.brokerEpochs[id]
	if full {
		req.Type = controlTypeFull
	}
	sortTPs(tps)
	leaders := map[int32]bool{}
	for _, tp := range tps {
		now := cur[tp]
		if n := len(req.TopicStates); n == 0 || req.TopicStates[n-1].Topic != tp.Topic {
			ts := kmsg.NewLeaderAndISRRequestTopicState()
			ts.Topic, ts.TopicID = tp.Topic, topicIDOf(now.czxid)
			req.TopicStates = append(req.TopicStates, ts)
		}
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Topic, ps.Partition = tp.Topic, tp.Partition
		ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = now.st.ControllerEpoch, now.st.Leader, now.st.LeaderEpoch
		ps.ISR, ps.ZKVersion, ps.Replicas = slices.Clone(now.st.ISR), now.version, slices.Clone(now.replicas)
		ps.LeaderRecoveryState = now.st.LeaderRecoveryState
		ts := &req.TopicStates[len(req.TopicStates)-1]
		ts.PartitionStates = append(ts.PartitionStates, ps)
		if now.st.Leader >= 0 {
			leaders[now.st.Leader] = true
		}
	}
	for _, l := range slices.Sorted(maps.Keys(leaders)) {
		if n, ok := cc.brokers[l]; ok {
			ll := kmsg.NewLeaderAndISRRequestLiveLeader()
			ll.BrokerID, ll.Host, ll.Port = n.ID, n.Host, n.Port
			req.LiveLeaders = append(req.LiveLeaders, ll)
		}
	}
	return req
}

// updateMetadataRequest is UpdateMetadata v8 for broker id: the live brokers, the partitions meta with
// their current state and the partitions gone with leader -2 (LeaderDuringDelete).
func (b *Broker) updateMetadataRequest(s *zkState, id int32, cur map[topicPartition]sentPartition, meta, gone []topicPartition, sent *brokerSent) *kmsg.UpdateMetadataRequest {
	cc := s.ctrl.view
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.SetVersion(updateMetadataVersion)
	req.ControllerID = b.id
	req.ControllerEpoch = s.ctrl.epoch
	req.BrokerEpoch = s.ctrl.brokerEpochs[id]
	live := cc.liveSet()
	all := append(append([]topicPartition{}, meta...), gone...)
	sortTPs(all)
	for _, tp := range all {
		now, ok := cur[tp]
		var ps kmsg.UpdateMetadataRequestTopicPartition
		if ok {
			ps = kmsg.NewUpdateMetadataRequestTopicPartition()
			ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = now.st.ControllerEpoch, now.st.Leader, now.st.LeaderEpoch
			ps.ISR, ps.ZKVersion, ps.Replicas = slices.Clone(now.st.ISR), now.version, slices.Clone(now.replicas)
			for _, r := range now.replicas {
				if !live[r] {
					ps.OfflineReplicas = append(ps.OfflineReplicas, r)
				}
			}
		} else {
			old := sent.meta[tp]
			now = old
			ps = kmsg.NewUpdateMetadataRequestTopicPartition()
			ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = s.ctrl.epoch, leaderDuringDelete, old.st.LeaderEpoch+1
			ps.ISR, ps.ZKVersion, ps.Replicas = slices.Clone(old.st.ISR), old.version, slices.Clone(old.replicas)
		}
		ps.Topic, ps.Partition = tp.Topic, tp.Partition
		if n := len(req.TopicStates); n == 0 || req.TopicStates[n-1].Topic != tp.Topic || req.TopicStates[n-1].TopicID != topicIDOf(now.czxid) {
			ts := kmsg.NewUpdateMetadataRequestTopicState()
			ts.Topic, ts.TopicID = tp.Topic, topicIDOf(now.czxid)
			req.TopicStates = append(req.TopicStates, ts)
		}
		ts := &req.TopicStates[len(req.TopicStates)-1]
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	for _, n := range cc.sortedBrokers() {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID, lb.Host, lb.Port = n.ID, n.Host, n.Port
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName, ep.SecurityProtocol = n.Host, n.Port, "PLAINTEXT", 0
		lb.Endpoints = []kmsg.UpdateMetadataRequestLiveBrokerEndpoint{ep}
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	return req
}

// stopReplicaRequest is StopReplica v4 for tps: delete=true with leader epoch -2 (topic deletion: cur
// is nil), or delete=false with each partition's current leader epoch (controlled shutdown).
func (b *Broker) stopReplicaRequest(s *zkState, id int32, tps []topicPartition, cur map[topicPartition]sentPartition, del bool) *kmsg.StopReplicaRequest {
	req := kmsg.NewPtrStopReplicaRequest()
	req.SetVersion(stopReplicaVersion)
	req.ControllerID = b.id
	req.ControllerEpoch = s.ctrl.epoch
	req.BrokerEpoch = s.ctrl.brokerEpochs[id]
	sortTPs(tps)
	for _, tp := range tps {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewStopReplicaRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		ps := kmsg.NewStopReplicaRequestTopicPartitionState()
		ps.Partition, ps.Delete, ps.LeaderEpoch = tp.Partition, del, epochDuringDelete
		if !del {
			ps.LeaderEpoch = cur[tp].st.LeaderEpoch
		}
		rt := &req.Topics[len(req.Topics)-1]
		rt.PartitionStates = append(rt.PartitionStates, ps)
	}
	return req
}
