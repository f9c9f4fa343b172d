package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"sort"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/coordinator"
	"github.com/rebalancelab/rebalancelab/broker/storage"
)

// apiRange is the versions of one API this broker implements.
type apiRange struct{ min, max int16 }

// brokerAPIs are the APIs the broker implements itself, with the versions it advertises in ApiVersions.
// The log holds v2 record batches: Produce v0–v2 (message formats 0 and 1) are converted on append and
// Fetch v0–v3 down-converted (oldformats.go), as Kafka 3.9 does; topic ids are not kept (0.8.2's znode
// layout has none), so Fetch stops at v12 and Metadata answers the null topic id from v10 on.
var brokerAPIs = map[int16]apiRange{
	int16(kmsg.Produce):          {0, 11}, // v10: KIP-951 leader hints (api_leaderhints.go); v11: v10 (TRANSACTION_ABORTABLE needs transactions)
	int16(kmsg.Fetch):            {0, 12},
	int16(kmsg.ListOffsets):      {0, 9},
	int16(kmsg.Metadata):         {0, 12},
	int16(kmsg.ApiVersions):      {0, 4}, // v4 is v3's format: KAFKA-17011 only lets a feature's minimum be 0
	int16(kmsg.CreateTopics):     {0, 7},
	int16(kmsg.DeleteTopics):     {0, 6},
	int16(kmsg.CreatePartitions): {0, 3},
	int16(kmsg.InitProducerID):   {0, 5}, // idempotent producers only (api_producer.go)
	// Configs and admin (api_configs.go, api_deleterecords.go): Kafka 3.9's ranges.
	int16(kmsg.DescribeConfigs):         {0, 4},
	int16(kmsg.AlterConfigs):            {0, 2},
	int16(kmsg.IncrementalAlterConfigs): {0, 1},
	int16(kmsg.DescribeCluster):         {0, 1},
	int16(kmsg.DeleteRecords):           {0, 2},
	// KIP-320's truncation check for consumers, and followers' (api_leaderepoch.go).
	int16(kmsg.OffsetForLeaderEpoch): {0, 4},
	// Inter-broker (replication.go, alterpartition.go): followers fetch with Fetch v12; leaders send
	// their ISR changes to the controller (KIP-497) by topic name, v0-v1 (v2+ name topics by id).
	int16(kmsg.AlterPartition): {0, 1},
	// ControlledShutdown v1-v3 (v0 is 0.8's framing without a client id header, not served).
	int16(kmsg.ControlledShutdown): {1, 3},
	// From the controller (controlrequests.go): Kafka 3.9's ranges; the controller sends the newest.
	int16(kmsg.LeaderAndISR):   {0, 7},
	int16(kmsg.UpdateMetadata): {0, 8},
	int16(kmsg.StopReplica):    {0, 4},
	// KIP-848's APIs: UNSUPPORTED_VERSION, as a ZooKeeper-mode Kafka answers them (api_kip848.go).
	int16(kmsg.ConsumerGroupHeartbeat): {0, 0},
	int16(kmsg.ConsumerGroupDescribe):  {0, 0},
}

// DefaultGroupAPIVersions is Kafka 3.9's classic group API ranges, advertised for a GroupHandler that
// does not implement GroupAPIVersioner: OffsetCommit 0-9, OffsetFetch 0-9, FindCoordinator 0-5,
// JoinGroup 0-9, Heartbeat 0-4, LeaveGroup 0-5, SyncGroup 0-5, DescribeGroups 0-5, ListGroups 0-5,
// DeleteGroups 0-2, OffsetDelete 0.
func DefaultGroupAPIVersions() []kmsg.ApiVersionsResponseApiKey {
	r := func(k kmsg.Key, lo, hi int16) kmsg.ApiVersionsResponseApiKey {
		return kmsg.ApiVersionsResponseApiKey{ApiKey: int16(k), MinVersion: lo, MaxVersion: hi}
	}
	return []kmsg.ApiVersionsResponseApiKey{
		r(kmsg.OffsetCommit, 0, 9), r(kmsg.OffsetFetch, 0, 9), r(kmsg.FindCoordinator, 0, 5), r(kmsg.JoinGroup, 0, 9),
		r(kmsg.Heartbeat, 0, 4), r(kmsg.LeaveGroup, 0, 5), r(kmsg.SyncGroup, 0, 5), r(kmsg.DescribeGroups, 0, 5),
		r(kmsg.ListGroups, 0, 5), r(kmsg.DeleteGroups, 0, 2), r(kmsg.OffsetDelete, 0, 0),
	}
}

// supported returns the advertised range of key, false if the broker does not serve it now.
func (b *Broker) supported(key int16) (apiRange, bool) {
	if r, ok := brokerAPIs[key]; ok {
		return r, true
	}
	if g := b.groups.Load(); g != nil {
		r, ok := g.versions[key]
		return r, ok
	}
	return apiRange{}, false
}

// advertised lists the ApiVersions entries, by key.
func (b *Broker) advertised() []kmsg.ApiVersionsResponseApiKey {
	var out []kmsg.ApiVersionsResponseApiKey
	for k, r := range brokerAPIs {
		out = append(out, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: r.min, MaxVersion: r.max})
	}
	if g := b.groups.Load(); g != nil {
		for k, r := range g.versions {
			out = append(out, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: r.min, MaxVersion: r.max})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ApiKey < out[j].ApiKey })
	return out
}

func (b *Broker) acceptLoop() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			if b.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			b.log.WithError(err).Warn("accept failed")
			select {
			case <-time.After(50 * time.Millisecond):
			case <-b.ctx.Done():
				return
			}
			continue
		}
		b.connsMu.Lock()
		if b.closed {
			b.connsMu.Unlock()
			c.Close()
			return
		}
		b.conns[c] = struct{}{}
		b.wg.Add(1)
		b.connsMu.Unlock()
		go func() {
			defer b.wg.Done()
			b.serveConn(c)
			b.connsMu.Lock()
			delete(b.conns, c)
			b.connsMu.Unlock()
		}()
	}
}

// closeReason labels why the broker closed a connection (metric and log).
const (
	closeOversize    = "request_too_large"
	closeUnknownKey  = "unknown_api_key"
	closeBadVersion  = "unsupported_version"
	closeMalformed   = "malformed_request"
	closeHandlerFail = "handler_error"
	closeAcks0Error  = "acks0_produce_error"
	closeIdle        = "idle"
	closeHookCut     = "produce_response_hook"
	closeTruncated   = "records_truncated_during_send" // zero-copy fetch: the segment was truncated under the answer
	closeNotRead     = "response_not_read"             // a response the client did not take within connections.max.idle.ms
)

// errClose asks serveConn to close the connection after logging reason.
type errClose struct {
	reason string
	err    error
}

func (e *errClose) Error() string { return e.reason + ": " + e.err.Error() }

// serveConn runs one client connection (SocketServer's Processor + KafkaRequestHandler for that
// connection): a reader goroutine reads frames, this goroutine handles them one at a time and writes
// each response before taking the next request, so responses leave in request order. Any protocol
// violation closes this connection only. It returns only after its reader goroutine has (closing c ends
// the reader's read), so Close, which waits for serveConn, waits for both.
func (b *Broker) serveConn(c net.Conn) {
	ctx, cancel := context.WithCancel(b.ctx)
	readerDone := make(chan struct{})
	defer func() {
		cancel()
		c.Close()
		<-readerDone
	}()
	remote := c.RemoteAddr().String()
	log := b.log.WithField("client", remote)
	host, _, _ := net.SplitHostPort(remote)

	frames := make(chan []byte)
	fr := &frameReader{c: c, maxBytes: b.cfg.SocketRequestMaxBytes, idle: time.Duration(b.cfg.ConnectionsMaxIdleMs) * time.Millisecond}
	go func() {
		defer close(readerDone)
		defer cancel()
		for {
			frame, err := fr.next()
			if err != nil {
				var ec *errClose
				if errors.As(err, &ec) {
					b.metrics.closed.WithLabelValues(ec.reason).Inc()
					log.WithError(ec.err).Warnf("closing connection: %s", ec.reason)
				}
				return
			}
			b.metrics.bytesIn.Add(float64(4 + len(frame)))
			select {
			case frames <- frame:
			case <-ctx.Done():
				return
			}
		}
	}()

	var out, scratch []byte
	for {
		var frame []byte
		select {
		case <-ctx.Done():
			return
		case frame = <-frames:
		}
		resp, splices, err := b.handleFrame(ctx, frame, host, out[:0])
		if err != nil {
			var ec *errClose
			if errors.As(err, &ec) {
				b.metrics.closed.WithLabelValues(ec.reason).Inc()
				log.WithError(ec.err).Warnf("closing connection: %s", ec.reason)
			} else if ctx.Err() == nil {
				log.WithError(err).Warn("closing connection")
			}
			return
		}
		if resp == nil {
			continue // acks=0 produce: no response
		}
		out = resp
		// A response must go out within connections.max.idle.ms (Kafka closes a connection idle that
		// long, writes included): a client that stopped reading does not hold the broker's send, nor
		// the segment files of a zero-copy answer, for longer.
		if fr.idle > 0 {
			c.SetWriteDeadline(time.Now().Add(fr.idle))
		}
		n, err := writeFrame(c, resp, splices, &scratch)
		for _, sp := range splices {
			sp.s.Release()
		}
		b.metrics.bytesOut.Add(float64(n))
		if err != nil {
			switch {
			case errors.Is(err, storage.ErrSliceTruncated):
				b.metrics.closed.WithLabelValues(closeTruncated).Inc()
				log.WithError(err).Warnf("closing connection: %s", closeTruncated)
			case errors.Is(err, os.ErrDeadlineExceeded):
				b.metrics.closed.WithLabelValues(closeNotRead).Inc()
				log.WithError(err).Warnf("closing connection: %s within connections.max.idle.ms", closeNotRead)
			}
			return
		}
	}
}

// requestHeader is a parsed request header (v1, or v2 with tagged fields for flexible versions).
type requestHeader struct {
	key, version  int16
	correlationID int32
	clientID      string
}

// handleFrame parses one request frame (without its size prefix), runs it, and returns the response
// frame to write into dst (nil: no response, for acks=0 Produce) and, for a Fetch answered from the
// segment files, the slices to send inside it (writeFrame), which the caller must release. An
// *errClose error closes the connection.
func (b *Broker) handleFrame(ctx context.Context, frame []byte, clientHost string, dst []byte) ([]byte, []splice, error) {
	r := kbin.Reader{Src: frame}
	var h requestHeader
	h.key = r.Int16()
	h.version = r.Int16()
	h.correlationID = r.Int32()
	if err := r.Complete(); err != nil {
		return nil, nil, &errClose{closeMalformed, fmt.Errorf("request header of %d bytes: %w", len(frame), err)}
	}
	req := kmsg.RequestForKey(h.key)
	rng, ok := b.supported(h.key)
	if req == nil || !ok {
		// KafkaApis / SocketServer: a request for an API the broker does not enable closes the connection.
		return nil, nil, &errClose{closeUnknownKey, fmt.Errorf("api key %d (%s) is not served by this broker", h.key, kmsg.NameForKey(h.key))}
	}
	if cid := r.NullableString(); cid != nil {
		h.clientID = *cid
	}
	if err := r.Complete(); err != nil {
		return nil, nil, &errClose{closeMalformed, fmt.Errorf("%s request header: %w", kmsg.NameForKey(h.key), err)}
	}
	if h.version < rng.min || h.version > rng.max {
		if h.key == int16(kmsg.ApiVersions) {
			// KIP-511: an ApiVersions version the broker does not know is answered in the v0 format with
			// UNSUPPORTED_VERSION and the supported ApiVersions range, so that the client retries lower.
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.Version = 0
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: int16(kmsg.ApiVersions), MinVersion: rng.min, MaxVersion: rng.max}}
			b.metrics.requests.WithLabelValues("ApiVersions", kerr.UnsupportedVersion.Message).Inc()
			return appendResponse(dst, h.correlationID, resp), nil, nil
		}
		return nil, nil, &errClose{closeBadVersion, fmt.Errorf("%s v%d is not supported (v%d-v%d)", kmsg.NameForKey(h.key), h.version, rng.min, rng.max)}
	}
	req.SetVersion(h.version)
	if req.IsFlexible() {
		kmsg.SkipTags(&r) // request header v2
		if err := r.Complete(); err != nil {
			return nil, nil, &errClose{closeMalformed, fmt.Errorf("%s v%d request header tags: %w", kmsg.NameForKey(h.key), h.version, err)}
		}
	}
	if err := req.ReadFrom(r.Src); err != nil {
		return nil, nil, &errClose{closeMalformed, fmt.Errorf("%s v%d body: %w", kmsg.NameForKey(h.key), h.version, err)}
	}

	rctx := context.WithValue(ctx, requestInfoKey{}, RequestInfo{ClientID: h.clientID, ClientHost: clientHost, BrokerID: b.id})
	resp, err := b.dispatch(rctx, req)
	if err != nil {
		var ec *errClose
		if errors.As(err, &ec) {
			return nil, nil, err
		}
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, &errClose{closeHandlerFail, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(h.key), h.version, err)}
	}
	name := kmsg.NameForKey(h.key)
	if resp == nil {
		b.metrics.requests.WithLabelValues(name, "NONE").Inc()
		return nil, nil, nil
	}
	fa, _ := resp.(*fetchAnswer)
	if fa != nil {
		resp = fa.FetchResponse
	}
	b.metrics.requests.WithLabelValues(name, errorLabel(responseErrorCode(resp))).Inc()
	if resp.Key() != req.Key() || resp.GetVersion() != req.GetVersion() {
		if fa != nil {
			fa.release()
		}
		return nil, nil, &errClose{closeHandlerFail, fmt.Errorf("%s v%d: handler answered %s v%d", name, h.version, kmsg.NameForKey(resp.Key()), resp.GetVersion())}
	}
	if fa != nil && len(fa.slices) > 0 {
		if zeroCopyEncodable(fa.FetchResponse) {
			buf, splices, err := appendFetchFrame(dst, h.correlationID, fa)
			if err != nil {
				return nil, nil, &errClose{closeHandlerFail, fmt.Errorf("%s v%d: %w", name, h.version, err)}
			}
			return buf, splices, nil
		}
		if err := fa.inline(); err != nil {
			return nil, nil, &errClose{closeHandlerFail, fmt.Errorf("%s v%d: %w", name, h.version, err)}
		}
	}
	return appendResponse(dst, h.correlationID, resp), nil, nil
}

// appendResponse frames a response: size, correlation id, the response header's tag buffer for flexible
// versions (never for ApiVersions, whose response header is always v0), then the body.
func appendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	dst = append(dst[:0], 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(dst[4:], uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[:4], uint32(len(dst)-4))
	return dst
}

// dispatch runs the handler of req (KafkaApis.handle). A panic in a handler becomes an error (the
// connection closes, the broker lives on).
func (b *Broker) dispatch(ctx context.Context, req kmsg.Request) (resp kmsg.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			b.log.WithField("api", kmsg.NameForKey(req.Key())).Errorf("handler panic: %v\n%s", p, debug.Stack())
			resp, err = nil, fmt.Errorf("handler panic: %v", p)
		}
	}()
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		return b.handleApiVersions(r), nil
	case *kmsg.MetadataRequest:
		return b.handleMetadata(ctx, r), nil
	case *kmsg.ProduceRequest:
		return b.handleProduce(ctx, r)
	case *kmsg.FetchRequest:
		return b.handleFetch(ctx, r), nil
	case *kmsg.ListOffsetsRequest:
		return b.handleListOffsets(r), nil
	case *kmsg.InitProducerIDRequest:
		return b.handleInitProducerID(ctx, r), nil
	case *kmsg.CreateTopicsRequest:
		return b.handleCreateTopics(ctx, r), nil
	case *kmsg.CreatePartitionsRequest:
		return b.handleCreatePartitions(ctx, r), nil
	case *kmsg.DeleteTopicsRequest:
		return b.handleDeleteTopics(ctx, r), nil
	case *kmsg.DescribeConfigsRequest:
		return b.handleDescribeConfigs(r), nil
	case *kmsg.AlterConfigsRequest:
		return b.handleAlterConfigs(r), nil
	case *kmsg.IncrementalAlterConfigsRequest:
		return b.handleIncrementalAlterConfigs(r), nil
	case *kmsg.DescribeClusterRequest:
		return b.handleDescribeCluster(ctx, r), nil
	case *kmsg.DeleteRecordsRequest:
		return b.handleDeleteRecords(r), nil
	case *kmsg.OffsetForLeaderEpochRequest:
		return b.handleOffsetForLeaderEpoch(r), nil
	case *kmsg.ControlledShutdownRequest:
		return b.handleControlledShutdown(ctx, r), nil
	case *kmsg.LeaderAndISRRequest:
		return b.handleLeaderAndIsr(ctx, r), nil
	case *kmsg.UpdateMetadataRequest:
		return b.handleUpdateMetadata(ctx, r), nil
	case *kmsg.StopReplicaRequest:
		return b.handleStopReplica(ctx, r), nil
	case *kmsg.AlterPartitionRequest:
		return b.handleAlterPartition(ctx, r), nil
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return b.handleConsumerGroupHeartbeat(r), nil
	case *kmsg.ConsumerGroupDescribeRequest:
		return b.handleConsumerGroupDescribe(r), nil
	case *kmsg.OffsetCommitRequest:
		if r.Version == 0 {
			return b.handleOffsetCommitV0(r), nil
		}
	case *kmsg.OffsetFetchRequest:
		if r.Version == 0 {
			return b.handleOffsetFetchV0(r), nil
		}
	}
	g := b.groups.Load()
	if g == nil || !coordinator.IsGroupAPI(req.Key()) {
		return nil, &errClose{closeUnknownKey, fmt.Errorf("no handler for %s", kmsg.NameForKey(req.Key()))}
	}
	return g.h.Handle(ctx, req)
}

func errorLabel(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e := kerr.TypedErrorForCode(code); e != nil {
		return e.Message
	}
	return fmt.Sprintf("CODE_%d", code)
}

func logFields(topic string, p int32) logrus.Fields {
	return logrus.Fields{"topic": topic, "partition": p}
}
