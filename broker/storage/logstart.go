package storage

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// logStartCheckpointName is the file, in the partition's directory, that holds the log start offset
// a DeleteRecords moved (Kafka's log-start-offset-checkpoint, which Kafka keeps per log dir for all its
// partitions: "0\n<count>\n<topic> <partition> <offset>\n..."). Here it is per partition and holds
// "0\n1\n<offset>\n": the same version and count lines, one entry without the topic and partition
// the directory already names.
const logStartCheckpointName = "log-start-offset-checkpoint"

// readLogStartCheckpoint returns the checkpointed log start offset, -1 when there is none. An
// unreadable file is an error the caller may choose to ignore (Kafka logs it and starts from the
// first segment's base offset).
func readLogStartCheckpoint(fs FS, dir string) (int64, error) {
	return readOffsetCheckpoint(fs, dir, logStartCheckpointName)
}

// writeLogStartCheckpoint replaces the checkpoint atomically and durably (write, fsync, rename, fsync
// of the directory), as CheckpointFile.write does.
func writeLogStartCheckpoint(fs FS, dir string, off int64) error {
	return writeCheckpoint(fs, dir, logStartCheckpointName, []byte("0\n1\n"+strconv.FormatInt(off, 10)+"\n"))
}

// DeleteRecordsBefore moves the log start offset up to offset (UnifiedLog.maybeIncrementLogStartOffset
// for a client's DeleteRecords): reads below it fail with ErrOffsetOutOfRange from now on, the new
// value is checkpointed before it returns (so it survives a restart), and the segments wholly below
// it are deleted by the next EnforceRetention (deleteLogStartOffsetBreachedSegments), as in Kafka. An
// offset at or below the current log start offset changes nothing. It returns the log start offset
// after the call (the low watermark DeleteRecords answers).
//
// Errors: ErrOffsetOutOfRange (wrapped) when offset is above the high watermark, with Kafka's message;
// ErrClosed; the checkpoint's I/O error (the log start offset is then not moved).
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return -1, err
	}
	if hw := l.hwLocked(); offset > hw {
		return -1, fmt.Errorf("Cannot increment the log start offset to %d of partition %s since it is larger than the high watermark %d: %w",
			offset, filepath.Base(l.dir), hw, ErrOffsetOutOfRange)
	}
	cur := l.logStartLocked()
	if offset <= cur {
		return cur, nil
	}
	if err := writeLogStartCheckpoint(l.cfg.FS, l.dir, offset); err != nil {
		return -1, err
	}
	l.logStart = offset
	return offset, nil
}

// logStartLocked is the log start offset: the larger of the one DeleteRecords set and the first
// segment's base offset (retention may have deleted past it).
func (l *Log) logStartLocked() int64 {
	return max(l.logStart, l.segs[0].base)
}

// SetConfig replaces the log's settings while it runs (UnifiedLog.updateConfig, after a topic's or
// the broker's dynamic config changed): segment size and age, retention, flush and index intervals
// apply from the next append or retention pass. FS, Now, LeaderEpoch and ReplicatedHighWatermark are kept. Errors: an invalid
// Config (as Open), ErrClosed.
func (l *Log) SetConfig(cfg Config) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	cfg.FS, cfg.Now, cfg.LeaderEpoch, cfg.ReplicatedHighWatermark = l.cfg.FS, l.cfg.Now, l.cfg.LeaderEpoch, l.cfg.ReplicatedHighWatermark
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	l.cfg = cfg
	return nil
}
