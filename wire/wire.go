// Package wire is a minimal Kafka client connection: one TCP connection, requests encoded and
// responses decoded by franz-go's kmsg, one request in flight at a time. Both consumers use it so
// that every round trip is one visible call, and so that each connection can be dialled through a
// member's own dialer (the lab maps it to that member's fault proxy).
package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DialFunc dials a broker address; the lab's MemberLinks supply ones that go through proxies.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// MaxResponseBytes bounds a response's size prefix, so a corrupt prefix cannot make us allocate
// gigabytes (the broker's socket.request.max.bytes default is 100 MiB; responses are bounded alike).
const MaxResponseBytes = 256 << 20

// ErrClosed is returned by Request after Close or after an earlier I/O error closed the connection.
var ErrClosed = errors.New("wire: connection closed")

// Conn is a Kafka client connection. Safe for concurrent use; requests are serialised, one in flight.
type Conn struct {
	addr string
	fmt  *kmsg.RequestFormatter

	turn   chan struct{} // one slot: serialises requests; waiting for it honours the context
	conn   net.Conn
	corrID int32
	closed atomic.Bool
}

// Dial connects to addr (host:port) with dial (nil: a plain net.Dialer). clientID is sent in every
// request header (Kafka's client.id).
func Dial(ctx context.Context, dial DialFunc, addr, clientID string) (*Conn, error) {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("wire: dial %s: %w", addr, err)
	}
	return &Conn{addr: addr, conn: c, turn: make(chan struct{}, 1), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}, nil
}

// Addr is the address this connection was dialled to.
func (c *Conn) Addr() string { return c.addr }

// Request sends req at the version the caller set (req.SetVersion) and returns its decoded
// response. Produce with acks=0 has no response: Request returns (nil, nil) for it. A context
// deadline or cancellation, an I/O error or an undecodable response closes the connection (the
// stream position is lost) and is returned; later calls get ErrClosed.
func (c *Conn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err() // still waiting behind another request: the connection is untouched
	}
	defer func() { <-c.turn }()
	if c.closed.Load() {
		return nil, ErrClosed
	}
	resp, err := c.roundTrip(ctx, req)
	if err != nil {
		_ = c.Close()
		if c.closed.Load() && ctx.Err() == nil && errors.Is(err, net.ErrClosed) {
			err = ErrClosed
		}
	}
	return resp, err
}

func (c *Conn) roundTrip(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	// The context governs the socket: when it ends (deadline or cancel), a watcher expires the
	// socket's deadline at once, so ctx.Err() is already set when the read fails.
	_ = c.conn.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	c.corrID++
	corr := c.corrID
	if _, err := c.conn.Write(c.fmt.AppendRequest(nil, req, corr)); err != nil {
		return nil, c.ioErr(ctx, "write", req, err)
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, nil
	}
	var size [4]byte
	if _, err := io.ReadFull(c.conn, size[:]); err != nil {
		return nil, c.ioErr(ctx, "read", req, err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > MaxResponseBytes {
		return nil, fmt.Errorf("wire: %s: response size %d out of range", kmsg.NameForKey(req.Key()), n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c.conn, buf); err != nil {
		return nil, c.ioErr(ctx, "read", req, err)
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != corr {
		return nil, fmt.Errorf("wire: %s: correlation id %d, want %d", kmsg.NameForKey(req.Key()), got, corr)
	}
	body := buf[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	// Flexible responses carry a tag buffer in the header, except ApiVersions (KIP-511) whose
	// response header stays v0 so that any client can read it.
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		if len(body) < 1 {
			return nil, fmt.Errorf("wire: %s: empty flexible response", kmsg.NameForKey(req.Key()))
		}
		body = skipTags(body)
		if body == nil {
			return nil, fmt.Errorf("wire: %s: bad response header tags", kmsg.NameForKey(req.Key()))
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("wire: decode %s v%d: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
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

func (c *Conn) ioErr(ctx context.Context, op string, req kmsg.Request, err error) error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return fmt.Errorf("wire: %s %s to %s: %w", op, kmsg.NameForKey(req.Key()), c.addr, err)
}

// Close closes the connection, interrupting a request in flight (it returns an error); safe to call
// more than once and concurrently with Request.
func (c *Conn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.conn.Close()
}
