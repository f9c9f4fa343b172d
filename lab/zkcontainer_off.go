//go:build !container

package lab

import (
	"context"
	"fmt"
)

// containerBackend, in a build without the container tag (the default), refuses the container
// backend with an error wrapping ErrNoContainerBuild: the Docker client and testcontainers-go are
// linked only with -tags container (zkcontainer.go).
func containerBackend(context.Context) (func(n *ZKNode) (nodeRunner, error), error) {
	return nil, fmt.Errorf("lab: ZooKeeper backend %q: %w: rebuild with -tags container (go build -tags container ./cmd/rebalancelab), or use the local backend (%s)",
		BackendContainer, ErrNoContainerBuild, howToGetZooKeeper)
}
