package broker_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/broker"
	"github.com/rebalancelab/rebalancelab/broker/coordinator"
	"github.com/rebalancelab/rebalancelab/internal/groupview"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestGroupObserverSeesKgoGroup: a broker started WithGroupObserver reports the generations of a
// group of two franz-go consumers (range) as the coordinator sees them: a Stable generation with both
// members, each subscribed to t and together assigned t's 4 partitions once (2 each); when one leaves,
// a later Stable generation with the other alone owning all 4.
func TestGroupObserverSeesKgoGroup(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	zk := startZK(t)
	var mu sync.Mutex
	var gens []groupview.Generation
	props := labProps(1, zk.Connect(), t.TempDir())
	cfg, err := broker.ConfigFromProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := broker.Start(ctx, cfg, logrus.NewEntry(newTestLog(t)), broker.WithGroupObserver(func(ev coordinator.GroupChanged) {
		g := groupview.Decode(ev)
		mu.Lock()
		gens = append(gens, g)
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	interopCreateTopic(t, b.Addr(), "t", 4)

	client := func(id string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID(id), kgo.ConsumerGroup("obs"), kgo.ConsumeTopics("t"),
			kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		go func() { // poll so the client joins and heartbeats
			for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
			}
		}()
		return cl
	}
	// lastStable returns the newest Stable generation of "obs" with n members, each with its partitions.
	lastStable := func(n int) (groupview.Generation, bool) {
		mu.Lock()
		defer mu.Unlock()
		for i := len(gens) - 1; i >= 0; i-- {
			if g := gens[i]; g.Group == "obs" && g.State == "Stable" && len(g.Members) == n {
				return g, true
			}
		}
		return groupview.Generation{}, false
	}
	owned := func(g groupview.Generation) map[string][]int32 {
		out := map[string][]int32{}
		for _, m := range g.Members {
			if !reflect.DeepEqual(m.Topics, []string{"t"}) || m.DecodeError != "" {
				t.Fatalf("member %s: topics %v, decode error %q", m.ClientID, m.Topics, m.DecodeError)
			}
			out[m.ClientID] = m.Partitions["t"]
		}
		return out
	}

	a, c := client("a"), client("c")
	defer a.Close()
	var two groupview.Generation
	testutil.WaitFor(t, 60*time.Second, "a Stable generation of a and c", func() bool {
		var ok bool
		two, ok = lastStable(2)
		return ok
	})
	if got := owned(two); !reflect.DeepEqual(got, map[string][]int32{"a": {0, 1}, "c": {2, 3}}) || two.Protocol != "range" || two.ProtocolType != "consumer" {
		t.Fatalf("generation %d (%s/%s): owned %v, want a [0 1] and c [2 3] (range, client ids in member-id order)", two.Generation, two.ProtocolType, two.Protocol, got)
	}
	c.Close()
	var one groupview.Generation
	testutil.WaitFor(t, 60*time.Second, "a Stable generation of a alone", func() bool {
		var ok bool
		one, ok = lastStable(1)
		return ok && one.Generation > two.Generation
	})
	if got := owned(one); !reflect.DeepEqual(got, map[string][]int32{"a": {0, 1, 2, 3}}) {
		t.Fatalf("generation %d: owned %v, want a alone with [0 1 2 3]", one.Generation, got)
	}
}
