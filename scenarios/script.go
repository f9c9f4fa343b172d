package scenarios

import "github.com/rebalancelab/rebalancelab/scenarios/spec"

// newRandSource is the scenario's random source for seed (spec.NewRand).
func newRandSource(seed int64, scenario string) *scriptRand { return spec.NewRand(seed, scenario) }

// memberName is the scenario's stable name of member i (spec.MemberName).
func memberName(i int) string { return spec.MemberName(i) }

// script is a small builder for steps.
type script struct {
	steps []Step
	t     Timing
}

func (s *script) add(st Step) *script { s.steps = append(s.steps, st); return s }

func (s *script) trigger(name string) *script { return s.add(Step{Action: ActTrigger, Name: name}) }

func (s *script) member(delay int64, a Action, m string) *script {
	return s.add(Step{DelayMs: delay, Action: a, Member: m})
}

func (s *script) link(delay int64, a Action, m, link string) *script {
	return s.add(Step{DelayMs: delay, Action: a, Member: m, Link: link})
}

func (s *script) settle() *script {
	return s.add(Step{Action: ActSettle, QuietMs: s.t.QuietMs(), TimeoutMs: s.t.SettleTimeoutMs()})
}

// startAll starts m1..mn 50 ms apart and waits for the group to settle: the stable group every
// scenario begins from.
func (s *script) startAll(n int) *script {
	for i := 1; i <= n; i++ {
		d := int64(50)
		if i == 1 {
			d = 0
		}
		s.member(d, ActStart, memberName(i))
	}
	return s.settle()
}
