package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// testdata/mixed.json is `go test -json ./...` over three packages: bad (TestPass passes, TestFail
// fails in its subtest s), brk (does not build), ok (TestA passes, TestSkip/sub skips "no kcat here").
func TestSummarizeMixed(t *testing.T) {
	f, err := os.Open("testdata/mixed.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	code, err := summarize(f, &out, false)
	if err != nil || code != 1 {
		t.Fatalf("exit %d, error %v; want 1, nil", code, err)
	}
	got := out.String()
	for _, want := range []string{
		"brk/brk_test.go:3:28: undefined: undefined\n", // the build failure
		"    bad_test.go:4: shown\n",                   // the failed test's output
		"    bad_test.go:4: sub broke\n--- FAIL: TestFail/s (0.00s)\n--- FAIL: TestFail (0.00s)\n",
		"FAIL\texample.com/tj/bad\t0.044s\n",
		"FAIL\texample.com/tj/brk [build failed]\n",
		"ok  \texample.com/tj/ok\t0.011s\n",
		"testsummary: 3 passed, 2 failed, 1 skipped (tests and subtests); failed packages: example.com/tj/bad example.com/tj/brk\n",
		"  example.com/tj/ok TestSkip/sub: ok_test.go:4: no kcat here\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"not shown", "=== RUN", "quiet"} { // passing tests' output, -v lines
		if strings.Contains(got, not) {
			t.Errorf("output has %q:\n%s", not, got)
		}
	}
}

// Every test passed and none skipped: exit 0, the package lines and the counts.
func TestSummarizeAllPassed(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.002s\n"}
{"Action":"pass","Package":"p","Elapsed":0.002}
{"Action":"start","Package":"q"}
{"Action":"output","Package":"q","Output":"?   \tq\t[no test files]\n"}
{"Action":"skip","Package":"q","Elapsed":0}
`
	var out bytes.Buffer
	code, err := summarize(strings.NewReader(in), &out, false)
	want := "ok  \tp\t0.002s\n?   \tq\t[no test files]\n\ntestsummary: 1 passed, 0 failed, 0 skipped (tests and subtests)\n"
	if err != nil || code != 0 || out.String() != want {
		t.Fatalf("exit %d, error %v, output:\n%q\nwant 0, nil:\n%q", code, err, out.String(), want)
	}
}

// A stream cut before a package's result (go test killed): the package counts as failed and its
// output is printed.
func TestSummarizeCutShort(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestHang"}
{"Action":"output","Package":"p","Test":"TestHang","Output":"    p_test.go:9: waiting\n"}
`
	var out bytes.Buffer
	code, err := summarize(strings.NewReader(in), &out, false)
	if err != nil || code != 1 || !strings.Contains(out.String(), "--- p: no result (the run was cut short); its output:\n    p_test.go:9: waiting\n") {
		t.Fatalf("exit %d, error %v, output:\n%s", code, err, out.String())
	}
}

// With short (a `go test -short` stream) a skip is the fast tier's: listed with its reason, exit 0;
// a failure still exits 1.
func TestSummarizeShort(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestLab"}
{"Action":"output","Package":"p","Test":"TestLab","Output":"    p_test.go:7: -short: needs ZooKeeper (JVM)\n"}
{"Action":"output","Package":"p","Test":"TestLab","Output":"--- SKIP: TestLab (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestLab","Elapsed":0}
{"Action":"run","Package":"p","Test":"TestPure"}
{"Action":"pass","Package":"p","Test":"TestPure","Elapsed":0}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.002s\n"}
{"Action":"pass","Package":"p","Elapsed":0.002}
`
	var out bytes.Buffer
	code, err := summarize(strings.NewReader(in), &out, true)
	if err != nil || code != 0 || !strings.Contains(out.String(), "testsummary: 1 passed, 0 failed, 1 skipped (tests and subtests)\n"+
		"testsummary: 1 skipped by the fast tier (-short), each saying what it needs:\n  p TestLab: p_test.go:7: -short: needs ZooKeeper (JVM)\n") {
		t.Fatalf("short: exit %d, error %v, output:\n%s", code, err, out.String())
	}
	out.Reset()
	if code, _ := summarize(strings.NewReader(in), &out, false); code != 1 {
		t.Fatalf("without short: exit %d, want 1 (a full run skips nothing)", code)
	}
	failing := strings.Replace(in, `{"Action":"pass","Package":"p","Test":"TestPure","Elapsed":0}`, `{"Action":"fail","Package":"p","Test":"TestPure","Elapsed":0}`, 1)
	out.Reset()
	if code, _ := summarize(strings.NewReader(failing), &out, true); code != 1 {
		t.Fatalf("short with a failure: exit %d, want 1", code)
	}
}
