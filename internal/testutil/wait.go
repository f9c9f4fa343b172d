// Package testutil holds what the project's tests share: one way to wait for a condition.
//
// A test waits on a condition with a deadline, never on a pause standing in for one (a pause passes
// whether or not what it waits for happened, and fails the test on a slow machine). The deadline is
// slack, not the property under test: WaitFor and Await stretch it by RaceFactor under the race
// detector. Where the deadline itself is what a test asserts ("led within a second"), Within keeps
// it as written.
//
// The condition is tried as internal/poll tries it: at once, then after pauses growing from 1 ms to
// 100 ms.
package testutil

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/poll"
)

// ErrTimeout is what Await's error wraps when the condition still did not hold at the deadline
// (poll.ErrTimeout: the tests wait as the code does, through internal/poll).
var ErrTimeout = poll.ErrTimeout

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

// wait tries cond until it holds, limit passes or ctx ends (poll.Until); asked is the deadline the
// caller gave, for the message.
func wait(ctx context.Context, limit, asked time.Duration, what string, cond func() bool) error {
	if err := poll.Until(ctx, limit, what, cond); err != nil {
		if errors.Is(err, ErrTimeout) {
			return fmt.Errorf("%w%s", err, stretched(limit, asked))
		}
		return err
	}
	return nil
}

// stretched says how the deadline was stretched under the race detector ("" if it was not).
func stretched(limit, asked time.Duration) string {
	if limit == asked {
		return ""
	}
	return fmt.Sprintf("; the deadline %v stretched ×%d under the race detector", asked, RaceFactor)
}
