// Package goldentest is what the replay-equality tests share (scenarios/figures' TestReplayGolden,
// scenarios' TestRelationsGolden and TestVerdictGolden): reading the recorded runs under docs/figures,
// and comparing what the code gives on them with a committed golden, timeline by timeline. It is
// imported by tests only.
package goldentest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// Commit is the commit whose code wrote the goldens (before the figure code moved out of scenarios/);
// scripts/replay-golden.sh COMMIT regenerates them with it after a recorded timeline changed.
const Commit = "3c2f627"

// ReadJSON decodes the JSON file at path into v, failing the test on an error.
func ReadJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// ReadTimeline reads the timeline at path: its sha256 (hex) and its records.
func ReadTimeline(t testing.TB, path string) (string, []timeline.Record) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := timeline.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return SHA256(b), recs
}

// SHA256 is the hex sha256 of b.
func SHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Marshal is v as the goldens hold it: indented JSON and a final newline.
func Marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// Entry is one timeline's entry of a golden: the file (relative to docs/figures) and the sha256 of
// the bytes the golden was written from.
type Entry interface {
	GoldenFile() string
	GoldenSHA256() string
}

// Compare checks got against want, timeline by timeline, as their JSON (Marshal): a timeline missing
// from the golden, changed since (its sha256), or whose entry differs (what: "the figures", "the
// relations") is an error naming it and the way to regenerate the golden; so is a golden timeline no
// longer recorded, unless gone says it may be (nil: none may).
func Compare[E Entry](t testing.TB, got, want []E, what string, gone func(E) bool) {
	t.Helper()
	regen := fmt.Sprintf("regenerate the golden with the code of commit %s: scripts/replay-golden.sh %s", Commit, Commit)
	wantBy := map[string]E{}
	for _, w := range want {
		wantBy[w.GoldenFile()] = w
	}
	gotFiles := map[string]bool{}
	for _, g := range got {
		gotFiles[g.GoldenFile()] = true
		w, ok := wantBy[g.GoldenFile()]
		switch {
		case !ok:
			t.Errorf("timeline %s is not in the golden: %s", g.GoldenFile(), regen)
		case w.GoldenSHA256() != g.GoldenSHA256():
			t.Errorf("timeline %s changed since the golden (sha256 %s, golden %s): %s", g.GoldenFile(), g.GoldenSHA256()[:12], w.GoldenSHA256()[:12], regen)
		default:
			if gb, wb := Marshal(t, g), Marshal(t, w); !bytes.Equal(gb, wb) {
				t.Errorf("timeline %s: %s differ from the golden:\n%s", g.GoldenFile(), what, FirstDiff(string(wb), string(gb)))
			}
		}
	}
	for _, w := range want {
		if !gotFiles[w.GoldenFile()] && (gone == nil || !gone(w)) {
			t.Errorf("timeline %s is in the golden but no longer under docs/figures: %s", w.GoldenFile(), regen)
		}
	}
}

// FirstDiff shows the first differing line of want and got, with a few lines of context.
func FirstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			lo := max(0, i-3)
			return fmt.Sprintf("line %d:\n  golden: %s\n  got:    %s\ncontext (golden):\n%s", i+1, w, g, strings.Join(wl[lo:min(len(wl), i+3)], "\n"))
		}
	}
	return "(equal line by line)"
}
