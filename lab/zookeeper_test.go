package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

func TestStandaloneZooKeeper(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t, 1)
	if got := len(z.Nodes()); got != 1 {
		t.Fatalf("Nodes() = %d, want 1", got)
	}
	if z.Connect() != z.Nodes()[0].Addr() || !strings.HasPrefix(z.Connect(), "127.0.0.1:") {
		t.Fatalf("Connect() = %q, node addr %q", z.Connect(), z.Nodes()[0].Addr())
	}
	ctx := context.Background()
	mntr := func() (map[string]int64, string) {
		t.Helper()
		out, err := z.FourLetter(ctx, 0, "mntr")
		if err != nil {
			t.Fatalf("mntr: %v", err)
		}
		return ParseMntr(out), out
	}
	before, _ := mntr()
	if before["zk_znode_count"] < 1 || before["zk_global_sessions"] != 0 {
		t.Fatalf("fresh server: zk_znode_count=%d zk_global_sessions=%d", before["zk_znode_count"], before["zk_global_sessions"])
	}

	c := zkConnect(t, z.Servers(), 4*time.Second, nil)
	if _, err := c.Create("/lab-standalone", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if _, err := c.Create("/lab-standalone/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("Create ephemeral: %v", err)
	}
	data, _, err := c.Get("/lab-standalone")
	if err != nil || string(data) != "hello" {
		t.Fatalf("Get = %q, %v; want \"hello\"", data, err)
	}

	after, out := mntr()
	if d := after["zk_znode_count"] - before["zk_znode_count"]; d != 2 {
		t.Errorf("zk_znode_count went %d -> %d, want +2", before["zk_znode_count"], after["zk_znode_count"])
	}
	if after["zk_ephemerals_count"] != 1 || after["zk_global_sessions"] != 1 {
		t.Errorf("zk_ephemerals_count=%d zk_global_sessions=%d, want 1 and 1", after["zk_ephemerals_count"], after["zk_global_sessions"])
	}
	if s := ParseMntrStrings(out)["zk_server_state"]; s != "standalone" {
		t.Errorf("zk_server_state = %q, want standalone", s)
	}
	if _, err := z.FourLetter(ctx, 1, "ruok"); err == nil {
		t.Error("FourLetter(node 1) on a 1-node ZooKeeper: no error")
	}
	srvr, err := z.FourLetter(ctx, 0, "srvr")
	if err != nil || ParseSrvrMode(srvr) != "standalone" {
		t.Errorf("srvr mode = %q (%v), want standalone", ParseSrvrMode(srvr), err)
	}
}

// TestNoJVMAfterClose: Close stops the JVM (its pid is gone) and removes the temp dir; a second
// Close is harmless.
func TestNoJVMAfterClose(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	z, err := StartZooKeeper(ctx, ZKOptions{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	pid := z.Nodes()[0].PID()
	if pid <= 0 || !processAlive(pid) {
		t.Fatalf("PID() = %d, alive=%v", pid, processAlive(pid))
	}
	dir := z.Dir()
	if err := z.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if processAlive(pid) {
		t.Fatalf("JVM pid %d still alive after Close", pid)
	}
	if z.Nodes()[0].Running() {
		t.Fatal("Running() after Close")
	}
	if st, err := os.Stat(dir); err == nil {
		t.Fatalf("temp dir %s still there after Close (%v)", dir, st.Name())
	}
	if err := z.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestNoZooKeeperFoundErrorNamesTheWays(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"ZOOKEEPER_HOME": t.TempDir(), "PATH": t.TempDir()}[k]
	}
	_, err := findLocalZooKeeper(env, t.TempDir())
	if !errors.Is(err, ErrNoZooKeeper) {
		t.Fatalf("err = %v, want ErrNoZooKeeper", err)
	}
	for _, want := range []string{"apt-get install zookeeper default-jre-headless", "$ZOOKEEPER_HOME", "--zk HOST:PORT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	// Jars present but no java anywhere: the error says java is missing.
	_, err = findLocalZooKeeper(func(k string) string { return map[string]string{"PATH": t.TempDir()}[k] }, debianJavaDir)
	if !errors.Is(err, ErrNoZooKeeper) || !strings.Contains(err.Error(), "no java") {
		t.Fatalf("without java: err = %v", err)
	}
	// The real machine: Debian's jars and java are found.
	inst, err := findLocalZooKeeper(func(k string) string { return map[string]string{"PATH": "/usr/bin"}[k] }, debianJavaDir)
	if err != nil || inst.java != "/usr/bin/java" || len(inst.classpath) != len(debianJars) {
		t.Fatalf("findLocalZooKeeper on this machine = %+v, %v", inst, err)
	}
}

// TestKilledParentLeavesNoJVM: when the Go process that started ZooKeeper is killed with SIGKILL (no
// Close, no signal handler), the JVM dies with it (Pdeathsig).
func TestKilledParentLeavesNoJVM(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LAB_TEST_ZK_PARENT_DIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("parent: %v (line %q)", err, line)
	}
	var pid int
	if _, err := fmt.Sscanf(line, "jvm %d", &pid); err != nil || pid <= 0 || !processAlive(pid) {
		t.Fatalf("parent said %q (%v)", line, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, fmt.Sprintf("JVM pid %d to die with its parent", pid), func() bool { return !processAlive(pid) })
}

// TestStartFailureCarriesLogTail: a server that cannot start (here: a broken zoo.cfg) gives an error
// that carries the tail of its log, so the cause is visible without opening files.
func TestStartFailureCarriesLogTail(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t, 1)
	n := z.Nodes()[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.dir, "zoo.cfg"), []byte("tickTime=two hundred\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := n.Start(ctx)
	if err == nil {
		t.Fatal("Start with a broken zoo.cfg succeeded")
	}
	for _, want := range []string{"exited during start-up; log tail:", "Invalid config", `For input string: "two hundred"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
	if n.Running() {
		t.Fatal("Running() after a failed start")
	}
	// The tail is this run's log only, not the earlier run's.
	if strings.Contains(err.Error(), "Snapshotting") {
		t.Errorf("log tail reaches into the previous run:\n%v", err)
	}
}

// TestZKReconnectWithWatchesIsRaceFree: a go-zookeeper session with watches, busy with requests,
// reconnects through a proxy that is cut and healed again and again; the session survives every cut
// (the same session id throughout, the watches re-set) and, under -race, go-zookeeper's lastZxid is
// never read and written unordered (v1.0.4 raced there; third_party/go-zookeeper-zk carries the fix).
func TestZKReconnectWithWatchesIsRaceFree(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t, 1)
	p, err := NewProxy("zk-reconnect", z.Connect())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c := zkConnect(t, []string{p.Addr()}, 10*time.Second, nil)
	const nodes = 20
	for i := 0; i < nodes; i++ {
		if _, err := c.Create(fmt.Sprintf("/race-%d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("Create: %v", err)
		}
	}
	session := c.SessionID()
	ctx, cancel := context.WithCancel(context.Background())
	// Readers keep requests queued while the link is down, so that replies (and their zxids) arrive
	// on the new connection while go-zookeeper re-sets the watches.
	const readers = 8
	done := make(chan int, readers)
	for r := 0; r < readers; r++ {
		go func() {
			ok := 0
			defer func() { done <- ok }()
			for i := r; ctx.Err() == nil; i++ {
				if _, _, _, err := c.GetW(fmt.Sprintf("/race-%d", i%nodes)); err == nil {
					ok++
				}
			}
		}()
	}
	const cuts = 20
	for i := 0; i < cuts; i++ {
		if err := p.Cut(); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 10*time.Second, "the session to lose its connection", func() bool { return c.State() != zk.StateHasSession })
		if err := p.Heal(); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 10*time.Second, "the session back", func() bool { return c.State() == zk.StateHasSession })
	}
	cancel()
	for r := 0; r < readers; r++ {
		if ok := <-done; ok == 0 {
			t.Errorf("a reader had no GetW succeed in the whole run")
		}
	}
	if c.SessionID() != session {
		t.Fatalf("session id %#x after %d reconnects, want %#x (the same session)", c.SessionID(), cuts, session)
	}
	if _, err := c.Set("/race-0", []byte("x"), -1); err != nil {
		t.Fatalf("Set after the reconnects: %v", err)
	}
}
