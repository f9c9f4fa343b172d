package spec

import (
	"fmt"
	"strings"
	"testing"
)

var testVocabulary = Vocabulary{Figures: []string{"lost", "revocations"}, Named: []string{"owned-once"},
	Invariants: []string{"invariant_consumed_unowned"}, Extras: map[string][]string{"x": {"x_count"}}}

// TestFileBuildLoopsAndDraws: a for over perm(1..N) visits the members in rand.Perm's order of the
// scenario's source, every_ms spaces its rounds (not its first), a let's random draws after the perm
// in step order, and expressions see N, P, the loop variable and the timing.
func TestFileBuildLoopsAndDraws(t *testing.T) {
	const src = `name: loops
description: d
defaults: {consumers: 3, partitions: 6}
min_consumers: 2
steps:
  - for: i
    in: perm(1..N)
    every_ms: 10*2
    do:
      - trigger: t-m{i}
      - start: m{i}
        delay_ms: P + i
  - let: {k: "random(2..N)"}
  - stop: m{k}
    delay_ms: session_ms
`
	f, err := DecodeFile("loops.yaml", []byte(src), testVocabulary)
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Consumers: 3, Partitions: 6, Seed: 9}
	steps, err := f.Build(p, LabTiming(), NewRand(9, "loops"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRand(9, "loops")
	perm := r.Perm(3)
	k := 2 + r.IntN(2)
	var want []string
	for n, x := range perm {
		d := 0
		if n > 0 {
			d = 20
		}
		want = append(want, fmt.Sprintf(`{"delay_ms":%d,"action":"trigger","name":"t-m%d"}`, d, x+1),
			fmt.Sprintf(`{"delay_ms":%d,"action":"start","member":"m%d"}`, 6+x+1, x+1))
	}
	want = append(want, fmt.Sprintf(`{"delay_ms":2000,"action":"stop","member":"m%d"}`, k))
	if got := strings.TrimSpace(string(FormatScript(steps))); got != strings.Join(want, "\n") {
		t.Errorf("script:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// TestFileRefusesEmptyRangeAtTheRunsSize: a draw from an empty range is refused with its line when the
// script is built at a size that empties it (here below min_consumers, as a caller that skipped the
// bounds would), and at decode time when min_consumers allows such a size.
func TestFileRefusesEmptyRangeAtTheRunsSize(t *testing.T) {
	const src = `name: r
description: d
defaults: {consumers: 3, partitions: 6}
min_consumers: 3
steps:
  - let: {k: "random(3..N)"}
  - crash: m{k}
`
	f, err := DecodeFile("r.yaml", []byte(src), testVocabulary)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Build(Params{Consumers: 2, Partitions: 6}, LabTiming(), NewRand(1, "r"))
	if want := "r.yaml:6: field steps[0].let.k: random(3..2): an empty range"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	_, err = DecodeFile("r.yaml", []byte(strings.Replace(src, "min_consumers: 3", "min_consumers: 2", 1)), testVocabulary)
	if want := "r.yaml:6: field steps[0].let.k: random(3..2): an empty range"; err == nil || err.Error() != want {
		t.Errorf("min_consumers 2: error %v, want %s", err, want)
	}
}

// TestFileRefusesALiteralEmptyLoopRange: a for over numbers whose LO is above HI is a typo, refused
// with its line; a range of expressions that is empty at a size (2..N at N=1) is a loop of no round.
func TestFileRefusesALiteralEmptyLoopRange(t *testing.T) {
	const src = `name: r
description: d
defaults: {consumers: 3, partitions: 6}
steps:
  - for: i
    in: 3..1
    do:
      - start: m{i}
`
	_, err := DecodeFile("r.yaml", []byte(src), testVocabulary)
	if want := `r.yaml:6: field steps[0].in: "3..1": an empty range (3 is above 1)`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	f, err := DecodeFile("r.yaml", []byte(strings.Replace(src, "3..1", "2..N", 1)+"  - start: m1\n"), testVocabulary)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := f.Build(Params{Consumers: 1, Partitions: 6}, LabTiming(), NewRand(1, "r"))
	if err != nil || len(steps) != 1 || steps[0].Member != "m1" {
		t.Errorf("2..N at N=1: steps %+v, error %v; want only start m1", steps, err)
	}
}
