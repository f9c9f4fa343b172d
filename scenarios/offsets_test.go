package scenarios

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// FID-OFFSETS-STORAGE in a scenario run: Options.ZKConfig reaches every zk member, and
// zk_offset_writes shows what offsets.storage=kafka takes off ZooKeeper — the same herd-effect run
// writes offsets to ZooKeeper with offsets.storage=zookeeper (every rebalance commits before it
// releases) and not once with offsets.storage=kafka without dual commit, while its commits still
// land (applied commit records, nothing lost).
func TestFIDOffsetsStorageScenarioZKOffsetWrites(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	run := func(zkConfig map[string]string) (*RunResult, figures.Figures) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var progress bytes.Buffer
		res, err := Run(ctx, Options{Scenario: "herd-effect", Eras: []string{"zk"}, Params: spec.Params{Consumers: 2, Partitions: 4},
			ZKConfig: zkConfig, Version: "test", Log: quietLog(), LabLog: quietLog(), Progress: &progress})
		if err != nil {
			t.Fatalf("%v: %v\nprogress:\n%s", zkConfig, err, progress.String())
		}
		var table bytes.Buffer
		_ = res.WriteTable(&table)
		t.Logf("%v\n%s", zkConfig, table.String())
		e := res.Eras[0]
		if !e.Applies || len(e.Errors) > 0 {
			t.Fatalf("%v: era zk applies=%v errors=%q", zkConfig, e.Applies, e.Errors)
		}
		if got := res.ParamsMap()["zk_config"]; len(zkConfig) > 0 && got == nil {
			t.Fatalf("params do not record zk_config %v", zkConfig)
		}
		return res, e.Result.Totals
	}
	zkRes, zkTotals := run(map[string]string{"offsets.storage": "zookeeper"})
	kRes, kTotals := run(map[string]string{"offsets.storage": "kafka", "dual.commit.enabled": "false"})
	if zkTotals.ZKOffsetWrites <= 0 {
		t.Errorf("offsets.storage=zookeeper: zk_offset_writes = %d, want > 0", zkTotals.ZKOffsetWrites)
	}
	if kTotals.ZKOffsetWrites != 0 {
		t.Errorf("offsets.storage=kafka, dual.commit.enabled=false: zk_offset_writes = %d, want 0", kTotals.ZKOffsetWrites)
	}
	for _, c := range []struct {
		name string
		res  *RunResult
		tot  figures.Figures
	}{{"zookeeper", zkRes, zkTotals}, {"kafka", kRes, kTotals}} {
		applied := 0
		for _, r := range c.res.Eras[0].Records {
			if r.Kind == "commit" && r.Result == "applied" {
				applied++
			}
		}
		if applied == 0 || c.tot.Lost != 0 {
			t.Errorf("offsets.storage=%s: %d applied commit records, lost %d; want commits that land and nothing lost", c.name, applied, c.tot.Lost)
		}
	}

	// A setting no member could start with stops the run before anything starts.
	_, err := Run(context.Background(), Options{Scenario: "herd-effect", Eras: []string{"zk"},
		ZKConfig: map[string]string{"offsets.commit.max.retries": "3000000000"}, Log: quietLog(), LabLog: quietLog()})
	want := "zk config: zkconsumer: Invalid value 3000000000 for configuration offsets.commit.max.retries: not a number of type INT (32-bit signed integer); allowed range [0, 2147483647]"
	if err == nil || err.Error() != want {
		t.Errorf("bad zk config: %v, want %s", err, want)
	}
	_, err = Run(context.Background(), Options{Scenario: "herd-effect", Eras: []string{"zk"},
		ZKConfig: map[string]string{"group.id": "x"}, Log: quietLog(), LabLog: quietLog()})
	if err == nil || !strings.Contains(err.Error(), "zk config group.id: set by the scenario runner") {
		t.Errorf("zk config group.id: %v", err)
	}
}
