package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reading test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cliRun is one run of the binary to completion.
type cliRun struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// runCLI runs bin with args (TMPDIR set to tmp when not empty) and waits at most limit for it to exit.
func runCLI(t *testing.T, bin, tmp string, limit time.Duration, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	if tmp != "" {
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := cliRun{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		r.code = ee.ExitCode()
	default:
		t.Fatalf("%v: %v (after %v)\nstderr:\n%s", args, err, r.elapsed, r.stderr)
	}
	return r
}

// childPIDs lists the processes whose parent is pid (from /proc/<pid>/stat).
func childPIDs(pid int) []int {
	var kids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, p)
		}
	}
	return kids
}

// zkJVMs are pid's children running ZooKeeper's main class.
func zkJVMs(pid int) []int {
	var jvms []int
	for _, k := range childPIDs(pid) {
		if cl, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", k)); err == nil && bytes.Contains(cl, []byte("org.apache.zookeeper.server.quorum.QuorumPeerMain")) {
			jvms = append(jvms, k)
		}
	}
	return jvms
}

func processAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// labDirs are the lab's temp dirs (os.MkdirTemp "rebalancelab-*") under tmp.
func labDirs(t *testing.T, tmp string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(tmp, "rebalancelab-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// labUp is a running `lab up` child with its TMPDIR.
type labUp struct {
	cmd    *exec.Cmd
	tmp    string
	stdout chan string // the first stdout line, then closed
	stderr *syncBuffer
	exited chan error
}

func startLabUp(t *testing.T, bin string, args ...string) *labUp {
	t.Helper()
	u := &labUp{tmp: t.TempDir(), stdout: make(chan string, 1), stderr: &syncBuffer{}, exited: make(chan error, 1)}
	u.cmd = exec.Command(bin, append([]string{"lab", "up", "--log-level", "warn"}, args...)...)
	u.cmd.Env = append(os.Environ(), "TMPDIR="+u.tmp)
	u.cmd.Stderr = u.stderr
	u.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := u.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			u.stdout <- sc.Text()
		}
		close(u.stdout)
		for sc.Scan() {
		}
		u.exited <- u.cmd.Wait()
	}()
	t.Cleanup(func() {
		if u.cmd.ProcessState == nil {
			u.cmd.Process.Kill()
			<-u.exited
		}
	})
	return u
}

func (u *labUp) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case err := <-u.exited:
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee) && ee.Exited():
			return ee.ExitCode()
		default:
			t.Fatalf("lab up ended by %v; stderr:\n%s", err, u.stderr)
		}
	case <-time.After(d):
		t.Fatalf("lab up still running after %v; stderr:\n%s", d, u.stderr)
	}
	return -1
}

func TestHandleSignals(t *testing.T) {
	sigs := make(chan os.Signal, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	forced, done := make(chan struct{}), make(chan struct{})
	go func() {
		handleSignals(sigs, cancel, &out, func() { close(forced) })
		close(done)
	}()
	sigs <- syscall.SIGTERM
	testutil.WaitFor(t, 5*time.Second, "the first signal to cancel the context", func() bool { return ctx.Err() != nil })
	sigs <- syscall.SIGTERM
	testutil.WaitFor(t, 5*time.Second, "the second signal's reminder", func() bool { return strings.Contains(out.String(), "still cleaning up") })
	select {
	case <-forced:
		t.Fatal("forced after two signals")
	default:
	}
	sigs <- syscall.SIGINT
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("third signal did not force")
	}
	select {
	case <-forced:
	default:
		t.Fatal("third signal returned without force")
	}
	want := "rebalancelab: terminated: cleaning up; press Ctrl-C twice more to force\n" +
		"rebalancelab: terminated: still cleaning up; press Ctrl-C once more to force\n" +
		"rebalancelab: interrupt: forced exit without cleaning up"
	if !strings.HasPrefix(out.String(), want) {
		t.Fatalf("output:\n%s\nwant it to start with:\n%s", out.String(), want)
	}
}

// TestCLI runs the built binary: lab up / broker against no ZooKeeper, lab up's signal handling,
// --zk-nodes, topic and produce against a lab.
func TestCLI(t *testing.T) {
	bin := testutil.Binary(t)

	// `lab up --zk 127.0.0.1:1`: its broker gets no ZooKeeper session within
	// zookeeper.connection.timeout.ms (the lab's 2000): exit 1, the reason, no JSON line, temp dir gone.
	t.Run("LabUpWithoutZooKeeperFails", func(t *testing.T) {
		tmp := t.TempDir()
		r := runCLI(t, bin, tmp, time.Minute, "lab", "up", "--zk", "127.0.0.1:1", "--log-level", "warn")
		want := "rebalancelab: lab: broker 1: zookeeper.connect 127.0.0.1:1: Timed out waiting for connection while in state: CONNECTING (zookeeper.connection.timeout.ms=2000); " +
			"is ZooKeeper running at 127.0.0.1:1? start one with `rebalancelab lab up` or pass --zk HOST:PORT of a running one\n"
		if r.code != 1 || r.stdout != "" || !strings.HasSuffix(r.stderr, want) {
			t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit 1, no stdout, stderr ending:\n%s", r.code, r.stdout, r.stderr, want)
		}
		if r.elapsed < 2*time.Second || r.elapsed > 15*time.Second {
			t.Fatalf("exited after %v, want 2s (the connection timeout) to 15s", r.elapsed)
		}
		if d := labDirs(t, tmp); len(d) != 0 {
			t.Fatalf("left behind: %v", d)
		}
	})

	t.Run("BrokerWithoutZooKeeperFails", func(t *testing.T) {
		r := runCLI(t, bin, "", time.Minute, "broker", "--id", "3", "--zk", "127.0.0.1:1", "--listen", "127.0.0.1:0",
			"--data", t.TempDir(), "--config", "zookeeper.connection.timeout.ms=1000", "--log-level", "warn")
		want := "rebalancelab: broker 3: zookeeper.connect 127.0.0.1:1: Timed out waiting for connection while in state: CONNECTING (zookeeper.connection.timeout.ms=1000); " +
			"is ZooKeeper running at 127.0.0.1:1? start one with `rebalancelab lab up` or pass --zk HOST:PORT of a running one\n"
		if r.code != 1 || r.stdout != "" || !strings.HasSuffix(r.stderr, want) {
			t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit 1, no stdout, stderr ending:\n%s", r.code, r.stdout, r.stderr, want)
		}
	})

	// docs/design.md's contract is --zk-nodes 1|3.
	t.Run("LabUpZKNodesOneOrThree", func(t *testing.T) {
		for _, n := range []string{"0", "2", "5"} {
			tmp := t.TempDir()
			r := runCLI(t, bin, tmp, time.Minute, "lab", "up", "--zk-nodes", n)
			want := "rebalancelab: --zk-nodes " + n + ": want 1 (standalone) or 3 (ensemble)\n"
			if r.code != 1 || r.stdout != "" || r.stderr != want {
				t.Fatalf("--zk-nodes %s: exit %d, stdout %q, stderr %q; want exit 1, stderr %q", n, r.code, r.stdout, r.stderr, want)
			}
			if d := labDirs(t, tmp); len(d) != 0 {
				t.Fatalf("--zk-nodes %s started something: %v", n, d)
			}
		}
	})

	// Two SIGTERMs 50 ms apart (what GNU timeout sends: to the child, then to its group): the second
	// arrives during the clean-up and must not cut it short. Exit 0, no JVM left, temp dir removed.
	t.Run("LabUpTwoSignalsCleansUp", func(t *testing.T) {
		testutil.Needs(t, testutil.ZooKeeper)
		u := startLabUp(t, bin)
		var line string
		select {
		case line = <-u.stdout:
		case <-time.After(2 * time.Minute):
			t.Fatalf("no first line from lab up in 2 min; stderr:\n%s", u.stderr)
		}
		if !strings.HasPrefix(line, `{"zookeeper":"127.0.0.1:`) {
			t.Fatalf("first line %q; stderr:\n%s", line, u.stderr)
		}
		jvms := zkJVMs(u.cmd.Process.Pid)
		dirs := labDirs(t, u.tmp)
		if len(jvms) != 1 || len(dirs) != 1 {
			t.Fatalf("lab up runs ZooKeeper JVMs %v and lab dirs %v, want one of each", jvms, dirs)
		}
		for i := 0; i < 2; i++ {
			if err := u.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				time.Sleep(50 * time.Millisecond) // the spacing under test, not a wait
			}
		}
		if code := u.wait(t, time.Minute); code != 0 {
			t.Fatalf("lab up exited %d after two SIGTERMs, want 0; stderr:\n%s", code, u.stderr)
		}
		if processAlive(jvms[0]) {
			t.Fatalf("ZooKeeper JVM %d alive after lab up exited", jvms[0])
		}
		if _, err := os.Stat(dirs[0]); !os.IsNotExist(err) {
			t.Fatalf("lab dir %s still there (%v)", dirs[0], err)
		}
		for _, want := range []string{"cleaning up; press Ctrl-C twice more to force", "still cleaning up; press Ctrl-C once more to force"} {
			if !strings.Contains(u.stderr.String(), want) {
				t.Fatalf("stderr does not say %q:\n%s", want, u.stderr)
			}
		}
	})

	// Ctrl-C while ZooKeeper starts: exit 130, "interrupted; cleaned up", no ZooKeeper log tail, no
	// JSON line, no JVM, no temp dir.
	t.Run("LabUpInterruptedDuringStart", func(t *testing.T) {
		testutil.Needs(t, testutil.ZooKeeper)
		u := startLabUp(t, bin)
		var jvms []int
		testutil.WaitFor(t, time.Minute, "lab up's ZooKeeper JVM", func() bool {
			jvms = zkJVMs(u.cmd.Process.Pid)
			return len(jvms) == 1
		})
		if err := u.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		code := u.wait(t, time.Minute)
		line, printed := <-u.stdout
		if printed {
			t.Fatalf("lab up printed %q: it was up before the signal arrived", line)
		}
		stderr := u.stderr.String()
		if code != 130 || !strings.HasSuffix(stderr, "rebalancelab: interrupted; cleaned up\n") || strings.Contains(stderr, "log tail") {
			t.Fatalf("exit %d, stderr:\n%s\nwant exit 130, ending with \"rebalancelab: interrupted; cleaned up\", no log tail", code, stderr)
		}
		if processAlive(jvms[0]) {
			t.Fatalf("ZooKeeper JVM %d alive after lab up exited", jvms[0])
		}
		if d := labDirs(t, u.tmp); len(d) != 0 {
			t.Fatalf("left behind: %v", d)
		}
	})

	t.Run("TopicAndProduce", func(t *testing.T) {
		testutil.Needs(t, testutil.ZooKeeper)
		quiet := logrus.New()
		quiet.SetLevel(logrus.ErrorLevel)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		l, err := lab.Start(ctx, lab.Options{Brokers: 1, BrokerConfig: map[string]string{"num.partitions": "3"}, Log: logrus.NewEntry(quiet)})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		bs := l.Bootstrap()
		cl, err := kgo.NewClient(kgo.SeedBrokers(bs))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		partitionsOf := func(topic string) int {
			t.Helper()
			md, err := adm.Metadata(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			return len(md.Topics[topic].Partitions)
		}
		run := func(args ...string) cliRun { t.Helper(); return runCLI(t, bin, "", time.Minute, args...) }

		// Finding 2: no --partitions means the broker's num.partitions (-1 on the wire).
		r := run("topic", "create", "dflt", "--bootstrap", bs)
		if r.code != 0 || r.stdout != "created topic dflt with 3 partitions, replication factor 1\n" {
			t.Fatalf("topic create without --partitions: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
		}
		if n := partitionsOf("dflt"); n != 3 {
			t.Fatalf("dflt has %d partitions, want num.partitions=3", n)
		}
		r = run("topic", "add-partitions", "dflt", "--partitions", "5", "--bootstrap", bs)
		if r.code != 0 || r.stdout != "topic dflt now has 5 partitions\n" {
			t.Fatalf("add-partitions 5: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		testutil.WaitFor(t, 10*time.Second, "Metadata to show dflt with 5 partitions", func() bool { return partitionsOf("dflt") == 5 })
		r = run("topic", "add-partitions", "dflt", "--bootstrap", bs)
		if r.code != 1 || r.stderr != "rebalancelab: required flag(s) \"partitions\" not set\n" {
			t.Fatalf("add-partitions without --partitions: exit %d, stderr %q", r.code, r.stderr)
		}

		// Finding 4: the broker's own ErrorMessage, not franz-go's text for the code.
		r = run("topic", "create", "rf3", "--partitions", "1", "--replication-factor", "3", "--bootstrap", bs)
		if want := "rebalancelab: create topic rf3: INVALID_REPLICATION_FACTOR: Replication factor: 3 larger than available brokers: 1.\n"; r.code != 1 || r.stderr != want {
			t.Fatalf("rf 3: exit %d, stderr %q, want %q", r.code, r.stderr, want)
		}
		r = run("topic", "add-partitions", "dflt", "--partitions", "2", "--bootstrap", bs)
		if want := "rebalancelab: add partitions to dflt: INVALID_PARTITIONS: Topic currently has 5 partitions, which is higher than the requested 2.\n"; r.code != 1 || r.stderr != want {
			t.Fatalf("shrink: exit %d, stderr %q, want %q", r.code, r.stderr, want)
		}

		// Finding 5: required flags by name, --count > 0, a default timeout naming the bootstrap.
		r = run("produce", "--topic", "p")
		if want := "rebalancelab: required flag(s) \"bootstrap\", \"count\" not set\n"; r.code != 1 || r.stderr != want {
			t.Fatalf("produce --topic only: exit %d, stderr %q, want %q", r.code, r.stderr, want)
		}
		r = run("produce", "--bootstrap", bs, "--topic", "p", "--count", "0")
		if want := "rebalancelab: --count 0: want at least 1 record\n"; r.code != 1 || r.stderr != want {
			t.Fatalf("--count 0: exit %d, stderr %q, want %q", r.code, r.stderr, want)
		}
		if r = run("produce", "--help"); !strings.Contains(r.stdout, "(default 30s)") {
			t.Fatalf("produce --help does not show the 30s default timeout:\n%s", r.stdout)
		}
		r = run("produce", "--bootstrap", "127.0.0.1:1", "--topic", "p", "--count", "1", "--timeout", "2s")
		if want := "rebalancelab: no broker at --bootstrap 127.0.0.1:1 answered within --timeout 2s; last error: "; r.code != 1 || !strings.HasPrefix(r.stderr, want) || !strings.Contains(r.stderr, "connection refused") {
			t.Fatalf("unreachable bootstrap: exit %d, stderr %q, want it to start with %q and name the dial error", r.code, r.stderr, want)
		}
		if r.elapsed < 2*time.Second || r.elapsed > 10*time.Second {
			t.Fatalf("unreachable bootstrap: gave up after %v, want 2s to 10s", r.elapsed)
		}
		r = run("produce", "--bootstrap", bs, "--topic", "dflt", "--count", "10")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "produced 10 of 10 records to dflt") {
			t.Fatalf("produce 10: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}

		// A signal while no broker answers (a listener that accepts and never replies): exit 130, the
		// bootstrap named.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan net.Conn, 16)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- c
			}
		}()
		var stderr syncBuffer
		cmd := exec.Command(bin, "produce", "--bootstrap", ln.Addr().String(), "--topic", "p", "--count", "1")
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-accepted:
			defer c.Close()
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("produce never connected to the bootstrap")
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		want := "rebalancelab: interrupted before any broker at --bootstrap " + ln.Addr().String() + " answered (last error: "
		if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), want) {
			t.Fatalf("produce interrupted: %v, stderr %q; want exit 130 and %q", err, stderr.String(), want)
		}
	})
}
