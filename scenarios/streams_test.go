package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/streams"
)

// TestStreamsThreads is issue 17's Streams must-show, `scenario run streams-threads` as a test: Kafka
// Streams 3.9.2 (interop/streams-3.9, `make deps`), two instances of 3 stream threads on this broker,
// 10,000 records from two co-partitioned inputs of 6 partitions, a thread removed and added back, the
// second instance joining and then killed with -9. Every relation holds; every input comes out at
// least once (duplicates counted, not forbidden); the observer's stable generations show the 6 tasks
// and their moves, task i always on partition i of both inputs.
func TestStreamsThreads(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Streams)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	var progress bytes.Buffer
	res, err := Run(ctx, Options{Scenario: "streams-threads", Version: "test", Log: quietLog(), LabLog: quietLog(),
		Progress: &progress, ReportDir: dir})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	var table bytes.Buffer
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	if !res.Passed() {
		t.Fatalf("a relation does not hold (FAIL lines above)")
	}
	if errs := res.Eras[0].Errors; len(errs) > 0 {
		t.Fatalf("runner errors: %v", errs)
	}
	s := streams.Of(res)
	tot := s.Totals
	if tot.RecordsIn != 10000 || tot.DistinctOut != 10000 || tot.Lost != 0 || tot.Duplicates != tot.RecordsOut-tot.DistinctOut || tot.Duplicates < 0 {
		t.Fatalf("records: %+v, want 10000 in, 10000 distinct out, 0 lost", tot)
	}
	t.Logf("records: %d out for 10000 in: %d duplicates; %d re-processed (at least once)", tot.RecordsOut, tot.Duplicates, tot.RecordsReprocessed)

	// The observer: the start's stable generation has the 6 tasks 0_0..0_5, 2 on each of s1's threads.
	_, first, err := streams.StableOf(s, "start")
	if err != nil {
		t.Fatal(err)
	}
	var tasks []string
	for _, m := range first.Members {
		if m.Instance != "s1" || len(m.Tasks) != 2 {
			t.Fatalf("start's stable generation: %s, want s1's 3 threads with 2 tasks each", first.Summary())
		}
		tasks = append(tasks, m.Tasks...)
	}
	if got := strings.Join(slices.Sorted(slices.Values(tasks)), " "); got != "0_0 0_1 0_2 0_3 0_4 0_5" || len(first.Members) != 3 {
		t.Fatalf("start's stable generation: tasks %s over %d threads, want 0_0..0_5 over 3", got, len(first.Members))
	}
	// With both instances, 6 threads with one task each; after the kill, s1's 3 threads again.
	if _, l, err := streams.StableOf(s, "join"); err != nil || len(l.Members) != 6 {
		t.Fatalf("join: %v %s", err, l.Summary())
	}
	crash, l, err := streams.StableOf(s, "crash")
	if err != nil || len(l.Members) != 3 || l.ThreadsOf("s1") != 3 || crash.TasksMoved < 3 {
		t.Fatalf("crash: %v %s, %d moved", err, l.Summary(), crash.TasksMoved)
	}
	ends := map[string]report.MemberProcess{}
	for _, ip := range s.Instances {
		ends[ip.Member] = ip
	}
	if ends["s2"].Signal != "SIGKILL" || ends["s2"].Stop != "sigkill" || ends["s1"].ExitCode != 0 || ends["s1"].Stop != "stop" {
		t.Fatalf("instances ended %+v, want s2 SIGKILL and s1 exit 0 after stop", s.Instances)
	}

	// The JSON carries the lanes; the report directory the page and both line files.
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Streams struct {
			Lanes  []streams.Lane  `json:"lanes"`
			Events []streams.Event `json:"events"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(js.Bytes(), &parsed); err != nil || len(parsed.Streams.Lanes) != len(s.Lanes) || len(parsed.Streams.Events) != 5 {
		t.Fatalf("JSON streams: %v, %d lanes %d events", err, len(parsed.Streams.Lanes), len(parsed.Streams.Events))
	}
	for _, f := range []string{"index.html", streams.AppEventsFile, streams.GroupLogFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Fatalf("report file %s: %v", f, err)
		}
	}
}

// TestStreamsRefusals: Run hands a refused Streams run back as the driver refused it (streams.Run),
// with no result.
func TestStreamsRefusals(t *testing.T) {
	res, err := Run(context.Background(), Options{Scenario: "streams-threads", Eras: []string{"classic"}})
	if err == nil || !strings.Contains(err.Error(), "--era classic: its members are Kafka Streams instances") || res != nil {
		t.Errorf("--era classic: %v, %v", res, err)
	}
}

// TestStreamsThreadsOnKafka39: streams-threads on a real Kafka 3.9 broker, which has no group
// observer: the run settles on DescribeGroups, every input comes out (the records relation holds), each
// scripted fault left its record (s2 ended by SIGKILL, the thread removed and added), and the seven
// relations on the observer's generations are skipped as not measured — neither held nor failed; the
// run passes.
func TestStreamsThreadsOnKafka39(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka, testutil.Streams)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := Run(ctx, Options{Scenario: "streams-threads", Broker: lab.BrokerKafka, Version: "test", Log: quietLog(), LabLog: quietLog(),
		Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	var table bytes.Buffer
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	if !strings.HasPrefix(res.Versions["kafka"], "3.9.") || streams.Of(res).Observed {
		t.Errorf("versions %v, observed %v: want Kafka 3.9.x and no observer", res.Versions, streams.Of(res).Observed)
	}
	if !res.Passed() {
		t.Fatalf("the run failed: %v", res.Failures())
	}
	if c := res.Counts(); c != (report.RelationCounts{Held: 2, Skipped: 7}) {
		t.Errorf("relation counts %+v, want 2 held (records, faults) and 7 skipped", c)
	}
	for _, rel := range res.Eras[0].Relations {
		measured := strings.HasPrefix(rel.Relation, "records:") || rel.Relation == catalog.FaultRelationText
		if measured != !rel.Skipped || rel.Skipped && !strings.HasPrefix(rel.Got, "not measured: ") {
			t.Errorf("%s: skipped %v (%s)", rel.Relation, rel.Skipped, rel.Got)
		}
	}
	if tot := streams.Of(res).Totals; tot.RecordsIn != 10000 || tot.DistinctOut != 10000 || tot.Lost != 0 {
		t.Errorf("records %+v, want 10000 in, 10000 distinct out, 0 lost", tot)
	}
}
