package members

// Member pools (Pools; the runner's --members-per-process K): K members share one `rebalancelab
// member-pool` process, so that a storm of 10,000 members spreads its connections over processes
// whose file descriptors (RLIMIT_NOFILE, per process) each hold a share. A pooled member is the same consumer a
// member process or a goroutine member runs (NewGoroutine's), with its own connections, timeline and
// session: only the process is shared.
//
// The channel, runner → pool: one JSON command a line on stdin —
//
//	{"cmd":"start","member":"m5","props":{...},"routes":["fetch:UP=PROXY",...]}  build and run a member
//	{"cmd":"stop","member":"m5"}     graceful (zk Shutdown; newconsumer Close with its LeaveGroup)
//	{"cmd":"kill","member":"m5"}     crash: zk Crash, newconsumer Kill (no commit, no LeaveGroup; the
//	                                  runner has cut the member's links at its proxies first, so that
//	                                  no closeSession reaches ZooKeeper, as for a goroutine member)
//	{"cmd":"session","member":"m5"}  its ZooKeeper session id
//
// pool → runner, on stdout: the members' timeline records (each names its member) and control lines
// {"ctl":"ended","member":"m5","error":"..."} once a member's run has returned (stopped, or gave up:
// error set), {"ctl":"session","member":"m5","session_id":N} and, every poolStatsEvery,
// {"ctl":"stats","goroutines":N}. The end of stdin or SIGTERM stops every member gracefully, then the
// pool exits 0. A crash of the whole pool is its kill -9 (the runner's, at the end of a cancelled era).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// poolStatsEvery is how often a pool reports its goroutine count.
const poolStatsEvery = 250 * time.Millisecond

// poolCmd is one command line of the runner to a pool.
type poolCmd struct {
	Cmd    string            `json:"cmd"` // start, stop, kill, session
	Member string            `json:"member"`
	Props  map[string]string `json:"props,omitempty"`
	Routes []string          `json:"routes,omitempty"` // lab.Route.String()
}

// poolCtl is a control line of a pool (records never have "ctl").
type poolCtl struct {
	Ctl        string `json:"ctl"` // ended, session, stats; hello and error on a member host (agent.go)
	Member     string `json:"member,omitempty"`
	Host       string `json:"host,omitempty"` // hello: the member host's hostname
	Error      string `json:"error,omitempty"`
	SessionID  int64  `json:"session_id,omitempty"`
	Goroutines int64  `json:"goroutines,omitempty"`
}

// PoolOptions configures RunMemberPool (`rebalancelab member-pool`).
type PoolOptions struct {
	Era, Topic string
	// Client is what each member runs: ClientEra ("", the era's consumer, writing its timeline) or
	// ClientKgo (franz-go's kgo group consumer from KgoOptions' configs, writing none: bench storm's peer).
	Client string
	Out    io.Writer // timeline records and control lines, JSON lines (stdout)
	In     io.Reader // the runner's commands, JSON lines (stdin)
	Log    *logrus.Entry
}

// pooled is one member running in a pool.
type pooled struct {
	impl   Runtime
	cancel context.CancelFunc
	done   chan struct{} // its run has returned

	mu       sync.Mutex
	stopping bool // a stop or kill command took it: that command reports its end
	ranOut   bool // its run returned
}

// RunMemberPool runs members as the runner's commands start and stop them, until ctx ends (SIGTERM)
// or o.In ends; then it stops the members still running gracefully and waits for them. A malformed
// command is logged and skipped; an error means the era or the channel is unusable.
func RunMemberPool(ctx context.Context, o PoolOptions) error {
	if _, err := spec.ParseEras([]string{o.Era}); err != nil || o.Era == spec.All {
		return fmt.Errorf("member-pool: --era %q: want one of %s", o.Era, strings.Join(spec.Names(spec.Eras()), ", "))
	}
	if o.Client != ClientEra && o.Client != ClientKgo {
		return fmt.Errorf("member-pool: --client %q: want kgo, or none for the era's own consumer", o.Client)
	}
	out := &lineOut{w: o.Out}
	var (
		mu      sync.Mutex
		members = map[string]*pooled{}
		wg      sync.WaitGroup // every member's run and stop
	)
	cmds := make(chan poolCmd)
	readDone := make(chan struct{})
	go func() { // ends with the process (a blocked read) or at the end of o.In
		defer close(readDone)
		sc := bufio.NewScanner(o.In)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var c poolCmd
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil || c.Member == "" {
				o.Log.WithField("line", sc.Text()).Warn("member-pool: not a command (want a JSON line with cmd and member)")
				continue
			}
			select {
			case cmds <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	statsDone := make(chan struct{})
	stopStats := make(chan struct{})
	go func() {
		defer close(statsDone)
		t := time.NewTicker(poolStatsEvery)
		defer t.Stop()
		for {
			select {
			case <-stopStats:
				return
			case <-t.C:
				out.write(poolCtl{Ctl: "stats", Goroutines: int64(runtime.NumGoroutine())})
			}
		}
	}()
	defer func() { close(stopStats); <-statsDone }()

	var ended func(name string, err error)
	start := func(c poolCmd) {
		mu.Lock()
		if m := members[c.Member]; m != nil {
			mu.Unlock()
			o.Log.WithField("member", c.Member).Warn("member-pool: start of a member that is running")
			return
		}
		mu.Unlock()
		var routes []lab.Route
		for _, s := range c.Routes {
			rt, err := lab.ParseRoute(s)
			if err != nil {
				out.write(poolCtl{Ctl: "ended", Member: c.Member, Error: err.Error()})
				return
			}
			routes = append(routes, rt)
		}
		log := o.Log.WithField("member", c.Member)
		rec := &timeline.Recorder{Sink: out, Era: o.Era, Member: c.Member}
		var impl Runtime
		var err error
		if o.Client == ClientKgo {
			impl, err = newKgoMember(o.Topic, c.Props, lab.NewRoutedLinks(routes))
		} else {
			impl, err = newConsumer(o.Era, o.Topic, c.Props, lab.NewRoutedLinks(routes), rec, log)
		}
		if err != nil {
			out.write(poolCtl{Ctl: "ended", Member: c.Member, Error: err.Error()})
			return
		}
		rctx, cancel := context.WithCancel(context.Background()) // ended after its stop, not by ctx
		m := &pooled{impl: impl, cancel: cancel, done: make(chan struct{})}
		mu.Lock()
		members[c.Member] = m
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := impl.Run(rctx)
			m.mu.Lock()
			m.ranOut = true
			byStop := m.stopping
			m.mu.Unlock()
			if byStop { // the stop reports the end, once its goodbye has been recorded
				close(m.done)
				return
			}
			if err != nil {
				impl.Stop(true) // the application gives up and closes its consumer
			}
			close(m.done)
			ended(c.Member, err)
		}()
	}
	// ended forgets a member and reports its end, after every record it wrote.
	ended = func(name string, err error) {
		mu.Lock()
		delete(members, name)
		mu.Unlock()
		ctl := poolCtl{Ctl: "ended", Member: name}
		if err != nil {
			ctl.Error = fmt.Sprintf("member %s gives up: %v", name, err)
		}
		out.write(ctl)
	}
	stop := func(name string, m *pooled, graceful bool) {
		m.mu.Lock()
		if m.stopping || m.ranOut { // another stop reports its end, or its run does (it ended by itself)
			m.mu.Unlock()
			<-m.done
			return
		}
		m.stopping = true
		m.mu.Unlock()
		m.impl.Stop(graceful)
		m.cancel()
		<-m.done
		ended(name, nil)
	}
	stopAll := func() {
		mu.Lock()
		ms := maps.Clone(members)
		mu.Unlock()
		for name, m := range ms {
			wg.Add(1)
			go func() { defer wg.Done(); stop(name, m, true) }()
		}
		wg.Wait()
	}
	for {
		select {
		case <-ctx.Done():
			stopAll()
			return nil
		case <-readDone:
			stopAll()
			return nil
		case c := <-cmds:
			mu.Lock()
			m := members[c.Member]
			mu.Unlock()
			switch c.Cmd {
			case "start":
				start(c)
			case "stop", "kill":
				if m == nil {
					o.Log.WithField("member", c.Member).Warnf("member-pool: %s of a member that is not running", c.Cmd)
					continue
				}
				wg.Add(1)
				go func() { defer wg.Done(); stop(c.Member, m, c.Cmd == "stop") }()
			case "session":
				var id int64
				if m != nil {
					id = m.impl.ZKSession()
				}
				out.write(poolCtl{Ctl: "session", Member: c.Member, SessionID: id})
			default:
				o.Log.WithField("command", c.Cmd).Warn("member-pool: unknown command (want start, stop, kill or session)")
			}
		}
	}
}

// ---- the runner's side ----

// memberPool is the runner's handle on one pool: a child process (startPool) or a connection to a
// member host (startRemotePool, agent.go). It starts with the first member placed in it and ends at
// the era's end (Pools.Close).
type memberPool struct {
	log    *logrus.Entry
	onExit func(MemberProcess)
	exited chan struct{} // closed once the pool has ended and its output was read
	host   string        // the member host's name, stamped on its records ("" for a child process)

	mu      sync.Mutex
	pid     int                    // the child process's (0: a remote pool)
	stdin   io.WriteCloser         // commands; closing it ends the pool gracefully
	kill    func()                 // ends the pool at once
	members map[string]*poolMember // by name, while running
	gone    bool                   // the pool has ended
	stopReq string

	goroutines atomic.Int64 // its last stats line
}

func newMemberPool(log *logrus.Entry, onExit func(MemberProcess)) *memberPool {
	return &memberPool{log: log, onExit: onExit, exited: make(chan struct{}), members: map[string]*poolMember{}}
}

// startPool starts a pool process; the goroutine that waits for it is the pool's own and ends with
// the process (Pools.Close waits for it).
func startPool(argv []string, log *logrus.Entry, onExit func(MemberProcess)) (*memberPool, error) {
	p := newMemberPool(log, onExit)
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // Pdeathsig (lab.ChildSysProcAttr) follows the thread that forked
		defer runtime.UnlockOSThread()
		defer close(p.exited)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = lab.ChildSysProcAttr()
		cmd.Stdout = LineWriter(p.stdoutLine)
		cmd.Stderr = LineWriter(func(b []byte) { logChildLine(log, b) })
		stdin, err := cmd.StdinPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			started <- fmt.Errorf("start member pool process: %w", err)
			return
		}
		p.mu.Lock()
		p.pid, p.stdin, p.kill = cmd.Process.Pid, stdin, func() { _ = cmd.Process.Signal(syscall.SIGKILL) }
		p.mu.Unlock()
		started <- nil
		_ = cmd.Wait()
		st := cmd.ProcessState
		mp := MemberProcess{Member: "pool", PID: cmd.Process.Pid, ExitCode: st.ExitCode(), Status: st.String()}
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			mp.Signal = SignalName(ws.Signal())
		}
		p.end(mp, fmt.Sprintf("member pool process %d: %s", mp.PID, mp.Status))
	}()
	if err := <-started; err != nil {
		<-p.exited
		return nil, err
	}
	return p, nil
}

// end marks the pool ended: the members it still ran end with why, and onExit gets mp (with the
// stop the runner asked for).
func (p *memberPool) end(mp MemberProcess, why string) {
	p.mu.Lock()
	p.gone = true
	mp.Stop = p.stopReq
	left := make([]*poolMember, 0, len(p.members))
	for _, m := range p.members {
		left = append(left, m)
	}
	p.members = map[string]*poolMember{}
	p.mu.Unlock()
	for _, m := range left { // the pool ended with them
		m.finish(errors.New(why))
	}
	if p.onExit != nil {
		p.onExit(mp)
	}
}

// send writes one command; false when the pool has ended.
func (p *memberPool) send(c poolCmd) bool {
	b, err := json.Marshal(c)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone || p.stdin == nil {
		return false
	}
	_, err = p.stdin.Write(append(b, '\n'))
	return err == nil
}

func (p *memberPool) stdoutLine(b []byte) {
	if bytes.HasPrefix(b, ctlPrefix) {
		var c poolCtl
		if json.Unmarshal(b, &c) != nil {
			return
		}
		switch c.Ctl {
		case "stats":
			p.goroutines.Store(c.Goroutines)
		case "session", "ended":
			p.mu.Lock()
			m := p.members[c.Member]
			if c.Ctl == "ended" {
				delete(p.members, c.Member)
			}
			p.mu.Unlock()
			if m == nil {
				return
			}
			if c.Ctl == "session" {
				select {
				case m.sessions <- c.SessionID:
				default:
				}
				return
			}
			var err error
			if c.Error != "" {
				err = errors.New(c.Error)
			}
			m.finish(err)
		}
		return
	}
	rec, ok := decodeRecord(b, p.host, p.log, "member pool")
	if !ok {
		return
	}
	p.mu.Lock()
	m := p.members[rec.Member]
	p.mu.Unlock()
	if m != nil {
		m.sink.Emit(rec)
	}
}

// close ends the pool: its stdin closed (every member still running stops gracefully) and, after
// memberStopWait or at once when !graceful, SIGKILL; it returns once the process has been waited for.
func (p *memberPool) close(graceful bool) {
	p.mu.Lock()
	if p.stopReq == "" {
		p.stopReq = map[bool]string{true: "stop", false: "sigkill"}[graceful]
	}
	if p.stdin != nil {
		_ = p.stdin.Close()
	}
	p.mu.Unlock()
	if graceful && awaitStop(p.log, "member pool did not stop within 60 s of the end of its stdin: killed", p.exited) {
		return
	}
	p.mu.Lock()
	if p.kill != nil && !p.gone {
		p.kill()
	}
	p.mu.Unlock()
	<-p.exited
}

// poolMember is the runner's handle on one member in a pool; it implements Runtime.
type poolMember struct {
	pool   *memberPool
	name   string
	props  map[string]string
	routes []lab.Route
	sink   timeline.Sink

	sessMu     sync.Mutex
	sessions   chan int64
	registered chan struct{} // closed once run has put it in its pool (or found the pool gone)
	ended      chan struct{} // closed by finish
	once       sync.Once
	err        error
}

func newPoolMember(p *memberPool, name string, props map[string]string, routes []lab.Route, sink timeline.Sink) *poolMember {
	return &poolMember{pool: p, name: name, props: props, routes: routes, sink: sink,
		sessions: make(chan int64, 1), registered: make(chan struct{}), ended: make(chan struct{})}
}

func (m *poolMember) finish(err error) {
	m.once.Do(func() { m.err = err; close(m.ended) })
}

// Run starts the member in its pool and waits until it has ended there (or, when ctx ends first,
// crashes it and waits for that).
func (m *poolMember) Run(ctx context.Context) error {
	m.pool.mu.Lock()
	if m.pool.gone {
		m.pool.mu.Unlock()
		m.finish(errors.New("member pool process has ended"))
		close(m.registered)
		return m.err
	}
	m.pool.members[m.name] = m
	m.pool.mu.Unlock()
	close(m.registered)
	rs := make([]string, len(m.routes))
	for i, r := range m.routes {
		rs[i] = r.String()
	}
	if !m.pool.send(poolCmd{Cmd: "start", Member: m.name, Props: m.props, Routes: rs}) {
		m.finish(errors.New("member pool process has ended"))
	}
	select {
	case <-m.ended:
	case <-ctx.Done():
		m.pool.send(poolCmd{Cmd: "kill", Member: m.name})
		// the pool answers, or its end ends its members; a pool that does neither is killed by
		// Pools.Close once the era's members have been waited for
		awaitStop(m.pool.log.WithField("member", m.name), "pooled member not stopped within 60 s of its era's end", m.ended)
	}
	return m.err
}

// Stop asks the pool to stop the member (graceful: stop; not: kill) and waits until it has ended
// there (or the pool has: it ends its members), at most memberStopWait.
func (m *poolMember) Stop(graceful bool) {
	<-m.registered
	select {
	case <-m.ended:
		return
	default:
	}
	m.pool.send(poolCmd{Cmd: map[bool]string{true: "stop", false: "kill"}[graceful], Member: m.name})
	awaitStop(m.pool.log.WithField("member", m.name), "pooled member did not stop within 60 s", m.ended)
}

// ZKSession asks the pool; 0 when it does not answer within 3 s.
func (m *poolMember) ZKSession() int64 {
	m.sessMu.Lock()
	defer m.sessMu.Unlock()
	return askSession(m.sessions, m.ended, func() bool { return m.pool.send(poolCmd{Cmd: "session", Member: m.name}) })
}

// OwnProcess: a pooled member shares its process, so it crashes as a goroutine member does (its links
// cut by the caller, then a kill command: its consumer stopped without a goodbye), not by a kill -9.
func (m *poolMember) OwnProcess() bool { return false }

// poolArgv is the command line of a pool process running client's members (ClientEra, ClientKgo).
func poolArgv(bin, logLevel, era, topic, client string) []string {
	argv := []string{bin, "--log-level", logLevel, "member-pool", "--era", era, "--topic", topic}
	if client != ClientEra {
		argv = append(argv, "--client", client)
	}
	return argv
}

// RemoteHost is a member host: a `rebalancelab member-pool --listen` server on another machine.
type RemoteHost struct {
	Name string // as the result and the records name it (agent1, ...)
	Addr string // host:port
}

// PoolsConfig configures NewPools.
type PoolsConfig struct {
	Era, Topic string
	// PerProcess is how many members a pool holds (K; below 1: 1).
	PerProcess int
	// Binary and LogLevel make the local pool processes (`Binary --log-level L member-pool`); unused
	// with Hosts.
	Binary, LogLevel string
	// Hosts, when set, are the member hosts the pools open on instead, round-robin by pool.
	Hosts []RemoteHost
	Log   *logrus.Entry // each pool's log gets its index ("pool")
	// OnExit, when set, gets how each pool ended, named pool0, pool1, ...
	OnExit func(MemberProcess)
	// OnPlace, when set, is told each time a member is placed in a pool on a member host.
	OnPlace func(host, member string)
}

// Pools are one era's member pools: members take slots in the order they first start, PerProcess
// to a pool, a pool starts with the first member placed in it, and a restarted member goes back to
// its pool. Safe for concurrent use.
type Pools struct {
	ctx context.Context // dials the member hosts
	c   PoolsConfig

	mu    sync.Mutex
	pools map[int]*memberPool // by slot / PerProcess
	slots map[string]int
}

// NewPools makes an era's pools; ctx (the era's) bounds the connections to member hosts. Nothing
// starts until the first member.
func NewPools(ctx context.Context, c PoolsConfig) *Pools {
	return &Pools{ctx: ctx, c: c, pools: map[int]*memberPool{}, slots: map[string]int{}}
}

// PooledConfig configures Pools.Member.
type PooledConfig struct {
	Member
	Routes []lab.Route // the runner's proxies for the member's faulted links (none: it dials directly)
}

// Member makes the runtime of a member in its pool, starting the pool when it is the first there;
// its Run starts it there. Its records go to c.Rec.Sink as the pool wrote them. Errors: a pool that
// cannot start (a process, or a member host that cannot be reached or refuses the hello).
func (ps *Pools) Member(c PooledConfig) (Runtime, error) {
	name := c.Name
	ps.mu.Lock()
	slot, ok := ps.slots[name]
	if !ok {
		slot = len(ps.slots)
		ps.slots[name] = slot
	}
	idx := slot / max(1, ps.c.PerProcess)
	p := ps.pools[idx]
	ps.mu.Unlock()
	if p == nil {
		log := ps.c.Log.WithField("pool", idx)
		onExit := func(mp MemberProcess) {
			mp.Member = fmt.Sprintf("pool%d", idx)
			if ps.c.OnExit != nil {
				ps.c.OnExit(mp)
			}
		}
		var err error
		if hosts := ps.c.Hosts; len(hosts) > 0 { // on the member hosts, round-robin by pool
			h := hosts[idx%len(hosts)]
			p, err = startRemotePool(ps.ctx, h.Addr, h.Name, ps.c.Era, ps.c.Topic, log, onExit)
		} else {
			p, err = startPool(poolArgv(ps.c.Binary, ps.c.LogLevel, ps.c.Era, ps.c.Topic, ClientEra), log, onExit)
		}
		if err != nil {
			return nil, err
		}
		ps.mu.Lock()
		ps.pools[idx] = p
		ps.mu.Unlock()
	}
	if p.host != "" && ps.c.OnPlace != nil {
		ps.c.OnPlace(p.host, name)
	}
	return newPoolMember(p, name, c.Props, c.Routes, c.Rec.Sink), nil
}

// Close ends every pool (graceful: its stdin closed, its members stopped first; else SIGKILL, or the
// connection closed) and waits for them. Pools can be made again after it.
func (ps *Pools) Close(graceful bool) {
	ps.mu.Lock()
	all := slices.Collect(maps.Values(ps.pools))
	ps.pools = map[int]*memberPool{}
	ps.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Add(1)
		go func() { defer wg.Done(); p.close(graceful) }()
	}
	wg.Wait()
}

// Processes are the pool processes now running (a pool on a member host is none of this machine's).
func (ps *Pools) Processes() []ChildProcess {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []ChildProcess
	for _, p := range ps.pools {
		if c, ok := p.childProcess(); ok {
			out = append(out, c)
		}
	}
	return out
}

// ChildProcess is one process of the run beside the runner's own: a member pool or a lab broker.
type ChildProcess struct {
	Kind string // "pool" or "broker"
	PID  int
	// Goroutines is a pool's last reported count (0 for a broker: not reported).
	Goroutines int64
}

// childProcess is the pool as a running child process of this one (false: ended, or a remote pool,
// whose resources are its machine's).
func (p *memberPool) childProcess() (ChildProcess, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone || p.pid <= 0 {
		return ChildProcess{}, false
	}
	return ChildProcess{Kind: "pool", PID: p.pid, Goroutines: p.goroutines.Load()}, true
}
