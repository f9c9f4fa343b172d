package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// producerIDBlockPath is ZkData's ProducerIdBlockZNode: the last block of producer ids any broker
// claimed.
const producerIDBlockPath = "/latest_producer_id_block"

// producerIDBlockSize is ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE.
const producerIDBlockSize = 1000

// producerIDBlock is the JSON of /latest_producer_id_block (ProducerIdBlockZNode version 1): the
// bounds are decimal strings, both inclusive.
type producerIDBlock struct {
	Version    int    `json:"version"`
	Broker     int32  `json:"broker"`
	BlockStart string `json:"block_start"`
	BlockEnd   string `json:"block_end"`
}

// producerIDs hands out producer ids from blocks claimed in ZooKeeper (Kafka's ZkProducerIdManager:
// the ZooKeeper-mode manager, where the broker claims its block itself; 3.9 brokers at IBP 3.0+ ask
// the controller with AllocateProducerIds, and the controller claims it the same way).
type producerIDs struct {
	mu        sync.Mutex
	claimed   bool          // a block was claimed
	next, end int64         // ids next..end of the current block are free
	claiming  chan struct{} // closed when the claim in flight ends; nil when none is
	claimErr  error         // the last claim's error, for the requests that waited for it
}

// producerIDClaimWait bounds how long an InitProducerId waits for a block to be claimed (ZooKeeper
// slow or away) before it is answered with a retriable error.
const producerIDClaimWait = 5 * time.Second

// claimBlock reads /latest_producer_id_block and writes the block after it with the version it read
// (ZkProducerIdManager.getNewProducerIdBlock), retrying when another broker wrote in between. The
// first block is 0-999.
func (b *Broker) claimProducerIDBlock() (start, end int64, err error) {
	if b.zk == nil { // a broker built without Start (the request fuzzer's)
		return 0, 0, errors.New("no ZooKeeper connection")
	}
	path := b.zp(producerIDBlockPath)
	// KafkaZkClient.createTopLevelPaths creates the node empty.
	if _, err := b.zk.Create(path, nil, 0, b.acl()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return 0, 0, fmt.Errorf("create %s: %w", path, err)
	}
	for {
		data, stat, err := b.zk.Get(path)
		if err != nil {
			return 0, 0, fmt.Errorf("read %s: %w", path, err)
		}
		start = 0
		if len(data) > 0 {
			var cur producerIDBlock
			if err := json.Unmarshal(data, &cur); err != nil {
				return 0, 0, fmt.Errorf("%s holds %q: %w", path, data, err)
			}
			last, err := strconv.ParseInt(cur.BlockEnd, 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("%s holds %q: block_end: %w", path, data, err)
			}
			if last > 1<<63-1-producerIDBlockSize {
				return 0, 0, fmt.Errorf("%s: producer ids exhausted (block end %d)", path, last)
			}
			start = last + 1
		}
		end = start + producerIDBlockSize - 1
		out, _ := json.Marshal(producerIDBlock{Version: 1, Broker: b.id, BlockStart: strconv.FormatInt(start, 10), BlockEnd: strconv.FormatInt(end, 10)})
		if _, err := b.zk.Set(path, out, stat.Version); errors.Is(err, zk.ErrBadVersion) {
			continue
		} else if err != nil {
			return 0, 0, fmt.Errorf("write %s: %w", path, err)
		}
		b.log.WithFields(map[string]any{"block_start": start, "block_end": end}).Info("claimed a producer id block")
		return start, end, nil
	}
}

// generateProducerID is ZkProducerIdManager.generateProducerId: the next id of the current block,
// claiming a new block when it is used up. The claim's ZooKeeper round trips run on one goroutine of
// the broker's (one claim at a time, never under pids.mu); a request waits for it at most
// producerIDClaimWait or until ctx ends, then gets an error.
func (b *Broker) generateProducerID(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, producerIDClaimWait)
	defer cancel()
	p := &b.pids
	for {
		p.mu.Lock()
		if p.claimed && p.next <= p.end {
			id := p.next
			p.next++
			p.mu.Unlock()
			return id, nil
		}
		done := p.claiming
		if done == nil {
			done = make(chan struct{})
			if !b.spawn(func() { b.claimProducerIDs(done) }) {
				p.mu.Unlock()
				return -1, errors.New("the broker is shutting down")
			}
			p.claiming = done
		}
		p.mu.Unlock()
		select {
		case <-done:
			p.mu.Lock()
			err := p.claimErr
			p.mu.Unlock()
			if err != nil {
				return -1, err
			}
		case <-ctx.Done():
			return -1, fmt.Errorf("waiting for a producer id block: %w", ctx.Err())
		}
	}
}

// claimProducerIDs claims a block (claimProducerIDBlock) and hands it to generateProducerID's
// waiters, closing done.
func (b *Broker) claimProducerIDs(done chan struct{}) {
	start, end, err := b.claimProducerIDBlock()
	p := &b.pids
	p.mu.Lock()
	if err == nil {
		p.next, p.end, p.claimed = start, end, true
	}
	p.claimErr, p.claiming = err, nil
	p.mu.Unlock()
	close(done)
}

// handleInitProducerID is KafkaApis.handleInitProducerIdRequest with TransactionCoordinator.handleInitProducerId
// for idempotent producers: a null transactional id always gets a new producer id with epoch 0, also
// when the request carries the producer's current id and epoch (v3+: 3.9 "blindly accepts" it; the
// idempotent producer bumps its epoch itself, KIP-360). A producer id without an epoch, or an epoch
// without an id, is INVALID_REQUEST; an empty transactional id INVALID_REQUEST. Transactions are not
// served: a transactional id is answered NOT_COORDINATOR, as by a broker that does not host its
// __transaction_state partition. When no block of ids can be claimed (ZooKeeper unreachable) the
// answer is COORDINATOR_LOAD_IN_PROGRESS, retriable, as 3.9's RPCProducerIdManager answers while it
// waits for a block.
func (b *Broker) handleInitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	fail := func(e *kerr.Error) kmsg.Response {
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = e.Code, -1, -1
		return resp
	}
	if (req.ProducerID == -1) != (req.ProducerEpoch == -1) {
		return fail(kerr.InvalidRequest)
	}
	switch {
	case req.TransactionalID == nil:
	case *req.TransactionalID == "":
		return fail(kerr.InvalidRequest)
	default:
		return fail(kerr.NotCoordinator)
	}
	id, err := b.generateProducerID(ctx)
	if err != nil {
		b.log.WithError(err).Warn("InitProducerId: no producer id block")
		return fail(kerr.CoordinatorLoadInProgress)
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}
