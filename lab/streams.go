package lab

// The Kafka Streams 3.9 application of the streams-threads scenario: interop/streams-3.9's runtime
// classpath with the lab's own application (io.github.rebalancelab.streams.MergeApp) compiled into it by
// the interop build (`make deps`); nothing is downloaded at run time.

import "errors"

// StreamsModule is the interop build's Kafka Streams module.
const StreamsModule = "streams-3.9"

// StreamsMainClass is the Streams application's main class (interop/streams-3.9/src/main/java).
const StreamsMainClass = "io.github.rebalancelab.streams.MergeApp"

// StreamsClasspathEnv overrides where the Streams classpath is looked for.
const StreamsClasspathEnv = "REBALANCELAB_STREAMS_CLASSPATH"

// StreamsHeapOpts bounds each Streams instance's JVM.
var StreamsHeapOpts = []string{"-Xmx256m", "-Xms64m"}

// ErrNoStreams is wrapped by the error returned when the Streams classpath is missing.
var ErrNoStreams = errors.New("no Kafka Streams 3.9 classpath")

// FindStreamsClasspath returns the directory of the Streams application's jars ($REBALANCELAB_STREAMS_CLASSPATH,
// else interop/streams-3.9/target/lib of the repository above the working directory or this executable),
// as FindKafkaClasspath does for the broker. The error wraps ErrNoStreams and names `make deps`.
func FindStreamsClasspath() (string, error) {
	return interopModule{module: StreamsModule, env: StreamsClasspathEnv, marker: "rebalancelab-" + StreamsModule + ".jar",
		what: "resolves org.apache.kafka:kafka-streams 3.9.x and compiles the lab's Streams application", err: ErrNoStreams}.classpath()
}
