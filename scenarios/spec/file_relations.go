package spec

// A scenario file (file.go), relations: the file's relations decoded into spec.Relation (relation.go), checked
// against the figures, extras and named relations the runner knows.

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

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
