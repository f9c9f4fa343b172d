//go:build container

package lab

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// checkDocker asks the Docker engine testcontainers-go would use for a ping. testcontainers-go
// panics in some paths when no engine is configured, hence the recover.
func checkDocker(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("lab: ZooKeeper backend %q: %w (%v); run a Docker engine, or use the local backend (%s)",
				BackendContainer, ErrNoDocker, r, howToGetZooKeeper)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err == nil {
		defer cli.Close()
		_, err = cli.Ping(ctx, client.PingOptions{})
	}
	if err != nil {
		return fmt.Errorf("lab: ZooKeeper backend %q: %w (%v); run a Docker engine, or use the local backend (%s)",
			BackendContainer, ErrNoDocker, err, howToGetZooKeeper)
	}
	return nil
}

// containerBackend is the container backend's runner constructor, once a Docker engine answers
// (checkDocker).
func containerBackend(ctx context.Context) (func(n *ZKNode) (nodeRunner, error), error) {
	if err := checkDocker(ctx); err != nil {
		return nil, err
	}
	return func(n *ZKNode) (nodeRunner, error) { return &containerRunner{node: n}, nil }, nil
}

// containerRunner runs a node as a Docker container.
type containerRunner struct {
	node *ZKNode
	ctr  *testcontainers.DockerContainer
	up   bool
}

func (r *containerRunner) start(ctx context.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w (testcontainers-go: %v)", ErrNoDocker, p)
		}
	}()
	if r.ctr != nil { // restart the stopped container: same port binding, same /data
		if err := r.ctr.Start(ctx); err != nil {
			return fmt.Errorf("start container: %w", err)
		}
		r.up = true
		return nil
	}
	n := r.node
	tick := n.z.opts.TickTime.Milliseconds()
	port := network.MustParsePort("2181/tcp")
	r.ctr, err = testcontainers.Run(ctx, ContainerImage,
		testcontainers.WithEnv(map[string]string{
			"ZOO_MY_ID":                  strconv.Itoa(n.id),
			"ZOO_TICK_TIME":              strconv.FormatInt(tick, 10),
			"ZOO_4LW_COMMANDS_WHITELIST": "*",
			"ZOO_MAX_CLIENT_CNXNS":       "0",
			"ZOO_ADMINSERVER_ENABLED":    "false",
			"ZOO_CFG_EXTRA":              "maxSessionTimeout=" + strconv.FormatInt(max(MaxSessionTimeoutMs, 20*tick), 10),
		}),
		testcontainers.WithExposedPorts("2181/tcp"),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{port: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(n.clientPort)}}}
		}),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("2181/tcp").WithStartupTimeout(n.z.opts.StartTimeout)),
	)
	if err != nil {
		return fmt.Errorf("run %s: %w", ContainerImage, err)
	}
	r.up = true
	return nil
}

func (r *containerRunner) stop(ctx context.Context) error {
	d := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl)
	}
	r.up = false
	return r.ctr.Stop(ctx, &d)
}

func (r *containerRunner) kill() error {
	zero := time.Duration(0)
	r.up = false
	return r.ctr.Stop(context.Background(), &zero)
}

func (r *containerRunner) running() bool { return r.ctr != nil && r.up && r.ctr.IsRunning() }
func (r *containerRunner) pid() int      { return 0 }

func (r *containerRunner) logTail() string {
	if r.ctr == nil {
		return "(no container)"
	}
	rc, err := r.ctr.Logs(context.Background())
	if err != nil {
		return fmt.Sprintf("(no container log: %v)", err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	s := strings.TrimSpace(string(b))
	if len(s) > 4096 {
		s = s[len(s)-4096:]
	}
	return s
}

func (r *containerRunner) close() error {
	if r.ctr == nil {
		return nil
	}
	return testcontainers.TerminateContainer(r.ctr)
}
