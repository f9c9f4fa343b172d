package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// Slice is a run of whole batches in one segment file, not read: the file and where the batches lie
// in it (Pos, Size bytes), as Kafka's FileRecords.slice is, which the broker sends with
// FileChannel.transferTo (sendfile). The segment's file stays open while a Slice holds it, even when
// retention, compaction or truncation removes the segment meanwhile (the file's data stays readable
// through the open descriptor); the file is closed at the last Release. Bytes cut off the file by a
// truncation after the Slice was taken are gone: a send of them comes back short, which the sender
// must treat as an error, as Kafka's FileRecords.writeTo does ("Size of FileRecords has been
// truncated during write"). The zero Slice holds nothing (Size 0). Release a Slice exactly once.
type Slice struct {
	seg  *segment
	Pos  int64 // byte position of the first batch in the segment file
	Size int64 // bytes: whole batches
}

// File is the segment's .log file; valid until Release. With OS it is an *os.File underneath and
// implements syscall.Conn (the broker's zero-copy send needs the descriptor).
func (s Slice) File() File {
	if s.seg == nil {
		return nil
	}
	return s.seg.log
}

// AppendTo appends the slice's bytes to dst (a copy: for senders that cannot send from the file).
// It fails with io.ErrUnexpectedEOF when the file was truncated under the slice.
func (s Slice) AppendTo(dst []byte) ([]byte, error) {
	if s.Size == 0 {
		return dst, nil
	}
	n := len(dst)
	dst = append(dst, make([]byte, s.Size)...)
	if err := readFull(s.seg.log, dst[n:], s.Pos); err != nil {
		return dst[:n], fmt.Errorf("storage: segment %d bytes [%d, %d): %w", s.seg.base, s.Pos, s.Pos+s.Size, err)
	}
	return dst, nil
}

// Release lets the segment's file close once no other Slice holds it and the log no longer uses it.
func (s Slice) Release() {
	if s.seg != nil {
		s.seg.release()
	}
}

// SliceUpTo is ReadUpTo without reading the batches: it returns where the same batches lie (the
// zero Slice where ReadUpTo returns no bytes), walking only the batch headers. The caller must
// Release it. limit math.MaxInt64 reads as Read does, up to the log end offset. Errors as ReadUpTo.
func (l *Log) SliceUpTo(offset int64, maxBytes int32, limit int64) (Slice, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	s, pos, firstSize, err := l.locateLocked(offset)
	if err != nil || s == nil || offset >= limit {
		return Slice{}, err
	}
	n, err := s.extent(pos, firstSize, maxBytes, limit)
	if err != nil || n == 0 {
		return Slice{}, err
	}
	s.acquire()
	return Slice{seg: s, Pos: pos, Size: n}, nil
}

// extent is the bytes of whole batches from pos that read, then ReadUpTo's limit, would return: the
// first batch (firstSize bytes) even if larger than maxBytes, then the next ones while they fit in
// maxBytes, up to the segment's end, stopping at the first batch that holds limit or a later offset.
func (s *segment) extent(pos int64, firstSize int, maxBytes int32, limit int64) (int64, error) {
	budget := max(int64(maxBytes), int64(firstSize))
	var hdr [offLastOffsetDelta + 4]byte
	end := pos
	for end+batchOverhead <= s.size {
		if err := readFull(s.log, hdr[:], end); err != nil {
			return 0, err
		}
		size := int64(logOverhead) + int64(int32(binary.BigEndian.Uint32(hdr[offLength:])))
		if size < batchOverhead || end+size > s.size || end+size-pos > budget {
			break
		}
		last := int64(binary.BigEndian.Uint64(hdr[:])) + int64(int32(binary.BigEndian.Uint32(hdr[offLastOffsetDelta:])))
		if last >= limit {
			break
		}
		end += size
	}
	return end - pos, nil
}

// segRefs counts the Slices that hold a segment's .log file open; the zero value holds none.
type segRefs struct {
	mu      sync.Mutex
	slices  int
	retired bool // the log no longer uses the segment: the last Release closes the file
}

func (s *segment) acquire() {
	s.refs.mu.Lock()
	s.refs.slices++
	s.refs.mu.Unlock()
}

func (s *segment) release() {
	s.refs.mu.Lock()
	s.refs.slices--
	if s.refs.slices < 0 {
		s.refs.mu.Unlock()
		panic("storage: Slice released more often than taken")
	}
	last := s.refs.slices == 0 && s.refs.retired
	s.refs.mu.Unlock()
	if last {
		s.log.Close()
	}
}

// close closes the segment's files for the log, which no longer uses it: the index at once, the
// .log when no Slice holds it (else at the last Release). The error is that of the closes done now.
func (s *segment) close() error {
	s.refs.mu.Lock()
	s.refs.retired = true
	held := s.refs.slices > 0
	s.refs.mu.Unlock()
	err := s.index.Close()
	if !held {
		err = errors.Join(s.log.Close(), err)
	}
	return err
}
