package members

// Members as processes (NewProcess; the runner's --members-as processes): each member incarnation is
// a `rebalancelab member` child process that runs the era's consumer (NewGoroutine's, as a goroutine
// member does) and writes its timeline records to stdout, one JSON line each, unbuffered (one write per
// record), so that what a process recorded before a kill -9 is in the pipe when it dies. The runner
// reads them into the era's timeline. Without test hosts (ProcessConfig.Host) every process runs on
// this host, so their ts_ms and the runner's come from one clock and merge as the in-process timelines
// do.
//
// The channel, runner → member: the process starts its member when it starts; SIGTERM (or a "stop"
// line on stdin, or stdin's end) is a graceful stop — zk Shutdown, newconsumer Close with its
// LeaveGroup — after which the process exits 0; SIGKILL is a crash (the kernel closes its sockets; no
// closeSession, no LeaveGroup). A "session" line asks for the member's ZooKeeper session id, answered
// on stdout as {"ctl":"session","session_id":N} (the zk cross-check's wchp half). A member that gives
// up (its consumer's run fails) stops gracefully and exits 1 with the error on stderr. Logs go to
// stderr as logrus JSON, which the runner logs again under the lab's logger.
//
// Links: the runner owns the member's fault proxies (lab.MemberLinks, created before the process
// starts for every upstream it will dial: the ZooKeeper nodes and the brokers' advertised addresses)
// and passes them as --route LINK:UPSTREAM=PROXY; the process dials through lab.RoutedLinks.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// MemberOptions configures RunMember: one scenario member in this process (`rebalancelab member`).
type MemberOptions struct {
	Era, Name, Topic string
	Props            map[string]string // the era's consumer properties (Props, as the runner built them)
	Routes           []lab.Route       // the runner's proxies for the faulted links
	Out              io.Writer         // timeline records and control answers, JSON lines (stdout)
	In               io.Reader         // the runner's commands, one a line (stdin)
	Log              *logrus.Entry
}

// RunMember runs one member until ctx ends (SIGTERM), a "stop" line or the end of o.In, then stops it
// gracefully; an error means the consumer could not be built or the member gave up.
func RunMember(ctx context.Context, o MemberOptions) error {
	if _, err := spec.ParseEras([]string{o.Era}); err != nil || o.Era == spec.All {
		return fmt.Errorf("member: --era %q: want one of %s", o.Era, strings.Join(spec.Names(spec.Eras()), ", "))
	}
	out := &lineOut{w: o.Out}
	rec := &timeline.Recorder{Sink: out, Era: o.Era, Member: o.Name}
	links := lab.NewRoutedLinks(o.Routes)
	var warned sync.Map
	links.OnUnrouted = func(l lab.Link, addr string) {
		if _, dup := warned.LoadOrStore(string(l)+" "+addr, true); !dup {
			o.Log.WithFields(logrus.Fields{"link": l, "addr": addr}).Warn("no route to a proxy for this address: dialled directly, faults will not reach it")
		}
	}
	impl, err := newConsumer(o.Era, o.Topic, o.Props, links, rec, o.Log)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background()) // ended after the graceful stop, not by ctx
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- impl.Run(runCtx) }()
	cmds := make(chan string)
	go func() { // ends with the process
		sc := bufio.NewScanner(o.In)
		for sc.Scan() {
			cmds <- strings.TrimSpace(sc.Text())
		}
		close(cmds)
	}()
	stop := func() error {
		impl.Stop(true)
		cancel()
		<-done
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return stop()
		case c, ok := <-cmds:
			switch {
			case !ok || c == "stop":
				return stop()
			case c == "session":
				out.ctl(ctlLine{Ctl: "session", SessionID: impl.ZKSession()})
			case c != "":
				o.Log.WithField("command", c).Warn("unknown command (want stop or session)")
			}
		case err := <-done:
			if err == nil {
				return nil
			}
			impl.Stop(true) // the application gives up and closes its consumer
			return fmt.Errorf("member %s gives up: %w", o.Name, err)
		}
	}
}

// ctlLine is a control answer on a member process's stdout (records never have "ctl").
type ctlLine struct {
	Ctl       string `json:"ctl"`
	SessionID int64  `json:"session_id"`
}

var ctlPrefix = []byte(`{"ctl":`)

// lineOut writes one JSON line per call, each with a single Write (no buffering: a record written is
// in the pipe even if the process is killed right after).
type lineOut struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineOut) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	b = append(b, '\n')
	l.mu.Lock()
	_, _ = l.w.Write(b)
	l.mu.Unlock()
}

func (l *lineOut) Emit(r timeline.Record) { l.write(r) }
func (l *lineOut) ctl(c ctlLine)          { l.write(c) }

// ---- the runner's side ----

// memberStopWait bounds a member process's graceful stop (appStopWait for the application's last
// commit, newconsumer Close's 30 s), after which it is killed.
const memberStopWait = 60 * time.Second

// awaitStop waits up to memberStopWait for done to close; false (and warn logged) when it did not.
func awaitStop(log *logrus.Entry, warn string, done <-chan struct{}) bool {
	t := time.NewTimer(memberStopWait)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		log.Warn(warn)
		return false
	}
}

// askSession asks a member for its ZooKeeper session (ask sends the question) and waits up to 3 s for
// the answer on answers; 0 when it cannot be asked, gone closes first or no answer comes.
func askSession(answers chan int64, gone <-chan struct{}, ask func() bool) int64 {
	select { // a late answer to an earlier question
	case <-answers:
	default:
	}
	if !ask() {
		return 0
	}
	t := time.NewTimer(3 * time.Second)
	defer t.Stop()
	select {
	case id := <-answers:
		return id
	case <-gone:
	case <-t.C:
	}
	return 0
}

// procConsumer is the runner's handle on one member process; it implements Runtime, so the runner
// starts, stops and crashes it as it does a goroutine member.
type procConsumer struct {
	name string
	argv []string
	sink timeline.Sink // the member's gate: the process's records as it wrote them
	log  *logrus.Entry
	// onExit records how the process ended (EraRun.Processes).
	onExit func(MemberProcess)
	// host is the test host the process runs in ("h2"), stamped on its records; "" for this host.
	host string

	started chan struct{} // closed once the start was attempted (cmd set, or startErr)
	exited  chan struct{} // closed once the process was waited for and its output read

	mu       sync.Mutex
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	startErr error
	stopReq  string // "sigterm", "sigkill"
	tail     []string

	sessMu   sync.Mutex
	sessions chan int64
	// onLine, when set, reads every stdout line instead of the member protocol (a process that is not
	// a `rebalancelab member`: Kafka's VerifiableConsumer, kafka.go; the 0.8.2.2 harness).
	onLine func([]byte)
}

func newProcConsumer(name string, argv []string, sink timeline.Sink, log *logrus.Entry, onExit func(MemberProcess)) *procConsumer {
	return &procConsumer{name: name, argv: argv, sink: sink, log: log, onExit: onExit,
		started: make(chan struct{}), exited: make(chan struct{}), sessions: make(chan int64, 1)}
}

// run starts the process and waits for it. The fork and the wait happen on this goroutine locked to
// its OS thread, so that Pdeathsig (lab.ChildSysProcAttr) kills the member if the runner dies.
func (p *procConsumer) Run(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(p.exited)
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.SysProcAttr = lab.ChildSysProcAttr()
	cmd.Stdout = LineWriter(p.stdoutLine)
	cmd.Stderr = LineWriter(p.stderrLine)
	stdin, err := cmd.StdinPipe()
	if err == nil {
		p.mu.Lock()
		if p.stopReq != "" { // stopped before it started
			p.mu.Unlock()
			close(p.started)
			return nil
		}
		err = cmd.Start()
		if err == nil {
			p.cmd, p.stdin = cmd, stdin
		}
		p.startErr = err
		p.mu.Unlock()
	}
	close(p.started)
	if err != nil {
		return fmt.Errorf("start member process: %w", err)
	}
	stopCtx := make(chan struct{})
	defer close(stopCtx)
	go func() { // the era ended with the process still running: kill it
		select {
		case <-ctx.Done():
			p.signal("sigkill", syscall.SIGKILL)
		case <-stopCtx:
		}
	}()
	werr := cmd.Wait()
	st := cmd.ProcessState
	mp := MemberProcess{Member: p.name, Host: p.host, PID: cmd.Process.Pid, ExitCode: st.ExitCode(), Status: st.String()}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		mp.Signal = SignalName(ws.Signal())
	}
	p.mu.Lock()
	mp.Stop = p.stopReq
	tail := strings.Join(p.tail, "\n")
	p.mu.Unlock()
	if p.onExit != nil {
		p.onExit(mp)
	}
	if mp.Stop != "" || (werr == nil && st.Success()) {
		return nil
	}
	return fmt.Errorf("process %d: %s: %s", mp.PID, mp.Status, tail)
}

// SignalName is the name of s as the result records it ("SIGKILL"; "signal N" for the rarer ones).
func SignalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	}
	return fmt.Sprintf("signal %d", int(s))
}

// signal sends sig once the process has started (the first stop request names the stop).
func (p *procConsumer) signal(how string, sig syscall.Signal) {
	<-p.started
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopReq == "" || how == "sigkill" {
		p.stopReq = how
	}
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// Stop: graceful, SIGTERM and wait for the exit (SIGKILL after memberStopWait); not graceful, SIGKILL
// (a crash: what the process wrote before it died has been read when Stop returns).
func (p *procConsumer) Stop(graceful bool) {
	select {
	case <-p.started:
	default:
		p.mu.Lock()
		if p.cmd == nil && p.startErr == nil && p.stopReq == "" {
			p.stopReq = map[bool]string{true: "sigterm", false: "sigkill"}[graceful]
		}
		p.mu.Unlock()
		<-p.started
	}
	if graceful {
		p.signal("sigterm", syscall.SIGTERM)
		if awaitStop(p.log, "member process did not stop within 60 s of SIGTERM: killed", p.exited) {
			return
		}
	}
	p.signal("sigkill", syscall.SIGKILL)
	<-p.exited
}

// ZKSession asks the process ("session"); 0 when it does not answer within 3 s or is not running.
func (p *procConsumer) ZKSession() int64 {
	p.sessMu.Lock()
	defer p.sessMu.Unlock()
	select {
	case <-p.exited:
		return 0
	case <-p.started:
	}
	p.mu.Lock()
	stdin := p.stdin
	p.mu.Unlock()
	if stdin == nil {
		return 0
	}
	return askSession(p.sessions, p.exited, func() bool {
		_, err := io.WriteString(stdin, "session\n")
		return err == nil
	})
}

// OwnProcess: a member process's crash is its kill -9.
func (p *procConsumer) OwnProcess() bool { return true }

func (p *procConsumer) stdoutLine(b []byte) {
	if p.onLine != nil {
		p.onLine(b)
		return
	}
	if bytes.HasPrefix(b, ctlPrefix) {
		var c ctlLine
		if json.Unmarshal(b, &c) == nil && c.Ctl == "session" {
			select {
			case p.sessions <- c.SessionID:
			default:
			}
		}
		return
	}
	if rec, ok := decodeRecord(b, p.host, p.log, "member process"); ok {
		p.sink.Emit(rec)
	}
}

// decodeRecord reads a timeline record a member process or pool wrote, stamped with host when set
// (the record's clock is that host's); a line that is not one is logged under who and skipped.
func decodeRecord(b []byte, host string, log *logrus.Entry, who string) (timeline.Record, bool) {
	var rec timeline.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		log.WithError(err).WithField("line", string(b)).Warn(who + ": not a timeline record")
		return rec, false
	}
	if host != "" {
		rec.Host = host
	}
	return rec, true
}

// stderrLine logs the process's logrus JSON lines again, at their level, under the runner's lab
// logger; it keeps the last lines for the error of a member that gave up.
func (p *procConsumer) stderrLine(b []byte) {
	p.mu.Lock()
	p.tail = append(p.tail, string(b))
	if len(p.tail) > 5 {
		p.tail = p.tail[1:]
	}
	p.mu.Unlock()
	logChildLine(p.log, b)
}

// logChildLine logs a child process's logrus JSON line again, at its level, under log (a line that is
// not JSON at info).
func logChildLine(log *logrus.Entry, b []byte) {
	var fields map[string]any
	if json.Unmarshal(b, &fields) != nil {
		log.Info(string(b))
		return
	}
	lvl, err := logrus.ParseLevel(fmt.Sprint(fields["level"]))
	if err != nil {
		lvl = logrus.InfoLevel
	}
	msg := fmt.Sprint(fields["msg"])
	for _, k := range []string{"level", "msg", "time"} {
		delete(fields, k)
	}
	log.WithFields(fields).Log(lvl, msg)
}

// LineWriter is an io.Writer (a child process's stdout or stderr) that calls fn with every complete
// non-empty line, without its newline, on the writer's goroutine; a last line without a newline is
// never passed.
func LineWriter(fn func(line []byte)) io.Writer { return &lineSplitter{fn: fn} }

// lineSplitter is LineWriter's writer.
type lineSplitter struct {
	buf []byte
	fn  func([]byte)
}

func (l *lineSplitter) Write(b []byte) (int, error) {
	l.buf = append(l.buf, b...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		if i > 0 {
			l.fn(l.buf[:i])
		}
		l.buf = l.buf[i+1:]
	}
	return len(b), nil
}

// memberArgv is the command line of a member process.
func memberArgv(bin, logLevel, era, name, topic string, props map[string]string, routes []lab.Route) []string {
	argv := []string{bin, "--log-level", logLevel, "member", "--era", era, "--name", name, "--topic", topic}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		argv = append(argv, "--config", k+"="+props[k])
	}
	for _, r := range routes {
		argv = append(argv, "--route", r.String())
	}
	return argv
}

// ProcessConfig configures NewProcess.
type ProcessConfig struct {
	Member
	Binary   string      // the rebalancelab binary, run as `Binary member ...`
	LogLevel string      // the process's --log-level (logrus' names)
	Routes   []lab.Route // the runner's proxies for the member's faulted links (none: it dials directly)
	// Host, when set, is the test host the process runs in (`ip netns exec`); its records are stamped
	// with its name, their ts_ms from its clock.
	Host *lab.Host
	// OnExit, when set, gets how the process ended, once it has been waited for.
	OnExit func(MemberProcess)
}

// NewProcess makes the runtime of a member process, started by its Run: `c.Binary member` with the
// era, name, topic, properties and routes on its command line (RunMember); its records go to
// c.Rec.Sink as it wrote them.
func NewProcess(c ProcessConfig) Runtime {
	argv := memberArgv(c.Binary, c.LogLevel, c.Era, c.Name, c.Topic, c.Props, c.Routes)
	host := ""
	if c.Host != nil { // inside its test host: `ip netns exec` execs the member itself
		argv, host = c.Host.Argv(argv...), c.Host.Name()
	}
	p := newProcConsumer(c.Name, argv, c.Rec.Sink, c.Log, c.OnExit)
	p.host = host
	return p
}
