// Package wire is a minimal Kafka client connection: one TCP connection, requests encoded and
// responses decoded by franz-go's kmsg. Both consumers use it so that every round trip is one
// visible call, and so that each connection can be dialled through a member's own dialer (the lab
// maps it to that member's fault proxy).
//
// Like the Java client's NetworkClient, a connection pipelines: a request is written as soon as it
// is made, without waiting for the answers to earlier ones, and the broker answers in order (Kafka
// processes one connection's requests in order). So a heartbeat is not held up behind a slow offset
// commit on the same coordinator connection. Ordered requests also have their answers handled in
// that order, as NetworkClient completes them, whichever waiting goroutine wakes first.
package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DialFunc dials a broker address; the lab's MemberLinks supply ones that go through proxies.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// MaxResponseBytes bounds a response's size prefix, so a corrupt prefix cannot make us allocate
// gigabytes (the broker's socket.request.max.bytes default is 100 MiB; responses are bounded alike).
const MaxResponseBytes = 256 << 20

// ErrClosed is returned by Request after Close, or after an earlier failure closed the connection.
var ErrClosed = errors.New("wire: connection closed")

// Conn is a Kafka client connection. Safe for concurrent use.
type Conn struct {
	addr string
	fmt  *kmsg.RequestFormatter
	conn net.Conn

	writeMu sync.Mutex // one request on the wire at a time; queue order = wire order
	corrID  int32

	mu      sync.Mutex
	pending []*call // written, awaiting their response, in wire order
	err     error   // why the connection closed; nil while open
	turns   uint64  // Ordered requests written so far (under writeMu and mu): the next one's turn

	turnMu  sync.Mutex
	turn    *sync.Cond // signalled when handled grows
	handled uint64     // Ordered requests whose answer has been handled

	readerDone chan struct{}
}

type call struct {
	corr    int32
	req     kmsg.Request
	done    chan result // buffered: the reader never blocks on a caller that gave up
	ordered bool
	turn    uint64 // an Ordered call's place among the connection's Ordered calls, in wire order
}

type result struct {
	resp kmsg.Response
	err  error
}

// Dial connects to addr (host:port) with dial (nil: a plain net.Dialer). clientID is sent in every
// request header (Kafka's client.id).
func Dial(ctx context.Context, dial DialFunc, addr, clientID string) (*Conn, error) {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("wire: dial %s: %w", addr, err)
	}
	c := &Conn{addr: addr, conn: nc, readerDone: make(chan struct{}),
		fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}
	c.turn = sync.NewCond(&c.turnMu)
	go c.readLoop()
	return c, nil
}

// Addr is the address this connection was dialled to.
func (c *Conn) Addr() string { return c.addr }

// Request sends req at the version the caller set (req.SetVersion) and returns its decoded
// response. Produce with acks=0 has no response: Request returns (nil, nil) for it once written.
// When ctx ends before the response arrives, the connection is closed — as the Java client
// disconnects a node whose request timed out, since the stream cannot skip one answer — and
// ctx.Err() is returned; every other request in flight fails too, and later calls get an error
// wrapping ErrClosed that says why. An I/O error or an undecodable response closes it likewise.
func (c *Conn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	_, resp, err := c.roundTrip(ctx, req, false)
	return resp, err
}

// Ordered is Request for answers that change shared state, as a group member's coordinator answers
// do: handle is called with the answer (or the error Request would return) on the caller's
// goroutine, and only once the handle of every Ordered request written earlier on this connection
// has returned. Since the broker answers a connection's requests in order, handles run in wire
// order, as the Java client's NetworkClient completes requests — whichever waiting goroutine wakes
// first. queued, if not nil, is called first when the answer is in but an earlier one's handle has
// not returned yet. A request that was never written (ctx already done, connection closed) is handled
// at once. handle must not wait for another request on this connection; requests made with Request
// are not ordered.
func (c *Conn) Ordered(ctx context.Context, req kmsg.Request, handle func(kmsg.Response, error), queued func()) {
	cl, resp, err := c.roundTrip(ctx, req, true)
	if cl == nil { // not written: no place in the order
		handle(resp, err)
		return
	}
	c.turnMu.Lock()
	if c.handled != cl.turn && queued != nil {
		c.turnMu.Unlock()
		queued()
		c.turnMu.Lock()
	}
	for c.handled != cl.turn {
		c.turn.Wait()
	}
	c.turnMu.Unlock()
	defer func() {
		c.turnMu.Lock()
		c.handled++
		c.turn.Broadcast()
		c.turnMu.Unlock()
	}()
	handle(resp, err)
}

// roundTrip writes req and waits for its answer. It returns the call once req is queued for the
// wire (nil when it never was).
func (c *Conn) roundTrip(ctx context.Context, req kmsg.Request, ordered bool) (*call, kmsg.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	noResponse := false
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		noResponse = true
	}
	if noResponse && ordered {
		return nil, nil, fmt.Errorf("wire: %s to %s: a request without a response cannot be ordered", kmsg.NameForKey(req.Key()), c.addr)
	}
	cl := &call{req: req, done: make(chan result, 1), ordered: ordered}
	stop := context.AfterFunc(ctx, func() { c.fail(ctx.Err()) })
	defer stop()

	c.writeMu.Lock()
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		c.writeMu.Unlock()
		return nil, nil, c.closedErr(ctx, err)
	}
	c.corrID++
	cl.corr = c.corrID
	if ordered {
		cl.turn = c.turns
		c.turns++
	}
	if !noResponse {
		c.pending = append(c.pending, cl)
	}
	c.mu.Unlock()
	_, err := c.conn.Write(c.fmt.AppendRequest(nil, req, cl.corr))
	c.writeMu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("wire: write %s to %s: %w", kmsg.NameForKey(req.Key()), c.addr, err))
		if noResponse {
			return nil, nil, c.closedErr(ctx, err)
		}
		<-cl.done // failed by fail: the call is resolved before its turn is taken
		return cl, nil, c.closedErr(ctx, err)
	}
	if noResponse {
		return nil, nil, nil
	}
	r := <-cl.done
	if r.err != nil {
		return cl, nil, c.closedErr(ctx, r.err)
	}
	return cl, r.resp, nil
}

// closedErr prefers the caller's own context error, so a timeout reads as one.
func (c *Conn) closedErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// readLoop reads responses in order and hands each to the request waiting at the queue's head.
func (c *Conn) readLoop() {
	defer close(c.readerDone)
	for {
		var size [4]byte
		if _, err := io.ReadFull(c.conn, size[:]); err != nil {
			c.fail(fmt.Errorf("wire: read from %s: %w", c.addr, err))
			return
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 4 || n > MaxResponseBytes {
			c.fail(fmt.Errorf("wire: response size %d from %s out of range", n, c.addr))
			return
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(c.conn, buf); err != nil {
			c.fail(fmt.Errorf("wire: read from %s: %w", c.addr, err))
			return
		}
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.mu.Unlock()
			c.fail(fmt.Errorf("wire: unsolicited response from %s", c.addr))
			return
		}
		cl := c.pending[0]
		c.pending = c.pending[1:]
		c.mu.Unlock()
		resp, err := decode(cl, buf)
		if err != nil {
			c.fail(err)
			cl.done <- result{err: err}
			return
		}
		cl.done <- result{resp: resp}
	}
}

func decode(cl *call, buf []byte) (kmsg.Response, error) {
	name := kmsg.NameForKey(cl.req.Key())
	if got := int32(binary.BigEndian.Uint32(buf)); got != cl.corr {
		return nil, fmt.Errorf("wire: %s: correlation id %d, want %d", name, got, cl.corr)
	}
	body := buf[4:]
	resp := cl.req.ResponseKind()
	resp.SetVersion(cl.req.GetVersion())
	// Flexible responses carry a tag buffer in the header, except ApiVersions (KIP-511) whose
	// response header stays v0 so that any client can read it.
	if resp.IsFlexible() && cl.req.Key() != kmsg.ApiVersions.Int16() {
		if body = skipTags(body); body == nil {
			return nil, fmt.Errorf("wire: %s: bad response header tags", name)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("wire: decode %s v%d: %w", name, cl.req.GetVersion(), err)
	}
	return resp, nil
}

// skipTags skips a header's tagged fields (uvarint count, then key, size, bytes per tag); nil if malformed.
func skipTags(b []byte) []byte {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil
	}
	b = b[k:]
	for i := uint64(0); i < n; i++ {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil
		}
		b = b[k+int(size):]
	}
	return b
}

// fail closes the connection for reason (the first one wins) and fails every request in flight
// with ErrClosed carrying that reason: a request other than the one that timed out must not read
// as having timed out itself.
func (c *Conn) fail(reason error) {
	err := ErrClosed
	if !errors.Is(reason, ErrClosed) {
		err = fmt.Errorf("%w: %v", ErrClosed, reason)
	}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	_ = c.conn.Close()
	for _, cl := range pending {
		cl.done <- result{err: err}
	}
}

// Close closes the connection, failing the requests in flight with ErrClosed, and waits for its
// reader to stop. Safe to call more than once and concurrently with Request.
func (c *Conn) Close() error {
	c.fail(ErrClosed)
	<-c.readerDone
	return nil
}
