package lab

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestZooKeeperHomeMustExist: a $ZOOKEEPER_HOME that is not a directory, or holds no server jar, is an
// error naming the variable, even though Debian's jars are there to fall back on.
func TestZooKeeperHomeMustExist(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-zookeeper")
	empty := t.TempDir()
	for name, tc := range map[string]struct{ home, want string }{
		"missing": {missing, "$ZOOKEEPER_HOME=" + missing + " is not a directory; point ZOOKEEPER_HOME at an Apache ZooKeeper 3.8 binary distribution or unset it"},
		"no jars": {empty, "$ZOOKEEPER_HOME=" + empty + " has no zookeeper-3*.jar in it or in lib/; point ZOOKEEPER_HOME at an Apache ZooKeeper 3.8 binary distribution or unset it"},
	} {
		t.Run(name, func(t *testing.T) {
			env := func(k string) string { return map[string]string{"ZOOKEEPER_HOME": tc.home, "PATH": "/usr/bin"}[k] }
			inst, err := findLocalZooKeeper(env, debianJavaDir)
			if err == nil {
				t.Fatalf("found %s (%v) although $ZOOKEEPER_HOME=%s is unusable", inst.source, inst.classpath, tc.home)
			}
			if !errors.Is(err, ErrNoZooKeeper) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want ErrNoZooKeeper containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "Options.ExternalZK") || !strings.Contains(err.Error(), "--zk HOST:PORT") {
				t.Fatalf("error %q should name --zk HOST:PORT, not a Go field", err)
			}
		})
	}
}

// TestLabExternalZooKeeperUnreachable: with ExternalZK where nothing listens, Start fails once the
// broker's zookeeper.connection.timeout.ms (ShortTimings: 2000) passes without a session, and removes
// its temp dir.
func TestLabExternalZooKeeperUnreachable(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	l, err := Start(ctx, Options{ExternalZK: "127.0.0.1:1", Brokers: 1, Log: testLog(t)})
	elapsed := time.Since(start)
	if err == nil {
		l.Close()
		t.Fatal("lab started with no ZooKeeper at 127.0.0.1:1")
	}
	want := "lab: broker 1: zookeeper.connect 127.0.0.1:1: Timed out waiting for connection while in state: CONNECTING (zookeeper.connection.timeout.ms=2000); " +
		"is ZooKeeper running at 127.0.0.1:1? start one with `rebalancelab lab up` or pass --zk HOST:PORT of a running one"
	if err.Error() != want {
		t.Fatalf("error:\n %v\nwant:\n %s", err, want)
	}
	if elapsed < 2*time.Second || elapsed > 5*time.Second {
		t.Fatalf("failed after %v, want 2s to 5s", elapsed)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("left in TMPDIR: %v", ents)
	}
}

// TestZooKeeperStartInterrupted: a start cancelled (Ctrl-C) while the JVM comes up fails with an
// "interrupted" error without the server's log tail (nothing went wrong with the server), and the JVM
// is stopped.
func TestZooKeeperStartInterrupted(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logPath := filepath.Join(dir, "zk-1", "zookeeper.log")
	watched := make(chan struct{})
	defer func() { cancel(); <-watched }()
	go func() {
		defer close(watched)
		// The log file is created just before the JVM is exec'd: it cannot be serving yet. Await
		// returns early (ctx cancelled) if the start fails before; then the test's checks below fail.
		if err := testutil.Await(ctx, time.Minute, "the ZooKeeper log file "+logPath, func() bool {
			_, err := os.Stat(logPath)
			return err == nil
		}); err == nil {
			cancel()
		} else if !errors.Is(err, context.Canceled) {
			t.Error(err)
			cancel()
		}
	}()
	z, err := StartZooKeeper(ctx, ZKOptions{Dir: dir, Log: testLog(t)})
	if err == nil {
		z.Close()
		t.Fatal("StartZooKeeper succeeded although cancelled")
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "start-up interrupted: context canceled") || strings.Contains(err.Error(), "log tail") {
		t.Fatalf("error %q, want an interruption wrapping context.Canceled, without a log tail", err)
	}
	if kids := childPIDs(os.Getpid()); len(kids) != 0 {
		t.Fatalf("child processes %v left after the interrupted start", kids)
	}
}
