package scenarios

import (
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// TestHerdEffectOnKafka39: the herd-effect scenario of TestHerdEffect, every era (both consumers), on
// a real Kafka 3.9 broker instead of this project's: every relation holds, and the result names the
// broker and its version (table header, params.broker, versions.kafka).
func TestHerdEffectOnKafka39(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka)
	res := runScenarioOn(t, lab.BrokerKafka, "herd-effect", spec.Params{Consumers: 2, Partitions: 4, Seed: 1})
	if res.Broker != lab.BrokerKafka || res.ParamsMap()["broker"] != lab.BrokerKafka || !strings.HasPrefix(res.Versions["kafka"], "3.9.") {
		t.Fatalf("broker %q, params.broker %v, versions %v; want kafka 3.9.x", res.Broker, res.ParamsMap()["broker"], res.Versions)
	}
	var table strings.Builder
	if err := res.WriteTable(&table); err != nil || !strings.Contains(table.String(), "broker kafka 3.9.") {
		t.Fatalf("table header does not name the broker (%v):\n%s", err, table.String())
	}
	want, err := ResolveEras(testEras())
	if err != nil || len(res.Eras) != len(want) {
		t.Fatalf("%d eras ran, want %v (%v)", len(res.Eras), want, err)
	}
}
