//go:build !container

package lab

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestContainerBackendNotBuilt: in the default build (no container tag) the container backend is
// refused with ErrNoContainerBuild, saying how to rebuild, without asking for a Docker engine; an
// ensemble on it is still refused as standalone-only first, and an unknown backend as unknown.
func TestContainerBackendNotBuilt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	z, err := StartZooKeeper(ctx, ZKOptions{Backend: BackendContainer, Log: testLog(t)})
	if err == nil {
		z.Close()
		t.Fatal("container backend started in a build without the container tag")
	}
	if !errors.Is(err, ErrNoContainerBuild) {
		t.Fatalf("err = %v, want ErrNoContainerBuild", err)
	}
	for _, want := range []string{`"container"`, "built without the container tag: rebuild with -tags container", "apt-get install zookeeper"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if _, err := StartZooKeeper(ctx, ZKOptions{Backend: BackendContainer, Nodes: 3}); err == nil || !strings.Contains(err.Error(), "standalone server only") {
		t.Errorf("container ensemble: err = %v", err)
	}
	if _, err := StartZooKeeper(ctx, ZKOptions{Backend: "podman"}); err == nil || !strings.Contains(err.Error(), `unknown ZooKeeper backend "podman"`) {
		t.Errorf("unknown backend: err = %v", err)
	}
}
