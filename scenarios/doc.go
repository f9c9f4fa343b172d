// Package scenarios is the scenario loop: it runs scripted comparisons of Kafka's consumer-group eras
// and hands each era's timeline to the figures, the relations and the report (docs/design.md
// "Scenarios, timeline and figures"). It is one stage of the pipeline
//
//	spec → environment → members → timeline → figures → report
//
// and the glue between the others, each a package of its own: scenarios/spec (the typed Era, steps,
// params, timing, scenario files), scenarios/catalog (the scenarios and the checking of their
// relations), scenarios/env (the cluster: the lab or an existing one), scenarios/members (the runtime
// each member runs in), scenarios/figures (pure functions of the records) and scenarios/report (the
// result, its table, JSON and HTML). The Connect and Streams scenarios are drivers of their own
// (scenarios/connect, scenarios/streams).
//
// A scenario is an environment (ZooKeeper nodes, brokers), N members of one era and a script of timed
// steps: start, graceful stop, crash, link faults (stall, latency, cut, heal) on a member's ZooKeeper,
// coordinator or fetch link, ZooKeeper node and broker stop/start, test-host faults, measured triggers,
// and settles that wait for a stable group. The script is a pure function of the scenario, the params,
// the timing and --seed: the same inputs give the same bytes (spec.FormatScript).
//
// Run (runner.go) gets its cluster from env.Start, then for each era makes a fresh topic and group,
// starts a producer (one record per tick, acks=all: each acknowledged offset is a produce record) and
// the members (runtimeFor, incarnation.go, picks each one's members.Runtime: a goroutine of this process
// behind its own lab.MemberLinks, a `rebalancelab member` process dialling those proxies, a member pool,
// or one of Kafka's JVMs), and plays the script. Every member writes its timeline through a
// timeline.Recorder into the era's collector (a process's through its stdout); the runner adds
// member_start, member_stop, trigger and fault records. When the script ends, the producer stops, the
// members deliver everything produced, a "shutdown" trigger is recorded and the members stop
// gracefully; the figures (figures.Compute: a replay of the records, which follow docs/design.md "What
// the members must emit") cover the timeline up to that trigger, the file keeps it all. The scenario's
// relations are then checked (catalog.CheckRelations) and reported; the zk era's figures are
// cross-checked against the ZooKeeper server's four-letter words (crosscheck.go).
//
// Eras: zk (zkconsumer, range), classic (newconsumer, eager range), cooperative (newconsumer,
// cooperative-sticky), static (classic with group.instance.id = the member's name). kip848 is not
// implemented by the consumers.
package scenarios
