package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestDemoDeps: make demo's installs (`scripts/deps.sh demo`, make demo-deps) ask for ZooKeeper and a
// JRE only. With both present a non-root user (nobody, when the test runs as root) passes with exit 0
// and no output: no root, no apt-get, no interop build. With java missing and no apt-get, it exits 1
// naming only the JRE (and ZooKeeper when that is missing too), never the tests' packages. A mode it
// does not know is exit 2; make demo depends on demo-deps, not on deps.
func TestDemoDeps(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.JVM)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// A copy nobody can read wherever the clone lies (demo mode ends before the interop build, the only
	// part that reads the repository).
	src, err := os.ReadFile(filepath.Join(root, "scripts", "deps.sh"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "deps.sh")
	if err := os.WriteFile(script, src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} { // t.TempDir's and its parent's 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatalf("java not found (scripts/deps.sh installs a JDK): %v", err)
	}
	run := func(path string, asNobody bool, args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		argv := append([]string{bash, script}, args...)
		if asNobody {
			runuser, err := exec.LookPath("runuser")
			if err != nil {
				t.Fatalf("running as root without runuser (util-linux) to become nobody: %v", err)
			}
			argv = append([]string{runuser, "-u", "nobody", "--"}, argv...)
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=" + path, "HOME=" + dir}
		if zh := os.Getenv("ZOOKEEPER_HOME"); zh != "" {
			cmd.Env = append(cmd.Env, "ZOOKEEPER_HOME="+zh)
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	}
	// ZooKeeper and java present: a non-root user passes, quietly.
	if code, out := run(os.Getenv("PATH"), os.Geteuid() == 0, "demo"); code != 0 || out != "" {
		t.Errorf("deps.sh demo as a non-root user with ZooKeeper and java present: exit %d, output %q; want 0 and nothing", code, out)
	}
	// java missing, no apt-get: the JRE named, nothing the tests need.
	bin := t.TempDir()
	for _, tool := range []string{"id", "cat", "ls"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	code, out := run(bin, false, "demo")
	if code != 1 || !strings.Contains(out, "deps: missing: openjdk-17-jre-headless") {
		t.Errorf("deps.sh demo without java: exit %d, output %q; want 1 naming openjdk-17-jre-headless", code, out)
	}
	for _, not := range []string{"maven", "kcat", "chromium", "python3-kafka", "interop build"} {
		if strings.Contains(out, not) {
			t.Errorf("deps.sh demo without java: output names %q, which the demo does not run:\n%s", not, out)
		}
	}
	if code, out := run(os.Getenv("PATH"), false, "everything"); code != 2 || !strings.Contains(out, "deps: mode everything: want all") {
		t.Errorf("deps.sh everything: exit %d, output %q; want 2 and the modes", code, out)
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(mk, []byte("\ndemo: demo-deps build\n")) || !bytes.Contains(mk, []byte("\ndemo-deps:\n\t@scripts/deps.sh demo\n")) {
		t.Errorf("Makefile: want demo to depend on demo-deps (scripts/deps.sh demo), not on deps")
	}
}
