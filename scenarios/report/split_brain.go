package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// SplitBrain is one era's split brain, from its totals: how long, what it delivered again, and what the
// group did with the zombie's commits.
type SplitBrain struct {
	Era                 string
	ConcurrentOwnerMs   int64 // concurrent_owner_ms
	MaxConcurrentOwners int64 // max_concurrent_owners
	Duplicates          int64 // deliveries of an already-delivered record (duplicates)
	// StaleCommitsApplied / StaleCommitsRejected: stale_commits_applied / _rejected; RejectedNA when the
	// era cannot refuse one (zk: NotApplicable).
	StaleCommitsApplied, StaleCommitsRejected int64
	RejectedNA                                bool
}

// SplitBrains returns each result's SplitBrain, in the results' order; nil when no era had two members
// delivering one partition at once (max_concurrent_owners < 2 everywhere): no split brain to show.
func SplitBrains(results ...figures.Result) []SplitBrain {
	var out []SplitBrain
	split := false
	for _, r := range results {
		t := r.Totals
		sb := SplitBrain{Era: r.Era, ConcurrentOwnerMs: t.ConcurrentOwnerMs, MaxConcurrentOwners: t.MaxConcurrentOwners,
			Duplicates: t.Duplicates, StaleCommitsApplied: t.StaleCommitsApplied, StaleCommitsRejected: t.StaleCommitsRejected}
		for _, na := range r.NotApplicable {
			if na == figures.FigStaleCommitsRejected {
				sb.RejectedNA = true
			}
		}
		split = split || t.MaxConcurrentOwners >= 2
		out = append(out, sb)
	}
	if !split {
		return nil
	}
	return out
}

// Line is the era's split brain on one line, as the run's table prints it: "split brain <era>:
// concurrent_owner_ms 1234 (2 members at most; <timings>), 17 records delivered again, zombie commits 3
// applied / 0 rejected" (zk: "n/a rejected", NotApplicable); timings names the timings the run ran with (RunResult.timingName).
func (s SplitBrain) Line(timings string) string {
	rejected := fmt.Sprintf("%d rejected", s.StaleCommitsRejected)
	if s.RejectedNA {
		rejected = "n/a rejected (nothing in the era can refuse one)"
	}
	return fmt.Sprintf("split brain %s: concurrent_owner_ms %d (%d members at most; %s), %d records delivered again, zombie commits %d applied / %s",
		s.Era, s.ConcurrentOwnerMs, s.MaxConcurrentOwners, timings, s.Duplicates, s.StaleCommitsApplied, rejected)
}

// splitBrainSentence is the report's sentence on split brain: per era, most first, the time two or more
// members delivered one partition, the records delivered again and the stale commits applied / refused;
// "" without split brain.
func splitBrainSentence(results []figures.Result) string {
	sbs := SplitBrains(results...)
	if sbs == nil {
		return ""
	}
	sort.SliceStable(sbs, func(i, j int) bool { return sbs[i].ConcurrentOwnerMs > sbs[j].ConcurrentOwnerMs })
	parts := make([]string, len(sbs))
	for i, s := range sbs {
		rejected := fmt.Sprint(s.StaleCommitsRejected)
		if s.RejectedNA {
			rejected = "none refusable"
		}
		parts[i] = fmt.Sprintf("%s %d ms (%d members at most), %d records delivered again, stale commits %d applied / %s rejected",
			s.Era, s.ConcurrentOwnerMs, s.MaxConcurrentOwners, s.Duplicates, s.StaleCommitsApplied, rejected)
	}
	return "Split brain (concurrent_owner_ms: ms during which two or more members delivered the same partition, " +
		"summed over partitions; duplicates; stale_commits_applied / _rejected), longest first: " + strings.Join(parts, "; ") + "."
}

// timingName names the timings the run ran with, for every timing it prints: "the lab's short
// sessions (zookeeper.session.timeout.ms 2000, session.timeout.ms 2000)" or "Kafka's defaults (...)"
// (--kafka-defaults: 0.8.2's and 3.9's).
func (r *RunResult) timingName() string { return TimingName(r.KafkaDefaults, r.Timing) }

// TimingName names timings t: "the lab's short sessions (...)" or, with kafkaDefaults, "Kafka's
// defaults (...)", with the session timeouts in ms that the eras ran with.
func TimingName(kafkaDefaults bool, t spec.Timing) string {
	name := "the lab's short sessions"
	if kafkaDefaults {
		name = "Kafka's defaults"
	}
	return fmt.Sprintf("%s: zookeeper.session.timeout.ms %d, session.timeout.ms %d", name, t.ZKSessionTimeoutMs, t.SessionTimeoutMs)
}
