package storage

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	logSuffix   = ".log"
	indexSuffix = ".index"
	// indexEntrySize: relative offset int32 + physical position int32, big-endian
	// (kafka.log.OffsetIndex).
	indexEntrySize = 8
)

// segmentPath is Kafka's file name: the base offset as 20 digits + suffix.
func segmentPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// parseSegmentName returns the base offset of "<20 digits>.log".
func parseSegmentName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, logSuffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	return base, err == nil && base >= 0
}

// indexEntry maps offset — the last offset of the batch at pos — to pos (bytes).
type indexEntry struct {
	offset int64
	pos    int32
}

// segment is one .log file and its sparse .index (kafka.log.LogSegment).
// The index's content is mirrored in entries for lookups.
type segment struct {
	base       int64
	log, index File
	size       int64 // bytes in .log
	next       int64 // the offset after the last batch; base when empty
	entries    []indexEntry
	sinceIndex int64 // bytes since the last index entry (LogSegment.bytesSinceLastIndexEntry)
	// rollTs is LogSegment.rollingBasedTimestamp: the largest timestamp of the
	// first append (after recovery: of the first batch), ms; -1 when none.
	rollTs int64
	maxTs  int64 // largest batch maxTimestamp, ms; -1 when none
	// created is LogSegment.created; modified stands in for the .log's mtime,
	// which the FS interface does not expose (set at open and on every append).
	created, modified time.Time
	refs              *segRefs // the Slices holding .log open (slice.go); shared by copies of the struct
}

// openSegmentFiles opens (creating when create is set) the two files of base.
func openSegmentFiles(fs FS, dir string, base int64, create bool) (*segment, error) {
	flag := os.O_RDWR | os.O_APPEND
	if create {
		flag |= os.O_CREATE | os.O_TRUNC
	}
	log, err := fs.OpenFile(segmentPath(dir, base, logSuffix), flag, 0o644)
	if err != nil {
		return nil, err
	}
	// The index may be missing (it is rebuilt), so it is always created.
	index, err := fs.OpenFile(segmentPath(dir, base, indexSuffix), flag|os.O_CREATE, 0o644)
	if err != nil {
		log.Close()
		return nil, err
	}
	return &segment{base: base, log: log, index: index, next: base, rollTs: noTimestamp, maxTs: noTimestamp, refs: &segRefs{}}, nil
}

// noteBatch updates the segment for a batch written at pos and returns the index
// entry Kafka would add for it (LogSegment.recover's rule: an entry when more
// than interval bytes lie between the last entry and this batch).
func (s *segment) noteBatch(pos int64, info batchInfo, lastOffset int64, interval int32) (indexEntry, bool) {
	var e indexEntry
	added := false
	if s.sinceIndex > int64(interval) {
		e = indexEntry{offset: lastOffset, pos: int32(pos)}
		s.entries = append(s.entries, e)
		s.sinceIndex = 0
		added = true
	}
	s.sinceIndex += int64(info.size)
	if info.maxTimestamp > s.maxTs {
		s.maxTs = info.maxTimestamp
	}
	s.next = lastOffset + 1
	return e, added
}

func (s *segment) encodeEntries(entries []indexEntry) []byte {
	b := make([]byte, 0, len(entries)*indexEntrySize)
	for _, e := range entries {
		b = binary.BigEndian.AppendUint32(b, uint32(e.offset-s.base))
		b = binary.BigEndian.AppendUint32(b, uint32(e.pos))
	}
	return b
}

// lookup returns the position to scan from for offset: that of the largest
// index entry at or below it, else 0 (OffsetIndex.lookup).
func (s *segment) lookup(offset int64) int64 {
	i := sort.Search(len(s.entries), func(i int) bool { return s.entries[i].offset > offset })
	if i == 0 {
		return 0
	}
	return int64(s.entries[i-1].pos)
}

// canHold reports whether lastOffset fits the index's int32 relative offsets.
func (s *segment) canHold(lastOffset int64) bool {
	return lastOffset-s.base <= math.MaxInt32
}

// find returns the position and size of the batch holding offset, scanning
// batch headers forward from the index's hint (FileRecords.searchForOffsetWithSize).
func (s *segment) find(offset int64) (pos int64, size int, err error) {
	var hdr [offLastOffsetDelta + 4]byte
	for pos = s.lookup(offset); pos < s.size; pos += int64(size) {
		if err := readFull(s.log, hdr[:], pos); err != nil {
			return 0, 0, err
		}
		base := int64(binary.BigEndian.Uint64(hdr[:]))
		size = logOverhead + int(int32(binary.BigEndian.Uint32(hdr[offLength:])))
		if size < batchOverhead { // changed on disk after it was validated
			return 0, 0, fmt.Errorf("storage: segment %d: bad batch length at position %d", s.base, pos)
		}
		last := base + int64(int32(binary.BigEndian.Uint32(hdr[offLastOffsetDelta:])))
		if last >= offset {
			return pos, size, nil
		}
	}
	return 0, 0, fmt.Errorf("storage: offset %d not found in segment %d", offset, s.base)
}

// read returns whole batches from pos: the first even if larger than maxBytes
// (KIP-74), then as many as fit in maxBytes, up to the segment's end.
func (s *segment) read(pos int64, firstSize int, maxBytes int32) ([]byte, error) {
	n := min(int64(max(maxBytes, int32(firstSize))), s.size-pos)
	buf := make([]byte, n)
	if err := readFull(s.log, buf, pos); err != nil {
		return nil, err
	}
	end := firstSize
	for end+logOverhead <= len(buf) {
		next := end + logOverhead + int(int32(binary.BigEndian.Uint32(buf[end+offLength:])))
		if next < end+batchOverhead || next > len(buf) {
			break
		}
		end = next
	}
	return buf[:end:end], nil
}

// scan reads every batch of the segment in order (LogSegment.recover): check
// validates each one with its position, and the scan stops at the first torn
// or invalid batch. valid is the length of the good prefix; problem says what
// ended it early (nil when the whole file is good); err is an I/O failure.
func (s *segment) scan(fileSize int64, check func(pos int64, info batchInfo) error) (valid int64, problem, err error) {
	r := bufio.NewReaderSize(io.NewSectionReader(s.log, 0, fileSize), 1<<16)
	buf := make([]byte, batchOverhead, 1<<12)
	for valid < fileSize {
		if left := fileSize - valid; left < batchOverhead {
			return valid, fmt.Errorf("position %d: torn batch header, %d bytes", valid, left), nil
		}
		buf = buf[:batchOverhead]
		if _, err := io.ReadFull(r, buf); err != nil {
			return valid, nil, err
		}
		length := int32(binary.BigEndian.Uint32(buf[offLength:]))
		size := logOverhead + int64(length)
		if length < batchOverhead-logOverhead {
			return valid, fmt.Errorf("position %d: bad batch length %d", valid, length), nil
		}
		if valid+size > fileSize {
			return valid, fmt.Errorf("position %d: torn batch, %d bytes declared, %d on disk", valid, size, fileSize-valid), nil
		}
		if int64(cap(buf)) < size {
			buf = append(buf[:cap(buf)], make([]byte, size-int64(cap(buf)))...)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf[batchOverhead:]); err != nil {
			return valid, nil, err
		}
		info, perr := parseBatch(buf, true)
		if perr == nil {
			perr = check(valid, info)
		}
		if perr != nil {
			return valid, fmt.Errorf("position %d: %w", valid, perr), nil
		}
		valid += size
	}
	return valid, nil, nil
}

// readFull reads len(b) bytes at off; ReadAt may report io.EOF with a full read.
func readFull(f io.ReaderAt, b []byte, off int64) error {
	n, err := f.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}
