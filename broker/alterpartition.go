package broker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/replica"
	"github.com/rebalancelab/rebalancelab/internal/wire"
)

// ISR changes travel as in Kafka 3.9 in ZooKeeper mode (KIP-497): the leader sends AlterPartition to
// the controller (alterPartitions, Kafka's DefaultAlterPartitionManager), the controller checks it and
// writes the state znode with a version check (handleAlterPartition → the ZooKeeper loop), and
// answers with the committed state, which the leader installs. Every broker learns the new ISR from
// the controller's UpdateMetadata (controlchannel.go).

// alterISRRetryBackoff spaces retries when the controller is unknown or unreachable.
const alterISRRetryBackoff = 100 * time.Millisecond

type alterItem struct {
	part *partition
	req  replica.AlterPartition
}

// alterPartitions sends the leaders' ISR changes to the controller, one request at a time, the
// latest change per partition (a partition has at most one in flight: replica.Leader).
type alterPartitions struct {
	b    *Broker
	mu   sync.Mutex
	q    map[topicPartition]alterItem
	wake chan struct{}
}

func newAlterPartitions(b *Broker) *alterPartitions {
	return &alterPartitions{b: b, q: map[topicPartition]alterItem{}, wake: make(chan struct{}, 1)}
}

// submit queues part's ISR change (nil: nothing).
func (a *alterPartitions) submit(part *partition, req *replica.AlterPartition) {
	if req == nil {
		return
	}
	a.mu.Lock()
	a.q[topicPartition{part.topic, part.id}] = alterItem{part, *req}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *alterPartitions) take() map[topicPartition]alterItem {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.q
	a.q = map[topicPartition]alterItem{}
	return q
}

// requeue puts back items not answered, unless a newer change was submitted meanwhile.
func (a *alterPartitions) requeue(items map[topicPartition]alterItem) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for tp, it := range items {
		if _, ok := a.q[tp]; !ok {
			a.q[tp] = it
		}
	}
}

func (a *alterPartitions) run() {
	b := a.b
	var conn *wire.Conn
	connTo := int32(-1)
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-a.wake:
		}
		for items := a.take(); len(items) > 0; items = a.take() {
			v := b.view.Load()
			ctrl, ok := v.brokers[v.controller]
			if conn != nil && connTo != v.controller {
				conn.Close()
				conn = nil
			}
			var err error
			if !ok {
				err = fmt.Errorf("no live controller (controller %d)", v.controller)
			} else if conn == nil {
				conn, err = wire.Dial(b.ctx, nil, net.JoinHostPort(ctrl.Host, strconv.Itoa(int(ctrl.Port))), fmt.Sprintf("broker-%d-alter-partition", b.id))
				connTo = v.controller
			}
			retried := false
			if err == nil {
				retried, err = a.send(conn, items)
			}
			if err != nil {
				if conn != nil {
					conn.Close()
					conn = nil
				}
				b.log.WithError(err).Debug("AlterPartition not delivered; retrying")
				a.requeue(items)
			}
			if err != nil || retried {
				select {
				case <-b.ctx.Done():
					return
				case <-time.After(alterISRRetryBackoff):
				}
			}
		}
	}
}

// send delivers items in one AlterPartition v1 and applies the answers. Errors: the connection's,
// or the answer's top-level error (NOT_CONTROLLER: the controller moved; the items are retried).
func (a *alterPartitions) send(conn *wire.Conn, items map[topicPartition]alterItem) (retried bool, err error) {
	b := a.b
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(1)
	req.BrokerID = b.id
	req.BrokerEpoch = -1 // ZooKeeper mode: the controller does not check it here
	byTopic := map[string]int{}
	for tp, it := range items {
		i, ok := byTopic[tp.Topic]
		if !ok {
			rt := kmsg.NewAlterPartitionRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
			byTopic[tp.Topic] = i
		}
		p := kmsg.NewAlterPartitionRequestTopicPartition()
		p.Partition = tp.Partition
		p.LeaderEpoch = it.req.LeaderEpoch
		p.NewISR = it.req.NewISR
		p.PartitionEpoch = it.req.PartitionEpoch
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	ctx, cancel := context.WithTimeout(b.ctx, time.Duration(b.cfg.ReplicaSocketTimeoutMs)*time.Millisecond)
	defer cancel()
	resp, err := conn.Request(ctx, req)
	if err != nil {
		return false, err
	}
	ar := resp.(*kmsg.AlterPartitionResponse)
	if ar.ErrorCode != 0 {
		return false, kerr.ErrorForCode(ar.ErrorCode)
	}
	for _, rt := range ar.Topics {
		for _, rp := range rt.Partitions {
			tp := topicPartition{rt.Topic, rp.Partition}
			it, ok := items[tp]
			if !ok {
				continue
			}
			delete(items, tp)
			st := replica.State{Leader: rp.LeaderID, LeaderEpoch: rp.LeaderEpoch, ISR: rp.ISR, PartitionEpoch: rp.PartitionEpoch}
			fields := logFields(tp.Topic, tp.Partition)
			if rp.ErrorCode != 0 {
				b.log.WithFields(fields).WithField("isr", it.req.NewISR).Infof("AlterPartition refused: %s", errorLabel(rp.ErrorCode))
			} else {
				b.log.WithFields(fields).WithFields(logrus.Fields{"isr": rp.ISR, "partition_epoch": rp.PartitionEpoch}).Info("ISR changed")
			}
			if again := it.part.alterDone(it.req.LeaderEpoch, rp.ErrorCode, st); again != nil {
				a.submit(it.part, again)
				retried = true
			}
		}
	}
	for tp, it := range items { // not answered: the controller dropped them
		if again := it.part.alterDone(it.req.LeaderEpoch, kerr.UnknownServerError.Code, replica.State{}); again != nil {
			a.submit(it.part, again)
			retried = true
		}
		delete(items, tp)
	}
	return retried, nil
}

// ctrlRequest is a request handed to the ZooKeeper loop, which owns the controller's state and what
// the controller told this broker: one of an AlterPartition or a ControlledShutdown (to the
// controller), a LeaderAndIsr, an UpdateMetadata or a StopReplica (from it).
type ctrlRequest struct {
	alter    *kmsg.AlterPartitionRequest
	shutdown *kmsg.ControlledShutdownRequest
	lai      *kmsg.LeaderAndISRRequest
	um       *kmsg.UpdateMetadataRequest
	stop     *kmsg.StopReplicaRequest
	reply    chan kmsg.Response
}

// controllerRequest hands req to the ZooKeeper loop and waits for its answer; errResp is answered
// when ctx ends first.
func (b *Broker) controllerRequest(ctx context.Context, cr ctrlRequest, errResp kmsg.Response) kmsg.Response {
	cr.reply = make(chan kmsg.Response, 1)
	select {
	case b.ctrlq <- cr:
	case <-ctx.Done():
		return errResp
	}
	select {
	case r := <-cr.reply:
		return r
	case <-ctx.Done():
		return errResp
	}
}

// inLoop answers cr in the ZooKeeper loop.
func (b *Broker) ctrlInLoop(s *zkState, cr ctrlRequest) kmsg.Response {
	switch {
	case cr.shutdown != nil:
		return b.controlledShutdownInLoop(s, cr.shutdown)
	case cr.lai != nil:
		return b.leaderAndIsrInLoop(s, cr.lai)
	case cr.um != nil:
		return b.updateMetadataInLoop(s, cr.um)
	case cr.stop != nil:
		return b.stopReplicaInLoop(s, cr.stop)
	}
	return b.alterPartitionInLoop(s, cr.alter)
}

// handleAlterPartition is KafkaApis.handleAlterPartitionRequest: only the controller answers; the
// ZooKeeper loop decides and writes (alterPartitionInLoop).
func (b *Broker) handleAlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	resp.ErrorCode = kerr.NotController.Code
	return b.controllerRequest(ctx, ctrlRequest{alter: req}, resp)
}

// alterPartitionInLoop is KafkaController.processAlterPartition, run by the ZooKeeper loop: each
// partition's change is checked (decideAlterPartition) and written with the state znode's version;
// the answer carries the committed state (leader, leader epoch, ISR, partition epoch = znode version).
func (b *Broker) alterPartitionInLoop(s *zkState, req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	if !s.ctrl.active {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = b.alterOne(s, req.BrokerID, req.Version, t.Topic, p, &rp)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// alterOne runs one partition of the request through the controller core.
func (b *Broker) alterOne(s *zkState, brokerID int32, version int16, topic string, p kmsg.AlterPartitionRequestTopicPartition, rp *kmsg.AlterPartitionResponseTopicPartition) int16 {
	for _, a := range b.runCtrl(s, ctrlAlter{BrokerID: brokerID, Version: version, Topic: topic, Partition: p}) {
		if ans, ok := a.(ctrlAlterAnswer); ok {
			if ans.Code == 0 {
				rp.LeaderID, rp.LeaderEpoch, rp.ISR, rp.PartitionEpoch = ans.Leader, ans.LeaderEpoch, ans.ISR, ans.PartitionEpoch
			}
			return ans.Code
		}
	}
	return kerr.NotController.Code
}
