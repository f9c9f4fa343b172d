package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	builtOnce sync.Once
	built     string
	buildErr  error
	buildOut  []byte
	builtMu   sync.Mutex // built's directory: made (Binary) or removed (RemoveBinary)
	builtDir  string
)

// Binary is the rebalancelab binary for tests that start its processes (member processes and pools,
// process-mode brokers, the CLI): $REBALANCELAB_BIN (make test builds it and sets it), or
// cmd/rebalancelab built once per test binary into a temporary directory, $TMPDIR/rebalancelab-bin-*
// (the build takes tens of seconds). That directory (about 36 MB) is removed by RemoveBinary, which the
// TestMain of every package calling Binary runs after its tests: Main, or goleak.Cleanup(Exit).
func Binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("REBALANCELAB_BIN"); b != "" {
		return b
	}
	builtOnce.Do(func() {
		builtMu.Lock()
		defer builtMu.Unlock()
		dir, err := os.MkdirTemp("", "rebalancelab-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtDir, built = dir, filepath.Join(dir, "rebalancelab")
		buildOut, buildErr = exec.Command("go", "build", "-o", built, "github.com/rebalancelab/rebalancelab/cmd/rebalancelab").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return built
}

// RemoveBinary removes the directory of the binary Binary built in this process, if it built one
// ($REBALANCELAB_BIN's is never removed); its error is os.RemoveAll's. Call it once the tests are
// over (Main and Exit do).
func RemoveBinary() error {
	builtMu.Lock()
	defer builtMu.Unlock()
	if builtDir == "" {
		return nil
	}
	err := os.RemoveAll(builtDir)
	builtDir = ""
	return err
}

// Exit removes the binary Binary built (RemoveBinary; a failure is printed to stderr and makes a
// passing run fail with exit code 1) and exits with code. It is goleak's cleanup in the TestMain of a
// package that calls Binary: goleak.VerifyTestMain(m, goleak.Cleanup(testutil.Exit)).
func Exit(code int) {
	if err := RemoveBinary(); err != nil {
		fmt.Fprintf(os.Stderr, "testutil: removing the test binary: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Main runs m's tests, then removes the binary Binary built and exits with their code (Exit): the
// TestMain of a package that calls Binary and runs no leak check.
func Main(m *testing.M) { Exit(m.Run()) }
