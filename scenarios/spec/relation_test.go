package spec

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestExprEval: the vocabulary's values, as the catalogue writes them.
func TestExprEval(t *testing.T) {
	v := Vars{N: 4, P: 8, H: 3}
	for expr, want := range map[Expr]int64{"": 0, "0": 0, "N+1": 5, "2(N+1)": 10, "2N": 8, "P": 8, "P - 1": 7,
		"N*P/3": 10, "-(N-6)": 2, "H": 3, "((1))+2*3": 7} {
		if got, err := expr.Eval(v); err != nil || got != want {
			t.Errorf("%q = %d, %v; want %d", expr, got, err, want)
		}
	}
	for expr, want := range map[Expr]string{
		"N+":    `expression "N+": ends where a value is due`,
		"M":     `expression "M": unexpected 'M' at 0 (want an integer, N, P, H or a parenthesis)`,
		"(N+1":  `expression "(N+1": no ) for the ( before 4`,
		"N/0":   `expression "N/0": division by 0 at 2`,
		"N) +1": `expression "N) +1": unexpected ')' at 1`,
	} {
		if _, err := expr.Eval(v); err == nil || err.Error() != want {
			t.Errorf("%q: error %v, want %q", expr, err, want)
		}
	}
}

// TestRelationData: a relation round-trips through JSON, describes itself as the run reports it,
// and Validate refuses what is no relation.
func TestRelationData(t *testing.T) {
	r := Relation{Eras: []Era{Classic, Static}, Event: "join", Figure: "group_requests", Cmp: Ge, Value: "2(N+1)"}
	if got, want := r.Describe(), "join: group_requests >= 2(N+1)"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"eras":["classic","static"],"event":"join","figure":"group_requests","cmp":"\u003e=","value":"2(N+1)"}`; string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
	var back Relation
	if err := json.Unmarshal(b, &back); err != nil || back.Describe() != r.Describe() || !back.AppliesTo(Static) || back.AppliesTo(ZK) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if got := (Relation{Figure: "lost", Cmp: Eq, Value: "0"}).Describe(); got != "lost == 0" {
		t.Errorf("totals Describe = %q", got)
	}
	if err := r.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if err := (Relation{Named: "owned-once"}).Validate(); err != nil {
		t.Errorf("named: %v", err)
	}
	for _, c := range []struct {
		r    Relation
		want string
	}{
		{Relation{Text: "x"}, `relation "x": no comparison (figure or extra, cmp, value) and no named relation`},
		{Relation{Named: "owned-once", Figure: "lost"}, `relation "": named "owned-once" and a comparison: give one`},
		{Relation{Figure: "lost", Cmp: "=", Value: "0"}, `relation "lost = 0": unknown comparison "=" (want ==, !=, <, <=, >, >=)`},
		{Relation{Figure: "lost", Cmp: Eq, Value: "Q"}, `relation "lost == Q": value: expression "Q": unexpected 'Q' at 0 (want an integer, N, P, H or a parenthesis)`},
		{Relation{Eras: []Era{"eager"}, Figure: "lost", Cmp: Eq}, `relation "lost == ": unknown era "eager"`},
		{Relation{Cmp: Eq, Value: "0"}, `relation " == 0": no figure or extra to compare`},
	} {
		if err := c.r.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("Validate(%+v) = %v, want %q", c.r, err, c.want)
		}
	}
	for a, want := range map[Cmp]bool{Eq: false, Ne: true, Lt: true, Le: true, Gt: false, Ge: false, "=": false} {
		if got := a.Holds(1, 2); got != want {
			t.Errorf("1 %s 2 = %v, want %v", a, got, want)
		}
	}
}

// TestYAMLNamesAreJSONs: a scenario file spells every field of a step, the params and a relation the
// same in YAML as in JSON (the result JSON's script, FormatScript's lines).
func TestYAMLNamesAreJSONs(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeOf(Step{}), reflect.TypeOf(Params{}), reflect.TypeOf(Relation{})} {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			j, y := f.Tag.Get("json"), f.Tag.Get("yaml")
			if j == "" || j != y {
				t.Errorf("%s.%s: json %q, yaml %q: want both, the same", typ.Name(), f.Name, j, y)
			}
		}
	}
}
