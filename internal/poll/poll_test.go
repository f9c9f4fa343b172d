package poll

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestUntilHoldsAtOnce(t *testing.T) {
	tries := 0
	if err := Until(context.Background(), time.Second, "x", func() bool { tries++; return true }); err != nil || tries != 1 {
		t.Fatalf("err %v after %d tries; want nil after 1", err, tries)
	}
}

func TestUntilHoldsOnTheThirdTry(t *testing.T) {
	tries := 0
	err := Until(context.Background(), 10*time.Second, "x", func() bool { tries++; return tries == 3 })
	if err != nil || tries != 3 {
		t.Fatalf("err %v after %d tries; want nil after 3", err, tries)
	}
}

func TestUntilTimesOutNamingTheCondition(t *testing.T) {
	err := Backoff{First: time.Millisecond, Max: 2 * time.Millisecond}.Until(context.Background(), 20*time.Millisecond, "partition 0 led", func() bool { return false })
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "waiting for partition 0 led (") || strings.HasSuffix(err.Error(), ": ") {
		t.Fatalf("err %q; want ErrTimeout naming the condition", err)
	}
}

func TestUntilErrEndsWithTheLastReason(t *testing.T) {
	n := 0
	err := UntilErr(context.Background(), 20*time.Millisecond, "leader", func() error { n++; return errors.New("LEADER_NOT_AVAILABLE") })
	if !errors.Is(err, ErrTimeout) || !strings.HasSuffix(err.Error(), "tries): LEADER_NOT_AVAILABLE") || n < 2 {
		t.Fatalf("err %q after %d tries", err, n)
	}
}

func TestUntilStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tries := 0
	err := Until(ctx, 0, "never", func() bool {
		tries++
		if tries == 2 {
			cancel()
		}
		return false
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) || tries != 2 {
		t.Fatalf("err %v after %d tries; want context.Canceled after 2", err, tries)
	}
}

func TestUntilErrStopsAtOnceOnStop(t *testing.T) {
	exited := errors.New("process exited (exit status 1) before listening on 127.0.0.1:1")
	tries := 0
	err := UntilErr(context.Background(), 10*time.Second, "port", func() error {
		tries++
		if tries == 2 {
			return Stop(exited)
		}
		return errors.New("connection refused")
	})
	if err != exited || tries != 2 {
		t.Fatalf("err %v after %d tries; want the Stop error itself after 2", err, tries)
	}
}

// TestSleep: the full pause on a live context (true, at least d), none on an ended one (false at
// once, even for an hour), d ≤ 0 reports the context, and an end during the pause cuts it short.
func TestSleep(t *testing.T) {
	start := time.Now()
	if !Sleep(context.Background(), 20*time.Millisecond) {
		t.Error("Sleep on a live context = false")
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("slept %v, want ≥ 20ms", d)
	}
	if !Sleep(context.Background(), 0) || !Sleep(context.Background(), -time.Second) {
		t.Error("Sleep(live, ≤0) = false, want true")
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	start = time.Now()
	if Sleep(done, time.Hour) || Sleep(done, 0) {
		t.Error("Sleep on an ended context = true, want false")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Sleep on an ended context took %v", d)
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	start = time.Now()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep cut by its context's end = true, want false")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Sleep cut at 10ms took %v", d)
	}
}
