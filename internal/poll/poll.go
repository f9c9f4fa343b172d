// Package poll is the one way the project's code waits for a condition it cannot be told about: a
// condition tried at once, then after pauses that double from Backoff.First up to Backoff.Max, until it
// holds, a deadline passes or a context ends (as CockroachDB's SucceedsSoon backs off: a condition that
// holds soon is seen soon, a slow one — a ZooKeeper read, a Kafka request — is not tried hundreds of
// times a second).
//
// The tests' helper (internal/testutil: WaitFor, Await, Within) wraps it and stretches the deadline
// under the race detector; code outside tests calls it directly.
package poll

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrTimeout is what an error of Until or UntilErr wraps when the condition still did not hold at the
// deadline.
var ErrTimeout = errors.New("timed out")

// Backoff is the pause between tries: First after the first try, doubling up to Max. Zero fields take
// Default's.
type Backoff struct {
	First, Max time.Duration
}

// Default is 1 ms doubling to 100 ms.
var Default = Backoff{First: time.Millisecond, Max: 100 * time.Millisecond}

// Until returns nil once cond() returns true. It returns an error wrapping ErrTimeout, naming what
// ("partition 0 has a leader"), how long it waited and how many tries, if cond still does not hold
// after timeout (timeout ≤ 0: no deadline but ctx's); or an error wrapping ctx.Err() if ctx ends first.
func Until(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	return Default.Until(ctx, timeout, what, cond)
}

// UntilErr is Until for a condition that says why it does not hold yet: cond returns nil once it holds;
// the error at the deadline (or ctx's end) wraps ErrTimeout (or ctx.Err()) and ends with the last
// error cond returned. cond returns Stop(err) when it never will hold (the process it waits for
// exited): UntilErr returns err at once, as it is.
func UntilErr(ctx context.Context, timeout time.Duration, what string, cond func() error) error {
	return Default.UntilErr(ctx, timeout, what, cond)
}

// Until is the package's Until with b's pauses.
func (b Backoff) Until(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	return b.UntilErr(ctx, timeout, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

// Stop marks err as final for UntilErr: the wait ends at once and UntilErr returns err itself.
func Stop(err error) error { return stop{err} }

// stop is Stop's mark.
type stop struct{ err error }

func (s stop) Error() string { return s.err.Error() }
func (s stop) Unwrap() error { return s.err }

// errNotYet is Until's reason: a bool condition gives none, and the error does not name it.
var errNotYet = errors.New("")

// UntilErr is the package's UntilErr with b's pauses.
func (b Backoff) UntilErr(ctx context.Context, timeout time.Duration, what string, cond func() error) error {
	if b.First <= 0 {
		b.First = Default.First
	}
	if b.Max <= 0 {
		b.Max = max(Default.Max, b.First)
	}
	start := time.Now()
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	pause := b.First
	for tries := 1; ; tries++ {
		last := cond()
		if last == nil {
			return nil
		}
		if s, ok := last.(stop); ok {
			return s.err
		}
		// A timeout already passed ends the wait now, not after one more pause.
		if timeout > 0 && time.Since(start) >= timeout {
			return fmt.Errorf("%w after %v waiting for %s (%d tries)%s", ErrTimeout,
				time.Since(start).Round(time.Millisecond), what, tries, reason(last))
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("waiting for %s: %w after %v (%d tries)%s", what, err,
				time.Since(start).Round(time.Millisecond), tries, reason(last))
		}
		timer := time.NewTimer(pause)
		select {
		case <-ctx.Done():
		case <-deadline:
		case <-timer.C:
		}
		timer.Stop()
		pause = min(2*pause, b.Max)
	}
}

// reason is the last error cond gave, as the message's tail ("" for Until's).
func reason(err error) string {
	if err == errNotYet {
		return ""
	}
	return ": " + err.Error()
}

// Sleep pauses d, or less if ctx ends first: true when the full d passed, false when ctx ended (at
// once when it already had). d ≤ 0 does not pause: it reports whether ctx is still live. It is for
// pauses a script asks for (a step's delay, a peer's 50 ms beat), not for waiting on a condition
// (Until).
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 || ctx.Err() != nil {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
