package scenarios

// The figures' names as this package has always exported them: the figure code lives in
// scenarios/figures (pure functions of timeline records, importing neither the lab nor the runner);
// these aliases keep the runner, the report and the callers of scenarios (cmd, benchmark, docs/gen)
// unchanged while the pipeline's stages are split out (issue #31). New code imports figures.

import (
	"github.com/rebalancelab/rebalancelab/scenarios/figures"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// Figure names, window ends and NeverStable: figures'.
const (
	EndNextTrigger                = figures.EndNextTrigger
	EndOfRun                      = figures.EndOfRun
	EndStable                     = figures.EndStable
	FigConcurrentOwnerMs          = figures.FigConcurrentOwnerMs
	FigDuplicates                 = figures.FigDuplicates
	FigGroupRequests              = figures.FigGroupRequests
	FigInvCommitAheadOfPosition   = figures.FigInvCommitAheadOfPosition
	FigInvConsumedBehindCommitted = figures.FigInvConsumedBehindCommitted
	FigInvConsumedNotMember       = figures.FigInvConsumedNotMember
	FigInvConsumedUnowned         = figures.FigInvConsumedUnowned
	FigInvOffsetsNotContiguous    = figures.FigInvOffsetsNotContiguous
	FigInvRevokedUnowned          = figures.FigInvRevokedUnowned
	FigLost                       = figures.FigLost
	FigMaxConcurrentOwners        = figures.FigMaxConcurrentOwners
	FigOwnershipConflicts         = figures.FigOwnershipConflicts
	FigPausedMemberMs             = figures.FigPausedMemberMs
	FigRebalanceAttempts          = figures.FigRebalanceAttempts
	FigRebalanceFailures          = figures.FigRebalanceFailures
	FigRebalanceParticipants      = figures.FigRebalanceParticipants
	FigRevocations                = figures.FigRevocations
	FigStaleCommitsApplied        = figures.FigStaleCommitsApplied
	FigStaleCommitsRejected       = figures.FigStaleCommitsRejected
	FigTimeToStableMs             = figures.FigTimeToStableMs
	FigUnownedPartitionMs         = figures.FigUnownedPartitionMs
	FigZKOffsetWrites             = figures.FigZKOffsetWrites
	FigZKReads                    = figures.FigZKReads
	FigZKWatchEvents              = figures.FigZKWatchEvents
	FigZKWrites                   = figures.FigZKWrites
	NeverStable                   = figures.NeverStable
	ZKOwnerConflict               = figures.ZKOwnerConflict
)

// The figures' types.
type (
	FigureDef     = figures.FigureDef
	Figures       = figures.Figures
	Event         = figures.Event
	Result        = figures.Result
	FaultWindow   = figures.FaultWindow
	FigureOptions = figures.FigureOptions
	ZKChange      = figures.ZKChange
	GroupChange   = figures.GroupChange
	GroupCount    = figures.GroupCount
)

// The figures' tables.
var (
	FigureTable    = figures.FigureTable
	FigureNames    = figures.FigureNames
	InvariantNames = figures.InvariantNames
)

// FigureTableMarkdown is figures.FigureTableMarkdown.
func FigureTableMarkdown() string { return figures.FigureTableMarkdown() }

// NotApplicable is figures.NotApplicable: the figures era cannot produce.
func NotApplicable(era string) []string { return figures.NotApplicable(era) }

// Compute is figures.Compute: era's figures from records.
func Compute(records []timeline.Record, era string, opts FigureOptions) Result {
	return figures.Compute(records, era, opts)
}

// ZKWatchEvents is figures.ZKWatchEvents.
func ZKWatchEvents(c ZKChange) int64 { return figures.ZKWatchEvents(c) }

// ZKReads is figures.ZKReads.
func ZKReads(c ZKChange) int64 { return figures.ZKReads(c) }

// ZKReadsResidualBound is figures.ZKReadsResidualBound.
func ZKReadsResidualBound(c ZKChange) (lo, hi int64) { return figures.ZKReadsResidualBound(c) }

// ZKChangeOf is figures.ZKChangeOf.
func ZKChangeOf(recs []timeline.Record, ev Event, partitions int) ZKChange {
	return figures.ZKChangeOf(recs, ev, partitions)
}

// ZKChangeFromFigures is figures.ZKChangeFromFigures.
func ZKChangeFromFigures(f Figures, registered, joined, left, owners, partitions int) (c ZKChange, ok bool) {
	return figures.ZKChangeFromFigures(f, registered, joined, left, owners, partitions)
}

// GroupRequests is figures.GroupRequests.
func GroupRequests(c GroupChange) (g GroupCount, ok bool) { return figures.GroupRequests(c) }

// GroupChangeOf is figures.GroupChangeOf.
func GroupChangeOf(recs []timeline.Record, era string, ev Event) (GroupChange, GroupCount) {
	return figures.GroupChangeOf(recs, era, ev)
}
