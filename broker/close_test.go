package broker_test

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// holdHook is a logrus hook that holds every goroutine logging one of its messages inside the log
// call until release: a goroutine the broker started, stopped at a known point.
type holdHook struct {
	mu      sync.Mutex
	held    map[string]chan struct{} // message → closed when a goroutine is held logging it
	taken   map[string]bool          // messages a goroutine is held on already
	release chan struct{}
	once    sync.Once
}

// releaseAll lets every held goroutine go (idempotent).
func (h *holdHook) releaseAll() { h.once.Do(func() { close(h.release) }) }

func newHoldHook(messages ...string) *holdHook {
	h := &holdHook{held: map[string]chan struct{}{}, taken: map[string]bool{}, release: make(chan struct{})}
	for _, m := range messages {
		h.held[m] = make(chan struct{})
	}
	return h
}

func (h *holdHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h *holdHook) Fire(e *logrus.Entry) error {
	h.mu.Lock()
	ch, ok := h.held[e.Message]
	ok = ok && !h.taken[e.Message] // hold the first goroutine logging it
	if ok {
		h.taken[e.Message] = true
	}
	h.mu.Unlock()
	if ok {
		close(ch)
		<-h.release
	}
	return nil
}

// waitHeld waits until a goroutine is held on every message.
func (h *holdHook) waitHeld(t *testing.T, messages ...string) {
	t.Helper()
	h.mu.Lock()
	var chs []chan struct{}
	for _, m := range messages {
		chs = append(chs, h.held[m])
	}
	h.mu.Unlock()
	for i, ch := range chs {
		select {
		case <-ch:
		case <-time.After(15 * time.Second):
			t.Fatalf("no goroutine logged %q within 15s", messages[i])
		}
	}
}

// closeWaitsOnWaitGroup reports whether a goroutine is parked in sync.WaitGroup.Wait called directly
// by Broker.Close: Close has done everything else and waits for the goroutines it started.
func closeWaitsOnWaitGroup() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		for i := 0; i+2 < len(lines); i++ {
			// the caller's frame is Close's body (named ...(*Broker).Close.func1, or .Close.1 when inlined)
			if strings.HasPrefix(lines[i], "sync.(*WaitGroup).Wait(") && strings.Contains(lines[i+2], ".(*Broker).Close.") {
				return true
			}
		}
	}
	return false
}

// TestCloseWaitsForItsGoroutines: Close returns only after every goroutine the broker started has
// returned, here two that used to outlive it: a connection's reader (serveConn did not wait for it)
// and the goroutine creating __consumer_offsets for a FindCoordinator (nobody waited for it). Each is
// held inside its log call (the reader logging the oversized request that closes its connection,
// the creation logging INVALID_REPLICATION_FACTOR: one live broker, replication factor 2) while
// Close runs. Close must then wait for them; before the fix it returned with both still held (the
// test failed with "Close returned while ...").
func TestCloseWaitsForItsGoroutines(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, map[string]string{"offsets.topic.replication.factor": "2"})
	readerMsg, createMsg := "closing connection: request_too_large", "creating "+broker.OffsetsTopic
	hook := newHoldHook(readerMsg, createMsg)
	tb.log.AddHook(hook)
	t.Cleanup(hook.releaseAll) // before the broker's cleanup closes it

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	if r := request[*kmsg.FindCoordinatorResponse](t, dial(t, tb.b.Addr()), fc, 3); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("FindCoordinator without %s: error %d, want COORDINATOR_NOT_AVAILABLE", broker.OffsetsTopic, r.ErrorCode)
	}
	raw := rawConn(t, tb.b.Addr())
	if _, err := raw.Write([]byte{0x7f, 0xff, 0xff, 0xff}); err != nil { // above socket.request.max.bytes
		t.Fatal(err)
	}
	hook.waitHeld(t, readerMsg, createMsg)

	b := tb.b
	tb.b = nil // closed here
	closeDone := make(chan struct{})
	go func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		close(closeDone)
	}()
	returned := func() bool {
		select {
		case <-closeDone:
			return true
		default:
			return false
		}
	}
	testutil.WaitFor(t, 15*time.Second, "Close to return, or to wait for the goroutines it started", func() bool {
		return returned() || closeWaitsOnWaitGroup()
	})
	early := returned()
	hook.releaseAll()
	<-closeDone
	if early {
		t.Fatal("Close returned while goroutines it started (a connection's reader, the creation of " +
			broker.OffsetsTopic + ") were still running")
	}
}
