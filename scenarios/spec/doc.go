// Package spec is the first stage of a scenario run: what is to be run, as data, before anything
// starts (docs/design.md "Layout", issue #31's pipeline spec → environment → members → timeline →
// figures → report).
//
// In: names as a user or a file gives them (an era's name, "all"). Out: typed values the later
// stages read and never re-parse: an Era says which consumer runs, whether it uses ZooKeeper or a
// group coordinator, its assignor (partition.assignment.strategy), its rebalance protocol (eager or
// cooperative) and whether its members are static (group.instance.id, KIP-345). Era names are
// compared only here: every other package asks an Era's methods.
//
// Nothing here touches a clock, the network or the lab: spec imports neither the lab nor the runner.
package spec
