package scenarios

import (
	"reflect"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
)

// TestDurabilityJudge: an acknowledged record absent from the log is lost, and lost elsewhere when the
// broker taken down did not lead its partition; one there twice is a duplicate; a failed record is
// neither.
func TestDurabilityJudge(t *testing.T) {
	s := &sideTopic{
		spec: &catalog.DurabilitySpec{Producers: []catalog.ProducerSpec{{Name: "a", Acks: "all"}, {Name: "b", Acks: "1"}}},
		acked: map[string]map[int64]ack{
			"a": {0: {partition: 0, atMs: 100}, 1: {partition: 1, atMs: 200}, 2: {partition: 2, atMs: 300}},
			"b": {0: {partition: 0, atMs: 100}, 1: {partition: 1, atMs: 250}, 2: {partition: 2, atMs: 260}, 3: {partition: 0, atMs: 270}},
		},
		failed: map[string]int64{"b": 2},
		errs:   map[string]string{"b": "NOT_LEADER_OR_FOLLOWER"},
		downAt: 200,
		downLd: map[int32]bool{1: true},
	}
	inLog := map[string]map[int64]int{
		"a": {0: 1, 1: 1, 2: 2},
		"b": {0: 1, 4: 1}, // b-1 lost where the broker led, b-2 and b-3 where it did not; b-4 failed yet written
	}
	got := s.judge(inLog)
	want := []report.ProducerCheck{
		{Producer: "a", Acks: "all", Acked: 3, AckedAfterDown: 2, Duplicates: 1, MaxAckGapMs: 100, DownLedPartitions: []int32{1}},
		{Producer: "b", Acks: "1", Acked: 4, AckedAfterDown: 3, Failed: 2, FirstError: "NOT_LEADER_OR_FOLLOWER", MaxAckGapMs: 150, MaxPartitionAckGapMs: 170,
			Lost: 3, LostElsewhere: 2, LostPartitions: []int32{0, 1, 2}, DownLedPartitions: []int32{1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("judge:\n got %+v\nwant %+v", got, want)
	}
}

// TestProducerSpecAcks: acks all and 1 map to franz-go's options; anything else is refused by name.
func TestProducerSpecAcks(t *testing.T) {
	for _, acks := range []string{"all", "-1", "1"} {
		if _, err := producerClientOpts(catalog.ProducerSpec{Name: "p", Acks: acks}); err != nil {
			t.Errorf("acks %q: %v", acks, err)
		}
	}
	_, err := producerClientOpts(catalog.ProducerSpec{Name: "p", Acks: "0"})
	if err == nil || err.Error() != `durability producer p: acks "0" (want all or 1)` {
		t.Errorf("acks 0: %v", err)
	}
}
