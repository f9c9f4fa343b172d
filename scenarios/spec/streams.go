package spec

// Streams makes a scenario a Streams scenario: its members are Kafka Streams instances of the lab's
// application (two co-partitioned inputs merged, stateless, into an output), started as JVMs by the
// Streams driver (package scenarios/streams), not consumers of an era.
type Streams struct {
	Threads    int // num.stream.threads of every instance
	Records    int // produced in all, alternately to each input
	RatePerSec int // the producer's pace, records per second
	// CommitIntervalMs is Streams' commit.interval.ms (Kafka's default 30000 for at_least_once): what a
	// kill -9 makes the next owner re-process is at most this much of the dead instance's work.
	CommitIntervalMs int64
}
