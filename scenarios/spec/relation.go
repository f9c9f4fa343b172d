package spec

// A scenario's relations as data: what its figures must show, in a vocabulary a scenario file (YAML or
// JSON) can hold. The evaluator reads a run's results; it lives with the runner, not here.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Relation is one expected relation of a scenario's figures: either a comparison — Subject Cmp Value,
// the subject being a figure of one event (Event: the trigger that opened its window), a figure of
// the run's totals (no Event), or one of the scenario's extra counters (Extra) — or a relation
// registered in Go under Named, for the few a comparison cannot say (the evaluator's registry; Args
// are its arguments).
//
// In JSON (and so in a scenario file):
//
//	{"event": "join", "figure": "rebalance_participants", "cmp": "==", "value": "N+1"}
//	{"eras": ["zk"], "figure": "stale_commits_applied", "cmp": ">=", "value": "1"}
//	{"eras": ["static"], "extra": "restart_revocations_of_others", "cmp": "==", "value": "0", "text": "..."}
//	{"named": "owned-once"}
type Relation struct {
	// Eras it applies to; none: every era.
	Eras []Era `json:"eras,omitempty" yaml:"eras,omitempty"`
	// CrossEra relations compare eras of one run (a Named relation's business); checked once, on the
	// first of Eras.
	CrossEra bool `json:"cross_era,omitempty" yaml:"cross_era,omitempty"`
	// Text is how a run reports the relation; "" for a comparison: its Describe.
	Text string `json:"text,omitempty" yaml:"text,omitempty"`

	// Event: the figure is the event's whose trigger is named so (its first); "": the run's totals.
	Event string `json:"event,omitempty" yaml:"event,omitempty"`
	// Figure is a figure name (figures.FigureTable): the subject, of Event or of the totals.
	Figure string `json:"figure,omitempty" yaml:"figure,omitempty"`
	// Extra, instead of Figure: the scenario's extra counter named so (its result's "extra").
	Extra string `json:"extra,omitempty" yaml:"extra,omitempty"`
	// Cmp compares the subject with Value.
	Cmp Cmp `json:"cmp,omitempty" yaml:"cmp,omitempty"`
	// Value is an integer expression of the run (Expr: N, P, H, integers, + - * / and parentheses).
	Value Expr `json:"value,omitempty" yaml:"value,omitempty"`

	// Named is the name of a relation registered in Go, instead of a comparison.
	Named string `json:"named,omitempty" yaml:"named,omitempty"`
	// Args are the Named relation's arguments (e.g. a member's name).
	Args map[string]string `json:"args,omitempty" yaml:"args,omitempty"`
}

// AppliesTo reports whether the relation is checked on era.
func (r Relation) AppliesTo(era Era) bool { return len(r.Eras) == 0 || slices.Contains(r.Eras, era) }

// Describe is the relation as a run reports it: Text, or for a comparison without one
// "<event>: <figure> <cmp> <value>" (an event's figure) or "<figure> <cmp> <value>" (the totals').
func (r Relation) Describe() string {
	if r.Text != "" || r.Named != "" {
		return r.Text
	}
	subject := r.Figure
	if r.Extra != "" {
		subject = r.Extra
	}
	if r.Event != "" {
		return fmt.Sprintf("%s: %s %s %s", r.Event, subject, r.Cmp, r.Value)
	}
	return fmt.Sprintf("%s %s %s", subject, r.Cmp, r.Value)
}

// Validate says what makes r no relation: neither a comparison nor Named, or both; a comparison
// without a subject (Figure or Extra, not both), with an unknown Cmp or a Value that does not parse;
// an unknown era. Figure names are the evaluator's to check (it knows the figures).
func (r Relation) Validate() error {
	for _, e := range r.Eras {
		if !e.Known() {
			return fmt.Errorf("relation %q: unknown era %q", r.Describe(), string(e))
		}
	}
	comparison := r.Figure != "" || r.Extra != "" || r.Cmp != "" || r.Value != "" || r.Event != ""
	switch {
	case r.Named != "" && comparison:
		return fmt.Errorf("relation %q: named %q and a comparison: give one", r.Describe(), r.Named)
	case r.Named != "":
		return nil
	case !comparison:
		return fmt.Errorf("relation %q: no comparison (figure or extra, cmp, value) and no named relation", r.Text)
	case r.Figure != "" && r.Extra != "":
		return fmt.Errorf("relation %q: figure %q and extra %q: give one", r.Describe(), r.Figure, r.Extra)
	case r.Figure == "" && r.Extra == "":
		return fmt.Errorf("relation %q: no figure or extra to compare", r.Describe())
	}
	if _, err := ParseCmp(string(r.Cmp)); err != nil {
		return fmt.Errorf("relation %q: %w", r.Describe(), err)
	}
	if strings.TrimSpace(string(r.Value)) == "" { // never a 0 that could let the relation hold
		return fmt.Errorf("relation %q: no value to compare with (an integer or an expression of N, P, H)", r.Describe())
	}
	if _, err := r.Value.Eval(Vars{}); err != nil {
		return fmt.Errorf("relation %q: value: %w", r.Describe(), err)
	}
	return nil
}

// Cmp is a comparison operator: ==, !=, <, <=, >, >=.
type Cmp string

// The comparisons.
const (
	Eq Cmp = "=="
	Ne Cmp = "!="
	Lt Cmp = "<"
	Le Cmp = "<="
	Gt Cmp = ">"
	Ge Cmp = ">="
)

// ParseCmp returns the comparison s names, or an error listing them.
func ParseCmp(s string) (Cmp, error) {
	switch c := Cmp(strings.TrimSpace(s)); c {
	case Eq, Ne, Lt, Le, Gt, Ge:
		return c, nil
	}
	return "", fmt.Errorf("unknown comparison %q (want ==, !=, <, <=, >, >=)", s)
}

// Holds reports whether a c b; an unknown Cmp never holds.
func (c Cmp) Holds(a, b int64) bool {
	switch c {
	case Eq:
		return a == b
	case Ne:
		return a != b
	case Lt:
		return a < b
	case Le:
		return a <= b
	case Gt:
		return a > b
	case Ge:
		return a >= b
	}
	return false
}

// Vars are the names an Expr may use, from one run: N its consumers (Params.Consumers), P its
// partitions, H its test hosts.
type Vars struct {
	N, P, H int64
}

// Expr is an integer expression of a run's Vars: integers, N, P, H, + - * /, parentheses and
// implicit multiplication ("2(N+1)", "2N"); / divides integers, truncating. "" is 0.
type Expr string

// ExprOf is the expression of the integer v.
func ExprOf(v int64) Expr { return Expr(strconv.FormatInt(v, 10)) }

// Eval returns e's value with v. Errors: an unknown name, a malformed expression, a division by 0,
// each naming the position (0-based) in e.
func (e Expr) Eval(v Vars) (int64, error) {
	p := &exprParser{s: string(e), v: v}
	if strings.TrimSpace(p.s) == "" {
		return 0, nil
	}
	x, err := p.sum()
	if err != nil {
		return 0, err
	}
	p.space()
	if p.i < len(p.s) {
		return 0, fmt.Errorf("expression %q: unexpected %q at %d", p.s, p.s[p.i], p.i)
	}
	return x, nil
}

type exprParser struct {
	s string
	i int
	v Vars
}

func (p *exprParser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *exprParser) sum() (int64, error) {
	x, err := p.product()
	for err == nil {
		p.space()
		if p.i >= len(p.s) || (p.s[p.i] != '+' && p.s[p.i] != '-') {
			return x, nil
		}
		op := p.s[p.i]
		p.i++
		var y int64
		if y, err = p.product(); err == nil {
			if op == '+' {
				x += y
			} else {
				x -= y
			}
		}
	}
	return 0, err
}

func (p *exprParser) product() (int64, error) {
	x, err := p.factor()
	for err == nil {
		p.space()
		if p.i >= len(p.s) {
			return x, nil
		}
		switch c := p.s[p.i]; {
		case c == '*' || c == '/':
			p.i++
			at := p.i
			var y int64
			if y, err = p.factor(); err == nil {
				if c == '*' {
					x *= y
				} else if y == 0 {
					err = fmt.Errorf("expression %q: division by 0 at %d", p.s, at)
				} else {
					x /= y
				}
			}
		case c == '(' || c == 'N' || c == 'P' || c == 'H' || unicode.IsDigit(rune(c)): // implicit ×
			var y int64
			if y, err = p.factor(); err == nil {
				x *= y
			}
		default:
			return x, nil
		}
	}
	return 0, err
}

func (p *exprParser) factor() (int64, error) {
	p.space()
	if p.i >= len(p.s) {
		return 0, fmt.Errorf("expression %q: ends where a value is due", p.s)
	}
	switch c := p.s[p.i]; {
	case c == '(':
		p.i++
		x, err := p.sum()
		if err != nil {
			return 0, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ')' {
			return 0, fmt.Errorf("expression %q: no ) for the ( before %d", p.s, p.i)
		}
		p.i++
		return x, nil
	case c == '-':
		p.i++
		x, err := p.factor()
		return -x, err
	case c == 'N':
		p.i++
		return p.v.N, nil
	case c == 'P':
		p.i++
		return p.v.P, nil
	case c == 'H':
		p.i++
		return p.v.H, nil
	case unicode.IsDigit(rune(c)):
		j := p.i
		for j < len(p.s) && unicode.IsDigit(rune(p.s[j])) {
			j++
		}
		x, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("expression %q: the number %s at %d is out of range (at most %d)", p.s, p.s[p.i:j], p.i, int64(math.MaxInt64))
		}
		p.i = j
		return x, nil
	}
	return 0, fmt.Errorf("expression %q: unexpected %q at %d (want an integer, N, P, H or a parenthesis)", p.s, p.s[p.i], p.i)
}
