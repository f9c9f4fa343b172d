// Package figures is the figures stage of a scenario run (docs/design.md "Scenarios, timeline and
// figures", issue #31's pipeline spec → environment → members → timeline → figures → report): pure
// functions of timeline records.
//
// In: one era's merged timeline ([]timeline.Record, as the members, the runner and the lab's proxies
// wrote it; docs/design.md "What the members must emit (the rules the figures read)") and
// FigureOptions (the partitions known from the start, the figures a run could not measure). Out: a
// Result (Compute): per trigger an Event with its Figures, the group's formation, the totals, the
// final owners, the fault windows, Kafka's consumer invariants as figures (invariants.go), and
// warnings for records it skipped; with ComputeTrace also the Trace the HTML report draws. The models
// (model.go) predict a change's ZooKeeper reads, watch events and group requests from the same
// records. FigureTable defines every figure.
//
// Nothing here touches a clock, the network, the lab or the runner: figures imports timeline and
// scenarios/spec only, and is tested on hand-written timelines and on the recorded ones under
// docs/figures/ (the replay-equality golden, replay_golden_test.go).
package figures
