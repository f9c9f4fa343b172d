package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/rebalancelab/rebalancelab/broker/coordinator"
)

// groups runs the broker's classic group coordinator (Kafka 3.9 GroupCoordinator) and keeps it in
// step with this broker's leadership of __consumer_offsets partitions, as KafkaApis and
// ReplicaManager do through onElection/onResignation.
type groups struct {
	b  *Broker
	co *coordinator.Coordinator

	serving  atomic.Bool // set once Start has returned: lookups from then on are FindCoordinators
	creating atomic.Bool // __consumer_offsets creation under way (first FindCoordinator)

	mu      sync.Mutex
	pending []leadershipChange // applied in order by run
	wake    chan struct{}
	stop    chan struct{} // closed by close
	done    chan struct{} // closed when run returns
}

type leadershipChange struct {
	partition int32
	leading   bool
}

// startGroupCoordinator builds the coordinator from the broker's group.* / offsets.* settings, routes
// the group APIs to it and subscribes it to leadership changes. It loads nothing yet: partitions of
// __consumer_offsets are loaded as this broker is told it leads them.
func (b *Broker) startGroupCoordinator() error {
	cfg := coordinator.DefaultConfig()
	cfg.Node = coordinator.Node{ID: b.id, Host: b.host, Port: int32(b.port)}
	cfg.GroupMinSessionTimeoutMs = b.cfg.GroupMinSessionTimeoutMs
	cfg.GroupMaxSessionTimeoutMs = b.cfg.GroupMaxSessionTimeoutMs
	cfg.GroupInitialRebalanceDelayMs = b.cfg.GroupInitialRebalanceDelayMs
	cfg.GroupMaxSize = b.cfg.GroupMaxSize
	cfg.OffsetsTopicNumPartitions = b.cfg.OffsetsTopicNumPartitions
	cfg.OffsetsRetentionMinutes = b.cfg.OffsetsRetentionMinutes
	cfg.OffsetsRetentionCheckIntervalMs = b.cfg.OffsetsRetentionCheckIntervalMs
	cfg.ClientInfo = func(ctx context.Context) (string, string) {
		ri, _ := RequestInfoFrom(ctx)
		return ri.ClientID, "/" + ri.ClientHost // Kafka records the host as "/ip"
	}
	cfg.PartitionExists = func(topic string, p int32) bool {
		n, ok := b.Partitions(topic)
		return ok && p >= 0 && p < n
	}
	g := &groups{b: b, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	cfg.CoordinatorFor = g.coordinatorFor

	co, err := coordinator.Start(b.ctx, cfg, offsetsLog{b}, b.log.WithField("component", "group-coordinator"))
	if err != nil {
		return err
	}
	g.co = co
	g.serving.Store(true)
	b.coord = g
	go g.run()
	b.SetLeadershipListener(g.onLeadership)
	b.SetGroupHandler(co)
	return nil
}

// coordinatorFor answers FindCoordinator: the live leader of the group's __consumer_offsets
// partition. Like Kafka, the first lookup creates the topic, and until it has a leader the answer is
// COORDINATOR_NOT_AVAILABLE (ok=false), which clients retry. During coordinator.Start (which asks
// for every partition, before ZooKeeper is connected) it creates nothing.
func (g *groups) coordinatorFor(p int32) (coordinator.Node, bool) {
	n, err := g.b.Leader(OffsetsTopic, p)
	if errors.Is(err, kerr.UnknownTopicOrPartition) && g.serving.Load() && g.creating.CompareAndSwap(false, true) {
		go func() {
			defer g.creating.Store(false)
			if err := g.b.EnsureOffsetsTopic(g.b.ctx); err != nil && g.b.ctx.Err() == nil {
				g.b.log.WithError(err).Warn("creating " + OffsetsTopic)
			}
		}()
	}
	if err != nil {
		return coordinator.Node{}, false
	}
	return coordinator.Node{ID: n.ID, Host: n.Host, Port: n.Port}, true
}

// onLeadership is the broker's LeadershipFunc: it must not block, so changes are queued for run.
func (g *groups) onLeadership(topic string, p int32, leading bool, _ int32) {
	if topic != OffsetsTopic {
		return
	}
	g.mu.Lock()
	g.pending = append(g.pending, leadershipChange{p, leading})
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// run applies leadership changes one at a time, in the order they happened: loading a partition
// reads its whole log, which must not hold up the ZooKeeper loop.
func (g *groups) run() {
	defer close(g.done)
	for {
		select {
		case <-g.stop:
			return
		case <-g.wake:
		}
		for {
			g.mu.Lock()
			if len(g.pending) == 0 {
				g.mu.Unlock()
				break
			}
			c := g.pending[0]
			g.pending = g.pending[1:]
			g.mu.Unlock()
			if c.leading {
				if err := g.co.OnElection(g.b.ctx, c.partition); err != nil && g.b.ctx.Err() == nil {
					g.b.log.WithError(err).WithField("partition", c.partition).Error("loading group metadata")
				}
			} else {
				g.co.OnResignation(c.partition)
			}
		}
	}
}

// close stops the coordinator before the logs it writes to are closed.
func (g *groups) close() {
	close(g.stop)
	g.co.Close() // a load in progress ends with ErrClosed
	<-g.done
}

// offsetsLog gives the coordinator this broker's __consumer_offsets partition logs.
type offsetsLog struct{ b *Broker }

func (l offsetsLog) Append(p int32, batch []byte) error {
	_, err := l.b.Append(OffsetsTopic, p, batch)
	return err
}

func (l offsetsLog) ReadAll(p int32, fn func(key, value []byte) error) error {
	lg, err := l.b.PartitionLog(OffsetsTopic, p)
	if err != nil {
		return err
	}
	return coordinator.ReadPartition(lg, fn)
}
