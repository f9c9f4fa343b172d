package testutil

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A condition that holds after a few tries ends the wait at that try.
func TestAwaitHolds(t *testing.T) {
	var tries atomic.Int32
	if err := Await(context.Background(), time.Minute, "the third try", func() bool { return tries.Add(1) == 3 }); err != nil {
		t.Fatal(err)
	}
	if n := tries.Load(); n != 3 {
		t.Fatalf("cond tried %d times, want 3", n)
	}
}

// A condition that never holds: the error wraps ErrTimeout and names what was awaited, how long,
// and the tries; the condition is tried once more at the deadline.
func TestAwaitTimesOut(t *testing.T) {
	var tries atomic.Int32
	start := time.Now()
	err := Await(context.Background(), 30*time.Millisecond, "the impossible", func() bool { tries.Add(1); return false })
	if waited := time.Since(start); waited < Scale(30*time.Millisecond) {
		t.Fatalf("gave up after %v, before the deadline %v", waited, Scale(30*time.Millisecond))
	}
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	want := "timed out after "
	if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), " waiting for the impossible (") ||
		!strings.Contains(err.Error(), " tries)") {
		t.Fatalf("err = %q, want %q… waiting for the impossible (N tries)", err, want)
	}
	if got := strings.Contains(err.Error(), "stretched ×3 under the race detector"); got != (RaceFactor == 3) {
		t.Fatalf("err = %q: mentions the race detector's stretch %v, want %v", err, got, RaceFactor == 3)
	}
	if n := tries.Load(); n < 2 {
		t.Fatalf("cond tried %d times, want at least at once and at the deadline", n)
	}
}

// Within does not stretch its deadline under the race detector.
func TestWithinKeepsDeadline(t *testing.T) {
	start := time.Now()
	msg := fatalOf(t, func(t testing.TB) { Within(t, 20*time.Millisecond, "x", func() bool { return false }) })
	if !strings.HasPrefix(msg, "timed out after ") || strings.Contains(msg, "stretched") {
		t.Fatalf("t.Fatal(%q), want an unstretched timeout", msg)
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Fatalf("gave up after %v, before the deadline", waited)
	}
}

// A context ended before the deadline ends the wait with its error.
func TestAwaitCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var tries atomic.Int32
	err := Await(ctx, time.Hour, "the cancel", func() bool {
		if tries.Add(1) == 2 {
			cancel()
		}
		return false
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) || !strings.HasPrefix(err.Error(), "waiting for the cancel: context canceled after ") {
		t.Fatalf("err = %v, want context.Canceled naming the cancel", err)
	}
}

// WaitFor fails the test through t.Fatal with Await's message.
func TestWaitForFails(t *testing.T) {
	msg := fatalOf(t, func(t testing.TB) { WaitFor(t, 10*time.Millisecond, "nothing", func() bool { return false }) })
	if !strings.HasPrefix(msg, "timed out after ") || !strings.Contains(msg, "waiting for nothing") {
		t.Fatalf("t.Fatal(%q), want a timeout naming nothing", msg)
	}
}

// fatalOf runs f on a goroutine of its own with a testing.TB whose Fatal records its message
// (and ends that goroutine, as t.Fatal does), and returns the message ("" if f did not call Fatal).
func fatalOf(t *testing.T, f func(testing.TB)) string {
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(rec)
	}()
	<-done
	return rec.msg
}

// fatalRecorder records t.Fatal's message and ends its goroutine as t.Fatal does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatal(args ...any) {
	r.msg = fmt.Sprint(args...)
	runtime.Goexit()
}
