package broker

import (
	"maps"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// What the controller sends the brokers (ControllerBrokerRequestBatch), decided by the core from what
// it last sent each one: ctrlPropagate in, ctrlSend effects out (controlchannel.go delivers them).

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
func (c *controllerCore) propagate(fresh map[int32]bool) []ctrlEffect {
	cc := c.view
	var out []ctrlEffect
	for _, id := range cc.liveIDs() {
		sent := c.sent[id]
		isFresh := fresh[id]
		if isFresh || sent == nil || sent.epoch != c.brokerEpochs[id] {
			var stops []topicPartition
			if sent != nil && sent.epoch == c.brokerEpochs[id] {
				stops = sent.stops
			}
			sent = &brokerSent{epoch: c.brokerEpochs[id], lai: map[topicPartition]sentPartition{}, meta: map[topicPartition]sentPartition{}, stops: stops}
			c.sent[id] = sent
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
			out = append(out, ctrlSend{To: id, Req: c.stopReplicaRequest(id, deletes, nil, true)})
		}
		if len(lai) > 0 || isFresh {
			out = append(out, ctrlSend{To: id, Req: c.leaderAndIsrRequest(id, cur, lai, isFresh)})
		}
		if isFresh || len(meta) > 0 || len(gone) > 0 || brokersChanged {
			out = append(out, ctrlSend{To: id, Req: c.updateMetadataRequest(id, cur, meta, gone, sent)})
			for _, tp := range gone {
				delete(sent.meta, tp)
			}
		}
		if len(stops) > 0 {
			out = append(out, ctrlSend{To: id, Req: c.stopReplicaRequest(id, stops, cur, false)})
		}
	}
	for id := range c.sent {
		if _, ok := cc.brokers[id]; !ok {
			delete(c.sent, id)
		}
	}
	return out
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
func (c *controllerCore) leaderAndIsrRequest(id int32, cur map[topicPartition]sentPartition, tps []topicPartition, full bool) *kmsg.LeaderAndISRRequest {
	cc := c.view
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.SetVersion(leaderAndIsrVersion)
	req.ControllerID = c.id
	req.ControllerEpoch = c.epoch
	req.BrokerEpoch = c.brokerEpochs[id]
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
func (c *controllerCore) updateMetadataRequest(id int32, cur map[topicPartition]sentPartition, meta, gone []topicPartition, sent *brokerSent) *kmsg.UpdateMetadataRequest {
	cc := c.view
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.SetVersion(updateMetadataVersion)
	req.ControllerID = c.id
	req.ControllerEpoch = c.epoch
	req.BrokerEpoch = c.brokerEpochs[id]
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
			ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = c.epoch, leaderDuringDelete, old.st.LeaderEpoch+1
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
func (c *controllerCore) stopReplicaRequest(id int32, tps []topicPartition, cur map[topicPartition]sentPartition, del bool) *kmsg.StopReplicaRequest {
	req := kmsg.NewPtrStopReplicaRequest()
	req.SetVersion(stopReplicaVersion)
	req.ControllerID = c.id
	req.ControllerEpoch = c.epoch
	req.BrokerEpoch = c.brokerEpochs[id]
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
