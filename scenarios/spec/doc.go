// Package spec is the first stage of a scenario run: what is to be run, as data, before anything
// starts (docs/design.md "Layout", issue #31's pipeline spec → environment → members → timeline →
// figures → report).
//
// In: names and numbers as a user or a file gives them (an era's name, "all", a run's params and
// timing, a seed). Out: typed values the later stages read and never re-parse:
//   - an Era says which consumer runs, whether it uses ZooKeeper or a group coordinator, its assignor
//     (partition.assignment.strategy), its rebalance protocol (eager or cooperative), whether its
//     members are static (group.instance.id, KIP-345) and which link carries its coordination. Era
//     names are compared only here: every other package asks an Era's methods.
//   - a script: Steps (an Action with its member, link, node or host, and the delay before it), the
//     same bytes for the same scenario, params, timing and seed (FormatScript; NewRand), which the
//     environment and the members perform and the result JSON carries.
//   - Params (members, partitions, seed, test hosts) and Timing (the session, heartbeat, backoff and
//     commit settings every era gets, and the waits derived from them).
//   - Relations: what the figures must show, as data a scenario file can hold (a comparison of a figure
//     of an event or of the totals, or of an extra counter, with an expression of N, P and H; or the
//     name of a relation registered in Go). The evaluator, which reads a run's results, is the runner's.
//   - Streams: what a Streams scenario runs instead of an era's consumers (threads per Kafka Streams
//     instance, records, the producer's pace, commit.interval.ms), read by package scenarios/streams.
//
// Nothing here touches a clock, the network or the lab: spec imports neither the lab nor the runner.
package spec
