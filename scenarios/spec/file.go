package spec

// A scenario as a file (issue #31, part 2): YAML or JSON (YAML is a superset) decoded through
// yaml.Node, so that every refusal names the file, the line and the field. The vocabulary is
// docs/reference/scenarios.md's "Scenario files".

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Vocabulary is what a scenario file may name beyond the spec's own words: it comes from the stages
// that know them (the figures, the evaluator's registry, the runner's extra counters), so that a
// file is refused before anything starts when it names something unknown.
type Vocabulary struct {
	// Figures are the figure names a relation may compare (figures.FigureTable's).
	Figures []string
	// Invariants are the invariant figures a scenario may break by design (figures.InvariantNames).
	Invariants []string
	// Named are the relations registered in Go (a relation's named:).
	Named []string
	// Extras maps each extra counter set registered in Go (a file's extras:) to the counters it
	// computes (a relation's extra:).
	Extras map[string][]string
	// MaxMembers and MaxPartitions bound defaults, small and max_consumers (0: no bound).
	MaxMembers, MaxPartitions int
}

// File is a decoded, checked scenario file. Its script is built per run (Build); everything else is
// plain data the runner's Scenario takes over.
type File struct {
	Path string // as given to DecodeFile, the prefix of every error
	// relEventAt is where each relation's event (or, without one, the relation) stands in the file.
	relEventAt  []loc
	Name        string
	Description string
	// Defaults and Small: consumers, partitions, hosts (Small defaults to Defaults).
	Defaults, Small Params
	// MinConsumers (default 1) and MaxConsumers (0: the runner's bound).
	MinConsumers, MaxConsumers int
	// ZKNodes (1 or 3, default 1), Brokers (default 1), MinHosts (default 0).
	ZKNodes, Brokers, MinHosts int
	// NotApplicable: era → why the scenario does not apply there (not_applicable:, and the eras
	// missing from eras:).
	NotApplicable map[Era]string
	// MemberProps: "all" or an era → consumer properties (an era's own override "all"'s); a value
	// may hold {EXPR} of the timing (MemberPropsFor).
	MemberProps map[string]map[string]fval
	// ByDesign: era → the invariant figures the scenario breaks there by design ("all" expanded).
	ByDesign map[Era][]string
	// GivesUp: members whose giving up is what the scenario measures.
	GivesUp []string
	// Extras: the extra counter sets registered in Go the run computes.
	Extras []string
	// Relations the figures must show.
	Relations []Relation
	// StopsZKNode: the script stops a ZooKeeper node (zk-stop).
	StopsZKNode bool
	// Durability, when given: side producers writing a side topic under the script, read back after
	// it (scenarios.DurabilitySpec).
	Durability *FileDurability

	steps []fstep
}

// FileDurability is a file's durability: side producers (each a name and acks, "all" or "1") at
// RecordsPerSec each, on a side topic with TopicConfigs. Their counters (NAME_acked, NAME_lost,
// NAME_lost_elsewhere, NAME_duplicates, NAME_failed, NAME_max_ack_gap_ms,
// NAME_max_partition_ack_gap_ms) are extra counters a relation may read.
type FileDurability struct {
	Producers     []FileProducer
	TopicConfigs  map[string]string
	RecordsPerSec int
}

// FileProducer is one side producer of a file's durability.
type FileProducer struct{ Name, Acks string }

// DurabilityCounters are the extra counters of one durability producer, by suffix.
var DurabilityCounters = []string{"acked", "lost", "lost_elsewhere", "duplicates", "failed", "max_ack_gap_ms", "max_partition_ack_gap_ms"}

// loc is where a value stands in the file: its line and its field path ("steps[2].delay_ms").
type loc struct {
	line  int
	field string
}

// fieldErr is a refusal naming the file, the line and the field.
func (f *File) errAt(at loc, format string, args ...any) error {
	return fmt.Errorf("%s:%d: field %s: %s", f.Path, at.line, at.field, fmt.Sprintf(format, args...))
}

// DecodeFile decodes and checks a scenario file: path names it in errors, data is its YAML or JSON.
// Every error reads "PATH:LINE: field FIELD: what is wrong" (a file that is no YAML at all: yaml's
// own message with its line): unknown fields, actions, eras, figures, named relations or extras; a
// value of the wrong type; a bad expression; a value out of range; a script that does not build at
// the file's defaults and small size.
func DecodeFile(path string, data []byte, v Vocabulary) (*File, error) {
	f := &File{Path: path, ZKNodes: 1, Brokers: 1, MinConsumers: 1}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlSyntaxError(path, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty file: want a mapping with name, description, defaults, steps", path)
	}
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case err == nil:
		return nil, fmt.Errorf("%s:%d: a second YAML document: a file holds one scenario", path, second.Line)
	case !errors.Is(err, io.EOF):
		return nil, yamlSyntaxError(path, err)
	}
	root := doc.Content[0]
	if err := f.decodeTop(root, v); err != nil {
		return nil, err
	}
	for _, e := range Eras() {
		for _, t := range []Timing{LabTiming(), KafkaTiming()} {
			if _, err := f.MemberPropsFor(e, t); err != nil {
				return nil, err
			}
		}
	}
	// The script must build at the sizes the file names (a member m0, a negative delay, a division
	// by 0 show here, before anything starts), and every event a relation reads must be a trigger of it.
	triggers := map[string]bool{}
	for _, p := range []Params{f.Defaults, f.Small, {Consumers: f.MinConsumers, Partitions: f.Defaults.Partitions, Hosts: f.Defaults.Hosts}} {
		for _, t := range []Timing{LabTiming(), KafkaTiming()} {
			p.Seed = 1
			steps, err := f.Build(p, t, NewRand(1, f.Name))
			if err != nil {
				return nil, err
			}
			for _, st := range steps {
				if st.Action == ActTrigger {
					triggers[st.Name] = true
				}
			}
		}
	}
	for i, r := range f.Relations {
		if r.Event != "" && !triggers[r.Event] {
			names := slices.Sorted(maps.Keys(triggers))
			return nil, f.errAt(f.relEventAt[i], "no trigger %q in the steps: the relation would have no event to read (triggers: %s)", r.Event, strings.Join(names, ", "))
		}
	}
	return f, nil
}

// yamlSyntaxError is err, yaml.v3's refusal of the file's syntax, as FILE:LINE: YAML syntax: what.
// yaml.v3 names the line where it noticed the fault, which may be the line before the one at fault.
func yamlSyntaxError(path string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s:%s: YAML syntax (at or just before this line): %s", path, m[1], m[2])
	}
	return fmt.Errorf("%s: YAML syntax: %s", path, msg)
}

var yamlLineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

func (f *File) decodeTop(n *yaml.Node, v Vocabulary) error {
	top := loc{n.Line, "(top)"}
	if n.Kind != yaml.MappingNode {
		return f.errAt(top, "want a mapping (name, description, defaults, steps, ...), got %s", kindOf(n))
	}
	seen := map[string]*yaml.Node{}
	var eraList []Era
	var erasAt loc
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		at := loc{k.Line, k.Value}
		if _, dup := seen[k.Value]; dup {
			return f.errAt(at, "given twice")
		}
		seen[k.Value] = val
		at.line = val.Line
		var err error
		switch k.Value {
		case "name":
			if f.Name, err = f.str(val, at); err == nil && !nameRE.MatchString(f.Name) {
				err = f.errAt(at, "%q: want lower-case letters, digits and -", f.Name)
			}
		case "description":
			if f.Description, err = f.str(val, at); err == nil && strings.TrimSpace(f.Description) == "" {
				err = f.errAt(at, "empty: say in one line what the scenario shows")
			}
		case "defaults":
			f.Defaults, err = f.params(val, at, v)
		case "small":
			f.Small, err = f.params(val, at, v)
		case "min_consumers":
			f.MinConsumers, err = f.intIn(val, at, 1, bound(v.MaxMembers))
		case "max_consumers":
			f.MaxConsumers, err = f.intIn(val, at, 1, bound(v.MaxMembers))
		case "zk_nodes":
			if f.ZKNodes, err = f.intIn(val, at, 1, 3); err == nil && f.ZKNodes == 2 {
				err = f.errAt(at, "2: want 1 or 3 (an ensemble of 2 has no quorum after one loss)")
			}
		case "brokers":
			f.Brokers, err = f.intIn(val, at, 1, 9)
		case "min_hosts":
			f.MinHosts, err = f.intIn(val, at, 0, 64)
		case "eras":
			erasAt = at
			eraList, err = f.eras(val, at)
		case "not_applicable":
			err = f.notApplicable(val, at)
		case "member_props":
			f.MemberProps, err = f.memberProps(val, at)
		case "by_design":
			f.ByDesign, err = f.byDesign(val, at, v)
		case "gives_up":
			if f.GivesUp, err = f.strList(val, at); err == nil {
				for i, m := range f.GivesUp {
					if !memberRE.MatchString(m) || (mIndexRE.MatchString(m) && !mNameRE.MatchString(m)) {
						err = f.errAt(loc{val.Content[i].Line, fmt.Sprintf("gives_up[%d]", i)}, "%q: want a member m1, m2, ... or a lower-case name", m)
						break
					}
				}
			}
		case "extras":
			if f.Extras, err = f.strList(val, at); err == nil {
				for i, e := range f.Extras {
					if _, ok := v.Extras[e]; !ok {
						err = f.errAt(loc{val.Content[i].Line, fmt.Sprintf("extras[%d]", i)}, "unknown extra counters %q (registered: %s)", e, strings.Join(sortedKeys(v.Extras), ", "))
						break
					}
				}
			}
		case "durability":
			f.Durability, err = f.durability(val, at)
		case "steps", "relations":
			// after the rest: relations read extras:
		default:
			return f.errAt(at, "unknown field (known: name, description, defaults, small, min_consumers, max_consumers, zk_nodes, brokers, min_hosts, eras, not_applicable, member_props, by_design, gives_up, extras, durability, steps, relations)")
		}
		if err != nil {
			return err
		}
	}
	for _, req := range []string{"name", "description", "defaults", "steps"} {
		if seen[req] == nil {
			return f.errAt(top, "no %s: a scenario file needs name, description, defaults and steps", req)
		}
	}
	if f.Small == (Params{}) {
		f.Small = f.Defaults
	}
	if eraList != nil {
		for _, e := range Eras() {
			if !slices.Contains(eraList, e) {
				if _, given := f.NotApplicable[e]; given {
					return f.errAt(erasAt, "era %s is both missing from eras and in not_applicable: give one", e)
				}
				if f.NotApplicable == nil {
					f.NotApplicable = map[Era]string{}
				}
				f.NotApplicable[e] = fmt.Sprintf("%s applies to %s only", f.Name, strings.Join(Names(eraList), ", "))
			}
		}
	}
	for _, p := range []struct {
		p     Params
		field string
	}{{f.Defaults, "defaults"}, {f.Small, "small"}} {
		if seen[p.field] == nil {
			continue
		}
		at := loc{seen[p.field].Line, p.field}
		switch {
		case p.p.Consumers < f.MinConsumers:
			return f.errAt(at, "consumers %d: below min_consumers %d", p.p.Consumers, f.MinConsumers)
		case f.MaxConsumers > 0 && p.p.Consumers > f.MaxConsumers:
			return f.errAt(at, "consumers %d: above max_consumers %d", p.p.Consumers, f.MaxConsumers)
		case p.p.Hosts < f.MinHosts:
			return f.errAt(at, "hosts %d: below min_hosts %d", p.p.Hosts, f.MinHosts)
		}
	}
	if n := seen["steps"]; n != nil {
		steps, err := f.stepList(n, "steps", map[string]bool{})
		if err != nil {
			return err
		}
		if len(steps) == 0 {
			return f.errAt(loc{n.Line, "steps"}, "no step")
		}
		f.steps = steps
	}
	if n := seen["relations"]; n != nil {
		if err := f.relations(n, v); err != nil {
			return err
		}
	}
	return nil
}

func bound(b int) int {
	if b == 0 {
		return 1 << 30
	}
	return b
}

func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}

func (f *File) str(n *yaml.Node, at loc) (string, error) { return f.scalar(n, at, "a string") }

// exprIn is the text of an integer expression (a number, or an expression of N, P, H, the variables
// and the timing) at n.
func (f *File) exprIn(n *yaml.Node, at loc) (string, error) {
	return f.scalar(n, at, "an integer or an expression (of N, P, H, the variables, the timing)")
}

// scalar is n's text; anything but a scalar is refused as not being want.
func (f *File) scalar(n *yaml.Node, at loc, want string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", f.errAt(at, "want %s, got %s", want, kindOf(n))
	}
	return n.Value, nil
}

func (f *File) intIn(n *yaml.Node, at loc, lo, hi int) (int, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return 0, f.errAt(at, "want an integer, got %s", kindOf(n))
	}
	x, err := strconv.Atoi(n.Value)
	if err != nil {
		return 0, f.errAt(at, "%q: %v", n.Value, err)
	}
	if x < lo || x > hi {
		return 0, f.errAt(at, "%d: want %d..%d", x, lo, hi)
	}
	return x, nil
}

func (f *File) boolean(n *yaml.Node, at loc) (bool, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		return false, f.errAt(at, "want true or false, got %s", kindOf(n))
	}
	return n.Value == "true", nil
}

func (f *File) strList(n *yaml.Node, at loc) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, f.errAt(at, "want a list, got %s", kindOf(n))
	}
	var out []string
	for i, c := range n.Content {
		s, err := f.str(c, loc{c.Line, fmt.Sprintf("%s[%d]", at.field, i)})
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// mapping calls fn on each key of n in order, refusing a key given twice and one not in known.
func (f *File) mapping(n *yaml.Node, at loc, known []string, fn func(key string, at loc, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return f.errAt(at, "want a mapping, got %s", kindOf(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kat := loc{k.Line, at.field + "." + k.Value}
		if seen[k.Value] {
			return f.errAt(kat, "given twice")
		}
		seen[k.Value] = true
		if known != nil && !slices.Contains(known, k.Value) {
			return f.errAt(kat, "unknown field (known: %s)", strings.Join(known, ", "))
		}
		kat.line = v.Line
		if err := fn(k.Value, kat, v); err != nil {
			return err
		}
	}
	return nil
}

func (f *File) params(n *yaml.Node, at loc, v Vocabulary) (Params, error) {
	var p Params
	err := f.mapping(n, at, []string{"consumers", "partitions", "hosts"}, func(k string, at loc, val *yaml.Node) error {
		var err error
		switch k {
		case "consumers":
			p.Consumers, err = f.intIn(val, at, 1, bound(v.MaxMembers))
		case "partitions":
			p.Partitions, err = f.intIn(val, at, 1, bound(v.MaxPartitions))
		case "hosts":
			p.Hosts, err = f.intIn(val, at, 0, 64)
		}
		return err
	})
	if err == nil && (p.Consumers == 0 || p.Partitions == 0) {
		err = f.errAt(at, "want consumers and partitions")
	}
	return p, err
}

// era reads one implemented era's name; "all" only where allowAll.
func (f *File) era(n *yaml.Node, at loc, name string, allowAll bool) (Era, error) {
	if allowAll && name == All {
		return All, nil
	}
	if name == All { // a list of eras: "all" is the --era flag's word, not an era
		return "", f.errAt(at, "%q names no era here: list the eras (%s), or leave the list out for every era", name, strings.Join(Names(Eras()), ", "))
	}
	e, err := ParseEra(name)
	if err != nil {
		return "", f.errAt(at, "%v", err)
	}
	return e, nil
}

func (f *File) eras(n *yaml.Node, at loc) ([]Era, error) {
	names, err := f.strList(n, at)
	if err != nil {
		return nil, err
	}
	var out []Era
	for i, s := range names {
		e, err := f.era(n.Content[i], loc{n.Content[i].Line, fmt.Sprintf("%s[%d]", at.field, i)}, s, false)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, f.errAt(at, "no era")
	}
	return out, nil
}

func (f *File) notApplicable(n *yaml.Node, at loc) error {
	return f.mapping(n, at, nil, func(k string, kat loc, v *yaml.Node) error {
		e, err := f.era(v, kat, k, false)
		if err != nil {
			return err
		}
		why, err := f.str(v, kat)
		if err != nil {
			return err
		}
		if why == "" {
			return f.errAt(kat, "no reason: say why the scenario does not apply to %s", e)
		}
		if f.NotApplicable == nil {
			f.NotApplicable = map[Era]string{}
		}
		f.NotApplicable[e] = why
		return nil
	})
}

func (f *File) memberProps(n *yaml.Node, at loc) (map[string]map[string]fval, error) {
	out := map[string]map[string]fval{}
	err := f.mapping(n, at, nil, func(k string, kat loc, v *yaml.Node) error {
		if _, err := f.era(v, kat, k, true); err != nil {
			return err
		}
		props := map[string]fval{}
		out[k] = props
		return f.mapping(v, kat, nil, func(pk string, pat loc, pv *yaml.Node) error {
			s, err := f.str(pv, pat)
			if err == nil {
				err = f.checkTemplate(s, pat, nil)
			}
			props[pk] = fval{s, pat}
			return err
		})
	})
	return out, err
}

func (f *File) byDesign(n *yaml.Node, at loc, v Vocabulary) (map[Era][]string, error) {
	out := map[Era][]string{}
	err := f.mapping(n, at, nil, func(k string, kat loc, val *yaml.Node) error {
		e, err := f.era(val, kat, k, true)
		if err != nil {
			return err
		}
		names, err := f.strList(val, kat)
		if err != nil {
			return err
		}
		for i, name := range names {
			if !slices.Contains(v.Invariants, name) {
				return f.errAt(loc{val.Content[i].Line, fmt.Sprintf("%s[%d]", kat.field, i)}, "%q is no invariant figure (invariants: %s)", name, strings.Join(v.Invariants, ", "))
			}
		}
		eras := []Era{e}
		if e == All {
			eras = Eras()
		}
		for _, e := range eras {
			out[e] = append(out[e], names...)
		}
		return nil
	})
	return out, err
}

func (f *File) durability(n *yaml.Node, at loc) (*FileDurability, error) {
	d := &FileDurability{}
	err := f.mapping(n, at, []string{"producers", "topic_configs", "records_per_sec"}, func(k string, kat loc, v *yaml.Node) error {
		var err error
		switch k {
		case "records_per_sec":
			d.RecordsPerSec, err = f.intIn(v, kat, 1, 1_000_000)
		case "topic_configs":
			d.TopicConfigs = map[string]string{}
			err = f.mapping(v, kat, nil, func(ck string, cat loc, cv *yaml.Node) error {
				s, err := f.str(cv, cat)
				d.TopicConfigs[ck] = s
				return err
			})
		case "producers":
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				return f.errAt(kat, "want a list of producers ({name, acks}), got %s", kindOf(v))
			}
			for i, pn := range v.Content {
				var pr FileProducer
				pat := loc{pn.Line, fmt.Sprintf("%s[%d]", kat.field, i)}
				if err := f.mapping(pn, pat, []string{"name", "acks"}, func(pk string, fat loc, pv *yaml.Node) error {
					s, err := f.str(pv, fat)
					switch {
					case err != nil:
					case pk == "name" && !identRE.MatchString(s):
						err = f.errAt(fat, "%q: want a lower-case name (it prefixes the producer's counters)", s)
					case pk == "acks" && s != "all" && s != "1":
						err = f.errAt(fat, "%q: want all or 1", s)
					}
					if pk == "name" {
						pr.Name = s
					} else {
						pr.Acks = s
					}
					return err
				}); err != nil {
					return err
				}
				if pr.Name == "" || pr.Acks == "" {
					return f.errAt(pat, "a producer needs name and acks")
				}
				d.Producers = append(d.Producers, pr)
			}
		}
		return err
	})
	if err == nil && (len(d.Producers) == 0 || d.RecordsPerSec == 0) {
		err = f.errAt(at, "durability needs producers and records_per_sec")
	}
	return d, err
}

// ---- relations ----

var relationFields = []string{"eras", "cross_era", "text", "event", "figure", "extra", "cmp", "value", "named", "args"}

func (f *File) relations(n *yaml.Node, v Vocabulary) error {
	at := loc{n.Line, "relations"}
	if n.Kind != yaml.SequenceNode {
		return f.errAt(at, "want a list, got %s", kindOf(n))
	}
	var extras []string
	for _, e := range f.Extras {
		extras = append(extras, v.Extras[e]...)
	}
	if f.Durability != nil {
		for _, p := range f.Durability.Producers {
			for _, c := range DurabilityCounters {
				extras = append(extras, p.Name+"_"+c)
			}
		}
	}
	for i, rn := range n.Content {
		rat := loc{rn.Line, fmt.Sprintf("relations[%d]", i)}
		var r Relation
		eventAt := rat
		err := f.mapping(rn, rat, relationFields, func(k string, kat loc, val *yaml.Node) error {
			var err error
			switch k {
			case "eras":
				r.Eras, err = f.eras(val, kat)
			case "cross_era":
				r.CrossEra, err = f.boolean(val, kat)
			case "text":
				r.Text, err = f.str(val, kat)
			case "event":
				r.Event, err = f.str(val, kat)
				eventAt = kat
			case "figure":
				if r.Figure, err = f.str(val, kat); err == nil && !slices.Contains(v.Figures, r.Figure) {
					err = f.errAt(kat, "unknown figure %q (docs/design.md's figure table)", r.Figure)
				}
			case "extra":
				if r.Extra, err = f.str(val, kat); err == nil && !slices.Contains(extras, r.Extra) {
					err = f.errAt(kat, "unknown extra counter %q (%s)", r.Extra, extrasKnown(extras))
				}
			case "cmp":
				var s string
				if s, err = f.str(val, kat); err == nil {
					if r.Cmp, err = ParseCmp(s); err != nil {
						err = f.errAt(kat, "%v", err)
					}
				}
			case "value":
				var s string
				if s, err = f.exprIn(val, kat); err == nil {
					r.Value = Expr(s)
					if _, err = r.Value.Eval(Vars{N: 1, P: 1, H: 1}); err != nil {
						err = f.errAt(kat, "%v", err)
					}
				}
			case "named":
				if r.Named, err = f.str(val, kat); err == nil && !slices.Contains(v.Named, r.Named) {
					err = f.errAt(kat, "no relation registered as %q (registered: %s)", r.Named, strings.Join(v.Named, ", "))
				}
			case "args":
				r.Args = map[string]string{}
				err = f.mapping(val, kat, nil, func(ak string, aat loc, av *yaml.Node) error {
					s, err := f.str(av, aat)
					r.Args[ak] = s
					return err
				})
			}
			return err
		})
		if err != nil {
			return err
		}
		if r.Named != "" && r.Text == "" {
			return f.errAt(rat, "named %q without text: say what the relation checks", r.Named)
		}
		if err := r.Validate(); err != nil {
			return f.errAt(rat, "%v", err)
		}
		f.Relations = append(f.Relations, r)
		f.relEventAt = append(f.relEventAt, eventAt)
	}
	return nil
}

// extrasKnown says which extra counters a relation may read.
func extrasKnown(extras []string) string {
	if len(extras) == 0 {
		return "the file computes none: name them under extras, or a durability's producers"
	}
	return "the file's extras compute: " + strings.Join(extras, ", ")
}

// ---- steps ----

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

// ---- expressions with variables ----

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

// ---- building the script ----

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
// m1, m2, ..., a negative delay or duration, an empty range, a node or host out of range.
func (f *File) Build(p Params, t Timing, r *rand.Rand) ([]Step, error) {
	env := timingVars(p, t)
	v := Vars{N: int64(p.Consumers), P: int64(p.Partitions), H: int64(p.Hosts)}
	var out []Step
	err := f.build(f.steps, env, v, p, t, r, &out, 0)
	return out, err
}

func (f *File) build(steps []fstep, env map[string]int64, v Vars, p Params, t Timing, r *rand.Rand, out *[]Step, extraDelay int64) error {
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
				if err := f.build(st.body, inner, v, p, t, r, out, d); err != nil {
					return err
				}
			}
			continue
		}
		s, err := f.buildStep(st, env, v, t)
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
