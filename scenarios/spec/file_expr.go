package spec

// A scenario file (file.go), expressions with variables: a step's or a property's expression evaluated with the
// loop and let variables and the timing, calls of max and min.

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// timingNames are the names of the run's timing (and down time) an expression may use, in ms.
var timingNames = []string{"auto_commit_ms", "backoff_ms", "broker_zk_session_ms", "down_ms", "heartbeat_ms",
	"max_session_ms", "quiet_ms", "session_ms", "settle_timeout_ms", "zk_session_ms"}

func timingVar(name string) bool { return slices.Contains(timingNames, name) }

func timingVars(p Params, t Timing) map[string]int64 {
	return map[string]int64{"auto_commit_ms": t.AutoCommitIntervalMs, "backoff_ms": t.RebalanceBackoffMs,
		"broker_zk_session_ms": t.BrokerZKSessionTimeoutMs, "down_ms": p.DownMsOr(t),
		"heartbeat_ms": t.HeartbeatIntervalMs, "max_session_ms": t.MaxSessionMs(), "quiet_ms": t.QuietMs(),
		"session_ms": t.SessionTimeoutMs, "settle_timeout_ms": t.SettleTimeoutMs(), "zk_session_ms": t.ZKSessionTimeoutMs}
}

var identAnyRE = regexp.MustCompile(`[a-z][a-z0-9_]*`)

var funcRE = regexp.MustCompile(`\b(max|min)\(`)

// eval evaluates s: an Expr of N, P, H with the lower-case names of env (timing names, let and for
// variables) substituted by their values, and max(a, b, ...) and min(a, b, ...) by theirs.
func (f *File) eval(s string, at loc, env map[string]int64, v Vars) (int64, error) {
	orig := s
	for {
		locs := funcRE.FindAllStringIndex(s, -1)
		if locs == nil {
			break
		}
		// the last call has no call in its arguments
		start, open := locs[len(locs)-1][0], locs[len(locs)-1][1]-1
		depth, end := 0, -1
		var commas []int
		for i := open; i < len(s) && end < 0; i++ {
			switch s[i] {
			case '(':
				depth++
			case ')':
				if depth--; depth == 0 {
					end = i
				}
			case ',':
				if depth == 1 {
					commas = append(commas, i)
				}
			}
		}
		if end < 0 {
			return 0, f.errAt(at, "expression %q: no ) for %s(", orig, s[start:open])
		}
		var args []string
		from := open + 1
		for _, c := range append(commas, end) {
			args = append(args, strings.TrimSpace(s[from:c]))
			from = c + 1
		}
		var x int64
		for i, a := range args {
			y, err := f.eval(a, at, env, v)
			if err != nil {
				return 0, err
			}
			if i == 0 || (s[start:open] == "max" && y > x) || (s[start:open] == "min" && y < x) {
				x = y
			}
		}
		s = s[:start] + "(" + strconv.FormatInt(x, 10) + ")" + s[end+1:]
	}
	var unknown string
	sub := identAnyRE.ReplaceAllStringFunc(s, func(name string) string {
		x, ok := env[name]
		if !ok && unknown == "" {
			unknown = name
		}
		return "(" + strconv.FormatInt(x, 10) + ")"
	})
	if unknown != "" {
		var names []string
		for k := range env {
			names = append(names, k)
		}
		sort.Strings(names)
		return 0, f.errAt(at, "expression %q: unknown name %q (known: N, P, H, %s; max( ), min( ))", orig, unknown, strings.Join(names, ", "))
	}
	if strings.TrimSpace(s) == "" {
		return 0, f.errAt(at, "empty expression")
	}
	x, err := Expr(sub).Eval(v)
	if err != nil {
		if sub != orig { // the names and calls replaced by their values: say what is wrong, not where in that text
			msg := strings.TrimPrefix(err.Error(), fmt.Sprintf("expression %q: ", sub))
			if i := strings.LastIndex(msg, " at "); i >= 0 && strings.Trim(msg[i+4:], "0123456789") == "" {
				msg = msg[:i]
			}
			return 0, f.errAt(at, "expression %q: %s", orig, msg)
		}
		return 0, f.errAt(at, "%v", err)
	}
	return x, nil
}

// checkExpr checks s's syntax and names, every name 1.
func (f *File) checkExpr(s string, at loc, vars map[string]bool) error {
	env := map[string]int64{}
	for _, n := range timingNames {
		env[n] = 1
	}
	for n := range vars {
		env[n] = 1
	}
	_, err := f.eval(s, at, env, Vars{N: 1, P: 1, H: 1})
	return err
}

var tmplRE = regexp.MustCompile(`\{([^{}]*)\}`)

func (f *File) checkTemplate(s string, at loc, vars map[string]bool) error {
	if strings.Count(s, "{") != strings.Count(s, "}") {
		return f.errAt(at, "%q: unbalanced { }", s)
	}
	for _, m := range tmplRE.FindAllStringSubmatch(s, -1) {
		if err := f.checkExpr(m[1], at, vars); err != nil {
			return err
		}
	}
	return nil
}

func (f *File) expand(s string, at loc, env map[string]int64, v Vars) (string, error) {
	var err error
	out := tmplRE.ReplaceAllStringFunc(s, func(m string) string {
		x, e := f.eval(m[1:len(m)-1], at, env, v)
		if e != nil && err == nil {
			err = e
		}
		return strconv.FormatInt(x, 10)
	})
	return out, err
}
