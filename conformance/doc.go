// Package conformance runs real Kafka beside this project's broker and compares them: the one place
// that starts "our broker and Kafka 3.9 on one ZooKeeper" (StartPair), and, as its tests, everything
// that checks the broker against that reference. Its TestMain starts one pair per package run (one
// ZooKeeper, one Kafka 3.9 JVM); the tests share it.
//
// The differential test (diff_test.go, diff_harness_test.go and the scripts beside them): scripted
// request sequences sent, in the same run, to this project's broker and to a real Kafka 3.9 broker
// (ZooKeeper mode, from the interop build), the answers compared field by field after normalising
// only what differs by construction (member, cluster and topic ids, ports, throttle times; a
// LogAppendTime stamp, the broker's clock, is named when it lies within its request's window, so that
// reading it back compares, and a clock reading in an error message is "<clock>"). Record timestamps,
// leader epochs and error messages are compared as answered. Every remaining difference must be
// listed, with its reason, in the fidelity table of docs/reference/fidelity.md ("Differences from
// Kafka 3.9"); the test fails on any difference not listed there, and on a listed one that no longer
// occurs.
//
// Kafka 3.9's own tools (groupcmd_test.go, verifiable_test.go) run against this project's broker and,
// for comparison, against Kafka 3.9's broker in the same run: VerifiableProducer and
// VerifiableConsumer with Kafka's system-test invariants, and the consumer-groups tool
// (ConsumerGroupCommand) listing, describing, resetting and deleting offsets of the same scripted
// groups on both brokers, its output compared after normalising what differs by construction. The
// tool JVMs come from the interop build (`make deps`).
//
// `go test ./conformance/` runs it all (about two minutes here); under -short the package starts
// nothing and the tests that need the pair skip, saying so.
package conformance
