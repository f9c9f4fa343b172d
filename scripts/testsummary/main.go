// Command testsummary reads `go test -json` events (cmd/test2json's TestEvent) on stdin and prints what
// `go test` prints without -v: a line per package ("ok", "FAIL", "?"), and the output of every test that
// did not pass or skip, plus the package's own output (a panic, a leak report, a build failure), for
// a package that failed. Then one summary line: tests passed, failed and skipped.
//
// It exits 1 when a test failed, a package failed or did not build, or a test was skipped: `make test`
// runs every test, so a skip is a test not run (CONTRIBUTING.md: short skips exist only under -short).
// The skipped tests are listed with the reason they gave. With -short (the fast tier, `go test -short`)
// skips are expected: they are counted and listed, and only a failure exits 1. Exit 2: stdin could
// not be read, or a bad flag.
//
//	go test -json ./... | testsummary
//	go test -short -json ./... | testsummary -short
//
// make test pipes into it under `set -o pipefail`, so go test's own exit status is kept as well.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

func main() {
	short := flag.Bool("short", false, "the stream is a `go test -short` run: its skips are expected (listed, not a failure)")
	flag.Parse()
	code, err := summarize(os.Stdin, os.Stdout, *short)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// event is one line of `go test -json` (cmd/test2json's TestEvent, and the go command's build events).
type event struct {
	Action      string  // start, run, pause, cont, pass, bench, fail, output, skip; build-output, build-fail
	Package     string  // the test binary's import path
	Test        string  // "" for the package's own events
	Elapsed     float64 // seconds, on pass, fail and skip
	Output      string  // output: one line, with its newline
	FailedBuild string  // on a package's fail: the package whose build failed
}

// line is one output line of a package, with the test that printed it ("" for the package).
type line struct{ test, text string }

// pkg collects one package's events until its result.
type pkg struct {
	lines   []line
	results map[string]string // test -> pass, fail or skip
}

// skipped is one skipped test and the reason it printed.
type skipped struct{ pkg, test, reason string }

// summarize reads go test -json events from r, writes the summary to w, and returns the exit code:
// 0 if every test ran and passed (with short: passed or skipped), 1 otherwise.
func summarize(r io.Reader, w io.Writer, short bool) (int, error) {
	pkgs := map[string]*pkg{}
	get := func(name string) *pkg {
		p := pkgs[name]
		if p == nil {
			p = &pkg{results: map[string]string{}}
			pkgs[name] = p
		}
		return p
	}
	var (
		passed, failed int
		failedPkgs     []string
		skips          []skipped
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20) // one output line of a test can be long
	for sc.Scan() {
		raw := sc.Bytes()
		var e event
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &e) != nil {
			fmt.Fprintf(w, "%s\n", raw) // not an event (the go command's own text): as it came
			continue
		}
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "output":
			p := get(e.Package)
			p.lines = append(p.lines, line{e.Test, e.Output})
		case "pass", "fail", "skip":
			p := get(e.Package)
			if e.Test != "" {
				p.results[e.Test] = e.Action
				switch e.Action {
				case "pass":
					passed++
				case "fail":
					failed++
				case "skip":
					skips = append(skips, skipped{e.Package, e.Test, skipReason(p, e.Test)})
				}
				continue
			}
			// The package's result: print what go test prints without -v.
			if e.Action == "fail" {
				failedPkgs = append(failedPkgs, e.Package)
				for _, l := range p.lines {
					if strings.HasPrefix(l.text, "=== ") { // RUN, PAUSE, CONT: not printed without -v
						continue
					}
					if l.test == "" || (p.results[l.test] != "pass" && p.results[l.test] != "skip") {
						fmt.Fprint(w, l.text)
					}
				}
			} else {
				for _, l := range p.lines {
					if l.test == "" && l.text != "PASS\n" && !strings.HasPrefix(l.text, "testing: warning: no tests to run") {
						fmt.Fprint(w, l.text)
					}
				}
			}
			delete(pkgs, e.Package)
		}
	}
	if err := sc.Err(); err != nil {
		return 2, err
	}
	// A package with events but no result: the stream was cut (go test killed); say what it printed.
	var cut []string
	for name, p := range pkgs {
		if len(p.lines) > 0 || len(p.results) > 0 {
			cut = append(cut, name)
		}
	}
	sort.Strings(cut)
	for _, name := range cut {
		fmt.Fprintf(w, "--- %s: no result (the run was cut short); its output:\n", name)
		for _, l := range pkgs[name].lines {
			fmt.Fprint(w, l.text)
		}
		failedPkgs = append(failedPkgs, name)
	}

	fmt.Fprintf(w, "\ntestsummary: %d passed, %d failed, %d skipped (tests and subtests)", passed, failed, len(skips))
	if len(failedPkgs) > 0 {
		fmt.Fprintf(w, "; failed packages: %s", strings.Join(failedPkgs, " "))
	}
	fmt.Fprintln(w)
	if len(skips) > 0 {
		if short {
			fmt.Fprintf(w, "testsummary: %d skipped by the fast tier (-short), each saying what it needs:\n", len(skips))
		} else {
			fmt.Fprintf(w, "testsummary: %d skipped; a full run skips nothing (skips exist only under -short, CONTRIBUTING.md):\n", len(skips))
		}
		for _, s := range skips {
			fmt.Fprintf(w, "  %s %s: %s\n", s.pkg, s.test, s.reason)
		}
	}
	if failed > 0 || len(failedPkgs) > 0 || (len(skips) > 0 && !short) {
		return 1, nil
	}
	return 0, nil
}

// skipReason is the last line test printed before its skip, other than the "--- SKIP" line itself:
// where the reason given to t.Skip is.
func skipReason(p *pkg, test string) string {
	reason := "(no reason printed)"
	for _, l := range p.lines {
		t := strings.TrimSpace(l.text)
		if l.test == test && t != "" && !strings.HasPrefix(t, "--- SKIP") && !strings.HasPrefix(t, "=== ") {
			reason = t
		}
	}
	return reason
}
