package newconsumer

import (
	"context"
	"fmt"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxVersions are the highest request versions Kafka 3.9's consumer sends (the validVersions of
// clients/src/main/resources/common/message/*Request.json), except Fetch, capped at v12 because
// v13+ name topics by id and this client keeps topic names only. A request goes out at the highest
// version both this table and the broker's ApiVersions answer allow.
var maxVersions = map[int16]int16{
	kmsg.ApiVersions.Int16():          3,
	kmsg.Metadata.Int16():             12,
	kmsg.FindCoordinator.Int16():      6,
	kmsg.JoinGroup.Int16():            9,
	kmsg.SyncGroup.Int16():            5,
	kmsg.Heartbeat.Int16():            4,
	kmsg.LeaveGroup.Int16():           5,
	kmsg.OffsetCommit.Int16():         9,
	kmsg.OffsetFetch.Int16():          9,
	kmsg.ListOffsets.Int16():          9,
	kmsg.Fetch.Int16():                12,
	kmsg.OffsetForLeaderEpoch.Int16(): 4,
}

// minVersions: Fetch v4 is the first with v2 record batches' isolation level; OffsetFetch v1 the
// first that reads offsets from the coordinator rather than ZooKeeper.
var minVersions = map[int16]int16{
	kmsg.Fetch.Int16():        4,
	kmsg.OffsetFetch.Int16():  1,
	kmsg.OffsetCommit.Int16(): 2,
	// OffsetsForLeaderEpochRequest.Builder.forConsumer: v3 is the first with replica_id; a broker
	// without it is not asked (SubscriptionState.hasUsableOffsetForLeaderEpochVersion).
	kmsg.OffsetForLeaderEpoch.Int16(): 3,
}

// brokerConn is one connection with the versions its broker advertised.
type brokerConn struct {
	*wire.Conn
	versions map[int16]kmsg.ApiVersionsResponseApiKey
}

// dialBroker connects to addr and asks ApiVersions (v3; on UNSUPPORTED_VERSION again at v0, KIP-511).
func dialBroker(ctx context.Context, dial wire.DialFunc, addr, clientID string, timeout time.Duration) (*brokerConn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := wire.Dial(ctx, dial, addr, clientID)
	if err != nil {
		return nil, err
	}
	for _, v := range []int16{3, 0} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName = "rebalancelab-newconsumer"
		req.ClientSoftwareVersion = "1.0.0"
		r, err := c.Request(ctx, req)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		resp := r.(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode == kerr.UnsupportedVersion.Code && v > 0 {
			continue
		}
		if resp.ErrorCode != 0 {
			_ = c.Close()
			return nil, fmt.Errorf("newconsumer: ApiVersions from %s: %w", addr, kerr.ErrorForCode(resp.ErrorCode))
		}
		b := &brokerConn{Conn: c, versions: map[int16]kmsg.ApiVersionsResponseApiKey{}}
		for _, k := range resp.ApiKeys {
			b.versions[k.ApiKey] = k
		}
		return b, nil
	}
	_ = c.Close()
	return nil, fmt.Errorf("newconsumer: %s answers no ApiVersions version", addr)
}

// version returns the version to send key at, or an error if the broker and Kafka 3.9 have none in
// common.
func (b *brokerConn) version(key int16) (int16, error) {
	have, ok := b.versions[key]
	if !ok {
		return 0, fmt.Errorf("newconsumer: broker %s does not support %s: %w", b.Addr(), kmsg.NameForKey(key), kerr.UnsupportedVersion)
	}
	v := maxVersions[key]
	if have.MaxVersion < v {
		v = have.MaxVersion
	}
	if v < have.MinVersion || v < minVersions[key] {
		return 0, fmt.Errorf("newconsumer: broker %s supports %s v%d-v%d, this client v%d-v%d: %w", b.Addr(),
			kmsg.NameForKey(key), have.MinVersion, have.MaxVersion, minVersions[key], maxVersions[key], kerr.UnsupportedVersion)
	}
	return v, nil
}

// request sends req at the negotiated version, bounded by timeout.
func (b *brokerConn) request(ctx context.Context, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	v, err := b.version(req.Key())
	if err != nil {
		return nil, err
	}
	req.SetVersion(v)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return b.Request(ctx, req)
}

// ordered sends req like request and calls handle with the answer (or error) once every answer
// written before it on this connection has been handled (wire.Conn.Ordered): the coordinator
// connection's answers are applied to the member's state in the order they arrive, as Java's
// ConsumerNetworkClient completes them. queued is called when the answer waits for an earlier one.
func (b *brokerConn) ordered(ctx context.Context, req kmsg.Request, timeout time.Duration, handle func(kmsg.Response, error), queued func()) {
	v, err := b.version(req.Key())
	if err != nil {
		handle(nil, err)
		return
	}
	req.SetVersion(v)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b.Ordered(ctx, req, handle, queued)
}
