// Package lab is a real environment for rebalancelab's scenarios and tests: a real ZooKeeper server
// (standalone or an ensemble on loopback), brokers, and per-member fault proxies (toxiproxy v2 as a
// library). Nothing here is a fake: the ZooKeeper is Apache's server in a JVM, so sessions, watches,
// ephemeral nodes, session expiry and quorum loss behave as in production.
//
// # Where the ZooKeeper comes from
//
//   - Options.ExternalZK ("host:port,..."; the CLI's --zk): a running server or ensemble, used as is;
//     the lab starts and stops nothing.
//   - Backend "local" (default): a JVM per server, from $ZOOKEEPER_HOME (an Apache ZooKeeper 3.8
//     binary distribution: lib/*.jar, the server jar, conf/) or else Debian's package (`apt-get install
//     zookeeper default-jre-headless`: jars under /usr/share/java); java from $JAVA_HOME/bin or PATH.
//   - Backend "container": testcontainers-go with image zookeeper:3.8 (ContainerImage), standalone only,
//     for machines with a Docker engine, in a build with -tags container only (zkcontainer.go; the
//     default build does not link the Docker client and refuses the backend with ErrNoContainerBuild).
//     Without a Docker engine it fails with ErrNoDocker.
//
// When none is available the error wraps ErrNoZooKeeper and names these ways.
//
// # What every lab server gets
//
// Free loopback ports (client; quorum and election for an ensemble) picked by the lab and kept across
// Stop/Kill/Start, its own data dir (with myid in an ensemble), admin.enableServer=false,
// 4lw.commands.whitelist=*, maxClientCnxns=0, tickTime 200 ms (DefaultTickTime) with
// maxSessionTimeout 60000 ms, initLimit 25 and syncLimit 10 ticks, and a log file per node
// (<dir>/zk-<myid>/zookeeper.log). Readiness: `ruok` answers `imok` and `srvr` shows the node serving
// (standalone, or leader/follower on every running node of an ensemble); failures carry the log tail.
//
// # Processes
//
// Children (ZooKeeper JVMs, broker processes) run in their own process group and, on Linux, get SIGKILL
// when the Go process dies (Pdeathsig), so a killed test binary leaves none behind; Close stops them
// (SIGTERM, then SIGKILL). The package is Unix-only.
//
// # Faults
//
// Each member gets its own proxies per link (MemberLinks): Stall holds bytes (both directions, TCP
// connections kept), Latency delays what the upstream sends, Cut closes the connections and refuses new
// ones, Heal undoes them all. A fault takes effect at once on every connection, and a heal releases what
// was held at once, whatever the clients did meanwhile (redialled, gave up a connection); MemberLinks.OnFault
// reports when each fault really began and ended, which the scenario timeline records.
//
// # Timing
//
// ShortTimings (broker) and ShortConsumerTimings (consumers) are the lab's short settings, with Kafka's
// defaults next to them (docs/design.md "Lab timing").
package lab
