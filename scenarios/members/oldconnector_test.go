package members

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// TestOCTranslator: the 0.8.2.2 harness's lines and its ZooKeeper proxy's events as the records the
// figures read, on hand-written input: one rebalance_begin per rebalance (a retry opens none), a
// rebalance_end per try (ok only for the try that reached "selected partitions"), assigned with that
// try's claims only (a failed try's claims are never assigned), the deletes of owned owner znodes as
// revocations (not those of a failed try's claims), a NODEEXISTS on an owner znode as a conflict,
// paths below the chroot, and reads, writes and notifications as zk_op / zk_watch.
func TestOCTranslator(t *testing.T) {
	col := &timeline.Collector{}
	tr := newOCTranslator(&timeline.Recorder{Sink: col, Era: "zk", Member: "m2"}, "/c", "g")
	lines := func(ls ...string) {
		for _, l := range ls {
			tr.line([]byte(l))
		}
	}
	zk := func(kind, op, path, result string) {
		tr.zk(lab.ZKProxyEvent{Kind: kind, Op: op, Path: path, Result: result})
	}
	lines(`[2026] WARN not json`,
		`{"event":"rebalance_begin","ts":100,"attempt":0}`,
		`{"event":"owned","ts":101,"thread":"g_m2-0","topic":"t","partition":0}`,
		`{"event":"selected","ts":102,"partitions":"t:0"}`,
		`{"event":"rebalance_end","ts":103,"attempt":0}`,
		`{"event":"started","ts":104,"consumer_id":"g_m2"}`,
		`{"event":"delivered","ts":105,"stream":0,"topic":"t","partition":0,"offset":7}`)
	zk(lab.ZKProxyWatch, "NodeChildrenChanged", "/c/consumers/g/ids", "")
	lines(`{"event":"rebalance_begin","ts":110,"attempt":0}`)
	zk(lab.ZKProxyRead, "getChildren", "/c/consumers/g/ids", "")
	zk(lab.ZKProxyWrite, "setData", "/c/consumers/g/offsets/t/0", "")
	zk(lab.ZKProxyWrite, "delete", "/c/consumers/g/owners/t/0", "")
	lines(`{"event":"owned","ts":111,"thread":"g_m2-0","topic":"t","partition":1}`)
	zk(lab.ZKProxyWrite, "create", "/c/consumers/g/owners/t/2", lab.ZKProxyNodeExists)
	lines(`{"event":"claim_conflict","ts":112,"attempt":0,"partition":2}`)
	zk(lab.ZKProxyWrite, "delete", "/c/consumers/g/owners/t/1", "") // the failed try's claim: not owned
	lines(`{"event":"rebalance_end","ts":113,"attempt":0}`,
		`{"event":"rebalance_failed","ts":113,"attempt":0}`,
		`{"event":"rebalance_begin","ts":120,"attempt":1}`,
		`{"event":"owned","ts":121,"thread":"g_m2-0","topic":"t","partition":2}`,
		`{"event":"owned","ts":121,"thread":"g_m2-0","topic":"t","partition":3}`,
		`{"event":"selected","ts":122,"partitions":"t:2,t:3"}`,
		`{"event":"rebalance_end","ts":123,"attempt":1}`)
	zk(lab.ZKProxyOther, "ping", "", "")
	zk(lab.ZKProxyRead, "getData", "/elsewhere", "") // outside the chroot
	var got []string
	for _, r := range col.Records() {
		s := string(r.Kind)
		switch r.Kind {
		case timeline.Assigned, timeline.Revoked:
			s += " " + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(r.Partitions["t"])), ","), "[]")
		case timeline.RebalanceEnd:
			s += fmt.Sprintf(" %v#%d", *r.OK, r.Attempt)
		case timeline.Deliver:
			s += fmt.Sprintf(" %d@%d", *r.Partition, *r.Offset)
		case timeline.ZKOp:
			s += " " + r.Op + " " + r.Path + " " + r.Result
		case timeline.ZKWatch:
			s += " " + r.Type + " " + r.Path
		}
		got = append(got, strings.TrimSpace(s))
	}
	want := []string{"rebalance_begin", "assigned 0", "rebalance_end true#1", "deliver 0@7",
		"zk_watch NodeChildrenChanged /consumers/g/ids", "rebalance_begin", "zk_op read /consumers/g/ids",
		"zk_op write /consumers/g/offsets/t/0", "revoked 0", "zk_op write /consumers/g/owners/t/0",
		"zk_op write /consumers/g/owners/t/2 conflict", "zk_op write /consumers/g/owners/t/1",
		"rebalance_end false#1", "assigned 2,3", "rebalance_end true#2"}
	if !slices.Equal(got, want) {
		t.Fatalf("records\n got %q\nwant %q", got, want)
	}
}
