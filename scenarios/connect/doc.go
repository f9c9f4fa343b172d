// Package connect is the connect-workers scenario (issue 17) as a small driver over a run's stages
// (issue #31's pipeline spec → environment → members → timeline → figures → report): Kafka Connect 3.9
// distributed workers (lab.StartConnectWorker, real ConnectDistributed JVMs) on the lab's broker, a
// verifiable source and sink whose task count follows tasks.max, configured over the REST API. It does
// not fit the era loop (package scenarios): its members are not the project's and there are no eras;
// its comparison is Connect's rebalance protocols, sessioned (Kafka 3.9's default, KIP-415) against
// eager.
//
// In: Options — the protocol (Sessioned or Eager), the Layouts to go through (workers, and the
// tasks.max of the source and of the sink), scheduled.rebalance.max.delay.ms, the source's throughput
// (records per second per task), a directory for the workers and the tasks' event files, the logs and
// a progress writer. Run goes through its phases, each a method of one run: start (env.Start:
// ZooKeeper and one rebalancelab broker with the coordinator's group observer; a client; the topic),
// layouts (workers started and connectors configured until the observer shows each layout held),
// internalTopics (DescribeConfigs of Connect's three topics), kill (the last worker killed with -9,
// waited until its tasks are held again) and drain (the source stopped, the sink waited until it
// consumed every acknowledged record); the relations are checked last.
//
// Out: a Result — every Stable generation of the Connect group with what each worker held (decoded
// by internal/groupview from the observer's events), the generation each layout settled in, the
// cleanup.policy of Connect's internal topics, the kill's figures (departure seen, its scheduled delay,
// the tasks held again, the rebalances, per worker the task downtime and the tasks stopped, from the
// tasks' own event files), the end-to-end counts (produced, consumed, missing, duplicates) and the
// relations as checked (report.RelationResult). Result.WriteTable prints it; the CLI (`scenario run
// connect-workers`) writes the runs as JSON and docs/gen writes chapter 7 from them.
//
// The package imports the stages it uses (scenarios/env, scenarios/report), the lab, internal/poll
// and internal/groupview, never the loop (package scenarios).
package connect
