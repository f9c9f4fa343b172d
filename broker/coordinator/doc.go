// Package coordinator is the broker's classic group coordinator, following Kafka 3.9's
// kafka.coordinator.group.GroupCoordinator, GroupMetadata, MemberMetadata and GroupMetadataManager
// (KIP-62 rebalance timeouts, KIP-134 initial rebalance delay, KIP-345 static membership, KIP-394
// MEMBER_ID_REQUIRED; KIP-429 cooperative rebalancing is client-side and needs nothing here; KIP-848
// is out of scope). Errors are the ones 3.9 gives for the request version the client sent.
//
// It has two layers:
//
//   - Core is a pure state machine in the style of etcd's raft: Step(now, event) with a decoded
//     request, a timer firing or an append outcome, returning effects — responses (a JoinGroup's may
//     come many steps later), timers to set or cancel, record batches to append to
//     __consumer_offsets. No goroutines, sockets, clocks or unseeded randomness, so tests drive it
//     with a fake clock, and the same events give the same effects in the same order. Group states
//     and their legal predecessors are GroupState/transitionTo, as in GroupMetadata. Files: core.go
//     (Step, timers, loading), api.go (requests decoded, responses encoded per version), handlers.go
//     and rebalance.go (GroupCoordinator), metadata_manager.go (GroupMetadataManager's writes),
//     group.go and state.go (GroupMetadata), logger.go (the small Logger interface the core logs
//     through, fields as key/value pairs; *slog.Logger satisfies it, so the core imports no logging
//     library).
//   - Coordinator (driver.go) runs a Core for the broker: it implements the broker's GroupHandler,
//     Handle(ctx, kmsg.Request) (kmsg.Response, error), with real timers, logrus logging (the core's
//     Logger adapted to the broker's *logrus.Entry; fields group, member, generation, partition)
//     and an OffsetsLog the broker provides. It appends outside the lock every request takes (one
//     goroutine per __consumer_offsets partition, appends in order), so a slow append holds up only
//     the responses that wait for its record.
//
// Durability (records.go): offsets and group metadata are Kafka's own __consumer_offsets records
// (OffsetCommitKey v1 / OffsetCommitValue v3, GroupMetadataKey v2 / GroupMetadataValue v3, null
// values as tombstones) in v2 record batches (package recordbatch), in partition abs(groupId.hashCode) %
// offsets.topic.num.partitions. An offset commit or a leader's assignment is acknowledged only once
// its batch is appended. Start replays the log: groups come back Stable (with members) or Empty
// with generation, protocol, leader, members and assignments; committed offsets come back.
//
// Plugging into the broker:
//
//	cfg := coordinator.DefaultConfig()  // Kafka defaults; the broker sets the group.*/offsets.* fields from its config
//	cfg.Node = coordinator.Node{ID: brokerID, Host: advertisedHost, Port: advertisedPort}
//	cfg.ClientInfo = func(ctx context.Context) (string, string) {
//		ri, _ := broker.RequestInfoFrom(ctx)
//		return ri.ClientID, "/" + ri.ClientHost
//	}
//	cfg.PartitionExists = func(t string, p int32) bool { n, ok := b.Partitions(t); return ok && p >= 0 && p < n }
//	co, err := coordinator.Start(ctx, cfg, offsetsLog{b}, log)
//	b.SetGroupHandler(co) // *Coordinator also implements GroupAPIVersions (Kafka 3.9's ranges)
//	...
//	co.Close()
//
// where offsetsLog adapts the broker's partition logs of __consumer_offsets:
//
//	func (l offsetsLog) Append(p int32, batches [][]byte) []error // one storage append for all of them
//	func (l offsetsLog) ReadAll(p int32, fn func(k, v []byte) error) error {
//		lg, err := l.b.PartitionLog(coordinator.OffsetsTopic, p)
//		if err != nil {
//			return err
//		}
//		return coordinator.ReadPartition(lg, fn)
//	}
//
// Deliberate differences from Kafka 3.9, each documented where it happens: OffsetCommit/OffsetFetch
// v0 use the coordinator's store (3.9 on ZooKeeper uses ZooKeeper); an unknown group's OffsetCommit
// with a generation gets GROUP_ID_NOT_FOUND from v9 (3.9's OffsetMetadataManager; GroupCoordinator
// says ILLEGAL_GENERATION for every version); FindCoordinator knows no transaction or share
// coordinator; choices Kafka makes by HashMap order (new leader, protocol vote ties, member order)
// follow join order here.
package coordinator
