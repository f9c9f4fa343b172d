package lab

import "errors"

// ContainerImage is the image of the container backend (ZKOptions.Backend = "container").
//
// The container backend exists only in a build with the container tag (`go build -tags container`;
// zkcontainer.go); without it StartZooKeeper refuses the backend with ErrNoContainerBuild. It runs a standalone ZooKeeper 3.8 with testcontainers-go on a machine with a
// Docker engine (found the way testcontainers-go finds one: DOCKER_HOST, ~/.testcontainers.properties,
// /var/run/docker.sock, rootless sockets). The server gets the lab's settings through the image's
// environment (ZOO_TICK_TIME, ZOO_4LW_COMMANDS_WHITELIST=*, ZOO_MAX_CLIENT_CNXNS=0,
// ZOO_ADMINSERVER_ENABLED=false, maxSessionTimeout via ZOO_CFG_EXTRA), and its port 2181 is bound to
// a free 127.0.0.1 port picked by the lab, so the address survives Stop/Start. Kill stops the
// container without grace (docker's SIGKILL). Without a Docker engine StartZooKeeper fails with
// ErrNoDocker, naming the other ways to get a ZooKeeper.
const ContainerImage = "zookeeper:3.8"

// ErrNoDocker is wrapped by the error of the container backend when no Docker engine answers.
var ErrNoDocker = errors.New("no Docker engine answers")

// ErrNoContainerBuild is wrapped by the error of the container backend in a build without the
// container tag (the default): "built without the container tag: rebuild with -tags container".
var ErrNoContainerBuild = errors.New("built without the container tag")
