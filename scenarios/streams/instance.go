package streams

// A Kafka Streams instance of a Streams run: `java -cp interop/streams-3.9/target/lib/* MergeApp ...`
// (lab.StreamsMainClass), its JSON lines on stdout read into AppEvents, commands on stdin.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/members"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
)

// AppEvent is one line the Streams application printed (MergeApp's javadoc gives the kinds).
type AppEvent struct {
	Instance  string          `json:"instance"` // the scenario's name of the instance: s1, s2
	Ev        string          `json:"ev"`       // started, state, processed, threads, thread_removed, thread_added, error, stopped
	TsMs      int64           `json:"ts_ms"`
	Thread    string          `json:"thread,omitempty"`
	Task      string          `json:"task,omitempty"`
	Topic     string          `json:"topic,omitempty"`
	Partition int32           `json:"partition,omitempty"`
	Offset    int64           `json:"offset,omitempty"`
	Out       string          `json:"out,omitempty"`
	From      string          `json:"from,omitempty"`
	To        string          `json:"to,omitempty"`
	Text      string          `json:"text,omitempty"`
	Threads   json.RawMessage `json:"threads,omitempty"`
}

// instance is one running JVM.
type instance struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	logPath string
	exited  chan struct{}
	proc    report.MemberProcess

	mu   sync.Mutex
	stop string // how the runner ended it: sigkill, or "stop" for the stdin command
}

// startInstance starts the JVM. onEvent gets every stdout line decoded, in order, from the
// goroutine that reads them; the process's stderr (Streams' warnings) goes to dir/<name>.log.
func startInstance(name, java, classpath, dir string, args []string, onEvent func(AppEvent), onExit func(report.MemberProcess)) (*instance, error) {
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	argv := append([]string{}, lab.StreamsHeapOpts...)
	argv = append(argv, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dorg.slf4j.simpleLogger.logFile=System.err",
		"-cp", filepath.Join(classpath, "*"), lab.StreamsMainClass)
	argv = append(argv, args...)
	si := &instance{name: name, logPath: logPath, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// Fork and wait on one locked OS thread: Pdeathsig (lab.ChildSysProcAttr) then kills the JVM
		// if the runner dies.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(si.exited)
		defer logf.Close()
		cmd := exec.Command(java, argv...)
		cmd.SysProcAttr = lab.ChildSysProcAttr()
		cmd.Stderr = logf
		cmd.Stdout = members.LineWriter(func(b []byte) {
			var ev AppEvent
			if err := json.Unmarshal(b, &ev); err != nil {
				ev = AppEvent{Ev: "error", TsMs: time.Now().UnixMilli(), Text: "stdout: " + string(b)}
			}
			ev.Instance = name
			onEvent(ev)
		})
		stdin, err := cmd.StdinPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			started <- fmt.Errorf("start Streams instance %s: %w", name, err)
			return
		}
		si.cmd, si.stdin = cmd, stdin
		started <- nil
		_ = cmd.Wait()
		st := cmd.ProcessState
		mp := report.MemberProcess{Member: name, PID: cmd.Process.Pid, ExitCode: st.ExitCode(), Status: st.String()}
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			mp.Signal = members.SignalName(ws.Signal())
		}
		si.mu.Lock()
		mp.Stop = si.stop
		si.mu.Unlock()
		si.proc = mp
		if onExit != nil {
			onExit(mp)
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return si, nil
}

// command writes one command line (remove-thread, add-thread, threads, stop) to the instance's stdin.
func (si *instance) command(c string) error {
	if c == "stop" {
		si.mu.Lock()
		si.stop = "stop"
		si.mu.Unlock()
	}
	_, err := io.WriteString(si.stdin, c+"\n")
	return err
}

// kill is the crash: SIGKILL, then wait until the process is dead and its stdout read.
func (si *instance) kill() {
	si.mu.Lock()
	if si.stop == "" {
		si.stop = "sigkill"
	}
	si.mu.Unlock()
	_ = si.cmd.Process.Signal(syscall.SIGKILL)
	<-si.exited
}

// shutdown asks the application to close (KafkaStreams.close) and waits up to d, then kills it.
func (si *instance) shutdown(d time.Duration) {
	select {
	case <-si.exited:
		return
	default:
	}
	if err := si.command("stop"); err == nil {
		select {
		case <-si.exited:
			return
		case <-time.After(d):
		}
	}
	si.kill()
}

// logTail is the end of the instance's stderr, for errors.
func (si *instance) logTail() string {
	b, _ := os.ReadFile(si.logPath)
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return s
}
