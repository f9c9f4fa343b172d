package spec

// A scenario as a file (issue #31, part 2): YAML or JSON (YAML is a superset) decoded through
// yaml.Node, so that every refusal names the file, the line and the field. The vocabulary is
// docs/reference/scenarios.md's "Scenario files".

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
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
	// it (catalog.DurabilitySpec).
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
// Every error reads "PATH:LINE: field FIELD: what is wrong" (a file that is no YAML: "PATH:LINE: YAML
// syntax: what", yamlSyntaxError; a PATH named *.json that is no JSON: "PATH:LINE:COLUMN: JSON syntax:
// what", checkJSON): unknown fields, actions, eras, figures, named relations or extras; a
// value of the wrong type; a bad expression; a value out of range; a script that does not build at
// the file's defaults and small size.
func DecodeFile(path string, data []byte, v Vocabulary) (*File, error) {
	f := &File{Path: path, ZKNodes: 1, Brokers: 1, MinConsumers: 1}
	if err := checkJSON(path, data); err != nil {
		return nil, err
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlSyntaxError(path, data, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty file: want a mapping with name, description, defaults, steps", path)
	}
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case err == nil:
		return nil, fmt.Errorf("%s:%d: a second YAML document: a file holds one scenario", path, second.Line)
	case !errors.Is(err, io.EOF):
		return nil, yamlSyntaxError(path, data, err)
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

// checkJSON refuses a file named *.json that is not one JSON value (a trailing comma, two objects
// one after the other, ...), which YAML's flow syntax would accept: "FILE:LINE:COLUMN: JSON syntax:
// what", the line and column of the byte at which encoding/json gave up. Other files, and an empty
// one (refused later as empty), pass.
func checkJSON(path string, data []byte) error {
	if !strings.EqualFold(filepath.Ext(path), ".json") || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return nil // valid JSON (an Unmarshal into any has no other error)
	}
	off := min(max(int(se.Offset), 1), len(data)) // Offset: the bytes read, the faulty one included
	before := data[:off-1]
	line := 1 + bytes.Count(before, []byte("\n"))
	col := off - bytes.LastIndexByte(before, '\n') - 1
	return fmt.Errorf("%s:%d:%d: JSON syntax: %s", path, line, col, se.Error())
}

// yamlSyntaxError is err, yaml.v3's refusal of data's syntax, as "FILE:LINE: YAML syntax: what".
// LINE is the first line by which the file is no longer YAML: the fewest leading lines of data that
// yaml.v3 refuses with the same words. yaml.v3's own line number is not that: for a parser error it
// names the line before the one where it noticed the fault, or before where an unclosed [ or {
// began, and none at all for a fault on the first line; it is the fallback when no prefix fails alike.
func yamlSyntaxError(path string, data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	yline := ""
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		yline, msg = m[1], m[2]
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for k := 1; k <= len(lines); k++ {
		perr := yamlDecodeAll(bytes.Join(lines[:k], nil))
		if perr == nil {
			continue
		}
		pmsg := strings.TrimPrefix(perr.Error(), "yaml: ")
		if m := yamlLineRE.FindStringSubmatch(pmsg); m != nil {
			pmsg = m[2]
		}
		if pmsg == msg {
			return fmt.Errorf("%s:%d: YAML syntax: %s", path, k, msg)
		}
	}
	if yline == "" {
		yline = strconv.Itoa(max(len(lines), 1))
	}
	return fmt.Errorf("%s:%s: YAML syntax: %s", path, yline, msg)
}

// yamlDecodeAll decodes every document of data into nodes: the first syntax error, or nil.
func yamlDecodeAll(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
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
			// One refusal for every other size: the lab runs a standalone server or an ensemble of 3.
			if f.ZKNodes, err = f.intIn(val, at, math.MinInt, math.MaxInt); err == nil && f.ZKNodes != 1 && f.ZKNodes != 3 {
				err = f.errAt(at, "%d: want 1 or 3 (a standalone server, or an ensemble of 3 that keeps its quorum after one loss)", f.ZKNodes)
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
