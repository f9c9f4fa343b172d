package storage

import (
	"errors"
	"slices"
	"testing"
)

// TestDeleteRecordsBeforeSurvivesRestart: DeleteRecordsBefore moves the log start offset, reads below it
// fail with ErrOffsetOutOfRange, the value comes back after a reopen (the checkpoint), an offset above
// the high watermark is refused, a lower one changes nothing, and the next retention pass deletes the
// segments wholly below it even with retention off.
func TestDeleteRecordsBeforeSurvivesRestart(t *testing.T) {
	fs := newMemFS()
	cfg := Config{FS: fs, SegmentBytes: 3 * batchSize, RetentionMs: -1}
	l := mustOpen(t, "/d", cfg)
	for i := 0; i < 10; i++ {
		oneBatch(t, l, i, 1000)
	}
	if _, err := l.DeleteRecordsBefore(11); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("DeleteRecordsBefore(11) above the high watermark 10: %v, want ErrOffsetOutOfRange", err)
	}
	low, err := l.DeleteRecordsBefore(7)
	if err != nil || low != 7 {
		t.Fatalf("DeleteRecordsBefore(7) = %d, %v; want 7", low, err)
	}
	if low, _ := l.DeleteRecordsBefore(5); low != 7 {
		t.Fatalf("DeleteRecordsBefore(5) after 7 = %d, want 7 (never moves back)", low)
	}
	if got := l.LogStartOffset(); got != 7 {
		t.Fatalf("LogStartOffset %d, want 7", got)
	}
	_, err = l.Read(6, 1<<20)
	wantErr(t, err, ErrOffsetOutOfRange)
	if _, err := l.Read(7, 1<<20); err != nil {
		t.Fatalf("Read(7): %v", err)
	}
	fs.crash(nil) // only what was fsynced survives: the checkpoint must have been
	l = mustOpen(t, "/d", cfg)
	defer mustClose(t, l)
	if got := l.LogStartOffset(); got != 7 {
		t.Fatalf("LogStartOffset after a crash and reopen %d, want 7 (log-start-offset-checkpoint)", got)
	}
	if err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if got := segBases(l); !slices.Equal(got, []int64{6, 9}) {
		t.Fatalf("segments after retention %v, want [6 9] (0 and 3 lie wholly below 7)", got)
	}
	if got := l.LogStartOffset(); got != 7 {
		t.Fatalf("LogStartOffset after retention %d, want 7", got)
	}
}
