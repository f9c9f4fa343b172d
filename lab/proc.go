package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/poll"
)

// proc is one child process the lab runs (a ZooKeeper, Kafka or Connect JVM, a broker binary, the
// 0.8.2.2 connector's harness). Its stdout and stderr go to one log file (startProcIO: stderr only, its
// stdout read by the caller); it runs in its own process group (so a terminal's Ctrl-C reaches only the Go
// process, which then cleans up) and, on Linux, gets SIGKILL when the Go process dies (Pdeathsig), so
// a test binary killed with -9 leaves no JVM behind.
type proc struct {
	cmd      *exec.Cmd
	logPath  string
	logStart int64         // the log's size when this process started
	done     chan struct{} // closed once the process has been waited for
	err      error         // exit status; valid after done
}

// startProc starts argv with its output appended to logPath.
func startProc(argv []string, dir string, env []string, logPath string) (*proc, error) {
	p, _, err := startProcIO(argv, dir, env, logPath, nil)
	return p, err
}

// startProcIO is startProc for a child spoken to through its standard input and output (a harness of
// JSON lines): with stdout set, the child's standard output goes to stdout, which a goroutine of its
// own runs until EOF (before the process is waited for), and startProcIO returns a pipe to its
// standard input; standard error still goes to logPath.
//
// Pdeathsig fires when the OS thread that forked the child exits, not the process, so the fork and
// the wait happen on one goroutine locked to its thread: that thread lives as long as the child.
func startProcIO(argv []string, dir string, env []string, logPath string, stdout func(io.Reader)) (*proc, io.WriteCloser, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("lab: open log %s: %w", logPath, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = childSysProcAttr()
	var stdin io.WriteCloser
	var out io.ReadCloser
	if stdout != nil {
		cmd.Stdout = nil
		if stdin, err = cmd.StdinPipe(); err == nil {
			out, err = cmd.StdoutPipe()
		}
		if err != nil {
			logf.Close()
			return nil, nil, fmt.Errorf("lab: start %s: %w", argv[0], err)
		}
	}
	p := &proc{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	if st, err := logf.Stat(); err == nil {
		p.logStart = st.Size()
	}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			logf.Close()
			started <- err
			return
		}
		started <- nil
		if out != nil {
			read := make(chan struct{})
			go func() {
				defer close(read)
				stdout(out)
			}()
			<-read // Wait closes the pipes: read everything first
		}
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, nil, fmt.Errorf("lab: start %s: %w", argv[0], err)
	}
	return p, stdin, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the child's whole process group (a JVM or a wrapper script may have children).
func (p *proc) signal(sig syscall.Signal) {
	if p.exited() {
		return
	}
	_ = signalGroup(p.pid(), sig)
}

// stop sends SIGTERM and waits for the exit; when ctx ends first it kills with SIGKILL and waits.
func (p *proc) stop(ctx context.Context) error {
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		p.kill()
		return fmt.Errorf("lab: pid %d did not stop on SIGTERM, killed: %w", p.pid(), ctx.Err())
	}
}

// kill sends SIGKILL and waits for the exit (a SIGKILLed process always exits).
func (p *proc) kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

// logTail returns the end of what this process wrote to its log (at most 4 KiB), for error messages.
func (p *proc) logTail() string { return fileTailFrom(p.logPath, p.logStart, 4096) }

func fileTail(path string, n int64) string { return fileTailFrom(path, 0, n) }

// fileTailFrom returns the last n bytes of path that lie after byte from, starting at a line.
func fileTailFrom(path string, from, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	off := max(st.Size()-n, from, 0)
	b, _ := io.ReadAll(io.NewSectionReader(f, off, n))
	b = bytes.TrimSpace(b)
	if off > from {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// processAlive reports whether pid exists and has not exited. A zombie (exited, not yet reaped by
// its parent, e.g. an orphan waiting for init) counts as gone.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// "pid (comm) state ...": comm may hold spaces and parentheses.
		if i := bytes.LastIndexByte(st, ')'); i >= 0 && i+2 < len(st) && st[i+2] == 'Z' {
			return false
		}
	}
	return true
}

// Free loopback ports. A port is found by binding 127.0.0.1:0 and closing; ports handed out by this
// process are remembered so that two nodes of one lab never get the same one. Another process can
// still take a port between the pick and the bind: starters retry once on "Address already in use".
var (
	portsMu sync.Mutex
	given   = map[int]bool{}
)

func freePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("lab: pick a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !given[port] {
			given[port] = true
			return port, nil
		}
	}
	return 0, errors.New("lab: no free loopback port after 50 tries")
}

// errExited is waitUp's error when the process exits before it is up.
var errExited = errors.New("process exited")

// waitUp waits for a process to come up: it tries up at once and then every pause (poll, fixed pauses)
// until up holds (nil). If p exits first it returns errExited; if ctx ends first it kills p and returns
// poll's error, which wraps ctx.Err() and names what ("broker 1's first stdout line").
func (p *proc) waitUp(ctx context.Context, pause time.Duration, what string, up func() bool) error {
	err := poll.Backoff{First: pause, Max: pause}.UntilErr(ctx, 0, what, func() error {
		if up() {
			return nil
		}
		if p.exited() {
			return poll.Stop(errExited)
		}
		return errNotUp
	})
	if err != nil && err != errExited {
		p.kill()
	}
	return err
}

// errNotUp is waitUp's reason while the process runs and is not up yet.
var errNotUp = errors.New("the process runs, not up yet")

// ChildSysProcAttr is the process attributes the lab gives its children (its own process group; on
// Linux SIGKILL when the parent thread dies), for other packages' child processes (member processes).
// As with startProc, Pdeathsig needs the fork and the wait on one goroutine locked to its OS thread.
func ChildSysProcAttr() *syscall.SysProcAttr { return childSysProcAttr() }
