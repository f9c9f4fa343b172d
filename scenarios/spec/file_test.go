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
  - for: i
    in: 1..N
    do:
      - start: m{i}
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

// TestFileRefusesAStartOfARunningMemberAndAStopOfAnEndedOne: the steps are followed in the order they
// run (loops unrolled): a start of a member that is running, and a stop, crash or link fault of one
// never started or already stopped or crashed, are refused at Build with the step's line and field.
func TestFileRefusesAStartOfARunningMemberAndAStopOfAnEndedOne(t *testing.T) {
	const head = `name: r
description: d
defaults: {consumers: 3, partitions: 6}
steps:
  - for: i
    in: 1..N
    do:
      - start: m{i}
`
	for _, c := range []struct{ steps, want string }{
		{"  - crash: m{N+1}\n", "r.yaml:9: field steps[1].crash: m4 is not running here (never started)"},
		{"  - stop: fencer\n", "r.yaml:9: field steps[1].stop: fencer is not running here (never started)"},
		{"  - start: m2\n", "r.yaml:9: field steps[1].start: m2 is already running (started at line 8)"},
		{"  - crash: m1\n  - settle:\n  - stop: m1\n", "r.yaml:11: field steps[3].stop: m1 is not running here (crashed at line 9)"},
		{"  - stop: m3\n  - crash: m3\n", "r.yaml:10: field steps[2].crash: m3 is not running here (stopped at line 9)"},
		{"  - cut: m4\n    link: fetch\n", "r.yaml:9: field steps[1].cut: m4 is not running here (never started): a fault on its links would reach nobody"},
		{"  - crash: m2\n  - heal: m2\n    link: fetch\n", "r.yaml:10: field steps[2].heal: m2 is not running here (crashed at line 9): a fault on its links would reach nobody"},
		{"  - for: j\n    in: 1..2\n    do:\n      - crash: m1\n", "r.yaml:12: field steps[1].do[0].crash: m1 is not running here (crashed at line 12)"},
		{"  - for: j\n    in: perm(1..N)\n    do:\n      - start: m{j}\n", fmt.Sprintf("r.yaml:12: field steps[1].do[0].start: m%d is already running (started at line 8)", NewRand(1, "r").Perm(3)[0]+1)},
	} {
		_, err := DecodeFile("r.yaml", []byte(head+c.steps), testVocabulary)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: error %v, want %s", c.steps, err, c.want)
		}
	}
	// A member stopped, crashed and started again, by name and in a loop, builds.
	ok := head + "  - stop: m1\n  - start: m1\n  - for: i\n    in: 2..N\n    do:\n      - crash: m{i}\n      - start: m{i}\n        as: m1\n"
	f, err := DecodeFile("r.yaml", []byte(ok), testVocabulary)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := f.Build(Params{Consumers: 3, Partitions: 6}, LabTiming(), NewRand(1, "r"))
	if err != nil || len(steps) != 9 {
		t.Errorf("steps %d, error %v; want 9 steps and no error", len(steps), err)
	}
}
