package scenarios

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/poll"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// downBroker is a lab broker the script stopped or killed: its index in lab.Brokers() and the action
// that took it down (the fault's action, which its end record repeats).
type downBroker struct {
	index  int
	action spec.Action
}

// brokerStep performs a broker-stop, broker-kill or broker-start step: the broker is st.Node, or the
// one st.Broker names (resolveBroker). The fault record names it as broker/<id>.
func (r *eraRunner) brokerStep(ctx context.Context, st spec.Step) {
	if r.lab == nil {
		r.errorf("%s: %s", st, errNeedsLab)
		return
	}
	bs := r.lab.Brokers()
	idx := st.Node
	if st.Broker != "" {
		var err error
		if idx, err = r.resolveBroker(ctx, st); err != nil {
			r.errorf("%s: %v", st, err)
			return
		}
	}
	if idx < 0 || idx >= len(bs) {
		r.errorf("%s: no such broker (the lab has %d)", st, len(bs))
		return
	}
	n := bs[idx]
	// The lab's Stop and Kill of a stopped broker and Start of a running one do nothing: here that is a
	// fault that did not take effect, recorded as the run's error.
	if n.Running() == (st.Action == spec.ActBrokerStart) {
		r.errorf("%s: broker %d is %s", st, n.ID(), map[bool]string{true: "already running", false: "not running (already stopped or killed)"}[n.Running()])
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if st.Action != spec.ActBrokerStart {
		r.noteDown(ctx, n.ID())
	}
	var err error
	switch st.Action {
	case spec.ActBrokerStop:
		err = n.Stop(sctx) // returns once the broker has stopped (after its controlled shutdown)
	case spec.ActBrokerKill:
		err = n.Kill() // returns once the process has exited
	default:
		err = n.Start(sctx) // returns once it is registered and serving
	}
	if err != nil {
		r.errorf("%s: broker %d: %v", st, n.ID(), err)
		return
	}
	// The fault's end repeats the action that began it.
	action := st.Action
	if st.Action == spec.ActBrokerStart {
		action = r.takeDown(idx)
	} else {
		r.down = append(r.down, downBroker{index: idx, action: st.Action})
	}
	if st.Broker != "" {
		r.stepf("%s: broker %d", st, n.ID())
	}
	r.nodeFault(st.Action != spec.ActBrokerStart, string(action), fmt.Sprintf("broker/%d", n.ID()))
}

// noteDown tells the durability scenario's side topic, if any, that broker id goes down now.
func (r *eraRunner) noteDown(ctx context.Context, id int32) {
	if r.side == nil {
		return
	}
	if err := r.side.noteDown(ctx, id); err != nil {
		r.errorf("durability: the partitions broker %d leads: %v", id, err)
	}
}

// takeDown forgets broker idx as down and returns the action that took it down (broker-stop for a
// broker the script did not take down).
func (r *eraRunner) takeDown(idx int) spec.Action {
	for i, d := range r.down {
		if d.index == idx {
			r.down = append(r.down[:i], r.down[i+1:]...)
			return d.action
		}
	}
	return spec.ActBrokerStop
}

// resolveBroker finds the index in lab.Brokers() of the broker st.Broker names (Broker roles,
// script.go).
func (r *eraRunner) resolveBroker(ctx context.Context, st spec.Step) (int, error) {
	bs := r.lab.Brokers()
	byID := func(id int32) (int, error) {
		for i, b := range bs {
			if b.ID() == id {
				return i, nil
			}
		}
		return -1, fmt.Errorf("broker %d is not the lab's", id)
	}
	switch st.Broker {
	case spec.BrokerRoleDown:
		if st.Action != spec.ActBrokerStart {
			return -1, fmt.Errorf("role %q names a broker to start", st.Broker)
		}
		if len(r.down) == 0 {
			return -1, errors.New("no broker is down")
		}
		return r.down[len(r.down)-1].index, nil
	case spec.BrokerRoleCoordinator, spec.BrokerRoleLeader:
	default:
		return -1, fmt.Errorf("unknown broker role %q (want %s, %s or %s)", st.Broker,
			spec.BrokerRoleCoordinator, spec.BrokerRoleLeader, spec.BrokerRoleDown)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(r.bootstrap, ",")...))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	coord, err := groupCoordinator(cctx, adm, r.e.Group)
	if err != nil {
		return -1, err
	}
	if st.Broker == spec.BrokerRoleCoordinator {
		return byID(coord)
	}
	leaders, err := partitionLeaders(cctx, adm, r.e.Topic)
	if err != nil {
		return -1, err
	}
	for _, p := range slices.Sorted(maps.Keys(leaders)) {
		if l := leaders[p]; l >= 0 && l != coord {
			return byID(l)
		}
	}
	return -1, fmt.Errorf("every partition of %s is led by the coordinator, broker %d", r.e.Topic, coord)
}

// GroupCoordinator is the broker id (Kafka's node id) that FindCoordinator gives for group, asked
// of the brokers at bootstrap (host:port,...) and retried every 100 ms until ctx ends while the answer
// is an error (COORDINATOR_NOT_AVAILABLE while __consumer_offsets is created or its partition has no
// leader). Errors: the client's, or ctx's once it ended ("FindCoordinator <group>: ...").
func GroupCoordinator(ctx context.Context, bootstrap, group string) (int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	return groupCoordinator(ctx, kadm.NewClient(cl), group)
}

func groupCoordinator(ctx context.Context, adm *kadm.Client, group string) (int32, error) {
	var id int32
	err := poll.Backoff{First: 100 * time.Millisecond, Max: 100 * time.Millisecond}.UntilErr(ctx, 0, "the group's coordinator", func() error {
		c, ok := adm.FindGroupCoordinators(ctx, group)[group]
		switch {
		case !ok:
			return errors.New("no answer")
		case c.Err != nil:
			return c.Err
		}
		id = c.NodeID
		return nil
	})
	if err != nil {
		return -1, fmt.Errorf("FindCoordinator %s: %w", group, err)
	}
	return id, nil
}

// partitionLeaders is topic's partition → leader broker id (-1: none) from Metadata; partitions that
// answer an error are left out. Errors: the request's, or the topic's.
func partitionLeaders(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int32, error) {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return nil, fmt.Errorf("metadata of %s: %v", topic, td.Err)
	}
	out := make(map[int32]int32, len(td.Partitions))
	for _, p := range td.Partitions {
		if p.Err == nil {
			out[p.Partition] = p.Leader
		}
	}
	return out, nil
}
