package scenarios

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// runWithMembers runs name on eras with members (MembersKafka / MembersMixed) on broker and checks
// every relation: it holds, or it reads a figure these members do not measure (skipped, n/a).
func runWithMembers(t *testing.T, broker, members, name string, eras []string, p spec.Params) *RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := Run(ctx, Options{Scenario: name, Eras: eras, Params: p, Version: "test", Broker: broker,
		Members: members, Log: quietLog(), LabLog: quietLog(), Progress: &progress})
	if err != nil {
		t.Fatalf("%s: %v\nprogress:\n%s", name, err, progress.String())
	}
	var table bytes.Buffer
	_ = res.WriteTable(&table)
	t.Logf("%s, members %s, broker %s\n%s", name, members, broker, table.String())
	for _, e := range res.Eras {
		if !e.Applies {
			t.Errorf("%s: era %s did not run: %s", name, e.Era, e.Reason)
			continue
		}
		if len(e.Errors) > 0 {
			t.Errorf("%s/%s: errors %v", name, e.Era, e.Errors)
		}
		for _, rel := range e.Relations {
			switch {
			case rel.Skipped && strings.HasPrefix(rel.Got, "n/a"):
			case !rel.OK:
				t.Errorf("%s/%s: relation %q does not hold: %s", name, e.Era, rel.Relation, rel.Got)
			}
		}
	}
	if t.Failed() {
		t.Logf("progress:\n%s", progress.String())
	}
	return res
}

// checkMixed: Kafka's invariants on the merged timeline (every invariant_* figure 0), nothing lost (auto-commit
// redelivers what moved uncommitted: duplicates are allowed),
// every partition owned by exactly one live member at the end, and Kafka's members (m2,
// m4) and ours (m1, m3) both owned partitions and delivered records in the one group.
func checkMixed(t *testing.T, res *RunResult) {
	t.Helper()
	for _, e := range res.Eras {
		tot := e.Result.Totals
		for _, name := range append(slices.Clone(figures.InvariantNames), figures.FigLost) {
			if slices.Contains(e.Result.NotApplicable, name) {
				continue
			}
			if v, err := fig(name, tot); err != nil || v != 0 {
				t.Errorf("%s: %s = %d (%v), want 0", e.Era, name, v, err)
			}
		}
		for p := 0; p < res.Params.Partitions; p++ {
			key := e.Topic + "-" + string(rune('0'+p))
			if o := e.EndOwners[key]; o == "" || strings.Contains(o, ",") {
				t.Errorf("%s: %s owned by %q at the end, want one live member", e.Era, key, o)
			}
		}
		owned, delivered := map[string]bool{}, map[string]bool{}
		for _, r := range e.Records {
			switch {
			case r.Kind == timeline.Assigned && len(r.Partitions[e.Topic]) > 0:
				owned[r.Member] = true
			case r.Kind == timeline.Deliver:
				delivered[r.Member] = true
			}
		}
		for _, m := range []string{"m1", "m2", "m3", "m4"} {
			if !owned[m] || !delivered[m] {
				t.Errorf("%s: member %s (kafka's: %v) owned %v, delivered %v; want both", e.Era, m,
					isKafkaMember(MembersMixed, e.Era, m), owned[m], delivered[m])
			}
		}
	}
}

// TestMixedGroupOnRebalancelab: VerifiableConsumer × 2 (m2, m4) + newconsumer × 2 (m1, m3) in one
// group on this project's broker, range (classic), cooperative-sticky and static (range with
// group.instance.id on every member): herd-effect with 3 stable
// members, m4 (Kafka's) joins, then one leaves. Every relation holds (rebalance_participants of the
// join == 4), Kafka's invariants hold, every partition is owned once at the end.
func TestMixedGroupOnRebalancelab(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.JVM)
	res := runWithMembers(t, lab.BrokerRebalancelab, MembersMixed, "herd-effect", []string{"classic", "cooperative", "static"},
		spec.Params{Consumers: 3, Partitions: 6, Seed: 1})
	checkMixed(t, res)
}

// TestMixedGroupOnKafka39: TestMixedGroupOnRebalancelab's group on a real Kafka 3.9 broker (no group
// observer there: a cooperative member that moves nothing begins no rebalance, so the join's
// participants are not asserted, only the invariants and the end's owners).
func TestMixedGroupOnKafka39(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka, testutil.JVM)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := Run(ctx, Options{Scenario: "herd-effect", Eras: []string{"classic", "cooperative", "static"},
		Params: spec.Params{Consumers: 3, Partitions: 6, Seed: 1}, Version: "test", Broker: lab.BrokerKafka,
		Members: MembersMixed, Log: quietLog(), LabLog: quietLog(), Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	var table bytes.Buffer
	_ = res.WriteTable(&table)
	t.Logf("%s", table.String())
	checkMixed(t, res)
	if t.Failed() {
		t.Logf("progress:\n%s", progress.String())
	}
}

// TestConsumerFailureKafkaMembers: Kafka's test_consumer_failure (manual commit) with Kafka's own
// VerifiableConsumer as every member, one of them killed with -9: a new owner within 2 × session +
// 5 s, nothing lost, every partition owned once, and after the stop the last acknowledged commit of
// every partition equals its consumed position (its offsets_committed against its records_consumed).
func TestConsumerFailureKafkaMembers(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.JVM)
	res := runWithMembers(t, lab.BrokerRebalancelab, MembersKafka, "consumer-failure-manual-commit", []string{"classic"},
		spec.Params{Consumers: 3, Partitions: 3, Seed: 1})
	e := res.Eras[0]
	var commits, kills int
	for _, r := range e.Records {
		if r.Kind == timeline.Commit && r.Result == timeline.CommitApplied {
			commits++
		}
	}
	for _, p := range e.Processes {
		if p.Stop == "sigkill" && p.Signal == "SIGKILL" {
			kills++
		}
	}
	if commits == 0 || kills != 1 || res.Versions["kafka_members"] == "" {
		t.Fatalf("%d applied commits, %d members killed with SIGKILL, kafka members %q; want > 0, 1, 3.9.x",
			commits, kills, res.Versions["kafka_members"])
	}
	for _, rel := range e.Relations {
		if rel.Skipped {
			t.Errorf("%s skipped (%s): with manual commit every relation is measured", rel.Relation, rel.Got)
		}
	}
}
