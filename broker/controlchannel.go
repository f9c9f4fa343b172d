package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
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
