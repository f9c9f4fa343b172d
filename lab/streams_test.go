package lab

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestFindStreamsClasspath: from the repository (make deps has run) it finds interop/streams-3.9/target/lib
// with the application's jar; $REBALANCELAB_STREAMS_CLASSPATH without that jar is an error wrapping
// ErrNoStreams that names it and `make deps`.
func TestFindStreamsClasspath(t *testing.T) {
	testutil.Needs(t, testutil.Interop)
	t.Setenv(StreamsClasspathEnv, "")
	cp, err := FindStreamsClasspath()
	if err != nil {
		t.Fatalf("%v (run make deps)", err)
	}
	if filepath.Base(filepath.Dir(filepath.Dir(cp))) != StreamsModule {
		t.Fatalf("classpath %s, want interop/%s/target/lib", cp, StreamsModule)
	}
	for _, jar := range []string{"kafka-streams-3.9.2.jar", "rebalancelab-streams-3.9.jar"} {
		if _, err := os.Stat(filepath.Join(cp, jar)); err != nil {
			t.Fatalf("%s: %v", jar, err)
		}
	}
	empty := t.TempDir()
	t.Setenv(StreamsClasspathEnv, empty)
	_, err = FindStreamsClasspath()
	if !errors.Is(err, ErrNoStreams) || !strings.Contains(err.Error(), empty) || !strings.Contains(err.Error(), "rebalancelab-streams-3.9.jar") {
		t.Fatalf("an empty $%s: %v", StreamsClasspathEnv, err)
	}
}
