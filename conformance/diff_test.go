package conformance

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/lab"
)

// TestDifferential runs every script on both brokers and fails on each difference that docs/reference/fidelity.md's
// fidelity table does not list, and on each row of the table that no difference matched (a stale
// row). DIFFTEST_OUT=FILE writes every difference found, listed or not, to FILE; DIFFTEST_ANSWERS=FILE
// every step's normalised answer from both brokers.
func TestDifferential(t *testing.T) {
	needPair(t)
	rows := readAccepted(t)
	for _, l := range []*lab.Lab{ours, kafka} {
		setUp(t, l)
	}
	v := commonVersions(t)
	cases := []kcase{apiVersionsCase()}
	top := 0
	for _, k := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.LeaveGroup, kmsg.OffsetCommit,
		kmsg.OffsetFetch, kmsg.DescribeGroups, kmsg.ListGroups, kmsg.FindCoordinator} {
		top = max(top, int(v.max[k.Int16()]))
	}
	for i := 0; i <= top; i++ {
		cases = append(cases, groupCase(v, i))
	}
	for i := staticFirstIndex; i <= top; i++ {
		cases = append(cases, staticCase(v, i))
	}
	cases = append(cases, dataCases(v)...)
	cases = append(cases, configCases(v)...)
	cases = append(cases, kip848Case())
	cases = append(cases, offsetDeleteCase())
	cases = append(cases, timestampCases(v)...)
	cases = append(cases, idempotentCase(v)) // last: it appends to dataTopic, whose offsets the data cases read
	// After it, so that it runs when it always did (Kafka's first retention pass, 30 s after its
	// start, deletes dataTopic's 2023-stamped records and moves its log start offset).
	cases = append(cases, leaderEpochCases(v)...)
	cases = append(cases, brokerConfigCases(v)...)

	var all []difference
	var answers strings.Builder // DIFFTEST_ANSWERS: every step's answer of both brokers
	run := func(cases []kcase) {
		for _, c := range cases {
			a := runCase(t, ours, c)
			b := runCase(t, kafka, c)
			all = append(all, compareCase(c, a, b)...)
			for i := range max(len(a), len(b)) {
				var an, bn answer
				if i < len(a) {
					an = a[i]
				}
				if i < len(b) {
					bn = b[i]
				}
				fmt.Fprintf(&answers, "%s/%s\n\tours:  %s\n\tkafka: %s\n", c.name, max(an.step, bn.step), show(an.body), show(bn.body))
			}
		}
	}
	run(cases)
	// A second broker in each cluster, started after every other case (they see one broker): it
	// leads no __consumer_offsets partition, so it is no group's coordinator.
	for _, l := range []*lab.Lab{ours, kafka} {
		addBroker(t, l)
	}
	var late []kcase
	for vf := v.min[kmsg.OffsetFetch.Int16()]; vf <= v.max[kmsg.OffsetFetch.Int16()]; vf++ {
		late = append(late, nonCoordinatorCase(vf))
	}
	late = append(late, leaderHintCases(v)...)
	run(late)
	cases = append(cases, late...)
	if f := os.Getenv("DIFFTEST_OUT"); f != "" {
		var b strings.Builder
		for _, d := range all {
			fmt.Fprintf(&b, "%s\n\tours:  %s\n\tkafka: %s\n", d.key, d.ours, d.kafka)
		}
		if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	if f := os.Getenv("DIFFTEST_ANSWERS"); f != "" {
		if err := os.WriteFile(f, []byte(answers.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	used := map[*accepted]int{}
	var unlisted []difference
	for _, d := range all {
		var hit *accepted
		for _, a := range rows {
			if a.re.MatchString(d.key) {
				hit = a
				break
			}
		}
		if hit == nil {
			unlisted = append(unlisted, d)
			continue
		}
		used[hit]++
	}
	for i, d := range unlisted {
		if i == 40 {
			t.Errorf("... and %d more differences not in docs/reference/fidelity.md's table", len(unlisted)-i)
			break
		}
		t.Errorf("difference not in docs/reference/fidelity.md's table:\n%s\n\tours:  %s\n\tkafka: %s", d.key, d.ours, d.kafka)
	}
	for _, a := range rows {
		if used[a] == 0 {
			t.Errorf("docs/reference/fidelity.md's table lists `%s` but no such difference occurred: remove the row", a.pattern)
		}
	}
	t.Logf("%d cases, %d differences, %d of them not in docs/reference/fidelity.md's table (%d patterns)", len(cases), len(all), len(unlisted), len(rows))
}

// addBroker starts l's second broker and waits until it knows the cluster (its Metadata lists both).
func addBroker(t *testing.T, l *lab.Lab) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	n, err := l.AddBroker(ctx)
	if err != nil {
		t.Fatalf("%s: second broker: %v", l.BrokerImpl(), err)
	}
	c, err := wire.Dial(ctx, nil, n.Addr(), "difftest-second")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		m := kmsg.NewPtrMetadataRequest()
		m.SetVersion(7)
		resp, err := c.Request(ctx, m)
		if err == nil && len(resp.(*kmsg.MetadataResponse).Brokers) == 2 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: the second broker never listed both brokers: %v", l.BrokerImpl(), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// setUp creates the topics the scripts use and waits until the group coordinator answers.
func setUp(t *testing.T, l *lab.Lab) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := wire.Dial(ctx, nil, l.Bootstrap(), "difftest-setup")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(4)
	req.TimeoutMillis = 30000
	for _, tp := range []struct {
		name string
		n    int32
	}{{groupTopic, 2}, {dataTopic, 2}, {deleteTopic, 1}} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = tp.name, tp.n, 1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := c.Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: CreateTopics: %v", l.BrokerImpl(), err)
	}
	for _, rt := range resp.(*kmsg.CreateTopicsResponse).Topics {
		if rt.ErrorCode != 0 {
			t.Fatalf("%s: CreateTopics %s: error %d", l.BrokerImpl(), rt.Topic, rt.ErrorCode)
		}
	}
	// Every partition led, and the coordinator loaded (FindCoordinator, then a DescribeGroups that
	// does not answer COORDINATOR_LOAD_IN_PROGRESS / NOT_AVAILABLE).
	for {
		if ready(ctx, c) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: topics or the group coordinator not ready: %v", l.BrokerImpl(), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func ready(ctx context.Context, c *wire.Conn) bool {
	m := kmsg.NewPtrMetadataRequest()
	m.SetVersion(7)
	for _, tp := range []string{groupTopic, dataTopic, deleteTopic} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(tp)
		m.Topics = append(m.Topics, rt)
	}
	resp, err := c.Request(ctx, m)
	if err != nil {
		return false
	}
	for _, tp := range resp.(*kmsg.MetadataResponse).Topics {
		if tp.ErrorCode != 0 {
			return false
		}
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 {
				return false
			}
		}
	}
	f := kmsg.NewPtrFindCoordinatorRequest()
	f.SetVersion(2)
	f.CoordinatorKey = "warm-up"
	fr, err := c.Request(ctx, f)
	if err != nil || fr.(*kmsg.FindCoordinatorResponse).ErrorCode != 0 {
		return false
	}
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.SetVersion(0)
	d.Groups = []string{"warm-up"}
	dr, err := c.Request(ctx, d)
	return err == nil && dr.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode == 0
}

// apiVersions asks l for its advertised version ranges.
func apiVersions(t *testing.T, l *lab.Lab) map[int16][2]int16 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := wire.Dial(ctx, nil, l.Bootstrap(), "difftest")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "difftest", "1"
	resp, err := c.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if ec := resp.(*kmsg.ApiVersionsResponse).ErrorCode; ec != 0 {
		t.Fatalf("%s: ApiVersions: error %d", l.BrokerImpl(), ec)
	}
	out := map[int16][2]int16{}
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		out[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	return out
}

// commonVersions: per API, our broker's lowest version and the highest both brokers advertise.
func commonVersions(t *testing.T) versions {
	a, b := apiVersions(t, ours), apiVersions(t, kafka)
	v := versions{min: map[int16]int16{}, max: map[int16]int16{}}
	for k, ra := range a {
		rb, ok := b[k]
		if !ok {
			continue
		}
		v.min[k] = max(ra[0], rb[0])
		v.max[k] = min(ra[1], rb[1])
	}
	return v
}

// apiVersionsCase compares the advertised ranges, by API name: "Fetch": "0-16".
func apiVersionsCase() kcase {
	return kcase{name: "ApiVersions v3", steps: []step{{
		name: "ranges",
		req: func(*state) kmsg.Request {
			r := kmsg.NewPtrApiVersionsRequest()
			r.SetVersion(3)
			r.ClientSoftwareName, r.ClientSoftwareVersion = "difftest", "1"
			return r
		},
		view: func(resp kmsg.Response) any {
			r := resp.(*kmsg.ApiVersionsResponse)
			out := map[string]any{"ErrorCode": r.ErrorCode}
			keys := map[string]string{}
			for _, k := range r.ApiKeys {
				keys[kmsg.NameForKey(k.ApiKey)] = fmt.Sprintf("%d-%d", k.MinVersion, k.MaxVersion)
			}
			out["ApiKeys"] = keys
			var features []string
			for _, f := range r.SupportedFeatures {
				features = append(features, fmt.Sprintf("%s %d-%d", f.Name, f.MinVersion, f.MaxVersion))
			}
			sort.Strings(features)
			out["SupportedFeatures"] = features
			var finalized []string
			for _, f := range r.FinalizedFeatures {
				finalized = append(finalized, fmt.Sprintf("%s %d-%d", f.Name, f.MinVersionLevel, f.MaxVersionLevel))
			}
			sort.Strings(finalized)
			out["FinalizedFeatures"] = finalized
			out["FinalizedFeaturesEpoch"] = r.FinalizedFeaturesEpoch
			out["ZkMigrationReady"] = r.ZkMigrationReady
			return out
		},
	}}}
}

// kip848Case asks for KIP-848's consumer group protocol, which a ZooKeeper-mode broker refuses.
func kip848Case() kcase {
	return kcase{name: "KIP-848 in ZooKeeper mode", steps: []step{
		{name: "consumer-group-heartbeat", req: func(*state) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.SetVersion(0)
			r.Group, r.RebalanceTimeoutMillis, r.SubscribedTopicNames = "g848", 30000, []string{dataTopic}
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			return r
		}},
		{name: "consumer-group-describe", req: func(*state) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			r.SetVersion(0)
			r.Groups = []string{"g848", "g-v1"}
			return r
		}},
	}}
}
