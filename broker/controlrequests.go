package broker

import (
	"context"
	"slices"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A broker learns from the controller, over the wire (controlchannel.go), what it hosts and what the
// cluster looks like, as a Kafka 3.9 broker in ZooKeeper mode does:
//   - LeaderAndIsr (ReplicaManager.becomeLeaderOrFollower): the partitions it leads or follows.
//     A request from an older controller epoch is refused whole (STALE_CONTROLLER_EPOCH); a partition
//     whose leader epoch is not above the one it has is ignored (STALE_CONTROLLER_EPOCH); one whose
//     replicas do not name this broker, UNKNOWN_TOPIC_OR_PARTITION. A request typed FULL lists all
//     the broker's partitions: one it hosts and the request does not name is a stray replica and its
//     log is deleted (3.9 marks strays for deletion; here, with no reassignment, a partition leaves a
//     broker's full list only when its topic was deleted while the controller's requests did not
//     reach the broker: a new controller, or a new registration of the broker).
//   - UpdateMetadata (ZkMetadataCache.updateMetadata): live brokers and partition states; leader -2
//     removes a deleted topic's partition. The first one from a new controller epoch, or after this
//     broker registered again, carries every partition and replaces the cache.
//   - StopReplica (ReplicaManager.stopReplicas): stop fetching (delete=false) or delete the log
//     (delete=true); a leader epoch below the replica's is FENCED_LEADER_EPOCH (-2 and -1 always pass).
// Every request whose broker epoch is older than this broker's registration is STALE_BROKER_EPOCH
// (KafkaApis.isBrokerEpochStale). The ZooKeeper loop applies them (it owns the state), then makes
// the logs leaders or followers (applyLeadership) and publishes the new metadata.
//
// Differences from Kafka: a LeaderAndIsr naming another incarnation of a topic this broker hosts
// replaces the old log (Kafka answers INCONSISTENT_TOPIC_ID and keeps the topic's deletion pending
// until every replica deleted it; here topics are deleted from ZooKeeper at once); and a leader takes
// a newer committed ISR of its own leader epoch from UpdateMetadata as well as from AlterPartition's
// answer, so that an answer lost with its connection does not leave it waiting for the next epoch.

// hostedPartition is a partition this broker hosts, as the last LeaderAndIsr applied says.
type hostedPartition struct {
	st       leaderAndISR
	version  int32 // partition epoch (the state znode's version)
	replicas []int32
	czxid    int64 // topic incarnation (topicIDOf); 0 when the request had no topic id
	stopped  bool  // StopReplica(delete=false): no fetching until the next LeaderAndIsr
}

// controlSource is the controller epoch and broker epoch (the last known one) of the UpdateMetadata
// requests applied.
type controlSource struct {
	controllerEpoch int32
	brokerEpoch     int64
}

func (b *Broker) handleLeaderAndIsr(ctx context.Context, req *kmsg.LeaderAndISRRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
	resp.ErrorCode = kerr.RequestTimedOut.Code
	return b.controllerRequest(ctx, ctrlRequest{lai: req}, resp)
}

func (b *Broker) handleUpdateMetadata(ctx context.Context, req *kmsg.UpdateMetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.UpdateMetadataResponse)
	resp.ErrorCode = kerr.RequestTimedOut.Code
	return b.controllerRequest(ctx, ctrlRequest{um: req}, resp)
}

func (b *Broker) handleStopReplica(ctx context.Context, req *kmsg.StopReplicaRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
	resp.ErrorCode = kerr.RequestTimedOut.Code
	return b.controllerRequest(ctx, ctrlRequest{stop: req}, resp)
}

// controlFenced is the top-level error of a control request: an older controller epoch than one seen,
// or a broker epoch older than this broker's registration.
func (s *zkState) controlFenced(controllerEpoch int32, brokerEpoch int64) int16 {
	if controllerEpoch < s.controllerEpoch {
		return kerr.StaleControllerEpoch.Code
	}
	if brokerEpoch != unknownBrokerEpoch && brokerEpoch < s.brokerEpoch {
		return kerr.StaleBrokerEpoch.Code
	}
	return 0
}

// laiPartition is one partition of a LeaderAndIsr, any version.
type laiPartition struct {
	topic   string
	topicID [16]byte
	p       kmsg.LeaderAndISRRequestTopicPartition
}

func laiPartitions(req *kmsg.LeaderAndISRRequest) []laiPartition {
	var out []laiPartition
	if req.Version <= 1 {
		for _, p := range req.PartitionStates {
			out = append(out, laiPartition{topic: p.Topic, p: p})
		}
		return out
	}
	for _, t := range req.TopicStates {
		for _, p := range t.PartitionStates {
			out = append(out, laiPartition{topic: t.Topic, topicID: t.TopicID, p: p})
		}
	}
	return out
}

func (b *Broker) leaderAndIsrInLoop(s *zkState, req *kmsg.LeaderAndISRRequest) *kmsg.LeaderAndISRResponse {
	resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
	brokerEpoch := unknownBrokerEpoch
	if req.Version >= 2 {
		brokerEpoch = req.BrokerEpoch
	}
	if code := s.controlFenced(req.ControllerEpoch, brokerEpoch); code != 0 {
		b.log.WithFields(logrus.Fields{"controller": req.ControllerID, "controller_epoch": req.ControllerEpoch, "broker_epoch": brokerEpoch}).Warnf("ignoring LeaderAndIsr: %s", errorLabel(code))
		resp.ErrorCode = code
		return resp
	}
	s.controllerEpoch = req.ControllerEpoch
	// A broker new to the controller gets its LeaderAndIsr before the UpdateMetadata naming the
	// live brokers: the live leaders it carries tell its fetchers where to go meanwhile.
	for _, ll := range req.LiveLeaders {
		if _, known := s.work.brokers[ll.BrokerID]; !known {
			s.work.brokers[ll.BrokerID] = Node{ID: ll.BrokerID, Host: ll.Host, Port: ll.Port}
		}
	}
	parts := laiPartitions(req)
	named := map[topicPartition]bool{}
	errs := make([]int16, len(parts))
	for i, lp := range parts {
		tp := topicPartition{lp.topic, lp.p.Partition}
		named[tp] = true
		errs[i] = b.becomeLeaderOrFollower(s, tp, czxidOf(lp.topicID), lp.p)
	}
	if req.Version >= 5 && req.Type == controlTypeFull {
		for tp := range s.hosted {
			if named[tp] {
				continue
			}
			delete(s.hosted, tp)
			s.deleteLogs[tp] = true
			b.log.WithFields(logFields(tp.Topic, tp.Partition)).Info("stray replica: not in the controller's full LeaderAndIsr; its log is deleted")
		}
	}
	// The answer, in the request's layout.
	for i, lp := range parts {
		rp := kmsg.NewLeaderAndISRResponseTopicPartition()
		rp.Topic, rp.Partition, rp.ErrorCode = lp.topic, lp.p.Partition, errs[i]
		if req.Version <= 4 {
			resp.Partitions = append(resp.Partitions, rp)
			continue
		}
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].TopicID != lp.topicID {
			rt := kmsg.NewLeaderAndISRResponseTopic()
			rt.TopicID = lp.topicID
			resp.Topics = append(resp.Topics, rt)
		}
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return resp
}

// becomeLeaderOrFollower checks one partition of a LeaderAndIsr and records it as hosted.
func (b *Broker) becomeLeaderOrFollower(s *zkState, tp topicPartition, czxid int64, p kmsg.LeaderAndISRRequestTopicPartition) int16 {
	fields := logFields(tp.Topic, tp.Partition)
	if !slices.Contains(p.Replicas, b.id) {
		b.log.WithFields(fields).WithField("replicas", p.Replicas).Warn("ignoring LeaderAndIsr: this broker is not in the assigned replicas")
		return kerr.UnknownTopicOrPartition.Code
	}
	h, ok := s.hosted[tp]
	newIncarnation := ok && czxid != 0 && h.czxid != 0 && czxid != h.czxid
	if ok && !newIncarnation && p.LeaderEpoch <= h.st.LeaderEpoch {
		b.log.WithFields(fields).WithFields(logrus.Fields{"leader_epoch": p.LeaderEpoch, "current_leader_epoch": h.st.LeaderEpoch}).Debug("ignoring LeaderAndIsr: leader epoch not above the current one")
		return kerr.StaleControllerEpoch.Code
	}
	if czxid == 0 {
		if tv, known := s.work.topics[tp.Topic]; known {
			czxid = tv.czxid
		} else if ok {
			czxid = h.czxid
		}
	}
	s.hosted[tp] = &hostedPartition{
		st:       leaderAndISR{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, ControllerEpoch: p.ControllerEpoch, ISR: slices.Clone(p.ISR), LeaderRecoveryState: p.LeaderRecoveryState},
		version:  p.ZKVersion,
		replicas: slices.Clone(p.Replicas),
		czxid:    czxid,
	}
	if _, known := s.topicConfigs[tp.Topic]; !known {
		s.pending[zkTask{kind: taskTopicConfig, topic: tp.Topic}] = struct{}{}
	}
	return 0
}

// umPartition is one partition of an UpdateMetadata, any version.
type umPartition struct {
	topic   string
	topicID [16]byte
	p       kmsg.UpdateMetadataRequestTopicPartition
}

func umPartitions(req *kmsg.UpdateMetadataRequest) []umPartition {
	var out []umPartition
	if req.Version <= 4 {
		for _, p := range req.PartitionStates {
			out = append(out, umPartition{topic: p.Topic, p: p})
		}
		return out
	}
	for _, t := range req.TopicStates {
		for _, p := range t.PartitionStates {
			out = append(out, umPartition{topic: t.Topic, topicID: t.TopicID, p: p})
		}
	}
	return out
}

// liveBrokers is an UpdateMetadata's live brokers: v0's host and port, v1+'s PLAINTEXT endpoint (or
// the first one).
func liveBrokers(req *kmsg.UpdateMetadataRequest) map[int32]Node {
	out := make(map[int32]Node, len(req.LiveBrokers))
	for _, lb := range req.LiveBrokers {
		n := Node{ID: lb.ID, Host: lb.Host, Port: lb.Port}
		if req.Version >= 1 && len(lb.Endpoints) > 0 {
			ep := lb.Endpoints[0]
			for _, e := range lb.Endpoints {
				if e.ListenerName == "PLAINTEXT" {
					ep = e
					break
				}
			}
			n.Host, n.Port = ep.Host, ep.Port
		}
		out[lb.ID] = n
	}
	return out
}

func (b *Broker) updateMetadataInLoop(s *zkState, req *kmsg.UpdateMetadataRequest) *kmsg.UpdateMetadataResponse {
	resp := req.ResponseKind().(*kmsg.UpdateMetadataResponse)
	brokerEpoch := unknownBrokerEpoch
	if req.Version >= 5 {
		brokerEpoch = req.BrokerEpoch
	}
	if code := s.controlFenced(req.ControllerEpoch, brokerEpoch); code != 0 {
		b.log.WithFields(logrus.Fields{"controller": req.ControllerID, "controller_epoch": req.ControllerEpoch, "broker_epoch": brokerEpoch}).Warnf("ignoring UpdateMetadata: %s", errorLabel(code))
		resp.ErrorCode = code
		return resp
	}
	s.controllerEpoch = req.ControllerEpoch
	full := !s.metaSeen || req.ControllerEpoch > s.umFrom.controllerEpoch || (brokerEpoch != unknownBrokerEpoch && brokerEpoch != s.umFrom.brokerEpoch)
	s.umFrom.controllerEpoch = req.ControllerEpoch
	if brokerEpoch != unknownBrokerEpoch {
		s.umFrom.brokerEpoch = brokerEpoch
	}
	v := s.work
	if full {
		v.topics = map[string]*topicView{}
	}
	v.brokers = liveBrokers(req)
	reset := map[string]bool{}
	for _, up := range umPartitions(req) {
		p := up.p
		czxid := czxidOf(up.topicID)
		tv, ok := v.topics[up.topic]
		if p.Leader == leaderDuringDelete {
			if ok {
				delete(tv.replicas, p.Partition)
				delete(tv.states, p.Partition)
				if len(tv.replicas) == 0 {
					delete(v.topics, up.topic)
					delete(s.topicConfigs, up.topic)
					b.log.WithField("topic", up.topic).Info("topic deleted")
				}
			}
			continue
		}
		if ok && czxid != 0 && tv.czxid != czxid && !reset[up.topic] {
			b.log.WithField("topic", up.topic).Info("topic deleted and created again")
			ok = false
			delete(s.topicConfigs, up.topic)
		}
		if !ok {
			tv = &topicView{replicas: map[int32][]int32{}, states: map[int32]partitionView{}, czxid: czxid, configs: s.topicConfigs[up.topic]}
			v.topics[up.topic] = tv
			reset[up.topic] = true
			if tv.configs == nil {
				s.pending[zkTask{kind: taskTopicConfig, topic: up.topic}] = struct{}{}
			}
		}
		st := leaderAndISR{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, ControllerEpoch: p.ControllerEpoch, ISR: slices.Clone(p.ISR)}
		tv.replicas[p.Partition] = slices.Clone(p.Replicas)
		tv.states[p.Partition] = partitionView{leaderAndISR: st, exists: true, version: p.ZKVersion}
		// A leader's committed ISR of its own epoch (see the differences above).
		tp := topicPartition{up.topic, p.Partition}
		if h, ok := s.hosted[tp]; ok && h.st.Leader == st.Leader && h.st.LeaderEpoch == st.LeaderEpoch && p.ZKVersion > h.version {
			h.st.ISR, h.st.ControllerEpoch, h.version = slices.Clone(st.ISR), st.ControllerEpoch, p.ZKVersion
		}
	}
	s.metaSeen = true
	return resp
}

func (b *Broker) stopReplicaInLoop(s *zkState, req *kmsg.StopReplicaRequest) *kmsg.StopReplicaResponse {
	resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
	brokerEpoch := unknownBrokerEpoch
	if req.Version >= 1 {
		brokerEpoch = req.BrokerEpoch
	}
	if code := s.controlFenced(req.ControllerEpoch, brokerEpoch); code != 0 {
		b.log.WithFields(logrus.Fields{"controller": req.ControllerID, "controller_epoch": req.ControllerEpoch, "broker_epoch": brokerEpoch}).Warnf("ignoring StopReplica: %s", errorLabel(code))
		resp.ErrorCode = code
		return resp
	}
	s.controllerEpoch = req.ControllerEpoch
	type stop struct {
		tp    topicPartition
		epoch int32
		del   bool
	}
	var stops []stop
	for _, t := range req.Topics {
		switch {
		case req.Version == 0:
			stops = append(stops, stop{topicPartition{t.Topic, t.Partition}, noEpoch, req.DeletePartitions})
		case req.Version <= 2:
			for _, p := range t.Partitions {
				stops = append(stops, stop{topicPartition{t.Topic, p}, noEpoch, req.DeletePartitions})
			}
		default:
			for _, p := range t.PartitionStates {
				stops = append(stops, stop{topicPartition{t.Topic, p.Partition}, p.LeaderEpoch, p.Delete})
			}
		}
	}
	for _, st := range stops {
		rp := kmsg.NewStopReplicaResponsePartition()
		rp.Topic, rp.Partition = st.tp.Topic, st.tp.Partition
		h, ok := s.hosted[st.tp]
		if ok && st.epoch != epochDuringDelete && st.epoch != noEpoch && st.epoch < h.st.LeaderEpoch {
			rp.ErrorCode = kerr.FencedLeaderEpoch.Code
			resp.Partitions = append(resp.Partitions, rp)
			continue
		}
		fields := logFields(st.tp.Topic, st.tp.Partition)
		switch {
		case st.del:
			delete(s.hosted, st.tp)
			s.deleteLogs[st.tp] = true
			b.log.WithFields(fields).Info("StopReplica: deleting the replica")
		case ok:
			h.stopped = true
			b.log.WithFields(fields).Info("StopReplica: stopped fetching")
		}
		resp.Partitions = append(resp.Partitions, rp)
	}
	return resp
}
