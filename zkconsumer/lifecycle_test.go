package zkconsumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestConnectorStartShutdownRace: Shutdown racing CreateMessageStreams, each from its own goroutine
// as applications do. The streams and the rebalance goroutine are created only before shutdown
// began, so the race detector sees no unsynchronised access to the queues, and nothing calls
// ZooKeeper on the closed session: CreateMessageStreams answers success or ErrShutdown, never a
// ZooKeeper error from a registration sent after the close.
func TestConnectorStartShutdownRace(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 2)
	for i := 0; i < 30; i++ {
		m := newMember(t, z.Connect(), "g", fmt.Sprintf("c%d", i), nil)
		var wg sync.WaitGroup
		var err error
		wg.Add(2)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = m.CreateMessageStreams(ctx, map[string]int{"t": 1})
		}()
		go func() {
			defer wg.Done()
			m.Shutdown()
		}()
		wg.Wait()
		if err != nil && !errors.Is(err, ErrShutdown) {
			t.Fatalf("round %d: CreateMessageStreams racing Shutdown: %v; want success or ErrShutdown", i, err)
		}
	}
}
