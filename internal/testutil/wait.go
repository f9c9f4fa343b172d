// Package testutil holds what the project's tests share: one way to wait for a condition.
//
// A test waits on a condition with a deadline, never on a pause standing in for one (a pause passes
// whether or not what it waits for happened, and fails the test on a slow machine). The deadline is
// slack, not the property under test: WaitFor and Await stretch it by RaceFactor under the race
// detector. Where the deadline itself is what a test asserts ("led within a second"), Within keeps
// it as written.
//
// The condition is tried at once, then after pauses growing from 1 ms to 100 ms (as CockroachDB's
// SucceedsSoon backs off): a condition that holds soon is seen soon, a slow one (a ZooKeeper read, a
// Kafka request) is not tried hundreds of times a second.
package testutil

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// The pauses between tries: doubling from firstBackoff up to maxBackoff.
const (
	firstBackoff = time.Millisecond
	maxBackoff   = 100 * time.Millisecond
)

// ErrTimeout is what Await's error wraps when the condition still did not hold at the deadline.
var ErrTimeout = errors.New("timed out")

// Scale returns the deadline d stretched by RaceFactor: d itself without the race detector.
func Scale(d time.Duration) time.Duration { return d * RaceFactor }

// WaitFor returns once cond() returns true, trying it at once and then with backoff; if it still
// does not hold after d (Scale(d) under the race detector), WaitFor fails the test with t.Fatal,
// naming what it waited for, how long, and how many tries. what says what cond means ("partition 0
// owned by c1"). WaitFor calls t.Fatal, so it runs on the test's goroutine; elsewhere use Await.
// cond may itself fail the test (t.Fatal on the test's goroutine).
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := wait(context.Background(), Scale(d), d, what, cond); err != nil {
		t.Fatal(err)
	}
}

// Within is WaitFor for a test whose assertion is the deadline d itself (Kafka's "within the
// session timeout", a test's "led within a second"): d is not stretched under the race detector.
func Within(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := wait(context.Background(), d, d, what, cond); err != nil {
		t.Fatal(err)
	}
}

// Await is WaitFor for any goroutine: it returns nil once cond() returns true; an error wrapping
// ErrTimeout (and naming what, how long and how many tries) if it still does not hold after d
// (Scale(d) under the race detector); or an error wrapping ctx.Err() if ctx ends first.
func Await(ctx context.Context, d time.Duration, what string, cond func() bool) error {
	return wait(ctx, Scale(d), d, what, cond)
}

// wait tries cond until it holds, limit passes or ctx ends; asked is the deadline the caller gave,
// for the message.
func wait(ctx context.Context, limit, asked time.Duration, what string, cond func() bool) error {
	start := time.Now()
	deadline := start.Add(limit)
	backoff := firstBackoff
	for tries := 1; ; tries++ {
		if cond() {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%w after %v waiting for %s (%d tries)%s", ErrTimeout,
				time.Since(start).Round(time.Millisecond), what, tries, stretched(limit, asked))
		}
		timer := time.NewTimer(min(backoff, left))
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("waiting for %s: %w after %v (%d tries)", what, ctx.Err(),
				time.Since(start).Round(time.Millisecond), tries)
		case <-timer.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// stretched says how the deadline was stretched under the race detector ("" if it was not).
func stretched(limit, asked time.Duration) string {
	if limit == asked {
		return ""
	}
	return fmt.Sprintf("; the deadline %v stretched ×%d under the race detector", asked, RaceFactor)
}
