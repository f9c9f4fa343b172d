package lab

import (
	"fmt"
	"os"
	"path/filepath"
)

// interopModule is one module of the interop build (interop/<module>/target/lib, brought by `make
// deps`) from which the lab runs a JVM: Kafka's broker and tools, Streams, Connect, the old connector.
type interopModule struct {
	module string // "kafka-3.9"
	env    string // the environment variable that names the classpath directory instead
	marker string // a glob the classpath directory must hold ("kafka_2.13-*.jar")
	what   string // what the interop step brings, for the error: "resolves org.apache.kafka:kafka_2.13 3.9.x"
	err    error  // the sentinel every error wraps (ErrNoKafka, ErrNoStreams)
}

// classpath is the module's runtime classpath directory: $env when set (it must hold marker), else
// interop/<module>/target/lib of the first repository above the working directory or this executable
// whose interop build completed (the stamp deps.sh writes last, and marker). The error wraps m.err and
// names the `make deps` step.
func (m interopModule) classpath() (string, error) {
	holds := func(dir string) bool {
		jars, _ := filepath.Glob(filepath.Join(dir, m.marker))
		return len(jars) > 0
	}
	if d := os.Getenv(m.env); d != "" {
		if !holds(d) {
			return "", fmt.Errorf("lab: %w: $%s=%s holds no %s; unset it or point it at interop/%s/target/lib after `make deps`",
				m.err, m.env, d, m.marker, m.module)
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
	rel := filepath.Join("interop", m.module, "target", "lib")
	where := fmt.Sprintf("no repository with interop/%s/pom.xml above the working directory or this executable (set $%s)", m.module, m.env)
	found := false
	for _, s := range starts {
		for d := s; ; d = filepath.Dir(d) {
			if isFile(filepath.Join(d, "interop", m.module, "pom.xml")) {
				cp := filepath.Join(d, rel)
				if isFile(filepath.Join(cp, kafkaStamp)) && holds(cp) {
					return cp, nil
				}
				if !found {
					where, found = cp+" is missing or incomplete", true
				}
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", fmt.Errorf("lab: %w: %s; run `make deps` (its interop step, mvn -f interop/pom.xml package, %s from Maven Central)",
		m.err, where, m.what)
}
