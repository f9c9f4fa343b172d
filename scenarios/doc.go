// Package scenarios runs scripted comparisons of Kafka's consumer-group eras on a real lab and computes
// their figures (docs/design.md "Scenarios, timeline and figures").
//
// A scenario (package catalog: Catalog, Lookup) is an environment (ZooKeeper nodes, one broker), N
// members of one era and a script of timed steps (package spec): start, graceful stop, crash, link faults (stall, latency, cut,
// heal) on a member's ZooKeeper, coordinator or fetch link, ZooKeeper node and broker stop/start, measured
// triggers, and settles that wait for a stable group. The script is a pure function of the scenario, the
// params, the timing and --seed: the same inputs give the same bytes (FormatScript).
//
// Run (runner.go) starts the lab (or, with Options.Bootstrap, uses an existing cluster: external.go),
// then for each era a fresh topic and group, a producer (one record per tick, acks=all: each
// acknowledged offset is a produce record) and the members (package members: the runtime each runs in,
// picked by runtimeFor, incarnation.go), each a goroutine of this process behind its own
// lab.MemberLinks, or with Options.MembersAs "processes" a `rebalancelab member` process dialling those
// proxies, or in member pools, or one of Kafka's JVMs. Every member writes its timeline through a
// timeline.Recorder into the era's collector (a process's through its stdout); the runner adds
// member_start, member_stop, trigger and fault records. When the script ends, the producer stops, the members deliver
// everything produced, a "shutdown" trigger is recorded and the members stop gracefully; the figures
// (Compute, figures.go: a replay of the records, which follow docs/design.md "What the members must emit")
// cover the timeline up to that trigger, the file keeps it all. Each scenario's Relations — the
// expected relations between figures per era — are then checked (catalog.CheckRelations) and reported; the zk era's figures are
// cross-checked against the ZooKeeper server's four-letter words (ZKCrosscheck).
//
// Eras: zk (zkconsumer, range), classic (newconsumer, eager range), cooperative (newconsumer,
// cooperative-sticky), static (classic with group.instance.id = the member's name). kip848 is not
// implemented by the consumers.
package scenarios
