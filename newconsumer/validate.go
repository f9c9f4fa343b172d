package newconsumer

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is KIP-320's position validation as Kafka 3.9's classic consumer does it
// (SubscriptionState's AWAIT_VALIDATION, OffsetFetcher.validatePositionsIfNeeded,
// OffsetFetcherUtils, OffsetsForLeaderEpochUtils): a position that knows the leader epoch of the
// record before it is checked against the partition's current leader whenever metadata names
// another leader or leader epoch, and after a committed offset is taken; OffsetForLeaderEpoch
// answers where that epoch ends on the leader, and an end below the position means the log was
// truncated under it (an unclean leader election): the position moves back to the divergence
// point, or with auto.offset.reset=none Poll fails with a LogTruncationError.

// OffsetAndEpoch is an offset and the leader epoch of the record before it (OffsetAndMetadata's
// offset and leaderEpoch).
type OffsetAndEpoch struct {
	Offset      int64
	LeaderEpoch int32
}

// LogTruncationError is Kafka's LogTruncationException: positions of partitions whose log was
// truncated below them, found by validation with auto.offset.reset=none. FetchOffsets are the
// positions validated; DivergentOffsets the leader's end offset and epoch for the partitions
// where it answered one (absent when it answered none: the epoch is unknown to it). The
// partitions stay awaiting validation: a later Poll asks again (after request.timeout.ms) and
// fails again.
type LogTruncationError struct {
	FetchOffsets     map[TopicPartition]int64
	DivergentOffsets map[TopicPartition]OffsetAndEpoch
}

func (e *LogTruncationError) Error() string {
	tps := make([]TopicPartition, 0, len(e.DivergentOffsets))
	for tp := range e.DivergentOffsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool { return tps[i].String() < tps[j].String() })
	var b strings.Builder
	for i, tp := range tps {
		if i > 0 {
			b.WriteString(", ")
		}
		d := e.DivergentOffsets[tp]
		fmt.Fprintf(&b, "%s=OffsetAndMetadata{offset=%d, leaderEpoch=%d, metadata=''}", tp, d.Offset, d.LeaderEpoch)
	}
	return "Truncated partitions detected with divergent offsets {" + b.String() + "}"
}

// seekUnvalidatedLocked sets tp's position to offset, whose record before has leader epoch
// offsetEpoch (-1: unknown), against the leader metadata names now (SubscriptionState.seekUnvalidated):
// with both epochs known the position awaits validation, else it is fetched at once.
func (c *Consumer) seekUnvalidatedLocked(tp TopicPartition, st *partitionState, offset int64, offsetEpoch int32) {
	st.position, st.offsetEpoch = offset, offsetEpoch
	st.leaderID, st.leaderEpoch = c.meta.leader(tp)
	st.awaitValidation = offsetEpoch >= 0 && st.leaderEpoch >= 0
	st.validateAt = time.Time{}
}

// validateOnMetadataChangeLocked is OffsetFetcherUtils.validatePositionsOnMetadataChange after every
// metadata answer (TopicPartitionState.maybeValidatePosition): a partition with a position whose
// leader or leader epoch differs from its position's is moved to the new leader and, when both
// epochs are known, awaits validation. A partition without a known leader, waiting for a reset,
// or whose metadata names an older epoch than it has seen (Metadata.updateLatestMetadata keeps
// the newer), is left as it is.
func (c *Consumer) validateOnMetadataChangeLocked() {
	for tp, st := range c.owned {
		if st.position < 0 || st.reset {
			continue
		}
		leader, epoch := c.meta.leader(tp)
		if leader < 0 || (epoch >= 0 && epoch < st.leaderEpoch) || (leader == st.leaderID && epoch == st.leaderEpoch) {
			continue
		}
		st.leaderID, st.leaderEpoch = leader, epoch
		st.awaitValidation = st.offsetEpoch >= 0 && epoch >= 0
		st.validateAt = time.Time{}
	}
}

// validationRequest is one partition's position as sent for validation.
type validationRequest struct {
	position, offsetEpoch, leaderEpoch int64
}

// validatePositions sends OffsetForLeaderEpoch (v3+, replica id -1) to the leader of every
// partition awaiting validation (OffsetFetcher.validatePositionsAsync) and applies the answers
// (SubscriptionState.maybeCompleteValidation): an end offset at or above the position completes
// the validation; an end offset below it, or no end offset at all, is a truncation: with an
// auto.offset.reset policy the position moves to the end offset (its epoch the answered one) or,
// with none answered, is reset by the policy; with none the truncation is returned as a
// *LogTruncationError. A partition whose answer is an error (NOT_LEADER_OR_FOLLOWER,
// FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, ...) or whose request failed is retried after
// retry.backoff.ms with fresh metadata; a broker without OffsetForLeaderEpoch v3 is not asked and
// its positions are taken as valid (updatePositionLeaderNoValidation).
func (c *Consumer) validatePositions(ctx context.Context) error {
	now := time.Now()
	c.mu.Lock()
	var parts []TopicPartition
	for tp, st := range c.owned {
		if st.awaitValidation && st.position >= 0 && !now.Before(st.validateAt) {
			parts = append(parts, tp)
		}
	}
	c.mu.Unlock()
	if len(parts) == 0 {
		return nil
	}
	byLeader, err := c.byLeader(ctx, parts)
	if err != nil {
		// No leader known: retried after retry.backoff.ms, without holding up the other
		// partitions' positions (the validation is asynchronous in Kafka's consumer).
		c.log.WithError(err).Debug("positions not validated: no leader known")
		c.retryValidation(parts)
		return nil
	}
	var leaderless []TopicPartition
	for _, tp := range parts {
		found := false
		for _, ps := range byLeader {
			found = found || slices.Contains(ps, tp)
		}
		if !found {
			leaderless = append(leaderless, tp)
		}
	}
	c.retryValidation(leaderless)
	truncated := &LogTruncationError{FetchOffsets: map[TopicPartition]int64{}, DivergentOffsets: map[TopicPartition]OffsetAndEpoch{}}
	for addr, ps := range byLeader {
		if err := c.validateAt(ctx, addr, ps, truncated); err != nil {
			return err
		}
	}
	if len(truncated.FetchOffsets) > 0 {
		return truncated
	}
	return nil
}

// validateAt is validatePositions for the partitions ps led by the broker at addr.
func (c *Consumer) validateAt(ctx context.Context, addr string, ps []TopicPartition, truncated *LogTruncationError) error {
	conn, err := c.fetchConn(ctx, addr)
	if err != nil {
		c.retryValidation(ps)
		return nil
	}
	if _, err := conn.version(kmsg.OffsetForLeaderEpoch.Int16()); err != nil {
		c.mu.Lock()
		for _, tp := range ps {
			if st := c.owned[tp]; st != nil {
				st.awaitValidation = false
			}
		}
		c.mu.Unlock()
		c.log.WithField("broker", addr).Debug("broker has no OffsetForLeaderEpoch v3+: positions not validated")
		return nil
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	sent := map[TopicPartition]validationRequest{}
	idx := map[string]int{}
	c.mu.Lock()
	for _, tp := range ps {
		st := c.owned[tp]
		if st == nil || !st.awaitValidation || st.position < 0 {
			continue
		}
		sent[tp] = validationRequest{st.position, int64(st.offsetEpoch), int64(st.leaderEpoch)}
		// SubscriptionState.setNextAllowedRetry(request.timeout.ms) while the request is out.
		st.validateAt = time.Now().Add(c.cfg.RequestTimeout)
		i, ok := idx[tp.Topic]
		if !ok {
			i = len(req.Topics)
			idx[tp.Topic] = i
			req.Topics = append(req.Topics, kmsg.OffsetForLeaderEpochRequestTopic{Topic: tp.Topic})
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, kmsg.OffsetForLeaderEpochRequestTopicPartition{
			Partition: tp.Partition, CurrentLeaderEpoch: st.leaderEpoch, LeaderEpoch: st.offsetEpoch,
		})
	}
	c.mu.Unlock()
	if len(sent) == 0 {
		return nil
	}
	r, err := c.brokerRequest(ctx, addr, req, c.cfg.RequestTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.log.WithError(err).WithField("broker", addr).Debug("OffsetForLeaderEpoch failed")
		c.retryValidation(ps)
		return nil
	}
	var retry []TopicPartition
	answered := map[TopicPartition]bool{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range r.(*kmsg.OffsetForLeaderEpochResponse).Topics {
		for _, p := range t.Partitions {
			tp := TopicPartition{Topic: t.Topic, Partition: p.Partition}
			rq, asked := sent[tp]
			if !asked {
				continue
			}
			answered[tp] = true
			switch p.ErrorCode {
			case 0:
			case kerr.TopicAuthorizationFailed.Code:
				return errFatal{fmt.Errorf("newconsumer: OffsetForLeaderEpoch %s: %w", tp, kerr.TopicAuthorizationFailed)}
			default:
				c.log.WithField("partition", tp.String()).Debugf("attempt to fetch offsets for partition failed due to %s, retrying", errName(p.ErrorCode))
				retry = append(retry, tp)
				continue
			}
			c.completeValidationLocked(tp, rq, p.LeaderEpoch, p.EndOffset, truncated)
		}
	}
	for tp := range sent {
		if !answered[tp] {
			retry = append(retry, tp)
		}
	}
	c.retryValidationLocked(retry)
	return nil
}

// completeValidationLocked is SubscriptionState.maybeCompleteValidation for one answered partition.
func (c *Consumer) completeValidationLocked(tp TopicPartition, rq validationRequest, epoch int32, endOffset int64, truncated *LogTruncationError) {
	st := c.owned[tp]
	if st == nil || !st.awaitValidation {
		return // unassigned, or no longer awaiting validation
	}
	if st.position != rq.position || int64(st.offsetEpoch) != rq.offsetEpoch || int64(st.leaderEpoch) != rq.leaderEpoch {
		return // the position moved since the request was sent
	}
	log := c.logLocked().WithFields(logrus.Fields{"partition": tp.String(), "position": st.position, "position_epoch": st.offsetEpoch,
		"end_offset": endOffset, "end_offset_epoch": epoch})
	policy := c.cfg.AutoOffsetReset != "none"
	switch {
	case endOffset < 0 || epoch < 0:
		if policy {
			log.Infof("Truncation detected for partition %s at offset %d (epoch %d), resetting offset", tp, st.position, st.offsetEpoch)
			st.position, st.reset, st.awaitValidation = -1, true, false // auto.offset.reset at the next Poll
			return
		}
		log.Warnf("Truncation detected for partition %s at offset %d (epoch %d), but no reset policy is set", tp, st.position, st.offsetEpoch)
		truncated.FetchOffsets[tp] = rq.position
	case endOffset < st.position:
		if policy {
			log.Infof("Truncation detected for partition %s at offset %d (epoch %d), resetting offset to the first offset known to diverge %d (epoch %d)",
				tp, st.position, st.offsetEpoch, endOffset, epoch)
			st.position, st.offsetEpoch, st.awaitValidation = endOffset, epoch, false // seekValidated
			return
		}
		log.Warnf("Truncation detected for partition %s at offset %d (epoch %d) (the end offset from the broker is %d, epoch %d), but no reset policy is set",
			tp, st.position, st.offsetEpoch, endOffset, epoch)
		truncated.FetchOffsets[tp] = rq.position
		truncated.DivergentOffsets[tp] = OffsetAndEpoch{Offset: endOffset, LeaderEpoch: epoch}
	default:
		st.awaitValidation = false
	}
}

// retryValidation makes ps wait retry.backoff.ms before their next validation and asks for fresh
// metadata (OffsetFetcherUtils' onFailedResponseForValidatingPositions and partitionsToRetry).
func (c *Consumer) retryValidation(ps []TopicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retryValidationLocked(ps)
}

func (c *Consumer) retryValidationLocked(ps []TopicPartition) {
	if len(ps) == 0 {
		return
	}
	at := time.Now().Add(c.cfg.RetryBackoff)
	for _, tp := range ps {
		if st := c.owned[tp]; st != nil && st.awaitValidation {
			st.validateAt = at
		}
	}
	c.metaStale = true
}
