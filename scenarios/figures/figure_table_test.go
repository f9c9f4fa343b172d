package figures

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// docs/design.md's figure table is FigureTable rendered: a figure added, renamed or redefined in one
// and not the other fails here.
func TestFigureTableInDesignDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	want := FigureTableMarkdown()
	if !strings.Contains(string(doc), want) {
		t.Fatalf("docs/design.md's figure table is not FigureTable; paste this in its place:\n%s", want)
	}
}

// Every FigureTable entry's field is the Figures field whose JSON key is the entry's name, and every
// JSON key has an entry.
func TestFigureTableFieldsAreTheJSONKeys(t *testing.T) {
	var f Figures
	for i, d := range FigureTable {
		*d.field(&f) = int64(i + 1)
	}
	raw, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]int64
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(FigureTable) {
		t.Fatalf("Figures has %d JSON keys, FigureTable %d entries", len(got), len(FigureTable))
	}
	for i, d := range FigureTable {
		if got[d.Name] != int64(i+1) {
			t.Errorf("%s: JSON value %d, want %d (the entry's field is another figure's)", d.Name, got[d.Name], i+1)
		}
		if v, ok := f.Get(d.Name); !ok || v != int64(i+1) {
			t.Errorf("Get(%s) = %d, %v", d.Name, v, ok)
		}
		if d.Unit == "" || d.Definition == "" || strings.Contains(d.Definition, "|") {
			t.Errorf("%s: unit %q, definition %q (both required; no '|')", d.Name, d.Unit, d.Definition)
		}
		if d.Counted != (d.count != nil) {
			t.Errorf("%s: Counted=%v but count func set=%v", d.Name, d.Counted, d.count != nil)
		}
	}
}
