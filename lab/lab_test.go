package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

func startLab(t *testing.T, o Options) *Lab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if o.Log == nil {
		o.Log = testLog(t)
	}
	l, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("lab.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("lab Close: %v", err)
		}
	})
	return l
}

type brokerZNodeJSON struct {
	Version int    `json:"version"`
	Host    string `json:"host"`
	Port    int    `json:"port"`
	JMXPort int    `json:"jmx_port"`
}

// registered reads /brokers/ids/<id> ("" when absent).
func registered(t *testing.T, c *zk.Conn, id int32) (brokerZNodeJSON, bool) {
	t.Helper()
	data, _, err := c.Get("/brokers/ids/" + strconv.Itoa(int(id)))
	if errors.Is(err, zk.ErrNoNode) {
		return brokerZNodeJSON{}, false
	}
	if err != nil {
		t.Fatalf("get /brokers/ids/%d: %v", id, err)
	}
	var b brokerZNodeJSON
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatalf("/brokers/ids/%d = %s: %v", id, data, err)
	}
	return b, true
}

// TestLabTwoBrokers: lab.Start with 2 in-process brokers registers ids 1 and 2 with their addresses;
// Stop deregisters (graceful close of the ZooKeeper session), Start comes back on the same port.
func TestLabTwoBrokers(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	l := startLab(t, Options{Brokers: 2})
	if l.ZooKeeper() == nil || l.ZKConnect() != l.ZooKeeper().Connect() {
		t.Fatalf("ZooKeeper() = %v, ZKConnect() = %q", l.ZooKeeper(), l.ZKConnect())
	}
	bs := l.Brokers()
	if len(bs) != 2 || bs[0].ID() != 1 || bs[1].ID() != 2 {
		t.Fatalf("Brokers() ids = %v", bs)
	}
	if l.Bootstrap() != bs[0].Addr()+","+bs[1].Addr() {
		t.Fatalf("Bootstrap() = %q", l.Bootstrap())
	}
	c := zkConnect(t, strings.Split(l.ZKConnect(), ","), 4*time.Second, nil)
	ids, _, err := c.Children("/brokers/ids")
	slices.Sort(ids)
	if err != nil || !reflect.DeepEqual(ids, []string{"1", "2"}) {
		t.Fatalf("/brokers/ids = %v, %v; want [1 2]", ids, err)
	}
	for _, b := range bs {
		got, _ := registered(t, c, b.ID())
		if want := (brokerZNodeJSON{Version: 1, Host: "127.0.0.1", Port: portOf(t, b.Addr()), JMXPort: -1}); got != want {
			t.Fatalf("/brokers/ids/%d = %+v, want %+v", b.ID(), got, want)
		}
		if b.Broker() == nil || b.Broker().Addr() != b.Addr() {
			t.Fatalf("broker %d: in-process Broker() = %v", b.ID(), b.Broker())
		}
		p := b.Properties()
		if p["zookeeper.session.timeout.ms"] != "2000" || p["group.initial.rebalance.delay.ms"] != "0" || p["offsets.topic.replication.factor"] != "2" {
			t.Fatalf("broker %d properties lack the lab's settings: %v", b.ID(), p)
		}
	}
	if err := bs[0].Kill(); !errors.Is(err, ErrKillInProcess) {
		t.Fatalf("Kill of an in-process broker: %v, want ErrKillInProcess", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := bs[0].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if bs[0].Running() {
		t.Fatal("Running() after Stop")
	}
	testutil.WaitFor(t, 10*time.Second, "/brokers/ids/1 gone after Stop", func() bool { _, ok := registered(t, c, 1); return !ok })
	if _, err := net.Dial("tcp", bs[0].Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial a stopped broker: %v", err)
	}
	if err := bs[0].Start(ctx); err != nil {
		t.Fatal(err)
	}
	got, ok := registered(t, c, 1)
	if !ok || got.Port != portOf(t, bs[0].Addr()) {
		t.Fatalf("after restart /brokers/ids/1 = %+v, %v", got, ok)
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// TestLabBrokerProcessKill9: a broker run as a process can be killed with SIGKILL: no goodbye, so its
// registration lasts until ZooKeeper expires the session (>= 2/3 of zookeeper.session.timeout.ms
// after the kill); Start brings it back on the same address. Close leaves no process behind.
func TestLabBrokerProcessKill9(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bin := rebalancelabBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := Start(ctx, Options{BrokersAs: BrokersProcess, BrokerBinary: bin, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := l.Brokers()[0]
	c := zkConnect(t, strings.Split(l.ZKConnect(), ","), 4*time.Second, nil)
	if got, ok := registered(t, c, 1); !ok || got.Port != portOf(t, b.Addr()) {
		t.Fatalf("/brokers/ids/1 = %+v, %v", got, ok)
	}
	pid := b.PID()
	if pid <= 0 || !processAlive(pid) || b.Broker() != nil {
		t.Fatalf("PID() = %d (alive %v), Broker() = %v", pid, processAlive(pid), b.Broker())
	}
	_, _, gone, err := c.ExistsW("/brokers/ids/1")
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	if processAlive(pid) || b.Running() {
		t.Fatalf("broker pid %d alive after Kill", pid)
	}
	select {
	case ev := <-gone:
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("/brokers/ids/1 still there 15 s after kill -9 (session timeout 2 s)")
	}
	if el := time.Since(killed); el < time.Second {
		t.Fatalf("/brokers/ids/1 vanished %v after kill -9: a session timeout of 2 s cannot expire that fast (was the session closed?)", el)
	}

	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if b.PID() == pid || b.PID() <= 0 {
		t.Fatalf("restarted PID() = %d (old %d)", b.PID(), pid)
	}
	if got, ok := registered(t, c, 1); !ok || got.Port != portOf(t, b.Addr()) {
		t.Fatalf("after restart /brokers/ids/1 = %+v, %v", got, ok)
	}
	newPID, jvm := b.PID(), l.ZooKeeper().Nodes()[0].PID()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if processAlive(newPID) || processAlive(jvm) {
		t.Fatalf("after Close: broker pid %d alive=%v, JVM pid %d alive=%v", newPID, processAlive(newPID), jvm, processAlive(jvm))
	}
}

// TestLabExternalZooKeeper: with ExternalZK the lab starts no ZooKeeper and leaves it running on Close.
func TestLabExternalZooKeeper(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t, 1)
	l := startLab(t, Options{ExternalZK: z.Connect(), Brokers: 1})
	if l.ZooKeeper() != nil || l.ZKConnect() != z.Connect() {
		t.Fatalf("ZooKeeper() = %v, ZKConnect() = %q", l.ZooKeeper(), l.ZKConnect())
	}
	c := zkConnect(t, z.Servers(), 4*time.Second, nil)
	if _, ok := registered(t, c, 1); !ok {
		t.Fatal("/brokers/ids/1 missing")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if out, err := z.FourLetter(context.Background(), 0, "ruok"); err != nil || out != "imok" {
		t.Fatalf("external ZooKeeper after lab Close: %q, %v", out, err)
	}
}

func TestLabOptionErrors(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		o    Options
		want string
	}{
		"process without binary": {Options{BrokersAs: BrokersProcess}, "needs BrokerBinary"},
		"unknown mode":           {Options{BrokersAs: "thread"}, `unknown BrokersAs "thread"`},
		"lab-owned key":          {Options{BrokerConfig: map[string]string{"broker.id": "7"}}, `"broker.id" is set by the lab`},
		"negative brokers":       {Options{Brokers: -1}, "Options.Brokers = -1"},
		"unknown broker key":     {Options{BrokerConfig: map[string]string{"no.such.key": "1"}, ExternalZK: "127.0.0.1:1"}, `unknown key "no.such.key"`},
	} {
		t.Run(name, func(t *testing.T) {
			tc.o.Dir = t.TempDir()
			tc.o.Log = testLog(t)
			l, err := Start(ctx, tc.o)
			if err == nil {
				l.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// childPIDs lists the processes whose parent is pid (from /proc).
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
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, p)
		}
	}
	return kids
}

// TestLabUpCLI runs `rebalancelab lab up --zk-nodes 3 --brokers 2`: the first stdout line is the
// contract's JSON; everything answers; SIGTERM stops it with exit 0 and no JVM left.
func TestLabUpCLI(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bin := rebalancelabBinary(t)
	cmd := exec.Command(bin, "lab", "up", "--zk-nodes", "3", "--brokers", "2", "--log-level", "warn")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "lab-up.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() {
		}
		exited <- cmd.Wait()
	}()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no first line from lab up in 2 min; log:\n%s", fileTail(logPath, 4000))
	}
	if !strings.HasPrefix(line, `{"zookeeper":"127.0.0.1:`) {
		t.Fatalf("first line %q; log:\n%s", line, fileTail(logPath, 4000))
	}
	var up struct {
		ZooKeeper string   `json:"zookeeper"`
		Brokers   []string `json:"brokers"`
	}
	if err := json.Unmarshal([]byte(line), &up); err != nil {
		t.Fatalf("first line %q: %v", line, err)
	}
	zks := strings.Split(up.ZooKeeper, ",")
	if len(zks) != 3 || len(up.Brokers) != 2 {
		t.Fatalf("first line %q: want 3 ZooKeeper servers and 2 brokers", line)
	}
	for _, a := range zks {
		out, err := FourLetter(context.Background(), a, "srvr")
		if m := ParseSrvrMode(out); err != nil || (m != "leader" && m != "follower") {
			t.Fatalf("%s srvr mode %q, %v", a, m, err)
		}
	}
	c := zkConnect(t, zks, 4*time.Second, nil)
	ids, _, err := c.Children("/brokers/ids")
	slices.Sort(ids)
	if err != nil || !reflect.DeepEqual(ids, []string{"1", "2"}) {
		t.Fatalf("/brokers/ids = %v, %v", ids, err)
	}
	for _, a := range up.Brokers {
		conn, err := net.Dial("tcp", a)
		if err != nil {
			t.Fatalf("broker %s: %v", a, err)
		}
		conn.Close()
	}
	c.Close()
	kids := childPIDs(cmd.Process.Pid)
	if len(kids) != 3 {
		t.Fatalf("lab up has %d child processes (%v), want 3 ZooKeeper JVMs", len(kids), kids)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("lab up exited with %v; log:\n%s", err, fileTail(logPath, 4000))
		}
	case <-time.After(time.Minute):
		t.Fatal("lab up still running 1 min after SIGTERM")
	}
	for _, k := range kids {
		if processAlive(k) {
			t.Fatalf("JVM pid %d alive after lab up exited", k)
		}
	}
	if _, err := FourLetter(context.Background(), zks[0], "ruok"); err == nil {
		t.Fatal("ZooKeeper still answers after lab up exited")
	}
}
