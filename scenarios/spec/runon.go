package spec

import ()

// How members run (the runner's Options.MembersAs; the result's params.members_as).
const (
	MembersAsGoroutines = "goroutines" // in the runner's process (default)
	MembersAsProcesses  = "processes"  // one `rebalancelab member` process per member incarnation
)

// BrokerExternal is a run's broker (the result's params.broker) on an existing cluster (the runner's
// Options.Bootstrap), beside the lab's "rebalancelab" and "kafka".
const BrokerExternal = "external"

// Whose consumers the coordinator eras run (the runner's Options.Members; the result's params.members).
const (
	MembersRebalancelab = "rebalancelab" // newconsumer (the default)
	MembersKafka        = "kafka"        // Kafka 3.9's VerifiableConsumer JVMs
	// MembersMixed: one group of both, odd members (m1, m3, ...) ours, even members Kafka's.
	MembersMixed = "mixed"
)
