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
	"strconv"
	"sync"
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

	mu      sync.Mutex
	ops     map[string]int
	watches int
	conns   []net.Conn
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
		u, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(u, c, true)
		go p.pipe(c, u, false)
	}
}

// pipe copies src to dst packet by packet; the first packet each way is the session handshake
// (ConnectRequest / ConnectResponse, no header). Requests start with xid and type; replies with xid.
func (p *ZKCountingProxy) pipe(dst, src net.Conn, requests bool) {
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
		if !first && n >= 8 {
			xid := int32(binary.BigEndian.Uint32(buf[4:8]))
			p.mu.Lock()
			if requests {
				op := int32(binary.BigEndian.Uint32(buf[8:12]))
				name, ok := zkOpNames[op]
				if !ok {
					name = "op" + itoa(op)
				}
				p.ops[name]++
			} else if xid == -1 {
				p.watches++
			}
			p.mu.Unlock()
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
