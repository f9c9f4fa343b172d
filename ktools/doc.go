// Package ktools holds no code, only tests: Kafka 3.9's own tools run against this project's broker
// (and, for comparison, against Kafka 3.9's broker in the same run). VerifiableProducer and
// VerifiableConsumer with Kafka's system-test invariants (verifiable_test.go), and the consumer-groups
// tool (ConsumerGroupCommand) listing, describing, resetting and deleting offsets of the same scripted
// groups on both brokers, its output compared after normalising what differs by construction
// (groupcmd_test.go). The JVMs come from the interop build (`make deps`).
package ktools
