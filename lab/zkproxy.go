package lab

// ZKCountingProxy: a TCP proxy in front of one ZooKeeper server that decodes the client protocol's
// framing (a 4-byte length before each packet) and counts, per connection, each request by its header's
// operation code and each watch notification (a reply with xid -1). It counts any client — the real
// 0.8.2.2 connector (ZooKeeper 3.4.6's client) as well as zkconsumer — the same way.

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// ZooKeeper's request op codes (ZooDefs.OpCode) by name.
var zkOpNames = map[int32]string{
	1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData", 6: "getACL", 7: "setACL",
	8: "getChildren", 9: "sync", 11: "ping", 12: "getChildren2", 13: "check", 14: "multi", 15: "create2",
	16: "reconfig", 17: "checkWatches", 18: "removeWatches", 19: "createContainer", 20: "deleteContainer",
	21: "createTTL", 100: "auth", 101: "setWatches", 102: "sasl", -11: "closeSession",
}

// ZKCountingProxy counts requests by op name and watch notifications over every connection through it.
type ZKCountingProxy struct {
	Addr     string // 127.0.0.1:PORT, to give clients as zookeeper.connect
	upstream string
	ln       net.Listener
	wg       sync.WaitGroup

	// OnEvent, when set before clients connect, is called for every request as it passes (with its
	// path where the request has one; a create when its reply passes, with the reply's NodeExists in
	// Result) and every watch notification. It runs on the proxy's goroutines, before the packet is
	// passed on.
	OnEvent func(ZKProxyEvent)

	mu        sync.Mutex
	ops       map[string]int
	watches   int
	closed    bool       // Close has begun: a connection accepted now is closed at once
	conns     []net.Conn // open connections, both sides; a pair is removed when its pipes end
	sessionID int64
}

// ZKProxyEvent is one request, notification or refused create seen by a ZKCountingProxy.
type ZKProxyEvent struct {
	Kind string // ZKProxyRead, ZKProxyWrite, ZKProxyOther (ping, setWatches, closeSession, ...), ZKProxyWatch
	Op   string // the request's op name (zkOpNames); for a watch, the event type (NodeChildrenChanged, ...)
	Path string // the request's or notification's path, "" when it has none
	// Result of a create: ZKProxyNodeExists when the server answered NODEEXISTS, "" otherwise.
	Result string
}

// The kinds of ZKProxyEvent: reads and writes as the timeline's zk_op{op} counts them.
const (
	ZKProxyRead       = "read"
	ZKProxyWrite      = "write"
	ZKProxyOther      = "other"
	ZKProxyWatch      = "watch"
	ZKProxyNodeExists = "node_exists" // the Result of a refused create
)

// ZKReadOps and ZKWriteOps classify op names as the timeline's zk_reads and zk_writes do.
var (
	ZKReadOps  = map[string]bool{"exists": true, "getData": true, "getChildren": true, "getChildren2": true}
	ZKWriteOps = map[string]bool{"create": true, "create2": true, "delete": true, "setData": true, "multi": true,
		"createContainer": true, "createTTL": true}
)

// zkPathOps are the requests whose body starts with the path (a ustring).
var zkPathOps = map[string]bool{"create": true, "create2": true, "delete": true, "exists": true, "getData": true,
	"setData": true, "getChildren": true, "getChildren2": true, "getACL": true, "setACL": true, "sync": true,
	"createContainer": true, "createTTL": true, "checkWatches": true, "removeWatches": true}

// zkWatchTypes are Watcher.Event.EventType names by code.
var zkWatchTypes = map[int32]string{-1: "None", 1: "NodeCreated", 2: "NodeDeleted", 3: "NodeDataChanged", 4: "NodeChildrenChanged"}

// ustring reads a ZooKeeper jute string at b[off:].
func ustring(b []byte, off int) string {
	if len(b) < off+4 {
		return ""
	}
	n := int(int32(binary.BigEndian.Uint32(b[off:])))
	if n < 0 || len(b) < off+4+n {
		return ""
	}
	return string(b[off+4 : off+4+n])
}

// StartZKCountingProxy listens on a free loopback port and forwards to upstream (one server's host:port).
func StartZKCountingProxy(upstream string) (*ZKCountingProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &ZKCountingProxy{Addr: ln.Addr().String(), upstream: upstream, ln: ln, ops: map[string]int{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *ZKCountingProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.DialTimeout("tcp", p.upstream, 10*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			u.Close()
			return
		}
		p.conns = append(p.conns, c, u)
		p.wg.Add(2)
		p.mu.Unlock()
		st := &zkConnState{creates: map[int32]ZKProxyEvent{}}
		var ended sync.WaitGroup
		ended.Add(2)
		pipe := func(dst, src net.Conn, requests bool) {
			defer ended.Done()
			p.pipe(dst, src, requests, st)
		}
		go pipe(u, c, true)
		go pipe(c, u, false)
		p.wg.Add(1)
		go func() { // forget the pair once both directions ended
			defer p.wg.Done()
			ended.Wait()
			p.mu.Lock()
			p.conns = slices.DeleteFunc(p.conns, func(x net.Conn) bool { return x == c || x == u })
			p.mu.Unlock()
		}()
	}
}

// zkConnState pairs one connection's create requests (xid → path) with their replies.
type zkConnState struct {
	mu      sync.Mutex
	creates map[int32]ZKProxyEvent
}

// pipe copies src to dst packet by packet; the first packet each way is the session handshake
// (ConnectRequest / ConnectResponse, no header). Requests start with xid and type; replies with xid.

func (p *ZKCountingProxy) pipe(dst, src net.Conn, requests bool, st *zkConnState) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	var lenb [4]byte
	first := true
	for {
		if _, err := io.ReadFull(src, lenb[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(lenb[:])
		if n > 64<<20 {
			return
		}
		buf := make([]byte, 4+n)
		copy(buf, lenb[:])
		if _, err := io.ReadFull(src, buf[4:]); err != nil {
			return
		}
		var ev *ZKProxyEvent
		switch {
		case first && !requests && n >= 16: // ConnectResponse: protocolVersion, timeOut, sessionId
			p.mu.Lock()
			p.sessionID = int64(binary.BigEndian.Uint64(buf[12:20]))
			p.mu.Unlock()
		case !first && requests && n >= 8:
			xid := int32(binary.BigEndian.Uint32(buf[4:8]))
			op := int32(binary.BigEndian.Uint32(buf[8:12]))
			name, ok := zkOpNames[op]
			if !ok {
				name = "op" + itoa(op)
			}
			p.mu.Lock()
			p.ops[name]++
			p.mu.Unlock()
			e := ZKProxyEvent{Kind: ZKProxyOther, Op: name}
			if zkPathOps[name] {
				e.Path = ustring(buf, 12)
			}
			switch {
			case ZKReadOps[name]:
				e.Kind = ZKProxyRead
			case ZKWriteOps[name]:
				e.Kind = ZKProxyWrite
			}
			if name == "create" || name == "create2" { // reported with its reply
				st.mu.Lock()
				st.creates[xid] = e
				st.mu.Unlock()
				break
			}
			ev = &e
		case !first && !requests && n >= 16: // ReplyHeader: xid, zxid, err
			xid := int32(binary.BigEndian.Uint32(buf[4:8]))
			if xid == -1 { // WatcherEvent: type, state, path
				p.mu.Lock()
				p.watches++
				p.mu.Unlock()
				var typ int32
				if len(buf) >= 24 {
					typ = int32(binary.BigEndian.Uint32(buf[20:24]))
				}
				name := zkWatchTypes[typ]
				if name == "" {
					name = "type" + itoa(typ)
				}
				ev = &ZKProxyEvent{Kind: ZKProxyWatch, Op: name, Path: ustring(buf, 28)}
				break
			}
			st.mu.Lock()
			e, ok := st.creates[xid]
			delete(st.creates, xid)
			st.mu.Unlock()
			if ok {
				if int32(binary.BigEndian.Uint32(buf[16:20])) == -110 { // NODEEXISTS
					e.Result = ZKProxyNodeExists
				}
				ev = &e
			}
		}
		if ev != nil && p.OnEvent != nil {
			p.OnEvent(*ev)
		}
		first = false
		if _, err := dst.Write(buf); err != nil {
			return
		}
	}
}

func itoa(v int32) string { return strconv.Itoa(int(v)) }

// Ops is a copy of the request counts by op name (ping included).
func (p *ZKCountingProxy) Ops() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.ops))
	for k, v := range p.ops {
		out[k] = v
	}
	return out
}

// SessionID is the session id of the last session the server granted through the proxy (0: none yet).
func (p *ZKCountingProxy) SessionID() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessionID
}

// Reads and Writes are the counted requests classified as the timeline's zk_reads and zk_writes.
func (p *ZKCountingProxy) Reads() int { return p.countOf(ZKReadOps) }

// Writes: see Reads.
func (p *ZKCountingProxy) Writes() int { return p.countOf(ZKWriteOps) }

func (p *ZKCountingProxy) countOf(set map[string]bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, v := range p.ops {
		if set[k] {
			n += v
		}
	}
	return n
}

// Watches is the count of watch notifications the server sent through the proxy.
func (p *ZKCountingProxy) Watches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.watches
}

// Close stops the listener and every connection through the proxy, and waits for its goroutines.
func (p *ZKCountingProxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
