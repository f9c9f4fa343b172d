package scenarios

// Member pools (Options.MembersPerProcess > 1): K members share one `rebalancelab member-pool`
// process, so that a storm of 10,000 members spreads its connections over processes whose file
// descriptors (RLIMIT_NOFILE, per process) each hold a share. A pooled member is the same consumer a
// member process or a goroutine member runs (newConsumer), with its own connections, timeline and
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
	"github.com/rebalancelab/rebalancelab/timeline"
)

// MaxInProcessMembers is the most members a run starts in the runner's process (goroutine members):
// above it, unless told otherwise, they run in member pools (PoolMembers), as bench storm's do.
const MaxInProcessMembers = 200

// AutoMembersPerProcess is K of the pools PoolMembers chooses: N=256 runs in 4 pool processes, and
// each pool's descriptors (two connections a member) stay far below RLIMIT_NOFILE.
const AutoMembersPerProcess = 64

// PoolMembers returns how a run of p.Consumers members runs them, o.MembersPerProcess and o.MembersAs
// as Run uses them: as given, except that with o.MembersAs "" (the caller chose nothing) and more than
// MaxInProcessMembers of this repository's members (o.Members) it chooses member pools of
// AutoMembersPerProcess. Errors: more than
// MaxInProcessMembers members asked to run as goroutines of this process. Run applies it to the
// catalogue's scenarios (Scenario.MaxConsumers 0); a Definition with its own bound (bench storm's)
// runs its members as its caller says.
func PoolMembers(p Params, o Options) (perProcess int, membersAs string, err error) {
	perProcess, membersAs = o.MembersPerProcess, o.MembersAs
	ours := o.Members == "" || o.Members == MembersRebalancelab // Kafka's members are JVMs, never pooled
	if p.Consumers <= MaxInProcessMembers || perProcess > 1 || len(o.MemberHosts) > 0 || p.Hosts > 0 || !ours {
		return perProcess, membersAs, nil
	}
	switch membersAs {
	case MembersAsGoroutines:
		return 0, "", fmt.Errorf("--consumers %d: at most %d members run as goroutines of one process; "+
			"more run in member pools (--members-per-process K, chosen as %d when --members-as is not given)",
			p.Consumers, MaxInProcessMembers, AutoMembersPerProcess)
	case "":
		return AutoMembersPerProcess, MembersAsProcesses, nil
	}
	return perProcess, membersAs, nil // one process per member, as asked
}

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
	impl   consumer
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
	if _, err := ResolveEras([]string{o.Era}); err != nil || o.Era == "all" {
		return fmt.Errorf("member-pool: --era %q: want one of %s", o.Era, strings.Join(Eras, ", "))
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
		var impl consumer
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
			err := impl.run(rctx)
			m.mu.Lock()
			m.ranOut = true
			byStop := m.stopping
			m.mu.Unlock()
			if byStop { // the stop reports the end, once its goodbye has been recorded
				close(m.done)
				return
			}
			if err != nil {
				impl.stop(true) // the application gives up and closes its consumer
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
		m.impl.stop(graceful)
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
					id = m.impl.zkSession()
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
// the era's end (closePools).
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
// the process (closePools waits for it).
func startPool(argv []string, log *logrus.Entry, onExit func(MemberProcess)) (*memberPool, error) {
	p := newMemberPool(log, onExit)
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // Pdeathsig (lab.ChildSysProcAttr) follows the thread that forked
		defer runtime.UnlockOSThread()
		defer close(p.exited)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = lab.ChildSysProcAttr()
		cmd.Stdout = &lineSplitter{fn: p.stdoutLine}
		cmd.Stderr = &lineSplitter{fn: func(b []byte) { logChildLine(log, b) }}
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
			mp.Signal = signalName(ws.Signal())
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

// poolMember is the runner's handle on one member in a pool; it implements consumer.
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

// run starts the member in its pool and waits until it has ended there (or, when ctx ends first,
// crashes it and waits for that).
func (m *poolMember) run(ctx context.Context) error {
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
		// closePools once the era's members have been waited for
		awaitStop(m.pool.log.WithField("member", m.name), "pooled member not stopped within 60 s of its era's end", m.ended)
	}
	return m.err
}

// stop asks the pool to stop the member (graceful: stop; not: kill) and waits until it has ended
// there (or the pool has: it ends its members), at most memberStopWait.
func (m *poolMember) stop(graceful bool) {
	<-m.registered
	select {
	case <-m.ended:
		return
	default:
	}
	m.pool.send(poolCmd{Cmd: map[bool]string{true: "stop", false: "kill"}[graceful], Member: m.name})
	awaitStop(m.pool.log.WithField("member", m.name), "pooled member did not stop within 60 s", m.ended)
}

// zkSession asks the pool; 0 when it does not answer within 3 s.
func (m *poolMember) zkSession() int64 {
	m.sessMu.Lock()
	defer m.sessMu.Unlock()
	return askSession(m.sessions, m.ended, func() bool { return m.pool.send(poolCmd{Cmd: "session", Member: m.name}) })
}

// poolArgv is the command line of a pool process running client's members (ClientEra, ClientKgo).
func poolArgv(bin, logLevel, era, topic, client string) []string {
	argv := []string{bin, "--log-level", logLevel, "member-pool", "--era", era, "--topic", topic}
	if client != ClientEra {
		argv = append(argv, "--client", client)
	}
	return argv
}

// newPooled makes the handle of a member in its pool (started with the first member placed in it):
// member names take slots in the order they first start, MembersPerProcess to a pool, and a
// restarted member goes back to its pool.
func (r *eraRunner) newPooled(name string, props map[string]string, sink timeline.Sink) (consumer, error) {
	routes, err := r.routesOf(name)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	slot, ok := r.slots[name]
	if !ok {
		slot = len(r.slots)
		r.slots[name] = slot
	}
	idx := slot / max(1, r.o.MembersPerProcess)
	p := r.pools[idx]
	r.mu.Unlock()
	if p == nil {
		log := r.o.LabLog.WithField("pool", idx)
		onExit := func(mp MemberProcess) {
			mp.Member = fmt.Sprintf("pool%d", idx)
			r.mu.Lock()
			r.e.Processes = append(r.e.Processes, mp)
			r.mu.Unlock()
		}
		if hosts := r.memberHosts(); len(hosts) > 0 { // on the member hosts, round-robin by pool
			h := hosts[idx%len(hosts)]
			p, err = startRemotePool(r.ctx, h.Addr, h.Name, r.e.Era, r.e.Topic, log, onExit)
		} else {
			p, err = startPool(poolArgv(r.o.MemberBinary, r.o.LabLog.Logger.GetLevel().String(), r.e.Era, r.e.Topic, ClientEra), log, onExit)
		}
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.pools[idx] = p
		r.mu.Unlock()
	}
	if p.host != "" {
		r.mu.Lock()
		for i := range r.res.Hosts {
			if h := &r.res.Hosts[i]; h.Name == p.host && !slices.Contains(h.Runs, name) {
				h.Runs = append(h.Runs, name)
			}
		}
		r.mu.Unlock()
	}
	return newPoolMember(p, name, props, routes, sink), nil
}

// memberHosts are the run's member hosts (Options.MemberHosts, measured at the start), none without.
func (r *eraRunner) memberHosts() []HostInfo {
	if len(r.o.MemberHosts) == 0 {
		return nil
	}
	var out []HostInfo
	for _, h := range r.res.Hosts {
		if h.Namespace == "" { // not a test host (hosts.go): a member host
			out = append(out, h)
		}
	}
	return out
}

// pooled reports whether members run in pools: MembersPerProcess above 1, or on member hosts.
func (r *eraRunner) pooled() bool { return r.o.MembersPerProcess > 1 || len(r.o.MemberHosts) > 0 }

// closePools ends every pool process (graceful: its stdin closed, its members stopped first; else
// SIGKILL) and waits for them.
func (r *eraRunner) closePools(graceful bool) {
	r.mu.Lock()
	ps := slices.Collect(maps.Values(r.pools))
	r.pools = map[int]*memberPool{}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.close(graceful) }()
	}
	wg.Wait()
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

// childProcesses lists the era's member pools and the lab's broker processes now running.
func (r *eraRunner) childProcesses() []ChildProcess {
	var out []ChildProcess
	r.mu.Lock()
	for _, p := range r.pools {
		if c, ok := p.childProcess(); ok {
			out = append(out, c)
		}
	}
	r.mu.Unlock()
	if r.lab != nil {
		for _, b := range r.lab.Brokers() {
			if pid := b.PID(); pid > 0 {
				out = append(out, ChildProcess{Kind: "broker", PID: pid})
			}
		}
	}
	return out
}
