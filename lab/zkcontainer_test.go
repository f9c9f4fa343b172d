//go:build container

package lab

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestContainerBackendWithoutDocker (build tag container): with no Docker engine the container backend
// fails with ErrNoDocker naming the other ways to get a ZooKeeper; an ensemble and an unknown backend
// are refused.
func TestContainerBackendWithoutDocker(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	z, err := StartZooKeeper(ctx, ZKOptions{Backend: BackendContainer, Log: testLog(t)})
	if err == nil {
		z.Close()
		t.Fatal("container backend started without a Docker engine")
	}
	if !errors.Is(err, ErrNoDocker) {
		t.Fatalf("err = %v, want ErrNoDocker", err)
	}
	for _, want := range []string{`"container"`, "Docker engine", "apt-get install zookeeper", "--zk HOST:PORT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	t.Logf("error: %v", err)
	if _, err := StartZooKeeper(ctx, ZKOptions{Backend: BackendContainer, Nodes: 3}); err == nil || !strings.Contains(err.Error(), "standalone server only") {
		t.Errorf("container ensemble: err = %v", err)
	}
	if _, err := StartZooKeeper(ctx, ZKOptions{Backend: "podman"}); err == nil || !strings.Contains(err.Error(), `unknown ZooKeeper backend "podman"`) {
		t.Errorf("unknown backend: err = %v", err)
	}
}
