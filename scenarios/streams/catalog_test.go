package streams

import (
	"slices"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
)

// TestCatalogueWithStreams: with this package's registrations (catalog.go) the catalogue has
// its twenty-three scenarios, the Streams one last, and the 33 relations registered in Go, the nine
// Streams ones among them, each of the Streams scenario's relations naming one of them.
func TestCatalogueWithStreams(t *testing.T) {
	all := catalog.Catalog()
	if len(all) != 23 || all[len(all)-1].Name != "streams-threads" {
		t.Fatalf("%d scenarios, last %q: want 23, streams-threads last", len(all), all[len(all)-1].Name)
	}
	names := catalog.NamedRelations()
	if len(names) != 33 {
		t.Errorf("registered relations %v: want 33", names)
	}
	for _, n := range []string{relStreamsStartOnThreads, relStreamsCoPartitioned, relStreamsRemovedThreadTasksMove,
		relStreamsAddThread, relStreamsJoinSpread, relStreamsCrashBackToS1, relStreamsEveryEventStable,
		relStreamsRecordsOut, catalog.RelStreamsFaultsTookEffect} {
		if !slices.Contains(names, n) {
			t.Errorf("%s is not registered", n)
		}
	}
	for _, rel := range all[len(all)-1].Relations {
		if rel.Spec == nil || !slices.Contains(names, rel.Spec.Named) {
			t.Errorf("streams-threads: %q names no registered relation", rel.Text)
		}
	}
}
