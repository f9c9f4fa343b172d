package storage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// epochCheckpointName is Kafka's leader-epoch-checkpoint file
// (kafka.server.epoch.LeaderEpochFileCache, CheckpointFile): "0\n<n>\n" then
// n lines "<epoch> <start offset>", written to a .tmp file, fsynced, renamed.
const epochCheckpointName = "leader-epoch-checkpoint"

// epochEntry: batches from startOffset on carry epoch, up to the next entry.
type epochEntry struct {
	epoch       int32
	startOffset int64
}

// epochFor returns the epoch the entries give offset, ok=false when none covers it.
func epochFor(entries []epochEntry, offset int64) (int32, bool) {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].startOffset <= offset {
			return entries[i].epoch, true
		}
	}
	return 0, false
}

// assignEpoch adds (epoch, start), dropping entries it supersedes, as
// LeaderEpochFileCache.assign does.
func assignEpoch(entries []epochEntry, epoch int32, start int64) []epochEntry {
	for len(entries) > 0 {
		last := entries[len(entries)-1]
		if last.startOffset < start && last.epoch < epoch {
			break
		}
		entries = entries[:len(entries)-1]
	}
	return append(entries, epochEntry{epoch, start})
}

func encodeEpochs(entries []epochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.epoch, e.startOffset)
	}
	return b.Bytes()
}

// decodeEpochs parses a checkpoint; entries must have increasing epochs and
// start offsets, as the cache writes them.
func decodeEpochs(b []byte) ([]epochEntry, error) {
	lines := strings.Split(string(b), "\n")
	if len(lines) < 3 || lines[0] != "0" || lines[len(lines)-1] != "" {
		return nil, fmt.Errorf("not a version 0 checkpoint")
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n < 0 || n != len(lines)-3 {
		return nil, fmt.Errorf("bad entry count %q", lines[1])
	}
	entries := make([]epochEntry, 0, n)
	for _, line := range lines[2 : 2+n] {
		var e epochEntry
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("bad line %q", line)
		}
		ep, err1 := strconv.ParseInt(f[0], 10, 32)
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		e = epochEntry{int32(ep), off}
		if err1 != nil || err2 != nil || e.epoch < 0 || e.startOffset < 0 {
			return nil, fmt.Errorf("bad line %q", line)
		}
		if k := len(entries); k > 0 && (e.epoch <= entries[k-1].epoch || e.startOffset <= entries[k-1].startOffset) {
			return nil, fmt.Errorf("line %q out of order", line)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// readEpochCheckpoint returns the checkpoint's entries; found=false when the
// file does not exist.
func readEpochCheckpoint(fs FS, dir string) (entries []epochEntry, found bool, err error) {
	f, err := fs.OpenFile(filepath.Join(dir, epochCheckpointName), os.O_RDONLY, 0)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, true, err
	}
	if size > 1<<20 {
		return nil, true, fmt.Errorf("%d bytes, too large", size)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, true, err
	}
	entries, err = decodeEpochs(b)
	return entries, true, err
}

// writeEpochCheckpoint replaces the checkpoint atomically and durably.
func writeEpochCheckpoint(fs FS, dir string, entries []epochEntry) error {
	return writeCheckpoint(fs, dir, epochCheckpointName, encodeEpochs(entries))
}
