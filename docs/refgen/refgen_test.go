package refgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed reference blocks (docs/design.md's and docs/reference/scenarios.md's ref-figures,
// scenarios.md's ref-catalogue) are what the code renders now: a figure or scenario added, renamed or
// redefined without `make docs-ref` fails here. (The CLI pages are checked in cmd/rebalancelab, which
// builds the command tree.)
func TestReferenceBlocksFresh(t *testing.T) {
	for _, err := range StaleBlocks("..") {
		t.Error(err)
	}
}

// A page edited by hand inside a block is stale, and the error names the page, the line and the fix.
func TestStaleBlockDetected(t *testing.T) {
	dir := t.TempDir()
	for _, p := range BlockPages {
		b, err := os.ReadFile(filepath.Join("..", p))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(p, "scenarios.md") {
			b = []byte(strings.Replace(string(b), "| [`herd-join`]", "| [`herd-join-renamed`]", 1))
		}
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	errs := StaleBlocks(dir)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "scenarios.md is stale") ||
		!strings.Contains(errs[0].Error(), "herd-join-renamed") || !strings.Contains(errs[0].Error(), "make docs-ref") {
		t.Fatalf("StaleBlocks after a hand edit: %v", errs)
	}
}

// The catalogue lists every scenario, the Streams one (registered by scenarios/streams) included.
func TestCatalogueListsEveryScenario(t *testing.T) {
	c := Catalogue()
	for _, name := range []string{"herd-effect", "storm", "durability", "host-slow-link", "streams-threads"} {
		if !strings.Contains(c, "| [`"+name+"`](#"+name+") |") || !strings.Contains(c, "\n#### "+name+"\n") {
			t.Errorf("the catalogue has no row or section for %s", name)
		}
	}
}
