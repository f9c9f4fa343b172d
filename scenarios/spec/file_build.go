package spec

// A scenario file (file.go), building the script: a decoded file turned into the Steps of one run (Params,
// Timing, the seeded source).

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
)

// memberRE: a member's name, m1, m2, ... or another lower-case name (a newcomer such as "fencer");
// mIndexRE: a name of the form m<digits>, which must then be m1, m2, ...
var (
	memberRE = regexp.MustCompile(`^(m[1-9][0-9]*|[a-z][a-z0-9-]*)$`)
	mIndexRE = regexp.MustCompile(`^m-?[0-9]+$`)
	mNameRE  = regexp.MustCompile(`^m[1-9][0-9]*$`)
)

// Build returns the script of the file for p (defaults filled in) and t, drawing from r (the
// scenario's source, NewRand(p.Seed, Name)) where the file says random( ) or perm( ): the same bytes
// for the same inputs (FormatScript). Errors name the file's line and field: a member that is not
// m1, m2, ..., a negative delay or duration, an empty range, a node or host out of range, a start of
// a member that is running, a stop, crash or link fault of one that is not (the steps in the order
// they run: loops unrolled, perm( ) drawn).
func (f *File) Build(p Params, t Timing, r *rand.Rand) ([]Step, error) {
	env := timingVars(p, t)
	v := Vars{N: int64(p.Consumers), P: int64(p.Partitions), H: int64(p.Hosts)}
	var out []Step
	err := f.build(f.steps, env, v, p, t, r, &out, 0, &membership{})
	return out, err
}

// membership follows a script's steps in the order they run and refuses those the runner would fail
// on after the lab started: a start of a member that is running, a stop, crash or link fault (stall,
// cut, heal, latency) of one that is not. A member that gives up by itself (gives_up:) counts as
// running: a script cannot know when. The zero value is ready. (scenario run --steps is not checked: it replays any
// steps, a runtime failure included, as TestCLIFaultThatFailsFailsTheRun does.)
type membership struct{ m map[string]memberState }

type memberState struct {
	running bool
	how     string // "started", "stopped", "crashed"
	line    int
}

// step checks s, which stands at line of its file, and records what it does. Errors (no file nor
// line of s: the caller's prefix): "m9 is not running here (never started)", "... (crashed at line
// 12)", "m3 is already running (started at line 9)"; a link fault's adds ": a fault on its links
// would reach nobody".
func (ms *membership) step(s Step, line int) error {
	if ms.m == nil {
		ms.m = map[string]memberState{}
	}
	cur, seen := ms.m[s.Member]
	notRunning := func() error {
		if !seen {
			return fmt.Errorf("%s is not running here (never started)", s.Member)
		}
		return fmt.Errorf("%s is not running here (%s at line %d)", s.Member, cur.how, cur.line)
	}
	switch s.Action {
	case ActStart, ActStop, ActCrash:
	case ActStall, ActCut, ActHeal, ActLatency:
		if !cur.running {
			return fmt.Errorf("%w: a fault on its links would reach nobody", notRunning())
		}
		return nil
	default:
		return nil
	}
	switch {
	case s.Action == ActStart && cur.running:
		return fmt.Errorf("%s is already running (started at line %d)", s.Member, cur.line)
	case s.Action != ActStart && !cur.running:
		return notRunning()
	}
	ms.m[s.Member] = memberState{running: s.Action == ActStart, how: map[Action]string{ActStart: "started", ActStop: "stopped", ActCrash: "crashed"}[s.Action], line: line}
	return nil
}

func (f *File) build(steps []fstep, env map[string]int64, v Vars, p Params, t Timing, r *rand.Rand, out *[]Step, extraDelay int64, ms *membership) error {
	env = cloneEnv(env)
	for _, st := range steps {
		switch {
		case st.isLet:
			for _, b := range st.lets {
				lo, err := f.eval(b.lo.src, b.lo.at, env, v)
				if err != nil {
					return err
				}
				if b.random {
					hi, err := f.eval(b.hi.src, b.hi.at, env, v)
					if err != nil {
						return err
					}
					if hi < lo {
						return f.errAt(b.lo.at, "random(%d..%d): an empty range", lo, hi)
					}
					lo += int64(r.IntN(int(hi - lo + 1)))
				}
				env[b.name] = lo
			}
			continue
		case st.isLoop:
			lo, err := f.eval(st.lo.src, st.lo.at, env, v)
			if err != nil {
				return err
			}
			hi, err := f.eval(st.hi.src, st.hi.at, env, v)
			if err != nil {
				return err
			}
			if hi-lo+1 > 1_000_000 {
				return f.errAt(st.lo.at, "%d..%d: more than 1000000 rounds", lo, hi)
			}
			var every int64
			if st.every.src != "" {
				if every, err = f.eval(st.every.src, st.every.at, env, v); err != nil {
					return err
				}
				if every < 0 {
					return f.errAt(st.every.at, "%d: want 0 or more ms", every)
				}
			}
			var order []int64
			if st.perm {
				if hi >= lo {
					for _, k := range r.Perm(int(hi - lo + 1)) {
						order = append(order, lo+int64(k))
					}
				}
			} else {
				for k := lo; k <= hi; k++ {
					order = append(order, k)
				}
			}
			for i, k := range order {
				inner := cloneEnv(env)
				inner[st.loopVar] = k
				d := int64(0)
				if i > 0 {
					d = every
				}
				if i == 0 {
					d = extraDelay
					extraDelay = 0
				}
				if err := f.build(st.body, inner, v, p, t, r, out, d, ms); err != nil {
					return err
				}
			}
			continue
		}
		s, err := f.buildStep(st, env, v, t)
		if err == nil {
			if merr := ms.step(s, st.argAt.line); merr != nil {
				err = f.errAt(st.argAt, "%v", merr)
			}
		}
		if err != nil {
			return err
		}
		s.DelayMs += extraDelay
		extraDelay = 0
		*out = append(*out, s)
	}
	return nil
}

func cloneEnv(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (f *File) buildStep(st fstep, env map[string]int64, v Vars, t Timing) (Step, error) {
	s := Step{Action: st.action}
	num := func(field string, lo int64) (int64, bool, error) {
		fv, ok := st.fields[field]
		if !ok {
			return 0, false, nil
		}
		x, err := f.eval(fv.src, fv.at, env, v)
		if err == nil && x < lo {
			err = f.errAt(fv.at, "%d: want %d or more", x, lo)
		}
		return x, true, err
	}
	var err error
	if s.DelayMs, _, err = num("delay_ms", 0); err != nil {
		return s, err
	}
	arg := func() (string, error) { return f.expand(st.arg, st.argAt, env, v) }
	member := func(name string, at loc) error {
		if !memberRE.MatchString(name) || (mIndexRE.MatchString(name) && !mNameRE.MatchString(name)) {
			return f.errAt(at, "%q: want a member m1, m2, ... (m{EXPR} with EXPR >= 1) or a lower-case name", name)
		}
		return nil
	}
	switch st.action {
	case ActTrigger:
		if s.Name, err = arg(); err == nil && s.Name == "" {
			err = f.errAt(st.argAt, "a trigger needs a name")
		}
	case ActStart, ActStop, ActCrash, ActStall, ActCut, ActHeal, ActLatency:
		if s.Member, err = arg(); err == nil {
			err = member(s.Member, st.argAt)
		}
		if as, ok := st.fields["as"]; ok && err == nil {
			s.As, err = f.expand(as.src, as.at, env, v)
		}
		s.Link = st.fields["link"].src
		if err == nil && st.action == ActLatency {
			s.LatencyMs, _, err = num("latency_ms", 0)
		}
	case ActSettle:
		s.QuietMs, s.TimeoutMs = t.QuietMs(), t.SettleTimeoutMs()
		if q, ok, e := num("quiet_ms", 0); ok || e != nil {
			s.QuietMs, err = q, e
		}
		if to, ok, e := num("timeout_ms", 1); err == nil && (ok || e != nil) {
			s.TimeoutMs, err = to, e
		}
	case ActZKStop, ActZKStart, ActBrokerStop, ActBrokerStart, ActBrokerKill:
		if isBrokerAction(st.action) && (st.arg == BrokerRoleCoordinator || st.arg == BrokerRoleLeader || st.arg == BrokerRoleDown) {
			s.Broker = st.arg
			break
		}
		var n int64
		if n, err = f.eval(st.arg, st.argAt, env, v); err == nil {
			hi := int64(f.Brokers - 1)
			if st.action == ActZKStop || st.action == ActZKStart {
				hi = int64(f.ZKNodes - 1)
			}
			if n < 0 || n > hi {
				err = f.errAt(st.argAt, "node %d: want 0..%d", n, hi)
			}
			s.Node = int(n)
		}
	default: // host steps
		var h int64
		if h, err = f.eval(st.arg, st.argAt, env, v); err == nil && (h < 1 || h > max(v.H, 1)) {
			err = f.errAt(st.argAt, "host %d: want 1..H (%d)", h, v.H)
		}
		s.Host = int(h)
		if err == nil {
			var peer int64
			if peer, _, err = num("peer", 1); err == nil {
				s.Peer = int(peer)
			}
		}
		if err == nil {
			s.LatencyMs, _, err = num("latency_ms", 0)
		}
		if lp, ok := st.fields["loss_pct"]; ok && err == nil {
			s.LossPct, _ = strconv.ParseFloat(lp.src, 64)
		}
	}
	return s, err
}

// MemberPropsFor returns the consumer properties the file gives era with timing t: "all"'s, then
// era's own over them, each {EXPR} replaced by its value (the timing names, N = P = H = 0); nil when
// it gives era none. Errors: an expression that does not evaluate (DecodeFile checked them with
// both timings).
func (f *File) MemberPropsFor(era Era, t Timing) (map[string]string, error) {
	var out map[string]string
	env := timingVars(Params{}, t)
	for _, key := range []string{All, string(era)} {
		for k, v := range f.MemberProps[key] {
			s, err := f.expand(v.src, v.at, env, Vars{})
			if err != nil {
				return nil, err
			}
			if out == nil {
				out = map[string]string{}
			}
			out[k] = s
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
