package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

// externalRun is what the test reads of a run's result JSON.
type externalRun struct {
	RunID  string         `json:"run_id"`
	Params map[string]any `json:"params"`
	Passed bool           `json:"relations_hold"`
	Eras   []struct {
		Era     string   `json:"era"`
		Applies bool     `json:"applies"`
		Group   string   `json:"group"`
		Topic   string   `json:"topic"`
		Errors  []string `json:"errors"`
	} `json:"eras"`
}

// leftovers lists what of the run with id runID is on the cluster: topics (Metadata), groups
// (ListGroups) and /consumers children in ZooKeeper, each named rebalancelab.<run id>.*.
func leftovers(t *testing.T, adm *kadm.Client, zc *zk.Conn, runID string) (topics, groups, znodes []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := "rebalancelab." + runID + "."
	ts, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range ts.Names() {
		if strings.HasPrefix(name, prefix) {
			topics = append(topics, name)
		}
	}
	gs, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs.Groups() {
		if strings.HasPrefix(g, prefix) {
			groups = append(groups, g)
		}
	}
	kids, _, err := zc.Children("/consumers")
	if err != nil && err != zk.ErrNoNode {
		t.Fatal(err)
	}
	for _, k := range kids {
		if strings.HasPrefix(k, prefix) {
			znodes = append(znodes, k)
		}
	}
	slices.Sort(topics)
	slices.Sort(groups)
	slices.Sort(znodes)
	return topics, groups, znodes
}

// TestScenarioOnExistingCluster: a Kafka 3.9 broker and its ZooKeeper are started by the test,
// outside the run; `scenario run herd-effect --bootstrap B --zk Z` on the zk and classic eras starts
// nothing of its own, every relation holds, its topics and groups are named rebalancelab.<run id>.*,
// and afterwards none of them is left: no topic (Metadata), no group (ListGroups), no /consumers/<group>
// znode. With --keep (and members as processes) the topics, the classic group and the zk group's
// /consumers znode are there after the run. Scenarios that stop ZooKeeper nodes or brokers, and the zk
// era without --zk, are refused with an error before anything starts.
func TestScenarioOnExistingCluster(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka)
	bin := testutil.Binary(t)
	quiet := logrus.New()
	quiet.SetLevel(logrus.ErrorLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	l, err := lab.Start(ctx, lab.Options{Brokers: 1, Broker: lab.BrokerKafka, Log: logrus.NewEntry(quiet)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(l.Bootstrap()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	zc, _, err := zk.Connect(strings.Split(l.ZKConnect(), ","), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()

	// Refusals: no lab processes to stop; the zk era needs the cluster's ZooKeeper.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"scenario", "run", "zk-quorum-loss", "--bootstrap", l.Bootstrap(), "--zk", l.ZKConnect()}, "needs the lab's own processes"},
		{[]string{"scenario", "run", "herd-effect", "--era", "zk", "--bootstrap", l.Bootstrap()}, "needs its ZooKeeper: --zk"},
		{[]string{"scenario", "run", "herd-effect", "--era", "classic", "--keep"}, "--keep: only with --bootstrap"},
	} {
		r := runCLI(t, bin, "", time.Minute, c.args...)
		if r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and %q", c.args, r.code, r.stderr, c.want)
		}
	}

	run := func(extra ...string) externalRun {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out.json")
		args := append([]string{"--log-level", "warn", "scenario", "run", "herd-effect", "--era", "zk,classic",
			"--consumers", "2", "--partitions", "2", "--bootstrap", l.Bootstrap(), "--zk", l.ZKConnect(), "--json", out}, extra...)
		r := runCLI(t, bin, "", 4*time.Minute, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var res externalRun
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		if !res.Passed || res.RunID == "" || res.Params["broker"] != "external" || res.Params["bootstrap"] != l.Bootstrap() {
			t.Fatalf("relations_hold %v, run_id %q, params %v", res.Passed, res.RunID, res.Params)
		}
		for _, e := range res.Eras {
			want := "rebalancelab." + res.RunID + ".herd-effect." + e.Era
			if !e.Applies || e.Group != want || e.Topic != want || len(e.Errors) > 0 {
				t.Errorf("%s: applies %v, group %q, topic %q (want %q), errors %v", e.Era, e.Applies, e.Group, e.Topic, want, e.Errors)
			}
		}
		if len(res.Eras) != 2 {
			t.Fatalf("%d eras ran, want zk and classic", len(res.Eras))
		}
		return res
	}

	res := run()
	if topics, groups, znodes := leftovers(t, adm, zc, res.RunID); len(topics)+len(groups)+len(znodes) > 0 {
		t.Errorf("left behind by run %s: topics %v, groups %v, /consumers %v", res.RunID, topics, groups, znodes)
	}

	kept := run("--keep", "--members-as", "processes")
	if kept.RunID == res.RunID {
		t.Fatalf("two runs share the run id %s", kept.RunID)
	}
	prefix := "rebalancelab." + kept.RunID + ".herd-effect."
	topics, groups, znodes := leftovers(t, adm, zc, kept.RunID)
	if want := []string{prefix + "classic", prefix + "zk"}; !slices.Equal(topics, want) {
		t.Errorf("--keep: topics %v, want %v", topics, want)
	}
	// The zk era keeps its offsets in ZooKeeper (offsets.storage's default): no Kafka group.
	if want := []string{prefix + "classic"}; !slices.Equal(groups, want) {
		t.Errorf("--keep: groups %v, want %v", groups, want)
	}
	if want := []string{prefix + "zk"}; !slices.Equal(znodes, want) {
		t.Errorf("--keep: /consumers children %v, want %v", znodes, want)
	}
}
