package benchmark

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/newconsumer/assignor"
)

// The benchmarks trust checkSyncAssignment to reject a broken assignment: each broken shape must
// fail with its own message, and a correct one must pass with the partitions decoded.
func TestCheckSyncAssignment(t *testing.T) {
	parts := map[string]int32{"a": 2, "b": 1}
	members := map[string]bool{"m1": true, "m2": true}
	tp := func(topic string, p int32) assignor.TopicPartition {
		return assignor.TopicPartition{Topic: topic, Partition: p}
	}
	sync := func(pairs ...any) []kmsg.SyncGroupRequestGroupAssignment {
		var out []kmsg.SyncGroupRequestGroupAssignment
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, kmsg.SyncGroupRequestGroupAssignment{
				MemberID:         pairs[i].(string),
				MemberAssignment: assignor.EncodeAssignment(pairs[i+1].([]assignor.TopicPartition), nil),
			})
		}
		return out
	}

	got, err := checkSyncAssignment(sync("m1", []assignor.TopicPartition{tp("a", 1), tp("a", 0)}, "m2", []assignor.TopicPartition{tp("b", 0)}), members, parts)
	if err != nil {
		t.Fatalf("valid assignment rejected: %v", err)
	}
	if len(got) != 2 || len(got["m1"]) != 2 || got["m1"][0] != tp("a", 0) || got["m1"][1] != tp("a", 1) || len(got["m2"]) != 1 || got["m2"][0] != tp("b", 0) {
		t.Fatalf("decoded %v", got)
	}

	for _, c := range []struct {
		name string
		sync []kmsg.SyncGroupRequestGroupAssignment
		want string
	}{
		{"missing", sync("m1", []assignor.TopicPartition{tp("a", 0), tp("a", 1)}), "2 of 3 partitions assigned"},
		{"twice", sync("m1", []assignor.TopicPartition{tp("a", 0), tp("a", 1)}, "m2", []assignor.TopicPartition{tp("a", 1), tp("b", 0)}), "partition a-1 assigned to both"},
		{"nonexistent", sync("m1", []assignor.TopicPartition{tp("a", 0), tp("a", 1), tp("a", 2), tp("b", 0)}), "a-2 does not exist"},
		{"unknown member", sync("m3", []assignor.TopicPartition{tp("a", 0), tp("a", 1), tp("b", 0)}), `unknown member "m3"`},
		{"member twice", sync("m1", []assignor.TopicPartition{tp("a", 0)}, "m1", []assignor.TopicPartition{tp("a", 1), tp("b", 0)}), `member "m1" assigned twice`},
	} {
		_, err := checkSyncAssignment(c.sync, members, parts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// sameAssignment ignores members without partitions and the order of each member's partitions.
func TestSameAssignment(t *testing.T) {
	a := map[string][]assignor.TopicPartition{"m1": {{Topic: "a", Partition: 1}, {Topic: "a", Partition: 0}}, "m2": {}}
	b := map[string][]assignor.TopicPartition{"m1": {{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}}}
	if !sameAssignment(a, b) {
		t.Errorf("sameAssignment(%v, %v) = false", a, b)
	}
	c := map[string][]assignor.TopicPartition{"m2": {{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}}}
	if sameAssignment(a, c) {
		t.Errorf("sameAssignment(%v, %v) = true", a, c)
	}
}
