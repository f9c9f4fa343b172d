package testutil

import (
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
)

// Binary is the rebalancelab binary for tests that start its processes (member processes and pools,
// process-mode brokers, the CLI): $REBALANCELAB_BIN (make test builds it and sets it), or
// cmd/rebalancelab built once per test binary into a temporary directory (removed with the process's
// temp files; the build takes tens of seconds).
func Binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("REBALANCELAB_BIN"); b != "" {
		return b
	}
	builtOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rebalancelab-bin-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "rebalancelab")
		buildOut, buildErr = exec.Command("go", "build", "-o", built, "github.com/rebalancelab/rebalancelab/cmd/rebalancelab").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return built
}
