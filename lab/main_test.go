package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("LAB_TEST_ZK_PARENT_DIR"); dir != "" {
		zooKeeperParent(dir) // never returns: TestKilledParentLeavesNoJVM kills this process
	}
	if mode := os.Getenv("LAB_TEST_HOST_HELPER"); mode != "" {
		hostHelper(mode) // never returns
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		if binDir != "" {
			os.RemoveAll(binDir)
		}
	}))
}

// rebalancelabBinary builds cmd/rebalancelab once per test run (for BrokersAs "process" and the
// `lab up` CLI test).
func rebalancelabBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "rebalancelab-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "rebalancelab")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/rebalancelab/rebalancelab/cmd/rebalancelab").CombinedOutput()
		if err != nil {
			binErr = err
			binPath = string(out)
		}
	})
	if binErr != nil {
		t.Fatalf("go build ./cmd/rebalancelab: %v\n%s", binErr, binPath)
	}
	return binPath
}

// zooKeeperParent runs in a child copy of the test binary: it starts a ZooKeeper in dir, prints the
// JVM's pid and waits to be killed.
func zooKeeperParent(dir string) {
	z, err := StartZooKeeper(context.Background(), ZKOptions{Dir: dir})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("jvm", z.Nodes()[0].PID())
	for {
		time.Sleep(time.Hour) // not a synchronisation: this child process has nothing left to do until it is killed
	}
}
