package spec

// A scenario file (file.go), steps: the file's steps decoded (actions, let and for), their fields and templates
// checked.

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// fstep is one step of the file: an action, a let (variables for the steps after it) or a for (a
// loop over a range of integers, in order or permuted by the scenario's random source).
type fstep struct {
	at     loc
	action Action
	arg    string // the action key's value: a template
	argAt  loc
	fields map[string]fval // the action's other fields (delay_ms, link, as, ...)
	// let
	lets []letBind
	// for
	loopVar       string
	lo, hi        fval
	perm          bool
	every         fval
	body          []fstep
	isLet, isLoop bool
}

type fval struct {
	src string
	at  loc
}

type letBind struct {
	name   string
	random bool // random(lo..hi): lo + r.IntN(hi-lo+1)
	lo, hi fval // hi only for random
}

// actionFields: the fields each action takes besides its own key and delay_ms.
var actionFields = map[Action][]string{
	ActTrigger: nil, ActStart: {"as"}, ActStop: nil, ActCrash: nil,
	ActStall: {"link"}, ActCut: {"link"}, ActHeal: {"link"}, ActLatency: {"link", "latency_ms"},
	ActZKStop: nil, ActZKStart: nil, ActBrokerStop: nil, ActBrokerStart: nil, ActBrokerKill: nil,
	ActSettle: {"quiet_ms", "timeout_ms"}, ActHostDown: nil, ActHostUp: nil,
	ActPartition: {"peer"}, ActPartitionHeal: {"peer"}, ActHostDelay: {"latency_ms"}, ActHostLoss: {"loss_pct"},
}

// required fields per action.
var actionRequired = map[Action][]string{
	ActStall: {"link"}, ActCut: {"link"}, ActHeal: {"link"}, ActLatency: {"link", "latency_ms"},
	ActPartition: {"peer"}, ActPartitionHeal: {"peer"}, ActHostDelay: {"latency_ms"}, ActHostLoss: {"loss_pct"},
}

// Links a step may name: lab.Link's values and "coordination" (the era's coordination link).
var fileLinks = []string{"zookeeper", "coordinator", "fetch", "coordination"}

// Known reports whether a is a step action (the keys of actionFields: what the runner performs).
func (a Action) Known() bool {
	_, ok := actionFields[a]
	return ok
}

// Actions lists the step actions, sorted.
func Actions() []string {
	var out []string
	for a := range actionFields {
		out = append(out, string(a))
	}
	sort.Strings(out)
	return out
}

func actionNames() []string { return append(Actions(), "let", "for") }

var identRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func (f *File) stepList(n *yaml.Node, field string, vars map[string]bool) ([]fstep, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, f.errAt(loc{n.Line, field}, "want a list of steps, got %s", kindOf(n))
	}
	vars = clone(vars)
	var out []fstep
	for i, sn := range n.Content {
		at := loc{sn.Line, fmt.Sprintf("%s[%d]", field, i)}
		st, err := f.step(sn, at, vars)
		if err != nil {
			return nil, err
		}
		for _, l := range st.lets {
			vars[l.name] = true
		}
		out = append(out, st)
	}
	return out, nil
}

func clone(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (f *File) step(n *yaml.Node, at loc, vars map[string]bool) (fstep, error) {
	st := fstep{at: at, fields: map[string]fval{}}
	if n.Kind == yaml.ScalarNode && n.Value == string(ActSettle) { // "- settle": a settle with the timing's defaults
		st.action = ActSettle
		return st, nil
	}
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return st, f.errAt(at, "want a step (a mapping with one action: %s), got %s", strings.Join(actionNames(), ", "), kindOf(n))
	}
	// The action is the key that names one; the others are its fields.
	var keyNode, valNode *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if _, ok := actionFields[Action(k.Value)]; ok || k.Value == "let" || k.Value == "for" {
			if keyNode != nil {
				return st, f.errAt(loc{k.Line, at.field + "." + k.Value}, "a second action in one step (%s already): one action a step", keyNode.Value)
			}
			keyNode, valNode = k, n.Content[i+1]
		}
	}
	if keyNode == nil {
		k := n.Content[0]
		if k.Value == "remove-thread" || k.Value == "add-thread" {
			return st, f.errAt(loc{k.Line, at.field + "." + k.Value}, "a Streams action: Streams scenarios are not files yet")
		}
		return st, f.errAt(loc{k.Line, at.field + "." + k.Value}, "unknown action %q (actions: %s)", k.Value, strings.Join(actionNames(), ", "))
	}
	kat := loc{valNode.Line, at.field + "." + keyNode.Value}
	switch keyNode.Value {
	case "let":
		st.isLet = true
		return st, f.decodeLet(n, valNode, kat, vars, &st)
	case "for":
		st.isLoop = true
		return st, f.decodeFor(n, valNode, kat, vars, &st)
	}
	st.action = Action(keyNode.Value)
	allowed := append([]string{"delay_ms", keyNode.Value}, actionFields[st.action]...)
	if st.action != ActSettle {
		s, err := f.str(valNode, kat)
		if err != nil {
			return st, err
		}
		st.arg, st.argAt = s, kat
		if err := f.checkTemplate(s, kat, vars); err != nil {
			return st, err
		}
	} else if !(valNode.Kind == yaml.ScalarNode && (valNode.Tag == "!!null" || valNode.Value == "")) &&
		!(valNode.Kind == yaml.MappingNode && len(valNode.Content) == 0) {
		return st, f.errAt(kat, "settle takes nothing (its fields quiet_ms and timeout_ms stand beside it), got %s", kindOf(valNode))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k == keyNode {
			continue
		}
		fat := loc{v.Line, at.field + "." + k.Value}
		if !slices.Contains(allowed, k.Value) {
			return st, f.errAt(loc{k.Line, fat.field}, "not a field of a %s step (its fields: %s)", st.action, strings.Join(allowed, ", "))
		}
		if _, dup := st.fields[k.Value]; dup {
			return st, f.errAt(fat, "given twice")
		}
		s, err := f.scalar(v, fat, "a name, an integer or an expression")
		if err != nil {
			return st, err
		}
		switch k.Value {
		case "link":
			if !slices.Contains(fileLinks, s) {
				return st, f.errAt(fat, "unknown link %q (links: %s)", s, strings.Join(fileLinks, ", "))
			}
		case "as":
			err = f.checkTemplate(s, fat, vars)
		case "loss_pct":
			if x, perr := strconv.ParseFloat(s, 64); perr != nil || x < 0 || x > 100 {
				err = f.errAt(fat, "%q: want a percentage 0..100", s)
			}
		default: // delay_ms, latency_ms, quiet_ms, timeout_ms, peer: expressions
			err = f.checkExpr(s, fat, vars)
		}
		if err != nil {
			return st, err
		}
		st.fields[k.Value] = fval{s, fat}
	}
	for _, req := range actionRequired[st.action] {
		if _, ok := st.fields[req]; !ok {
			return st, f.errAt(at, "a %s step needs %s", st.action, req)
		}
	}
	if isBrokerAction(st.action) && (st.arg == BrokerRoleCoordinator || st.arg == BrokerRoleLeader || st.arg == BrokerRoleDown) {
		return st, nil
	}
	if takesNumber(st.action) {
		if err := f.checkExpr(st.arg, kat, vars); err != nil {
			return st, err
		}
	}
	if st.action == ActZKStop {
		f.StopsZKNode = true
	}
	return st, nil
}

func isBrokerAction(a Action) bool {
	return a == ActBrokerStop || a == ActBrokerStart || a == ActBrokerKill
}

// takesNumber: the action's own value is a node or host number (an expression).
func takesNumber(a Action) bool {
	switch a {
	case ActZKStop, ActZKStart, ActBrokerStop, ActBrokerStart, ActBrokerKill, ActHostDown, ActHostUp,
		ActPartition, ActPartitionHeal, ActHostDelay, ActHostLoss:
		return true
	}
	return false
}

func (f *File) decodeLet(n, v *yaml.Node, at loc, vars map[string]bool, st *fstep) error {
	if len(n.Content) != 2 {
		return f.errAt(at, "a let step takes nothing beside let")
	}
	return f.mapping(v, at, nil, func(name string, vat loc, val *yaml.Node) error {
		if !identRE.MatchString(name) || timingVar(name) {
			return f.errAt(vat, "%q: want a lower-case name that is no timing name (%s)", name, strings.Join(timingNames, ", "))
		}
		s, err := f.scalar(val, vat, "an integer, an expression or random(LO..HI)")
		if err != nil {
			return err
		}
		b := letBind{name: name}
		if strings.HasPrefix(s, "random(") && strings.HasSuffix(s, ")") {
			lo, hi, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(s, "random("), ")"), "..")
			if !ok {
				return f.errAt(vat, "%q: want random(LO..HI)", s)
			}
			b.random, b.lo, b.hi = true, fval{lo, vat}, fval{hi, vat}
			if err := f.checkExpr(hi, vat, vars); err != nil {
				return err
			}
		} else {
			b.lo = fval{s, vat}
		}
		if err := f.checkExpr(b.lo.src, vat, vars); err != nil {
			return err
		}
		st.lets = append(st.lets, b)
		vars[name] = true
		return nil
	})
}

func (f *File) decodeFor(n, v *yaml.Node, at loc, vars map[string]bool, st *fstep) error {
	name, err := f.str(v, at)
	if err != nil {
		return err
	}
	if !identRE.MatchString(name) || timingVar(name) {
		return f.errAt(at, "%q: want a lower-case variable name that is no timing name", name)
	}
	if vars[name] {
		return f.errAt(at, "%q is already a variable here (an enclosing for or an earlier let): give the loop its own name", name)
	}
	st.loopVar = name
	var body *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fat := loc{val.Line, st.at.field + "." + k.Value}
		switch k.Value {
		case "for":
		case "in":
			s, err := f.str(val, fat)
			if err != nil {
				return err
			}
			if strings.HasPrefix(s, "perm(") && strings.HasSuffix(s, ")") {
				st.perm, s = true, strings.TrimSuffix(strings.TrimPrefix(s, "perm("), ")")
			}
			lo, hi, ok := strings.Cut(s, "..")
			if !ok {
				return f.errAt(fat, "%q: want LO..HI or perm(LO..HI)", s)
			}
			st.lo, st.hi = fval{lo, fat}, fval{hi, fat}
			if err := f.checkExpr(lo, fat, vars); err != nil {
				return err
			}
			if err := f.checkExpr(hi, fat, vars); err != nil {
				return err
			}
			// Bounds that are numbers are known now: LO above HI is a typo, not a loop of no round (a
			// range of expressions, 2..N, may be empty at some sizes, as Go's for loop is).
			l, lerr := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
			h, herr := strconv.ParseInt(strings.TrimSpace(hi), 10, 64)
			if lerr == nil && herr == nil && h < l {
				return f.errAt(fat, "%q: an empty range (%d is above %d)", s, l, h)
			}
		case "every_ms":
			s, err := f.exprIn(val, fat)
			if err != nil {
				return err
			}
			if err := f.checkExpr(s, fat, vars); err != nil {
				return err
			}
			st.every = fval{s, fat}
		case "do":
			body = val
		default:
			return f.errAt(loc{k.Line, fat.field}, "not a field of a for step (its fields: for, in, every_ms, do)")
		}
	}
	if st.lo.src == "" || body == nil {
		return f.errAt(st.at, "a for step needs in and do")
	}
	inner := clone(vars)
	inner[name] = true
	st.body, err = f.stepList(body, st.at.field+".do", inner)
	if err == nil && len(st.body) == 0 {
		err = f.errAt(loc{body.Line, st.at.field + ".do"}, "no step")
	}
	return err
}
