// Package streams is the Kafka Streams driver (issue 17; issue 31's split of the scenarios package): a
// Streams scenario's run, over the stages spec (scenarios/spec), environment (scenarios/env) and report
// (scenarios/report), with Kafka Streams 3.9 instances instead of an era's consumers.
//
// In: an Input — the scenario's name (the application id is "rebalancelab-<name>"), its spec.Streams
// (threads per instance, records, the producer's pace, commit.interval.ms), its script (spec.Steps:
// trigger, start, remove-thread, add-thread, crash, settle), the partitions per input, the timing
// (session.timeout.ms, heartbeat.interval.ms) and the lab's options (broker, ZooKeeper, log,
// progress). Run refuses, before anything starts, an existing cluster (--bootstrap), a broker the lab
// does not have and a consumer era.
//
// What it does: starts a lab (ZooKeeper and one broker; on the rebalancelab broker with its group
// observer), creates the two inputs and the output, produces the records, runs the script on JVMs of
// the interop build's application (lab.StreamsMainClass, one per instance: its JSON lines on stdout, its
// commands on stdin), then reads the output topic back to its end offsets.
//
// Out: an Output — the Result (the result JSON's "streams": the config, the group's stable generations
// as Lanes thread by thread, an Event per scripted trigger with its figures, the Totals, how each
// instance ended), the Kafka version of a Kafka broker and the run's errors. Result is the report's
// report.StreamsOutput: it writes its own table, its files (streams-app.jsonl, streams-group.jsonl) and
// its page. The scenario's relations, which read a Result, and the verdict are the caller's (package
// scenarios, which calls Run for a scenario whose Streams is set).
//
// It imports the lab, the broker (for its group observer), scenarios/env, scenarios/members (its line
// writer), scenarios/report and scenarios/spec, never the scenarios runner.
package streams
