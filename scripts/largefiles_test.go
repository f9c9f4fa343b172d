// Package scripts holds no Go code: its tests check the repository's shell scripts.
package scripts

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLargeFilesCheck runs largefiles.sh in a fresh git repository: a 2 MiB file that the allow-list
// does not name is refused (exit 1, the file and its size named), one it names (exactly or by glob)
// and a file of exactly 1 MiB are accepted; once the large file is removed the tree passes, a range
// holding only the removal passes, and a range holding its addition is refused.
func TestLargeFilesCheck(t *testing.T) {
	script, err := filepath.Abs("largefiles.sh")
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(path string, size int) {
		t.Helper()
		p := filepath.Join(repo, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte{'x'}, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command("bash", append([]string{script}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "LARGEFILES_LIMIT=") // the default limit, 1 MiB
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	const mib = 1 << 20
	git("init", "-q")
	write("scripts/largefiles.allow", 0)
	if err := os.WriteFile(filepath.Join(repo, "scripts/largefiles.allow"),
		[]byte("# reason: a fixture\ndata/listed.bin\nfigures/*.png  # reason: plots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write("data/listed.bin", 2*mib)
	write("figures/a.png", 2*mib)
	write("edge.bin", mib) // exactly 1 MiB: not over
	write("small.txt", 10)
	git("add", "-A")
	git("commit", "-q", "-m", "allowed only")
	if out, code := check(); code != 0 {
		t.Fatalf("listed and 1 MiB files: exit %d, want 0\n%s", code, out)
	}

	write("planted.bin", 2*mib)
	git("add", "-A")
	git("commit", "-q", "-m", "plant")
	out, code := check()
	if code != 1 {
		t.Fatalf("planted 2 MiB file: exit %d, want 1\n%s", code, out)
	}
	if !strings.Contains(out, "planted.bin is 2097152 bytes (over 1048576)") || strings.Count(out, " is ") != 1 {
		t.Fatalf("planted 2 MiB file: output names not exactly planted.bin with its size:\n%s", out)
	}

	git("rm", "-q", "planted.bin")
	git("commit", "-q", "-m", "unplant")
	if out, code := check(); code != 0 {
		t.Fatalf("after removing it: exit %d, want 0\n%s", code, out)
	}
	if out, code := check("HEAD~1..HEAD"); code != 0 {
		t.Fatalf("range with the removal only: exit %d, want 0\n%s", code, out)
	}
	if out, code := check("HEAD~2..HEAD"); code != 1 || !strings.Contains(out, "planted.bin") {
		t.Fatalf("range with the addition: exit %d, want 1 naming planted.bin\n%s", code, out)
	}
}
