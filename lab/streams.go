package lab

// The Kafka Streams 3.9 application of the streams-threads scenario: interop/streams-3.9's runtime
// classpath with the lab's own application (io.github.rebalancelab.streams.MergeApp) compiled into it by
// the interop build (`make deps`); nothing is downloaded at run time.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

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
	app := "rebalancelab-" + StreamsModule + ".jar"
	if d := os.Getenv(StreamsClasspathEnv); d != "" {
		if !isFile(filepath.Join(d, app)) {
			return "", fmt.Errorf("lab: %w: $%s=%s holds no %s; unset it or point it at interop/%s/target/lib after `make deps`",
				ErrNoStreams, StreamsClasspathEnv, d, app, StreamsModule)
		}
		return d, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			starts = append(starts, filepath.Dir(exe))
		}
	}
	rel := filepath.Join("interop", StreamsModule, "target", "lib")
	where := "no repository with interop/" + StreamsModule + "/pom.xml above the working directory or this executable (set $" + StreamsClasspathEnv + ")"
	for _, s := range starts {
		for d := s; ; d = filepath.Dir(d) {
			if isFile(filepath.Join(d, "interop", StreamsModule, "pom.xml")) {
				cp := filepath.Join(d, rel)
				if isFile(filepath.Join(cp, kafkaStamp)) && isFile(filepath.Join(cp, app)) {
					return cp, nil
				}
				where = cp + " is missing or incomplete"
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", fmt.Errorf("lab: %w: %s; run `make deps` (its interop step resolves org.apache.kafka:kafka-streams 3.9.x from Maven Central and compiles the lab's Streams application)",
		ErrNoStreams, where)
}
