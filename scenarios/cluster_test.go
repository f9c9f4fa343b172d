package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// withBrokerBinary runs the brokers of a scenario that kills them as processes of the built binary.
func withBrokerBinary(t *testing.T, then func(o *Options)) func(o *Options) {
	bin := testutil.Binary(t)
	return func(o *Options) {
		o.MemberBinary = bin
		if then != nil {
			then(o)
		}
	}
}

// killedBroker is the target of the era's broker-kill fault ("broker/<id>").
func killedBroker(recs []timeline.Record) string {
	for _, r := range recs {
		if r.Kind == timeline.Fault && r.Action == string(spec.ActBrokerKill) && r.Phase == timeline.FaultBegin {
			return r.Target
		}
	}
	return ""
}

func TestBrokerFailure(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	res := runScenarioWith(t, "broker-failure", small(t, "broker-failure"), withBrokerBinary(t, nil))
	for _, e := range res.Eras {
		if !e.Applies {
			t.Errorf("%s: not run: %s", e.Era, e.Reason)
			continue
		}
		// The killed broker was one of the lab's three and came back (fault end record).
		target := killedBroker(e.Records)
		if !strings.HasPrefix(target, "broker/") {
			t.Errorf("%s: no broker-kill fault (target %q)", e.Era, target)
		}
		ended := false
		for _, r := range e.Records {
			if r.Kind == timeline.Fault && r.Target == target && r.Phase == timeline.FaultEnd {
				ended = true
			}
		}
		if !ended {
			t.Errorf("%s: %s never restarted", e.Era, target)
		}
	}
}

func TestCoordinatorFailover(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	// After the settle that follows the kill: the group's coordinator is another broker, the group is
	// Stable there, and the offsets it holds are at least those acknowledged before the kill.
	type check struct {
		era, killed, coordinator, state string
		behind                          []string
	}
	var mu sync.Mutex
	var checks []check
	onStep := func(ctx context.Context, info StepInfo) {
		if !info.Done || info.Step.Action != spec.ActSettle {
			return
		}
		recs := info.Records()
		killed := killedBroker(recs)
		if killed == "" {
			return
		}
		mu.Lock()
		for _, c := range checks {
			if c.era == info.Era {
				mu.Unlock()
				return // the first settle after the kill only
			}
		}
		mu.Unlock()
		c := check{era: info.Era, killed: killed}
		acked := map[int32]int64{}
		killTs := int64(-1)
		for _, r := range recs {
			if r.Kind == timeline.Fault && r.Target == killed {
				killTs = r.TsMs
				break
			}
			if r.Kind == timeline.Commit && r.Result == timeline.CommitApplied && r.Partition != nil && r.Offset != nil {
				acked[*r.Partition] = max(acked[*r.Partition], *r.Offset)
			}
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(info.Bootstrap, ",")...))
		if err != nil {
			c.state = err.Error()
		} else {
			defer cl.Close()
			adm := kadm.NewClient(cl)
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			// Until the deadline: a FindCoordinator answered from a broker's view of the new
			// leadership may still lag the members' by a moment.
			for {
				gs, err := adm.DescribeGroups(cctx, info.Group)
				if err == nil {
					err = gs.Error()
				}
				if err != nil {
					c.state = err.Error()
				} else if g, ok := gs[info.Group]; ok {
					c.state, c.coordinator = g.State, fmt.Sprintf("broker/%d", g.Coordinator.NodeID)
				}
				if (err == nil && c.state == "Stable") || cctx.Err() != nil {
					break
				}
				select {
				case <-cctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
			if offs, err := adm.FetchOffsets(cctx, info.Group); err == nil {
				for p, want := range acked {
					got, ok := offs.Lookup(info.Topic, p)
					if !ok || got.At < want {
						c.behind = append(c.behind, fmt.Sprintf("p%d: committed %d < acknowledged %d (kill at %d)", p, got.At, want, killTs))
					}
				}
				if len(acked) == 0 {
					c.behind = append(c.behind, "no commit acknowledged before the kill")
				}
			} else {
				c.behind = append(c.behind, "OffsetFetch: "+err.Error())
			}
		}
		mu.Lock()
		checks = append(checks, c)
		mu.Unlock()
	}
	res := runScenarioWith(t, "coordinator-failover", small(t, "coordinator-failover"),
		withBrokerBinary(t, func(o *Options) { o.OnStep = onStep }))
	ran := 0
	for _, e := range res.Eras {
		if e.Era == "zk" {
			if e.Applies {
				t.Errorf("zk: ran, want not applicable")
			}
			continue
		}
		if !e.Applies {
			t.Errorf("%s: not run: %s", e.Era, e.Reason)
			continue
		}
		ran++
	}
	mu.Lock()
	defer mu.Unlock()
	if len(checks) != ran {
		t.Fatalf("%d post-failover checks for %d eras: %+v", len(checks), ran, checks)
	}
	for _, c := range checks {
		if c.coordinator == "" || c.coordinator == c.killed || c.state != "Stable" {
			t.Errorf("%s: after killing %s: coordinator %q, state %q; want another broker, Stable", c.era, c.killed, c.coordinator, c.state)
		}
		if len(c.behind) > 0 {
			t.Errorf("%s: offsets after the failover: %s", c.era, strings.Join(c.behind, "; "))
		}
	}
}

func TestBrokerRollingBounce(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	res := runScenario(t, "broker-rolling-bounce", small(t, "broker-rolling-bounce"))
	for _, e := range res.Eras {
		// Every broker was stopped and restarted once: three fault begin/end pairs, broker/1..3.
		begun, ended := map[string]int{}, map[string]int{}
		for _, r := range e.Records {
			if r.Kind == timeline.Fault && r.Action == string(spec.ActBrokerStop) {
				if r.Phase == timeline.FaultBegin {
					begun[r.Target]++
				} else {
					ended[r.Target]++
				}
			}
		}
		for _, b := range []string{"broker/1", "broker/2", "broker/3"} {
			if begun[b] != 1 || ended[b] != 1 {
				t.Errorf("%s: %s stopped %d and restarted %d times, want 1 and 1", e.Era, b, begun[b], ended[b])
			}
		}
	}
}

// TestDurability: under kill -9 of a partition leader, the acks=all producer (min.insync.replicas 2)
// loses nothing it was told was written and, being idempotent, writes nothing twice; the acks=1
// producer's losses, if any, are on the partitions the killed broker led. Two eras: the producers'
// side of the scenario does not depend on the group's.
func TestDurability(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	res := runScenarioWith(t, "durability", small(t, "durability"), withBrokerBinary(t, func(o *Options) {
		o.Eras = []string{"zk", "classic"}
	}))
	for _, e := range res.Eras {
		if len(e.Durability) != 2 {
			t.Fatalf("%s: %d producer checks, want 2 (acks_all, acks_1): %+v", e.Era, len(e.Durability), e.Durability)
		}
		all, _ := producerCheck(e, "acks_all")
		one, _ := producerCheck(e, "acks_1")
		t.Logf("%s: acks_all %+v", e.Era, all)
		t.Logf("%s: acks_1 %+v", e.Era, one)
		if all.Acked == 0 || all.Lost != 0 || all.Duplicates != 0 || all.Failed != 0 {
			t.Errorf("%s: acks=all: %d acknowledged, %d lost, %d twice, %d failed (%s); want > 0, 0, 0, 0",
				e.Era, all.Acked, all.Lost, all.Duplicates, all.Failed, all.FirstError)
		}
		// Six partitions over three brokers: the killed broker led two of the side topic's.
		if len(one.DownLedPartitions) != 2 {
			t.Errorf("%s: the killed broker led %v of the side topic, want two partitions", e.Era, one.DownLedPartitions)
		}
		for _, p := range one.LostPartitions {
			if !slices.Contains(one.DownLedPartitions, p) {
				t.Errorf("%s: acks=1 lost records on partition %d, which the killed broker (%v) did not lead", e.Era, p, one.DownLedPartitions)
			}
		}
		if one.Acked == 0 || one.LostElsewhere != 0 {
			t.Errorf("%s: acks=1: %d acknowledged, %d lost elsewhere; want > 0, 0", e.Era, one.Acked, one.LostElsewhere)
		}
	}
}
