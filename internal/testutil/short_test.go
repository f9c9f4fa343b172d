package testutil

import (
	"flag"
	"fmt"
	"testing"
)

// skipRecorder is a testing.TB whose Skip records its message instead of ending the test (so that
// this test, run by make test, skips nothing itself).
type skipRecorder struct {
	testing.TB
	skipped []string
}

func (r *skipRecorder) Skip(args ...any) { r.skipped = append(r.skipped, fmt.Sprint(args...)) }

// setShort sets -test.short for the rest of t.
func setShort(t *testing.T, short bool) {
	t.Helper()
	f := flag.Lookup("test.short")
	old := f.Value.String()
	if err := f.Value.Set(fmt.Sprint(short)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// Needs skips only under -short, with a message naming every need.
func TestNeedsSkipsOnlyUnderShort(t *testing.T) {
	setShort(t, false)
	r := &skipRecorder{TB: t}
	Needs(r, ZooKeeper, Kcat)
	if len(r.skipped) != 0 {
		t.Fatalf("without -short: skipped %q, want nothing", r.skipped)
	}

	setShort(t, true)
	Needs(r, ZooKeeper, Kcat)
	want := []string{"-short: needs ZooKeeper (JVM), kcat"}
	if fmt.Sprint(r.skipped) != fmt.Sprint(want) {
		t.Fatalf("under -short: skipped %q, want %q", r.skipped, want)
	}
}
