// Package members is the members stage of a scenario run (spec → environment → members → timeline →
// figures → report): every way a scenario member's consumer runs, behind one interface, Runtime.
//
// What flows in: a member's era, name, topic and group, its consumer properties (Props: the era's,
// the lab timing, the scenario's own), how it reaches the cluster (its links as Dialers, or Routes to
// the runner's fault proxies for a member in another process), a timeline sink (its
// timeline.Recorder, behind the runner's gate) and a logger. What flows out: the member's timeline
// records (into that sink, as it works), its ZooKeeper session id on request (ZKSession, for the zk
// cross-check), and Run's error when the application gives up.
//
// The runtimes, each built from an explicit config struct:
//   - NewGoroutine: zkconsumer's connector (zk era) or newconsumer (coordinator eras) as goroutines of
//     this process (goroutine.go);
//   - NewProcess: one `rebalancelab member` process per incarnation (RunMember, process.go), a crash
//     being its kill -9;
//   - Pools.Member: K members in a `rebalancelab member-pool` process (RunMemberPool, pool.go), or in
//     a pool on a member host on another machine (ServeMemberPools, agent.go);
//   - Kafka.NewVerifiableConsumer: Kafka 3.9's VerifiableConsumer JVM, its events translated into
//     records (kafka.go);
//   - Kafka.NewOldConnector: the real Kafka 0.8.2.2 ZookeeperConsumerConnector in its harness JVM,
//     behind a counting ZooKeeper proxy (oldconnector.go);
//   - and, for bench storm's peer, franz-go's kgo group consumer in pools (KgoPools, kgo.go), which
//     writes no records.
//
// The runner (package scenarios) keeps the incarnation bookkeeping: which incarnation of a member is
// current, the gate that silences a crashed one, its links and when member_start and member_stop are
// recorded. This package imports no scenarios: the runner imports it.
package members
