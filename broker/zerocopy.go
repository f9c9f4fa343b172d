package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/storage"
)

// Zero-copy fetch, as Kafka's FileRecords does it: a Fetch answer's records are not read into the
// broker's memory but sent from the segment files with sendfile(2) (Kafka: FileChannel.transferTo),
// the frame's other bytes written around them. Down-converted answers (Fetch v0–v3) are built in
// memory, as in Kafka; so are the records of a file system whose files have no descriptor (the
// tests' in-memory one) and of a connection that is not a socket, which are copied.

// fetchAnswer is a FetchResponse whose records may lie in segment files: slices[i] belongs to the
// i-th partition in response order (topic by topic); where its Size is above 0 the partition's
// RecordBatches is empty and the answer carries the slice's bytes in its place.
type fetchAnswer struct {
	*kmsg.FetchResponse
	slices []storage.Slice
}

// release lets go of every slice the answer holds.
func (a *fetchAnswer) release() {
	for _, s := range a.slices {
		s.Release()
	}
	a.slices = a.slices[:0]
}

// inline copies the slices' bytes into their partitions' RecordBatches (for an answer kmsg must
// encode) and releases them.
func (a *fetchAnswer) inline() error {
	defer a.release()
	k := 0
	for i := range a.Topics {
		for j := range a.Topics[i].Partitions {
			if k < len(a.slices) && a.slices[k].Size > 0 {
				b, err := a.slices[k].AppendTo(nil)
				if err != nil {
					return err
				}
				a.Topics[i].Partitions[j].RecordBatches = b
			}
			k++
		}
	}
	return nil
}

// splice is a Slice whose bytes go into a response frame at position at of the frame's buffer.
type splice struct {
	at int
	s  storage.Slice
}

// zeroCopyEncodable reports whether appendFetchFrame encodes resp exactly as kmsg would: versions
// 0–12 (this broker's) and none of the fields this broker never sets (unknown tags, CurrentLeader,
// SnapshotID, NodeEndpoints).
func zeroCopyEncodable(resp *kmsg.FetchResponse) bool {
	if resp.Version > 12 || len(resp.Brokers) > 0 || resp.UnknownTags.Len() > 0 {
		return false
	}
	for _, t := range resp.Topics {
		if t.UnknownTags.Len() > 0 {
			return false
		}
		for _, p := range t.Partitions {
			if p.UnknownTags.Len() > 0 || p.DivergingEpoch.UnknownTags.Len() > 0 ||
				p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1 ||
				p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1 {
				return false
			}
			for _, at := range p.AbortedTransactions {
				if at.UnknownTags.Len() > 0 {
					return false
				}
			}
		}
	}
	return true
}

// zeroCopyMinBytes is the smallest slice sent with sendfile: a smaller one is read into the frame,
// since a sendfile and the write of the frame's bytes before it cost more than the copy
// (BenchmarkFetchAnswer: at 4 KiB per partition sendfile took twice the copy's time, at 64 KiB 0.5).
const zeroCopyMinBytes = 32 << 10

// appendFetchFrame frames a's response as appendResponse would, leaving out the bytes of a's slices of
// zeroCopyMinBytes or more: the frame's size prefix counts them, and each splice says where in the
// returned buffer a slice's bytes go. Smaller slices are read into the frame. It takes over a's
// slices: those it reads are released, the others go into the splices, which the caller releases
// after the write; on an error (a read) all are released. The encoding follows kmsg's
// FetchResponse.AppendTo field by field for v0–v12 (zeroCopyEncodable); TestFetchFrameMatchesKmsg
// compares the two for every version.
func appendFetchFrame(dst []byte, correlationID int32, a *fetchAnswer) ([]byte, []splice, error) {
	r := a.FetchResponse
	v, flex := r.Version, r.Version >= 12
	dst = append(dst[:0], 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, correlationID)
	if flex {
		dst = append(dst, 0) // response header v1: no tags
	}
	if v >= 1 {
		dst = kbin.AppendInt32(dst, r.ThrottleMillis)
	}
	if v >= 7 {
		dst = kbin.AppendInt16(dst, r.ErrorCode)
		dst = kbin.AppendInt32(dst, r.SessionID)
	}
	var splices []splice
	var spliced int64
	dst = appendLen(dst, len(r.Topics), flex)
	k := 0
	for i := range r.Topics {
		t := &r.Topics[i]
		if flex {
			dst = kbin.AppendCompactString(dst, t.Topic)
		} else {
			dst = kbin.AppendString(dst, t.Topic)
		}
		dst = appendLen(dst, len(t.Partitions), flex)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			if v >= 4 {
				dst = kbin.AppendInt64(dst, p.LastStableOffset)
			}
			if v >= 5 {
				dst = kbin.AppendInt64(dst, p.LogStartOffset)
			}
			if v >= 4 {
				if flex {
					dst = kbin.AppendCompactNullableArrayLen(dst, len(p.AbortedTransactions), p.AbortedTransactions == nil)
				} else {
					dst = kbin.AppendNullableArrayLen(dst, len(p.AbortedTransactions), p.AbortedTransactions == nil)
				}
				for _, at := range p.AbortedTransactions {
					dst = kbin.AppendInt64(dst, at.ProducerID)
					dst = kbin.AppendInt64(dst, at.FirstOffset)
					if flex {
						dst = append(dst, 0)
					}
				}
			}
			if v >= 11 {
				dst = kbin.AppendInt32(dst, p.PreferredReadReplica)
			}
			var s storage.Slice
			if k < len(a.slices) {
				s = a.slices[k]
				a.slices[k] = storage.Slice{} // taken over
			}
			k++
			switch {
			case s.Size > 0 && flex:
				dst = kbin.AppendUvarint(dst, uint32(s.Size)+1)
			case s.Size > 0:
				dst = kbin.AppendInt32(dst, int32(s.Size))
			case flex:
				dst = kbin.AppendCompactNullableBytes(dst, p.RecordBatches)
			default:
				dst = kbin.AppendNullableBytes(dst, p.RecordBatches)
			}
			switch {
			case s.Size >= zeroCopyMinBytes:
				splices = append(splices, splice{at: len(dst), s: s})
				spliced += s.Size
			case s.Size > 0:
				var err error
				dst, err = s.AppendTo(dst)
				s.Release()
				if err != nil {
					a.release()
					for _, sp := range splices {
						sp.s.Release()
					}
					return dst, nil, err
				}
			}
			if flex {
				if p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1 {
					// One tagged field, tag 0, of 13 bytes: Epoch, EndOffset, its own empty tags.
					dst = append(dst, 1, 0, 13)
					dst = kbin.AppendInt32(dst, p.DivergingEpoch.Epoch)
					dst = kbin.AppendInt64(dst, p.DivergingEpoch.EndOffset)
					dst = append(dst, 0)
				} else {
					dst = append(dst, 0)
				}
			}
		}
		if flex {
			dst = append(dst, 0)
		}
	}
	if flex {
		dst = append(dst, 0)
	}
	binary.BigEndian.PutUint32(dst[:4], uint32(int64(len(dst)-4)+spliced))
	a.slices = a.slices[:0]
	return dst, splices, nil
}

func appendLen(dst []byte, n int, flex bool) []byte {
	if flex {
		return kbin.AppendCompactArrayLen(dst, n)
	}
	return kbin.AppendArrayLen(dst, n)
}

// writeFrame writes buf with each splice's bytes inserted at its position: sendfile(2) from the
// segment file where c is a socket and the file has a descriptor, a copy through scratch otherwise.
// It returns the bytes written. Each slice is checked after its bytes went out (Slice.Check), and the
// frame's last byte is held back until then, so that a client never receives a whole frame holding
// bytes a truncation replaced. A slice that comes back short or fails its check is
// storage.ErrSliceTruncated: the frame's size prefix promised its bytes, so the caller must close the
// connection, as Kafka does.
func writeFrame(c net.Conn, buf []byte, splices []splice, scratch *[]byte) (int64, error) {
	var written int64
	var sock syscall.RawConn
	if sc, ok := c.(syscall.Conn); ok && len(splices) > 0 {
		sock, _ = sc.SyscallConn()
	}
	prev := 0
	for i, sp := range splices {
		n, err := c.Write(buf[prev:sp.at])
		written += int64(n)
		if err != nil {
			return written, err
		}
		size := sp.s.Size
		endsFrame := i == len(splices)-1 && sp.at == len(buf) // nothing of buf after it
		if endsFrame {
			size-- // the frame's last byte waits for the check
		}
		m, err := sendSlice(c, sock, sp.s, size, scratch)
		written += m
		if err == nil {
			err = sp.s.Check()
		}
		if err == nil && endsFrame {
			var last [1]byte
			if err = sp.s.ReadAt(last[:], size); err == nil {
				var k int
				k, err = c.Write(last[:])
				written += int64(k)
			}
		}
		if err != nil {
			return written, err
		}
		prev = sp.at
	}
	n, err := c.Write(buf[prev:])
	return written + int64(n), err
}

// sendSlice writes the first n bytes of s to c: with sendfile through sock, c's descriptor, when
// there is one and s's file has a descriptor too (and the kernel takes sendfile from it), else
// through scratch (Slice.ReadAt).
func sendSlice(c net.Conn, sock syscall.RawConn, s storage.Slice, n int64, scratch *[]byte) (int64, error) {
	if sock != nil {
		if src, ok := s.File().(syscall.Conn); ok {
			sent, err := sendfile(sock, src, s.Pos, n)
			if sent > 0 || !sendfileUnsupported(err) {
				return sent, err
			}
		}
	}
	b := append((*scratch)[:0], make([]byte, n)...)
	*scratch = b
	if err := s.ReadAt(b, 0); err != nil {
		return 0, err
	}
	k, err := c.Write(b)
	return int64(k), err
}

// sendfileUnsupported reports the errors of a kernel or file system that cannot sendfile from this
// file to this socket: the bytes are then copied (as Go's own io.Copy falls back).
func sendfileUnsupported(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP)
}

// sendfile sends n bytes of src from offset off to the socket dst with sendfile(2), waiting for the
// socket to drain (the runtime's poller, honouring the connection's deadlines) when it is full.
func sendfile(sock syscall.RawConn, src syscall.Conn, off, n int64) (int64, error) {
	file, err := src.SyscallConn()
	if err != nil {
		return 0, err
	}
	var sent int64
	var serr error
	// Control holds the file's descriptor open for the whole send (a Close meanwhile waits for it).
	cerr := file.Control(func(ffd uintptr) {
		werr := sock.Write(func(sfd uintptr) bool {
			for sent < n {
				m, err := syscall.Sendfile(int(sfd), int(ffd), &off, int(min(n-sent, 1<<30)))
				if m > 0 {
					sent += int64(m)
				}
				switch {
				case errors.Is(err, syscall.EAGAIN):
					return false // wait until the socket is writable
				case errors.Is(err, syscall.EINTR):
				case err != nil:
					serr = err
					return true
				case m == 0: // the file ended before the slice did
					serr = storage.ErrSliceTruncated
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if serr == nil {
		serr = cerr
	}
	if serr != nil && !errors.Is(serr, storage.ErrSliceTruncated) {
		serr = fmt.Errorf("sendfile: %w", serr)
	}
	if sent < n && serr == nil {
		serr = io.ErrShortWrite
	}
	return sent, serr
}
