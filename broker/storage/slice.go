package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// Slice is a run of whole batches in one segment file, not read: the file and where the batches lie
// in it (Pos, Size bytes), as Kafka's FileRecords.slice is, which the broker sends with
// FileChannel.transferTo (sendfile). The segment's file stays open while a Slice holds it, even when
// retention, compaction or truncation removes the segment meanwhile (the file's data stays readable
// through the open descriptor); the file is closed at the last Release. A truncation of the segment's
// file in place (a follower truncating to its leader, TruncateTo, TruncateFullyAndStartAt) may cut
// the Slice's bytes and let later appends write others where they were: Check reports it, and a
// sender must call it after reading the bytes and before completing what it sends (Kafka's
// FileRecords.writeTo only notices a file grown shorter). The zero Slice holds nothing (Size 0).
// Release a Slice exactly once.
type Slice struct {
	seg   *segment
	Pos   int64  // byte position of the first batch in the segment file
	Size  int64  // bytes: whole batches
	trunc uint64 // the segment's truncations when taken
}

// ErrSliceTruncated is Check's error: the segment's file was truncated in place after the Slice was
// taken, so bytes read from it since may not be the batches it was taken for.
var ErrSliceTruncated = errors.New("storage: segment file truncated under a slice")

// Check returns ErrSliceTruncated when the segment's file was truncated in place since the Slice
// was taken: bytes read from it before Check returns nil are the Slice's batches.
func (s Slice) Check() error {
	if s.seg != nil && s.seg.refs.truncations.Load() != s.trunc {
		return ErrSliceTruncated
	}
	return nil
}

// File is the segment's .log file; valid until Release. With OS it is an *os.File underneath and
// implements syscall.Conn (the broker's zero-copy send needs the descriptor).
func (s Slice) File() File {
	if s.seg == nil {
		return nil
	}
	return s.seg.log
}

// ReadAt reads len(p) bytes of the slice from off (bytes from the slice's start; off+len(p) at most
// Size) and then checks them (Check). Errors: ErrSliceTruncated when the file was truncated under the
// slice (wrapping io.ErrUnexpectedEOF too when it ends before the bytes), or an I/O error.
func (s Slice) ReadAt(p []byte, off int64) error {
	if off < 0 || off+int64(len(p)) > s.Size {
		return fmt.Errorf("storage: read of [%d, %d) outside a slice of %d bytes", off, off+int64(len(p)), s.Size)
	}
	if len(p) == 0 {
		return nil
	}
	err := readFull(s.seg.log, p, s.Pos+off)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("%w: %w", ErrSliceTruncated, err)
	} else if err == nil {
		err = s.Check()
	}
	if err != nil {
		return fmt.Errorf("storage: segment %d bytes [%d, %d): %w", s.seg.base, s.Pos+off, s.Pos+off+int64(len(p)), err)
	}
	return nil
}

// AppendTo appends the slice's bytes to dst (a copy: for senders that cannot send from the file).
// Errors as ReadAt.
func (s Slice) AppendTo(dst []byte) ([]byte, error) {
	n := len(dst)
	dst = append(dst, make([]byte, s.Size)...)
	if err := s.ReadAt(dst[n:], 0); err != nil {
		return dst[:n], err
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
	return Slice{seg: s, Pos: pos, Size: n, trunc: s.refs.truncations.Load()}, nil
}

// extentWindow is how much extent reads at once after a small batch: the headers of the next batches
// are likely in it. After a batch of extentWindow/2 bytes or more it reads just the next header.
const extentWindow = 8 << 10

// extent is the bytes of whole batches from pos that read, then ReadUpTo's limit, would return: the
// first batch (firstSize bytes) even if larger than maxBytes, then the next ones while they fit in
// maxBytes, up to the segment's end, stopping at the first batch that holds limit or a later offset.
// It reads only batch headers: one header at a time after a large batch, a window of extentWindow
// bytes after a small one, so that neither many small batches cost a read each nor large ones a
// read of their bytes.
func (s *segment) extent(pos int64, firstSize int, maxBytes int32, limit int64) (int64, error) {
	budget := max(int64(maxBytes), int64(firstSize))
	const hdrLen = offLastOffsetDelta + 4
	var one [hdrLen]byte
	var win *[extentWindow]byte // from extentWindows, once a small batch is seen
	defer func() {
		if win != nil {
			extentWindows.Put(win)
		}
	}()
	var buf []byte // the bytes last read: the file's [bufPos, bufPos+len(buf))
	bufPos := int64(0)
	end := pos
	prev := int64(extentWindow) // the last batch's size: the first read is one header
	for end+batchOverhead <= s.size {
		if end < bufPos || end+hdrLen > bufPos+int64(len(buf)) {
			buf = one[:]
			if prev < extentWindow/2 {
				if win == nil {
					win = extentWindows.Get().(*[extentWindow]byte)
				}
				buf = win[:max(min(int64(extentWindow), s.size-end, budget-(end-pos)+hdrLen), hdrLen)]
			}
			if err := readFull(s.log, buf, end); err != nil {
				return 0, err
			}
			bufPos = end
		}
		hdr := buf[end-bufPos:]
		size := int64(logOverhead) + int64(int32(binary.BigEndian.Uint32(hdr[offLength:])))
		if size < batchOverhead || end+size > s.size || end+size-pos > budget {
			break
		}
		last := int64(binary.BigEndian.Uint64(hdr[:])) + int64(int32(binary.BigEndian.Uint32(hdr[offLastOffsetDelta:])))
		if last >= limit {
			break
		}
		end += size
		prev = size
	}
	return end - pos, nil
}

// extentWindows are extent's read windows.
var extentWindows = sync.Pool{New: func() any { return new([extentWindow]byte) }}

// segRefs counts the Slices that hold a segment's .log file open; the zero value holds none.
type segRefs struct {
	mu      sync.Mutex
	slices  int
	retired bool // the log no longer uses the segment: the last Release closes the file
	// truncations counts in-place truncations of the .log file (Slice.Check), incremented before each.
	truncations atomic.Uint64
}

// truncate truncates the segment's .log file in place to size bytes, after telling the Slices.
func (s *segment) truncate(size int64) error {
	s.refs.truncations.Add(1)
	return s.log.Truncate(size)
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
