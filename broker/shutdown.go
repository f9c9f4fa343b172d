package broker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/wire"
)

// Controlled shutdown (KafkaServer.controlledShutdown, KafkaController.doControlledShutdown): before a
// broker stops, with controlled.shutdown.enable, it asks the controller to move the leadership of its
// partitions to other in-sync replicas and to take it out of the ISRs, so that clients lose no
// partition for the length of a ZooKeeper session. The broker retries until the controller answers
// with no partition left, up to controlled.shutdown.max.retries (3) times,
// controlled.shutdown.retry.backoff.ms (5000, here 500) apart; then it stops anyway.

const (
	controlledShutdownMaxRetries = 3
	controlledShutdownBackoff    = 500 * time.Millisecond
)

// handleControlledShutdown is KafkaApis.handleControlledShutdownRequest: only the controller answers.
func (b *Broker) handleControlledShutdown(ctx context.Context, req *kmsg.ControlledShutdownRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
	resp.ErrorCode = kerr.NotController.Code
	return b.controllerRequest(ctx, ctrlRequest{shutdown: req}, resp)
}

// controlledShutdownInLoop is the controller's part, in the ZooKeeper loop: the broker is marked
// shutting down (its partitions no longer elect it, AlterPartition may not add it), the states
// controlledShutdown decides are written, and the answer lists the partitions it still leads.
func (b *Broker) controlledShutdownInLoop(s *zkState, req *kmsg.ControlledShutdownRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
	resp.ErrorCode = kerr.NotController.Code
	for _, a := range b.runCtrl(s, ctrlShutdown{ID: req.BrokerID}) {
		if ans, ok := a.(ctrlShutdownAnswer); ok {
			resp.ErrorCode = ans.Code
			for _, r := range ans.Remaining {
				rp := kmsg.NewControlledShutdownResponsePartitionsRemaining()
				rp.Topic, rp.Partition = r.Topic, r.Partition
				resp.PartitionsRemaining = append(resp.PartitionsRemaining, rp)
			}
		}
	}
	return resp
}

// controlledShutdown asks the controller, up to controlledShutdownMaxRetries times, to move this
// broker's partitions away, and waits until this broker's view shows it leading none of the
// partitions that have another live replica. It returns an error saying why it gave up; Close stops
// the broker anyway.
func (b *Broker) controlledShutdown(ctx context.Context) error {
	var last error
	for attempt := 0; attempt < controlledShutdownMaxRetries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(controlledShutdownBackoff):
			}
		}
		v := b.view.Load()
		ctrl, ok := v.brokers[v.controller]
		if !ok {
			last = fmt.Errorf("no live controller")
			continue
		}
		conn, err := wire.Dial(ctx, nil, net.JoinHostPort(ctrl.Host, strconv.Itoa(int(ctrl.Port))), fmt.Sprintf("broker-%d-controlled-shutdown", b.id))
		if err != nil {
			last = err
			continue
		}
		req := kmsg.NewPtrControlledShutdownRequest()
		req.SetVersion(1)
		req.BrokerID = b.id
		resp, err := conn.Request(ctx, req)
		conn.Close()
		if err != nil {
			last = err
			continue
		}
		cr := resp.(*kmsg.ControlledShutdownResponse)
		if cr.ErrorCode != 0 {
			last = kerr.ErrorForCode(cr.ErrorCode)
			continue
		}
		if len(cr.PartitionsRemaining) > 0 {
			last = fmt.Errorf("%d partitions remain led by this broker", len(cr.PartitionsRemaining))
			continue
		}
		// The controller took this broker out of every ISR and sends its follower partitions
		// StopReplica (delete=false), as KafkaController.doControlledShutdown does; the fetchers
		// stop now rather than when that arrives. A fetch in between would have the leader propose
		// it back into the ISR, the controller refuse (OPERATION_NOT_ATTEMPTED: it is shutting
		// down), and the leader count it in the high watermark while the proposal is in flight.
		b.fetchers.stop()
		// Wait for the moves to reach this broker's metadata (LeaderAndIsr and UpdateMetadata from
		// the controller), so that the partitions stop being served here before the listener closes.
		if err := b.waitView(ctx, func(v *clusterView) bool { return !v.leadsReplicated(b.id) }); err != nil {
			return err
		}
		return nil
	}
	return last
}

// leadsReplicated reports whether broker id leads a partition that has another live replica.
func (v *clusterView) leadsReplicated(id int32) bool {
	for _, tv := range v.topics {
		for p, st := range tv.states {
			if !st.exists || st.Leader != id {
				continue
			}
			for _, r := range tv.replicas[p] {
				if _, live := v.brokers[r]; r != id && live {
					return true
				}
			}
		}
	}
	return false
}
