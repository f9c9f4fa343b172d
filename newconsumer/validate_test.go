package newconsumer

import (
	"testing"

	"github.com/sirupsen/logrus"
)

// validationConsumer is a consumer with one owned partition t-0 at position 10 (offset epoch 2),
// awaiting validation against leader 1 in epoch 3, and metadata naming that leader.
func validationConsumer(reset string) (*Consumer, TopicPartition) {
	tp := TopicPartition{Topic: "t", Partition: 0}
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)
	c := &Consumer{cfg: Config{AutoOffsetReset: reset}, log: logrus.NewEntry(log), m: &membership{},
		owned: map[TopicPartition]*partitionState{tp: {position: 10, hwm: -1, offsetEpoch: 2, leaderID: 1, leaderEpoch: 3, awaitValidation: true}},
		meta:  &metadata{brokers: map[int32]string{1: "a:1", 2: "b:2"}, topics: map[string][]partitionMD{"t": {{leader: 1, epoch: 3}}}}}
	return c, tp
}

// TestCompleteValidation: SubscriptionState.maybeCompleteValidation's outcomes (3.9), one per
// answer of the leader for the position's epoch.
func TestCompleteValidation(t *testing.T) {
	sent := validationRequest{position: 10, offsetEpoch: 2, leaderEpoch: 3}
	type want struct {
		position          int64
		offsetEpoch       int32
		await, reset      bool
		fetchOffsets      map[TopicPartition]int64
		divergent         map[TopicPartition]OffsetAndEpoch
		truncationMessage string
	}
	tp := TopicPartition{Topic: "t", Partition: 0}
	for _, tc := range []struct {
		name       string
		reset      string
		rq         validationRequest
		epoch      int32
		endOffset  int64
		want       want
		movedFirst bool // the position moved after the request was sent
	}{
		{name: "end above the position: valid", reset: "earliest", rq: sent, epoch: 2, endOffset: 12,
			want: want{position: 10, offsetEpoch: 2}},
		{name: "end at the position: valid", reset: "none", rq: sent, epoch: 2, endOffset: 10,
			want: want{position: 10, offsetEpoch: 2}},
		{name: "end below the position, a reset policy: seek to the divergence", reset: "earliest", rq: sent, epoch: 1, endOffset: 7,
			want: want{position: 7, offsetEpoch: 1}},
		{name: "end below the position, latest: also the divergence", reset: "latest", rq: sent, epoch: 1, endOffset: 7,
			want: want{position: 7, offsetEpoch: 1}},
		{name: "end below the position, none: LogTruncationException", reset: "none", rq: sent, epoch: 1, endOffset: 7,
			want: want{position: 10, offsetEpoch: 2, await: true, fetchOffsets: map[TopicPartition]int64{tp: 10},
				divergent:         map[TopicPartition]OffsetAndEpoch{tp: {7, 1}},
				truncationMessage: "Truncated partitions detected with divergent offsets {t-0=OffsetAndMetadata{offset=7, leaderEpoch=1, metadata=''}}"}},
		{name: "no end answered, a reset policy: reset", reset: "earliest", rq: sent, epoch: -1, endOffset: -1,
			want: want{position: -1, offsetEpoch: 2, reset: true}},
		{name: "no end answered, none: truncation without a divergent offset", reset: "none", rq: sent, epoch: -1, endOffset: -1,
			want: want{position: 10, offsetEpoch: 2, await: true, fetchOffsets: map[TopicPartition]int64{tp: 10},
				divergent: map[TopicPartition]OffsetAndEpoch{}, truncationMessage: "Truncated partitions detected with divergent offsets {}"}},
		{name: "a stale answer (the position moved) is ignored", reset: "earliest", rq: validationRequest{position: 4, offsetEpoch: 2, leaderEpoch: 3},
			epoch: 1, endOffset: 2, want: want{position: 10, offsetEpoch: 2, await: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, tp := validationConsumer(tc.reset)
			lt := &LogTruncationError{FetchOffsets: map[TopicPartition]int64{}, DivergentOffsets: map[TopicPartition]OffsetAndEpoch{}}
			c.completeValidationLocked(tp, tc.rq, tc.epoch, tc.endOffset, lt)
			st := c.owned[tp]
			if st.position != tc.want.position || st.offsetEpoch != tc.want.offsetEpoch || st.awaitValidation != tc.want.await || st.reset != tc.want.reset {
				t.Fatalf("state: position %d epoch %d await %v reset %v; want %d %d %v %v", st.position, st.offsetEpoch, st.awaitValidation, st.reset,
					tc.want.position, tc.want.offsetEpoch, tc.want.await, tc.want.reset)
			}
			if tc.want.fetchOffsets == nil {
				if len(lt.FetchOffsets) != 0 || len(lt.DivergentOffsets) != 0 {
					t.Fatalf("truncation reported: %+v", lt)
				}
				return
			}
			if len(lt.FetchOffsets) != 1 || lt.FetchOffsets[tp] != tc.want.fetchOffsets[tp] || len(lt.DivergentOffsets) != len(tc.want.divergent) ||
				lt.DivergentOffsets[tp] != tc.want.divergent[tp] {
				t.Fatalf("truncation %+v, want fetch offsets %v divergent %v", lt, tc.want.fetchOffsets, tc.want.divergent)
			}
			if got := lt.Error(); got != tc.want.truncationMessage {
				t.Fatalf("message %q, want %q", got, tc.want.truncationMessage)
			}
		})
	}
}

// TestValidateOnMetadataChange: TopicPartitionState.maybeValidatePosition on each metadata answer.
func TestValidateOnMetadataChange(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		leader, epoch         int32
		offsetEpoch           int32
		reset                 bool
		wantLeader, wantEpoch int32
		wantAwait             bool
	}{
		{name: "same leader and epoch: nothing", leader: 1, epoch: 3, offsetEpoch: 2, wantLeader: 1, wantEpoch: 3},
		{name: "a newer epoch: validate", leader: 1, epoch: 4, offsetEpoch: 2, wantLeader: 1, wantEpoch: 4, wantAwait: true},
		{name: "another leader: validate", leader: 2, epoch: 4, offsetEpoch: 2, wantLeader: 2, wantEpoch: 4, wantAwait: true},
		{name: "no offset epoch: the new leader is taken unvalidated", leader: 2, epoch: 4, offsetEpoch: -1, wantLeader: 2, wantEpoch: 4},
		{name: "no leader: nothing", leader: -1, epoch: 4, offsetEpoch: 2, wantLeader: 1, wantEpoch: 3},
		{name: "an older epoch (stale metadata): nothing", leader: 2, epoch: 2, offsetEpoch: 2, wantLeader: 1, wantEpoch: 3},
		{name: "awaiting a reset: nothing", leader: 2, epoch: 4, offsetEpoch: 2, reset: true, wantLeader: 1, wantEpoch: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, tp := validationConsumer("earliest")
			st := c.owned[tp]
			st.awaitValidation, st.offsetEpoch, st.reset = false, tc.offsetEpoch, tc.reset
			c.meta.topics["t"][0] = partitionMD{leader: tc.leader, epoch: tc.epoch}
			c.validateOnMetadataChangeLocked()
			if st.leaderID != tc.wantLeader || st.leaderEpoch != tc.wantEpoch || st.awaitValidation != tc.wantAwait {
				t.Fatalf("leader %d epoch %d await %v; want %d %d %v", st.leaderID, st.leaderEpoch, st.awaitValidation, tc.wantLeader, tc.wantEpoch, tc.wantAwait)
			}
		})
	}
}
