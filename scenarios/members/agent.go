package members

// Member hosts (PoolsConfig.Hosts; the runner's --member-hosts): members on other machines. Each machine runs
// `rebalancelab member-pool --listen HOST:PORT` (ServeMemberPools). The runner, given the addresses,
// opens one TCP connection per pool it places there and speaks pool.go's protocol over it, after a
// hello line that names the era and the topic: {"cmd":"hello","era":"classic","topic":"t"}, answered
// {"ctl":"hello","host":"<the machine's hostname>"}. A connection whose first line is "t" is a clock
// probe instead (lab.ServeClock: every line is answered with the machine's Unix time in ns), which the
// runner uses at the start to measure each machine's clock offset (lab.MeasureClock).
//
// The members there dial what the runner gives them: the brokers and ZooKeeper of the lab or of the
// cluster (--bootstrap, --zk), so those addresses must be reachable from the member hosts. The
// runner's fault proxies listen on this machine's loopback, so the runner refuses scripts with crashes
// or link faults with member hosts.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
)

// poolHello opens a pool on a member host.
type poolHello struct {
	Cmd   string `json:"cmd"` // "hello"
	Era   string `json:"era"`
	Topic string `json:"topic"`
}

// ServeMemberPools serves member pools on ln until ctx ends, then closes ln, stops every pool's
// members gracefully and returns once every connection has ended. Each connection is a clock probe
// (its first line "t") or a pool (a hello line, then RunMemberPool with the connection as its stdin
// and stdout; the runner closing its side ends the pool).
func ServeMemberPools(ctx context.Context, ln net.Listener, log *logrus.Entry) error {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	closed := make(chan struct{})
	go func() { // closes the listener when ctx ends or Accept failed on its own
		defer close(closed)
		select {
		case <-ctx.Done():
		case <-stop:
		}
		ln.Close()
	}()
	var err error
	for {
		c, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() == nil {
				err = aerr
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveAgentConn(ctx, c, log.WithField("runner", c.RemoteAddr().String()))
		}()
	}
	close(stop)
	<-closed
	wg.Wait()
	return err
}

// serveAgentConn serves one connection of ServeMemberPools.
func serveAgentConn(ctx context.Context, c net.Conn, log *logrus.Entry) {
	defer c.Close()
	br := bufio.NewReader(c)
	first, err := br.ReadString('\n')
	if err != nil {
		return
	}
	if strings.TrimSpace(first) == "t" { // a clock probe: answer this line and every next one
		if _, err := fmt.Fprintf(c, "%d\n", time.Now().UnixNano()); err == nil {
			_ = lab.ServeClock(br, c)
		}
		return
	}
	out := &lineOut{w: c}
	var h poolHello
	if err := json.Unmarshal([]byte(first), &h); err != nil || h.Cmd != "hello" {
		out.write(poolCtl{Ctl: "error", Error: fmt.Sprintf("member-pool: want a hello line ({\"cmd\":\"hello\",\"era\":...,\"topic\":...}) or a clock probe (t), got %q", strings.TrimSpace(first))})
		return
	}
	hostname, _ := os.Hostname()
	out.write(poolCtl{Ctl: "hello", Host: hostname})
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { <-pctx.Done(); _ = c.SetReadDeadline(time.Now()) }() // ctx ended: the pool's reader stops
	if err := RunMemberPool(pctx, PoolOptions{Era: h.Era, Topic: h.Topic, In: br, Out: c, Log: log.WithField("era", h.Era)}); err != nil {
		out.write(poolCtl{Ctl: "error", Error: err.Error()})
		log.WithError(err).Warn("member-pool: refused a pool")
	}
}

// agentDialTimeout bounds the connection and the hello to a member host.
const agentDialTimeout = 10 * time.Second

// startRemotePool opens a pool on the member host at addr (named host in the records and the
// result). The goroutine that reads it is the pool's own and ends with the connection.
func startRemotePool(ctx context.Context, addr, host, era, topic string, log *logrus.Entry, onExit func(MemberProcess)) (*memberPool, error) {
	d := net.Dialer{Timeout: agentDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("member host %s (%s): %w", host, addr, err)
	}
	tc, _ := conn.(*net.TCPConn)
	b, _ := json.Marshal(poolHello{Cmd: "hello", Era: era, Topic: topic})
	_ = conn.SetDeadline(time.Now().Add(agentDialTimeout))
	br := bufio.NewReader(conn)
	var answer poolCtl
	if _, err = conn.Write(append(b, '\n')); err == nil {
		var line []byte
		if line, err = br.ReadBytes('\n'); err == nil {
			err = json.Unmarshal(line, &answer)
		}
	}
	if err == nil && answer.Ctl != "hello" {
		err = fmt.Errorf("answered %q: %s", answer.Ctl, answer.Error)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("member host %s (%s): hello: %w", host, addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	p := newMemberPool(log.WithFields(logrus.Fields{"member_host": host, "machine": answer.Host}), onExit)
	p.host = host
	p.stdin = writeCloser{conn: conn, closeWrite: func() error {
		if tc != nil {
			return tc.CloseWrite() // the pool reads its stdin's end: its members stop gracefully
		}
		return conn.Close()
	}}
	p.kill = func() { conn.Close() }
	go func() {
		defer close(p.exited)
		_, rerr := io.Copy(LineWriter(p.stdoutLine), br) // nil at the connection's end
		conn.Close()
		mp := MemberProcess{Member: "pool", Host: host, ExitCode: 0, Status: "connection closed"}
		why := fmt.Sprintf("member host %s (%s): pool connection ended", host, addr)
		if rerr != nil && !errors.Is(rerr, net.ErrClosed) {
			mp.Status, why = "connection lost: "+rerr.Error(), why+": "+rerr.Error()
		}
		p.end(mp, why)
	}()
	return p, nil
}

// writeCloser writes to a connection and closes only its write side.
type writeCloser struct {
	conn       net.Conn
	closeWrite func() error
}

func (w writeCloser) Write(b []byte) (int, error) { return w.conn.Write(b) }
func (w writeCloser) Close() error                { return w.closeWrite() }

// MeasureHosts names the member hosts at addrs (agent1, agent2, ... in the order given, an address
// given twice being one host) and measures each one's clock against this process's over a probe
// connection (lab.MeasureClock, samples round trips), telling progress of each; they go to the
// result's hosts. Errors: a host that cannot be reached or whose clock does not answer, naming it.
func MeasureHosts(ctx context.Context, addrs []string, samples int, progress func(string, ...any)) ([]report.HostInfo, error) {
	var out []report.HostInfo
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			continue
		}
		seen[a] = true
		info := report.HostInfo{Name: fmt.Sprintf("agent%d", len(out)+1), Addr: a}
		d := net.Dialer{Timeout: agentDialTimeout}
		conn, err := d.DialContext(ctx, "tcp", a)
		if err != nil {
			return nil, fmt.Errorf("member host %s: %w", a, err)
		}
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		s, err := lab.MeasureClock(conn, samples)
		conn.Close()
		if err != nil {
			return nil, fmt.Errorf("member host %s: clock: %w", a, err)
		}
		info.Clock = report.ClockSample(s)
		progress("member host %s %s: clock offset %+.3f ms (± %.3f ms, best round trip of %d)", info.Name, a, s.OffsetMs, s.RTTMs/2, s.Samples)
		out = append(out, info)
	}
	return out, nil
}
