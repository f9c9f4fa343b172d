package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// frameReader reads the size-prefixed requests of one connection, as Kafka's SocketServer does with
// NetworkReceive: a 4-byte big-endian size, then a body read into one buffer of exactly that size. A
// size above socket.request.max.bytes (or negative) is refused before any body byte is read
// (InvalidReceiveException), which bounds the buffer. One allocation per request, of any size: the
// frame itself (the size prefix reuses the reader's array). The frame is not reused afterwards: parsed
// requests alias it (kmsg keeps byte fields as sub-slices), and the coordinator keeps some of them.
type frameReader struct {
	c        net.Conn
	maxBytes int32         // socket.request.max.bytes
	idle     time.Duration // connections.max.idle.ms; 0 = no limit
	size     [4]byte
}

// next returns the next request frame without its size prefix. Errors: *errClose with closeIdle when
// no request began within idle, closeOversize for a size out of range; otherwise the connection's
// read error (io.EOF, io.ErrUnexpectedEOF for a frame cut short).
func (r *frameReader) next() ([]byte, error) {
	if r.idle > 0 {
		r.c.SetReadDeadline(time.Now().Add(r.idle))
	}
	if _, err := io.ReadFull(r.c, r.size[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, &errClose{closeIdle, fmt.Errorf("no request for connections.max.idle.ms=%d", r.idle.Milliseconds())}
		}
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(r.size[:]))
	if n < 0 || n > r.maxBytes {
		return nil, &errClose{closeOversize, fmt.Errorf("request size %d is larger than socket.request.max.bytes=%d", n, r.maxBytes)}
	}
	if r.idle > 0 {
		r.c.SetReadDeadline(time.Time{}) // a started request may take its time
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(r.c, frame); err != nil {
		return nil, err
	}
	return frame, nil
}
