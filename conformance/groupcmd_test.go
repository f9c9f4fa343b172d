package conformance

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/lab"
)

const (
	cgTopic  = "cg-t"      // 3 partitions of 10 records each
	cgEmpty  = "cg-empty"  // offsets only, no members: Empty
	cgStable = "cg-stable" // one live member subscribed to cg-t, assigned all of it: Stable
)

// groupCommands is the consumer-groups tool's script, one command per entry (the bootstrap option is
// added per broker). unordered marks outputs whose line order is the broker's map order (--list);
// of those, only the header and the script's own groups (named "cg-...") are kept: the brokers are the
// package's pair, on which the other tests (the differential test's g-v*, gs-v* groups) leave
// groups of their own.
var groupCommands = []struct {
	args      string
	unordered bool
}{
	{args: "--list", unordered: true},
	{args: "--list --state", unordered: true},
	{args: "--describe --group " + cgStable},
	{args: "--describe --group " + cgStable + " --members --verbose"},
	{args: "--describe --group " + cgStable + " --state"},
	{args: "--describe --group " + cgEmpty},
	{args: "--describe --group " + cgEmpty + " --members"},
	{args: "--describe --group " + cgEmpty + " --state"},
	{args: "--reset-offsets --group " + cgEmpty + " --topic " + cgTopic + " --to-earliest --execute"},
	{args: "--reset-offsets --group " + cgEmpty + " --topic " + cgTopic + ":1 --to-offset 3 --execute"},
	{args: "--describe --group " + cgEmpty},
	{args: "--reset-offsets --group " + cgStable + " --topic " + cgTopic + " --to-earliest --execute"},
	{args: "--delete-offsets --group " + cgStable + " --topic " + cgTopic},
	{args: "--delete-offsets --group " + cgEmpty + " --topic " + cgTopic + ":0"},
	{args: "--describe --group " + cgEmpty},
	{args: "--delete-offsets --group cg-missing --topic " + cgTopic},
	{args: "--describe --group cg-missing"},
	{args: "--delete --group " + cgEmpty},
	{args: "--list", unordered: true},
}

// groupCmdDifferences are the commands whose normalised output may differ between the brokers, with
// the reason (README's fidelity table lists each): none today.
var groupCmdDifferences = map[string]string{}

// TestConsumerGroupCommand runs Kafka 3.9's consumer-groups tool against the same scripted groups on
// this broker and on Kafka's, and compares its output command by command after normalising what
// differs by construction: member ids' UUIDs (renamed in order of appearance), ports.
func TestConsumerGroupCommand(t *testing.T) {
	needPair(t)
	var wg sync.WaitGroup
	outs := make([][]string, 2)
	for i, l := range []*lab.Lab{ours, kafka} {
		stop := setUpGroups(t, l)
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = runGroupCommands(t, l)
		}()
		defer stop()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	a, b := outs[0], outs[1]
	if len(a) != len(groupCommands) || len(b) != len(groupCommands) {
		t.Fatalf("outputs: %d ours, %d Kafka's, want %d each\nours: %q\nkafka: %q", len(a), len(b), len(groupCommands), a, b)
	}
	for i, c := range groupCommands {
		t.Logf("kafka-consumer-groups %s\n%s", c.args, a[i])
		if a[i] == b[i] {
			continue
		}
		if why, ok := groupCmdDifferences[c.args]; ok {
			t.Logf("listed difference (%s):\nours:\n%s\nkafka:\n%s", why, a[i], b[i])
			continue
		}
		t.Errorf("kafka-consumer-groups %s: output differs\nours:\n%s\nkafka:\n%s", c.args, a[i], b[i])
	}
	// What the script must show on both (equal above): the values, not just agreement.
	for i, want := range map[int][]string{
		0:  {"cg-empty\ncg-stable"},
		2:  {"cg-stable cg-t 0 10 10 0 cg-member-<uuid-1> /127.0.0.1 cg-member", "cg-stable cg-t 1 8 10 2 cg-member-<uuid-1> /127.0.0.1 cg-member", "cg-stable cg-t 2 - 10 - cg-member-<uuid-1> /127.0.0.1 cg-member"},
		10: {"cg-empty cg-t 0 0 10 10 - - -", "cg-empty cg-t 1 3 10 7 - - -", "cg-empty cg-t 2 0 10 10 - - -"},
		12: {"cg-t 0 Error: :org.apache.kafka.common.errors.GroupSubscribedToTopicException: Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it."},
		13: {"TOPIC PARTITION STATUS", "cg-t 0 Successful"},
		15: {"Error: 'cg-missing' does not exist.", "cg-t 0 Error: :org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist."},
		17: {"Deletion of requested consumer groups ('cg-empty') was successful."},
		18: {"cg-stable"},
		14: {"cg-empty cg-t 1 3 10 7 - - -", "cg-empty cg-t 2 0 10 10 - - -"},
	} {
		for _, w := range want {
			if !strings.Contains(a[i], w) {
				t.Errorf("kafka-consumer-groups %s: no line %q in\n%s", groupCommands[i].args, w, a[i])
			}
		}
	}
}

// setUpGroups makes cg-t, cg-empty and cg-stable on l; stop ends cg-stable's heartbeats.
func setUpGroups(t *testing.T, l *lab.Lab) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(l.Bootstrap(), ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, cgTopic); err != nil {
		t.Fatalf("%s: create %s: %v", l.BrokerImpl(), cgTopic, err)
	}
	var recs []*kgo.Record
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 10; i++ {
			recs = append(recs, &kgo.Record{Topic: cgTopic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("%s: produce: %v", l.BrokerImpl(), err)
	}
	offs := kadm.Offsets{}
	for p, o := range []int64{2, 5, 10} {
		offs.Add(kadm.Offset{Topic: cgTopic, Partition: int32(p), At: o, LeaderEpoch: -1})
	}
	if r, err := adm.CommitOffsets(ctx, cgEmpty, offs); err != nil || r.Error() != nil {
		t.Fatalf("%s: commit %s: %v %v", l.BrokerImpl(), cgEmpty, err, r.Error())
	}

	// cg-stable: one member over the wire (JoinGroup v3, SyncGroup v2), client id cg-member.
	c, err := wire.Dial(ctx, nil, l.Brokers()[0].Addr(), "cg-member")
	if err != nil {
		t.Fatal(err)
	}
	do := func(r kmsg.Request) kmsg.Response {
		resp, err := c.Request(ctx, r)
		if err != nil {
			t.Fatalf("%s: %s: %v", l.BrokerImpl(), kmsg.NameForKey(r.Key()), err)
		}
		return resp
	}
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = []string{cgTopic}
	j := kmsg.NewPtrJoinGroupRequest()
	j.SetVersion(3)
	j.Group, j.ProtocolType, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis = cgStable, "consumer", 30000, 30000
	j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: md.AppendTo(nil)}}
	jr := do(j).(*kmsg.JoinGroupResponse)
	if jr.ErrorCode != 0 {
		t.Fatalf("%s: join: error %d", l.BrokerImpl(), jr.ErrorCode)
	}
	asg := kmsg.NewConsumerMemberAssignment()
	asg.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: cgTopic, Partitions: []int32{0, 1, 2}}}
	s := kmsg.NewPtrSyncGroupRequest()
	s.SetVersion(2)
	s.Group, s.MemberID, s.Generation = cgStable, jr.MemberID, jr.Generation
	s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: asg.AppendTo(nil)}}
	if sr := do(s).(*kmsg.SyncGroupResponse); sr.ErrorCode != 0 {
		t.Fatalf("%s: sync: error %d", l.BrokerImpl(), sr.ErrorCode)
	}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.SetVersion(2)
	oc.Group, oc.MemberID, oc.Generation, oc.RetentionTimeMillis = cgStable, jr.MemberID, jr.Generation, -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: cgTopic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 10}, {Partition: 1, Offset: 8}}}}
	for _, tp := range do(oc).(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("%s: commit %s p%d: error %d", l.BrokerImpl(), cgStable, p.Partition, p.ErrorCode)
			}
		}
	}
	// Heartbeats keep it Stable while the tool runs.
	hbCtx, hbCancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-tick.C:
				h := kmsg.NewPtrHeartbeatRequest()
				h.SetVersion(1)
				h.Group, h.MemberID, h.Generation = cgStable, jr.MemberID, jr.Generation
				_, _ = c.Request(hbCtx, h)
			}
		}
	}()
	testutil.WaitFor(t, 10*time.Second, l.BrokerImpl()+": cg-stable Stable", func() bool {
		gs, err := adm.DescribeGroups(ctx, cgStable)
		return err == nil && gs[cgStable].State == "Stable"
	})
	return func() {
		hbCancel()
		<-done
		c.Close()
	}
}

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	portRE = regexp.MustCompile(`127\.0\.0\.1:\d+`)
)

// runGroupCommands runs groupCommands in one JVM (testdata/GroupCommands.java) against l and returns
// each command's normalised output: UUIDs renamed in order of appearance, ports dropped, runs of
// spaces (column padding, which follows the widest value) made one, unordered outputs sorted.
func runGroupCommands(t *testing.T, l *lab.Lab) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var in strings.Builder
	for _, c := range groupCommands {
		in.WriteString(strings.Join(append([]string{"--bootstrap-server", l.Bootstrap()}, strings.Fields(c.args)...), "\t") + "\n")
	}
	cmd := exec.CommandContext(ctx, "java", javaArgs("-Dlog4j.configuration=file:testdata/log4j.properties", "testdata/GroupCommands.java")...)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s: GroupCommands: %v\n%s", l.BrokerImpl(), err, out)
		return nil
	}
	uuids := map[string]string{}
	var res []string
	var cur []string
	flush := func(i int) {
		if i >= 0 && i < len(groupCommands) {
			if groupCommands[i].unordered {
				cur = slices.DeleteFunc(cur, func(line string) bool {
					f := strings.Fields(line)
					return len(f) > 0 && f[0] != "GROUP" && !strings.HasPrefix(f[0], "cg-")
				})
				sort.Strings(cur)
			}
			res = append(res, strings.Join(cur, "\n"))
		}
		cur = nil
	}
	idx := -1
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "### ") && !strings.HasPrefix(line, "### exit") {
			flush(idx)
			idx++
			continue
		}
		line = uuidRE.ReplaceAllStringFunc(line, func(u string) string {
			if _, ok := uuids[u]; !ok {
				uuids[u] = fmt.Sprintf("<uuid-%d>", len(uuids)+1)
			}
			return uuids[u]
		})
		line = portRE.ReplaceAllString(line, "127.0.0.1:<port>")
		line = strings.Join(strings.Fields(line), " ")
		if line != "" && idx >= 0 {
			cur = append(cur, line)
		}
	}
	return res
}
