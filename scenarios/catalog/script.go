package catalog

import (
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// newRandSource is the scenario's random source for seed (spec.NewRand).
func newRandSource(seed int64, scenario string) *scriptRand { return spec.NewRand(seed, scenario) }

// memberName is the scenario's stable name of member i (spec.MemberName).
func memberName(i int) string { return spec.MemberName(i) }

// Builder is a small builder of a script's steps, for scenarios built in Go: each method appends one
// step and returns the builder; Steps is the script.
type Builder struct {
	steps []Step
	t     Timing
}

// NewBuilder is an empty script whose settles use t's quiet time and timeout.
func NewBuilder(t Timing) *Builder { return &Builder{t: t} }

// Steps returns the steps added so far, in order.
func (s *Builder) Steps() []Step { return s.steps }

// Add appends st.
func (s *Builder) Add(st Step) *Builder { s.steps = append(s.steps, st); return s }

// Trigger appends a trigger (a measured event's start) called name.
func (s *Builder) Trigger(name string) *Builder {
	return s.Add(Step{Action: spec.ActTrigger, Name: name})
}

// Member appends action a on member m, delay ms after the previous step.
func (s *Builder) Member(delay int64, a spec.Action, m string) *Builder {
	return s.Add(Step{DelayMs: delay, Action: a, Member: m})
}

// Link appends action a on member m's link, delay ms after the previous step.
func (s *Builder) Link(delay int64, a spec.Action, m, link string) *Builder {
	return s.Add(Step{DelayMs: delay, Action: a, Member: m, Link: link})
}

// Settle appends a settle: wait for a stable group (the timing's quiet time, within its timeout).
func (s *Builder) Settle() *Builder {
	return s.Add(Step{Action: spec.ActSettle, QuietMs: s.t.QuietMs(), TimeoutMs: s.t.SettleTimeoutMs()})
}

// StartAll starts m1..mn 50 ms apart and waits for the group to settle: the stable group every
// scenario begins from.
func (s *Builder) StartAll(n int) *Builder {
	for i := 1; i <= n; i++ {
		d := int64(50)
		if i == 1 {
			d = 0
		}
		s.Member(d, spec.ActStart, memberName(i))
	}
	return s.Settle()
}
