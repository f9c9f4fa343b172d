package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/internal/poll"
)

// ZooKeeper defaults used by the lab (docs/design.md "Lab timing").
const (
	// DefaultTickTime is ZooKeeper's tickTime in the lab (ZooKeeper's own default: 2000 ms). The server
	// clamps a client's requested session timeout to [2, 20] × tickTime unless min/maxSessionTimeout
	// are set; 200 ms lets 400 ms sessions through, and the lab sets maxSessionTimeout (below) so that
	// Kafka's default 18000 ms zookeeper.session.timeout.ms is not clamped either.
	DefaultTickTime = 200 * time.Millisecond
	// MaxSessionTimeoutMs is the zoo.cfg maxSessionTimeout the lab writes (ms).
	MaxSessionTimeoutMs = 60000
	// DefaultStartTimeout bounds StartZooKeeper when ctx has no earlier deadline: JVM start-up plus
	// leader election on a loaded 2-core machine.
	DefaultStartTimeout = 90 * time.Second
	// ensemble timing in ticks: initLimit 25 × 200 ms = 5 s for a follower to connect and sync,
	// syncLimit 10 × 200 ms = 2 s before a follower that lags is dropped.
	initLimitTicks = 25
	syncLimitTicks = 10
)

// Backends for ZKOptions.Backend.
const (
	BackendLocal     = "local"     // a JVM from Debian's package or $ZOOKEEPER_HOME (default)
	BackendContainer = "container" // testcontainers-go, image ContainerImage; needs a Docker engine
)

// ZKOptions configures StartZooKeeper.
type ZKOptions struct {
	Nodes    int           // 1 (standalone, default) or 3 (ensemble on loopback); up to 9 accepted
	TickTime time.Duration // default DefaultTickTime (200 ms); whole milliseconds
	Dir      string        // data and logs; default: a temp dir removed by Close
	Backend  string        // BackendLocal (default) or BackendContainer
	Log      *logrus.Entry // default: logrus' standard logger
	// StartTimeout bounds start-up and readiness (default DefaultStartTimeout); ctx may end it sooner.
	StartTimeout time.Duration
	// Host, when set, runs every node inside that test host (`ip netns exec`, local backend only),
	// bound to the host's address instead of 127.0.0.1.
	Host *Host
}

// ZooKeeper is a running standalone server or ensemble started by the lab.
type ZooKeeper struct {
	opts   ZKOptions
	dir    string
	ownDir bool // dir is a temp dir to remove on Close
	nodes  []*ZKNode
	log    *logrus.Entry

	closeOnce sync.Once
	closeErr  error
}

// ZKNode is one server of a lab ZooKeeper. Its ports and data dir stay fixed across Stop/Kill/Start.
type ZKNode struct {
	z            *ZooKeeper
	id           int // myid, 1-based
	clientPort   int
	quorumPort   int
	electionPort int
	dir          string // zoo.cfg, data/, zookeeper.log

	mu sync.Mutex
	r  nodeRunner
}

// nodeRunner runs one server: a local JVM or a container.
type nodeRunner interface {
	start(ctx context.Context) error // launch (not wait for readiness)
	stop(ctx context.Context) error  // graceful (SIGTERM), waits
	kill() error                     // SIGKILL, waits
	running() bool
	pid() int // 0 when not a local process or not running
	logTail() string
}

// StartZooKeeper starts a real ZooKeeper (standalone when o.Nodes is 0 or 1, else an ensemble of
// o.Nodes servers) on free loopback ports and returns when every node answers `ruok` with `imok`
// and `srvr` shows it serving (Mode: standalone, leader or follower). On failure everything started
// is stopped and the error carries the tail of the failing server's log. When no ZooKeeper is
// installed the error names the ways to get one (see ErrNoZooKeeper).
func StartZooKeeper(ctx context.Context, o ZKOptions) (*ZooKeeper, error) {
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.Nodes < 1 || o.Nodes > 9 {
		return nil, fmt.Errorf("lab: ZKOptions.Nodes = %d, want 1 (standalone) or 3 (ensemble)", o.Nodes)
	}
	if o.TickTime == 0 {
		o.TickTime = DefaultTickTime
	}
	if o.TickTime < time.Millisecond {
		return nil, fmt.Errorf("lab: ZKOptions.TickTime = %v, want at least 1ms", o.TickTime)
	}
	if o.Backend == "" {
		o.Backend = BackendLocal
	}
	if o.Log == nil {
		o.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	var newRunner func(n *ZKNode) (nodeRunner, error)
	switch o.Backend {
	case BackendLocal:
		inst, err := findLocalZooKeeper(os.Getenv, debianJavaDir)
		if err != nil {
			return nil, err
		}
		newRunner = func(n *ZKNode) (nodeRunner, error) { return &localRunner{inst: inst, node: n}, nil }
	case BackendContainer:
		if o.Host != nil {
			return nil, fmt.Errorf("lab: the %q backend cannot run inside a test host; use the local backend", BackendContainer)
		}
		if o.Nodes != 1 {
			return nil, fmt.Errorf("lab: the %q backend runs a standalone server only (Nodes=1), got Nodes=%d; use the local backend for an ensemble", BackendContainer, o.Nodes)
		}
		nr, err := containerBackend(ctx) // zkcontainer.go with -tags container, else an error saying to rebuild
		if err != nil {
			return nil, err
		}
		newRunner = nr
	default:
		return nil, fmt.Errorf("lab: unknown ZooKeeper backend %q (want %q or %q)", o.Backend, BackendLocal, BackendContainer)
	}

	z := &ZooKeeper{opts: o, dir: o.Dir, log: o.Log.WithField("component", "zookeeper")}
	if z.dir == "" {
		d, err := os.MkdirTemp("", "rebalancelab-zk-")
		if err != nil {
			return nil, fmt.Errorf("lab: temp dir: %w", err)
		}
		z.dir, z.ownDir = d, true
	}
	for i := 1; i <= o.Nodes; i++ {
		n := &ZKNode{z: z, id: i, dir: filepath.Join(z.dir, fmt.Sprintf("zk-%d", i))}
		r, err := newRunner(n)
		if err != nil {
			z.Close()
			return nil, err
		}
		n.r = r
		z.nodes = append(z.nodes, n)
	}

	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	// Another process can take a picked port before the JVM binds it: retry once with new ports.
	var err error
	for attempt := 1; attempt <= 2; attempt++ {
		if err = z.startAll(ctx); err == nil {
			z.log.WithFields(logrus.Fields{"connect": z.Connect(), "nodes": o.Nodes, "dir": z.dir}).Info("ZooKeeper serving")
			return z, nil
		}
		z.stopAll()
		if !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	z.Close()
	return nil, err
}

func (z *ZooKeeper) startAll(ctx context.Context) error {
	for _, n := range z.nodes {
		var err error
		if n.clientPort, err = freePort(); err != nil {
			return err
		}
		if len(z.nodes) > 1 {
			if n.quorumPort, err = freePort(); err != nil {
				return err
			}
			if n.electionPort, err = freePort(); err != nil {
				return err
			}
		}
	}
	for _, n := range z.nodes {
		if err := n.writeConfig(); err != nil {
			return err
		}
	}
	for _, n := range z.nodes {
		n.mu.Lock()
		err := n.r.start(ctx)
		n.mu.Unlock()
		if err != nil {
			return fmt.Errorf("lab: ZooKeeper node %d: %w", n.id, err)
		}
	}
	return z.waitServing(ctx)
}

func (z *ZooKeeper) stopAll() {
	for _, n := range z.nodes {
		n.mu.Lock()
		if n.r.running() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = n.r.stop(ctx)
			cancel()
		}
		n.mu.Unlock()
	}
}

// quorum is the number of running servers an ensemble needs to serve.
func (z *ZooKeeper) quorum() int { return len(z.nodes)/2 + 1 }

func (z *ZooKeeper) runningCount() int {
	c := 0
	for _, n := range z.nodes {
		if n.Running() {
			c++
		}
	}
	return c
}

// waitServing waits until every running node answers ruok=imok and, when a quorum is running,
// srvr shows a Mode on each (standalone, or leader/follower in an ensemble).
func (z *ZooKeeper) waitServing(ctx context.Context) error {
	for _, n := range z.nodes {
		if !n.Running() {
			continue
		}
		if err := n.waitReady(ctx, z.runningCount() >= z.quorum()); err != nil {
			return err
		}
	}
	return nil
}

// waitReady polls the node until ruok answers imok and (when serving is wanted) srvr shows a mode.
// A node that exits meanwhile, or ctx's end, gives an error with the node's log tail.
func (n *ZKNode) waitReady(ctx context.Context, serving bool) error {
	var mode string
	every100ms := poll.Backoff{First: 100 * time.Millisecond, Max: 100 * time.Millisecond}
	err := every100ms.UntilErr(ctx, 0, fmt.Sprintf("ZooKeeper node %d to answer", n.id), func() error {
		if !n.Running() {
			return poll.Stop(fmt.Errorf("lab: ZooKeeper node %d (%s) exited during start-up; log tail:\n%s", n.id, n.Addr(), n.logTail()))
		}
		var err error
		mode, err = n.probe(ctx, serving)
		return err
	})
	switch {
	case err == nil:
		n.z.log.WithFields(logrus.Fields{"zk_node": n.id, "addr": n.Addr(), "mode": mode}).Debug("ZooKeeper node ready")
		return nil
	case ctx.Err() == nil: // the node exited
		return err
	case errors.Is(ctx.Err(), context.Canceled):
		// Interrupted (Ctrl-C), not a failing server: its log has nothing to explain.
		return fmt.Errorf("lab: ZooKeeper node %d (%s) start-up interrupted: %w", n.id, n.Addr(), ctx.Err())
	}
	return fmt.Errorf("lab: ZooKeeper node %d (%s) not ready: %w; log tail:\n%s", n.id, n.Addr(), err, n.logTail())
}

// probe asks ruok and, if serving is wanted, srvr; it returns the srvr mode ("" when not asked).
func (n *ZKNode) probe(ctx context.Context, serving bool) (string, error) {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out, err := FourLetter(pctx, n.Addr(), "ruok")
	if err != nil {
		return "", err
	}
	if out != "imok" {
		return "", fmt.Errorf("ruok answered %q", out)
	}
	if !serving {
		return "", nil
	}
	out, err = FourLetter(pctx, n.Addr(), "srvr")
	if err != nil {
		return "", err
	}
	mode := ParseSrvrMode(out)
	want := map[string]bool{"leader": true, "follower": true}
	if len(n.z.nodes) == 1 {
		want = map[string]bool{"standalone": true}
	}
	if !want[mode] {
		return "", fmt.Errorf("srvr: %q", firstLine(out))
	}
	return mode, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// writeConfig writes the node's zoo.cfg and, for an ensemble, data/myid.
func (n *ZKNode) writeConfig() error {
	z := n.z
	data := filepath.Join(n.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	tick := z.opts.TickTime.Milliseconds()
	var b strings.Builder
	fmt.Fprintf(&b, "# written by rebalancelab's lab for node %d\n", n.id)
	fmt.Fprintf(&b, "tickTime=%d\n", tick)
	fmt.Fprintf(&b, "dataDir=%s\n", data)
	fmt.Fprintf(&b, "clientPort=%d\n", n.clientPort)
	fmt.Fprintf(&b, "clientPortAddress=%s\n", z.bindAddr())
	b.WriteString("admin.enableServer=false\n") // else every node binds port 8080
	b.WriteString("4lw.commands.whitelist=*\n")
	b.WriteString("maxClientCnxns=0\n")
	fmt.Fprintf(&b, "maxSessionTimeout=%d\n", max(MaxSessionTimeoutMs, 20*tick))
	b.WriteString("autopurge.purgeInterval=0\n")
	if len(z.nodes) > 1 {
		fmt.Fprintf(&b, "initLimit=%d\nsyncLimit=%d\n", initLimitTicks, syncLimitTicks)
		b.WriteString("reconfigEnabled=false\nstandaloneEnabled=false\n")
		for _, m := range z.nodes {
			fmt.Fprintf(&b, "server.%d=%s:%d:%d\n", m.id, z.bindAddr(), m.quorumPort, m.electionPort)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(n.id)+"\n"), 0o644); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(n.dir, "zoo.cfg"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return nil
}

// Connect is the connect string of every node: "127.0.0.1:p1,127.0.0.1:p2,...".
func (z *ZooKeeper) Connect() string {
	addrs := make([]string, len(z.nodes))
	for i, n := range z.nodes {
		addrs[i] = n.Addr()
	}
	return strings.Join(addrs, ",")
}

// Servers is Connect split, the shape go-zookeeper's zk.Connect takes.
func (z *ZooKeeper) Servers() []string { return strings.Split(z.Connect(), ",") }

// Nodes returns the servers in myid order (Nodes()[0] has myid 1).
func (z *ZooKeeper) Nodes() []*ZKNode { return z.nodes }

// Dir is the directory holding every node's zoo.cfg, data and log.
func (z *ZooKeeper) Dir() string { return z.dir }

// FourLetter sends a four-letter word (ruok, srvr, mntr, stat, cons, wchc, wchp, ...) to
// Nodes()[node] (0-based index) and returns the answer. Errors: index out of range, dial/read
// failure, ctx deadline (default 5 s when ctx has none).
func (z *ZooKeeper) FourLetter(ctx context.Context, node int, word string) (string, error) {
	if node < 0 || node >= len(z.nodes) {
		return "", fmt.Errorf("lab: ZooKeeper node index %d out of range [0,%d)", node, len(z.nodes))
	}
	return FourLetter(ctx, z.nodes[node].Addr(), word)
}

// Close stops every node (SIGTERM, then SIGKILL after 10 s) and removes the data dir when the lab
// created it. Safe to call more than once.
func (z *ZooKeeper) Close() error {
	z.closeOnce.Do(func() {
		z.stopAll()
		for _, n := range z.nodes {
			if c, ok := n.r.(interface{ close() error }); ok {
				if err := c.close(); err != nil {
					z.closeErr = errors.Join(z.closeErr, err)
				}
			}
		}
		if z.ownDir {
			if err := os.RemoveAll(z.dir); err != nil {
				z.closeErr = errors.Join(z.closeErr, fmt.Errorf("lab: remove %s: %w", z.dir, err))
			}
		}
	})
	return z.closeErr
}

// ID is the node's myid (1-based).
func (n *ZKNode) ID() int { return n.id }

// Addr is the node's client address, "127.0.0.1:port" (the test host's address with ZKOptions.Host).
func (n *ZKNode) Addr() string { return fmt.Sprintf("%s:%d", n.z.bindAddr(), n.clientPort) }

// bindAddr is the address the nodes listen on: loopback, or the test host's.
func (z *ZooKeeper) bindAddr() string {
	if z.opts.Host != nil {
		return z.opts.Host.Addr()
	}
	return "127.0.0.1"
}

// Host is the test host the nodes run in (ZKOptions.Host), or nil.
func (z *ZooKeeper) Host() *Host { return z.opts.Host }

// Running reports whether the node's server process (or container) is running.
func (n *ZKNode) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.r.running()
}

// PID is the server JVM's process id (local backend), 0 when not running or in a container.
func (n *ZKNode) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.r.pid()
}

// LogPath is the node's server log file (local backend).
func (n *ZKNode) LogPath() string { return filepath.Join(n.dir, "zookeeper.log") }

func (n *ZKNode) logTail() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.r.logTail()
}

// Stop stops the node gracefully (SIGTERM) and waits for it to exit; if ctx ends first it is killed
// (SIGKILL) and the error says so. Stopping a stopped node is a no-op.
func (n *ZKNode) Stop(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.r.running() {
		return nil
	}
	n.z.log.WithField("zk_node", n.id).Info("stopping ZooKeeper node")
	return n.r.stop(ctx)
}

// Kill kills the node with SIGKILL (no shutdown, like a crashed machine) and waits for the exit.
func (n *ZKNode) Kill() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.r.running() {
		return nil
	}
	n.z.log.WithField("zk_node", n.id).Info("killing ZooKeeper node")
	return n.r.kill()
}

// Start starts a stopped node again with the same ports and data, and waits until it answers ruok
// and, if a quorum of the ensemble is running, until every running node serves. Starting a running
// node is a no-op.
func (n *ZKNode) Start(ctx context.Context) error {
	n.mu.Lock()
	if n.r.running() {
		n.mu.Unlock()
		return nil
	}
	n.z.log.WithField("zk_node", n.id).Info("starting ZooKeeper node")
	err := n.r.start(ctx)
	n.mu.Unlock()
	if err != nil {
		return fmt.Errorf("lab: ZooKeeper node %d: %w", n.id, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, n.z.opts.StartTimeout)
		defer cancel()
	}
	if n.z.runningCount() >= n.z.quorum() {
		return n.z.waitServing(ctx)
	}
	return n.waitReady(ctx, false)
}

// ---- local backend ----------------------------------------------------------------------------

// debianJavaDir is where Debian's zookeeper package puts its jars.
const debianJavaDir = "/usr/share/java"

// debianJars is the server's classpath from Debian's package (zookeeper 3.8.0, Debian 12).
var debianJars = []string{
	"zookeeper", "zookeeper-jute", "slf4j-api", "slf4j-simple", "netty-handler", "netty-common",
	"netty-buffer", "netty-transport", "netty-codec", "netty-resolver", "netty-transport-native-epoll",
	"netty-transport-native-unix-common", "metrics-core", "commons-cli", "snappy-java",
}

// zkMainClass runs a standalone server or an ensemble member, depending on zoo.cfg.
const zkMainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// ErrNoZooKeeper is wrapped by the error StartZooKeeper returns when no local ZooKeeper (or no java)
// is found; the message names the ways to get one.
var ErrNoZooKeeper = errors.New("no ZooKeeper server found")

const howToGetZooKeeper = "get one of: Debian's package (apt-get install zookeeper default-jre-headless), " +
	"or an Apache ZooKeeper 3.8 binary distribution with $ZOOKEEPER_HOME pointing at it (java from $JAVA_HOME or PATH), " +
	"or a running server/ensemble passed with --zk HOST:PORT"

type zkInstall struct {
	java      string
	classpath []string
	source    string // "$ZOOKEEPER_HOME=..." or "Debian package"
}

// findLocalZooKeeper uses $ZOOKEEPER_HOME when it is set (lib/*.jar, the server jar in the top dir,
// conf/ for its logback.xml): a $ZOOKEEPER_HOME that does not exist or holds no server jar is an error
// naming the variable, never a silent fallback. Unset, it uses Debian's jars in javaDir. java comes
// from $JAVA_HOME/bin/java or PATH.
func findLocalZooKeeper(getenv func(string) string, javaDir string) (*zkInstall, error) {
	java := ""
	if jh := getenv("JAVA_HOME"); jh != "" {
		if p := filepath.Join(jh, "bin", "java"); isFile(p) {
			java = p
		}
	}
	if java == "" {
		for _, dir := range filepath.SplitList(getenv("PATH")) {
			if p := filepath.Join(dir, "java"); isExecutable(p) {
				java = p
				break
			}
		}
	}

	var inst *zkInstall
	var why []string
	if home := getenv("ZOOKEEPER_HOME"); home != "" {
		jars, _ := filepath.Glob(filepath.Join(home, "lib", "*.jar"))
		top, _ := filepath.Glob(filepath.Join(home, "*.jar"))
		jars = append(top, jars...)
		hasServer := false
		for _, j := range jars {
			if b := filepath.Base(j); strings.HasPrefix(b, "zookeeper-3") || b == "zookeeper.jar" {
				hasServer = true
			}
		}
		switch st, err := os.Stat(home); {
		case err != nil || !st.IsDir():
			return nil, fmt.Errorf("lab: %w: $ZOOKEEPER_HOME=%s is not a directory; point ZOOKEEPER_HOME at an Apache ZooKeeper 3.8 binary distribution or unset it (then Debian's package is used); %s",
				ErrNoZooKeeper, home, howToGetZooKeeper)
		case !hasServer:
			return nil, fmt.Errorf("lab: %w: $ZOOKEEPER_HOME=%s has no zookeeper-3*.jar in it or in lib/; point ZOOKEEPER_HOME at an Apache ZooKeeper 3.8 binary distribution or unset it (then Debian's package is used); %s",
				ErrNoZooKeeper, home, howToGetZooKeeper)
		}
		sort.Strings(jars)
		inst = &zkInstall{classpath: append([]string{filepath.Join(home, "conf")}, jars...), source: "$ZOOKEEPER_HOME=" + home}
	}
	if inst == nil {
		var cp, missing []string
		for _, j := range debianJars {
			p := filepath.Join(javaDir, j+".jar")
			if isFile(p) {
				cp = append(cp, p)
			} else {
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			inst = &zkInstall{classpath: cp, source: "Debian package (" + javaDir + ")"}
		} else {
			why = append(why, fmt.Sprintf("no Debian package jars (missing %s)", strings.Join(missing, ", ")))
		}
	}
	if inst == nil {
		return nil, fmt.Errorf("lab: %w: %s; %s", ErrNoZooKeeper, strings.Join(why, "; "), howToGetZooKeeper)
	}
	if java == "" {
		return nil, fmt.Errorf("lab: %w: ZooKeeper jars found (%s) but no java ($JAVA_HOME unset or without bin/java, none on PATH); %s",
			ErrNoZooKeeper, inst.source, howToGetZooKeeper)
	}
	inst.java = java
	return inst, nil
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// localRunner runs the node as a JVM child process.
type localRunner struct {
	inst *zkInstall
	node *ZKNode
	p    *proc
}

func (r *localRunner) start(ctx context.Context) error {
	n := r.node
	argv := []string{r.inst.java,
		"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.net.preferIPv4Stack=true",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
		"-Dzookeeper.console.threshold=INFO",
		"-cp", strings.Join(r.inst.classpath, string(os.PathListSeparator)),
		zkMainClass, filepath.Join(n.dir, "zoo.cfg"),
	}
	if h := n.z.opts.Host; h != nil {
		argv = h.Argv(argv...)
	}
	p, err := startProc(argv, n.dir, os.Environ(), n.LogPath())
	if err != nil {
		return err
	}
	r.p = p
	return nil
}

func (r *localRunner) stop(ctx context.Context) error { return r.p.stop(ctx) }
func (r *localRunner) kill() error                    { r.p.kill(); return nil }
func (r *localRunner) running() bool                  { return r.p != nil && !r.p.exited() }
func (r *localRunner) logTail() string {
	if r.p == nil {
		return fileTail(r.node.LogPath(), 4096)
	}
	return r.p.logTail()
}
func (r *localRunner) pid() int {
	if !r.running() {
		return 0
	}
	return r.p.pid()
}
