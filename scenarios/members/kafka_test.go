package members

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// TestVCTranslator: VerifiableConsumer's events as the timeline records the figures read, on
// hand-written lines: a cooperative member's FULL owned set after each partitions_assigned (it lists
// only the added partitions), the begin at startup and at a revocation, one deliver per offset of a
// records_consumed range, a commit per committed partition (rejected with its error when the commit
// failed, sent after the poll that preceded it), and no rebalance_begin for close()'s revocation.
func TestVCTranslator(t *testing.T) {
	col := &timeline.Collector{}
	tr := newVCTranslator(&timeline.Recorder{Sink: col, Era: "cooperative", Member: "m2"})
	lines := func(ls ...string) {
		for _, l := range ls {
			tr.line([]byte(l))
		}
	}
	lines(`[2026-12-01] WARN not json`,
		`{"timestamp":100,"name":"startup_complete"}`,
		`{"timestamp":110,"name":"partitions_assigned","partitions":[{"topic":"t","partition":0},{"topic":"t","partition":2}]}`,
		`{"timestamp":120,"name":"records_consumed","count":3,"partitions":[{"topic":"t","partition":2,"count":3,"minOffset":5,"maxOffset":7}]}`,
		`{"timestamp":121,"name":"offsets_committed","offsets":[{"topic":"t","partition":2,"offset":8}],"success":true}`,
		`{"timestamp":130,"name":"partitions_revoked","partitions":[{"topic":"t","partition":0}]}`,
		`{"timestamp":131,"name":"partitions_assigned","partitions":[]}`)
	tr.preparing(125) // seen late, older than the last end: ignored
	tr.preparing(135) // the cooperative second round's PreparingRebalance
	lines(`{"timestamp":140,"name":"partitions_assigned","partitions":[{"topic":"t","partition":3}]}`,
		`{"timestamp":150,"name":"offsets_committed","offsets":[{"topic":"t","partition":3,"offset":1}],"success":false,"error":"CommitFailedException"}`)
	tr.setStopping()
	lines(`{"timestamp":160,"name":"partitions_revoked","partitions":[{"topic":"t","partition":2},{"topic":"t","partition":3}]}`)
	recs := col.Records()
	var got []string
	for _, r := range recs {
		s := string(r.Kind)
		switch r.Kind {
		case timeline.Assigned, timeline.Revoked:
			s += " " + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(r.Partitions["t"])), ","), "[]")
		case timeline.Deliver:
			s += " " + string(rune('0'+*r.Partition)) + "@" + string(rune('0'+*r.Offset))
		case timeline.Commit:
			s += " " + r.Result + " " + r.Err
			if r.SentMs != 120 {
				t.Errorf("commit sent_ms %d, want 120 (the poll before it)", r.SentMs)
			}
		}
		got = append(got, s)
	}
	want := []string{"rebalance_begin", "assigned 0,2", "rebalance_end", "deliver 2@5", "deliver 2@6", "deliver 2@7",
		"commit applied ", "rebalance_begin", "revoked 0", "assigned 2", "rebalance_end", "rebalance_begin",
		"assigned 2,3", "rebalance_end", "commit rejected CommitFailedException", "revoked 2,3"}
	if !slices.Equal(got, want) {
		t.Fatalf("records\n got %q\nwant %q", got, want)
	}
	if recs[11].TsMs != 135 || recs[len(recs)-1].TsMs != 160 {
		t.Fatalf("second round begins at %d (want 135, the observer's); close()'s revoke at %d", recs[11].TsMs, recs[len(recs)-1].TsMs)
	}
}
