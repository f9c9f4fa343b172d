package zkconsumer

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// zkConn is the one thin wrapper around *zk.Conn (as go-zookeeper is): one method per
// ZooKeeper request, each one round trip, counted and recorded as a timeline zk_op{op, path}.
//
// It also plays the part of ZkClient 0.3 (org.I0Itec.zkclient.ZkClient, which 0.8.2 uses), since
// ZkClient decides which reads set watches and which reads a notification costs:
//   - subscribeChildChanges(path) sends exists(watch) + getChildren(watch); subscribeDataChanges(path)
//     sends exists(watch);
//   - every later read of a subscribed path carries watch=true, re-setting a spent watch;
//   - its event thread answers each notification for a subscribed path with exists(watch) +
//     getChildren(watch) (child subscriptions) or exists(watch) + getData(watch) (data
//     subscriptions), and only then calls the listener — whose Kafka side only sets a flag.
//
// Notifications come from go-zookeeper's event callback, once per server notification (each is
// recorded as zk_watch{path, type}); the channels of the *W calls are not read. At most one watch
// per (path, kind) is outstanding, as on the server, so a read of an armed path is sent without
// the watch flag: same round trip, same server state.
//
// Every request goes through retryUntilConnected, as every ZkClient operation does: one that fails
// for want of a connection, or because the session expired, is sent again once a session is
// connected (the new one after an expiry), until it has another outcome or the connector shuts
// down.
type zkConn struct {
	conn *zk.Conn // set once after zk.Connect
	root string   // the chroot of zookeeper.connect ("" or "/path"); paths here are below it
	rec  *timeline.Recorder
	stop <-chan struct{} // closed when the connector shuts down: retries end

	reads, writes atomic.Int64

	onChildChange func(path string)               // child listener (must only set a flag)
	onDataChange  func(path string, deleted bool) // data listener (must only set a flag)

	mu           sync.Mutex
	stateChanged chan struct{} // closed (and replaced) at each session state event
	childSubs    map[string]bool
	dataSubs     map[string]bool
	armed        map[watchKey]bool
	queue        []zk.Event
	kick         chan struct{}
	closed       chan struct{}
	eventThread  sync.WaitGroup

	// testHookAfterOp runs after each operation (tests make a node vanish between two reads).
	testHookAfterOp func(op, path string)
}

type watchKind int

const (
	watchData     watchKind = iota // set by getData and exists; spent by NodeCreated/NodeDataChanged/NodeDeleted
	watchChildren                  // set by getChildren; spent by NodeChildrenChanged/NodeDeleted
)

type watchKey struct {
	path string
	kind watchKind
}

// newZKConn returns the wrapper; stop ends the retries of requests that wait for a session.
func newZKConn(root string, rec *timeline.Recorder, stop <-chan struct{}, onChild func(string), onData func(string, bool)) *zkConn {
	z := &zkConn{
		root: root, rec: rec, stop: stop, onChildChange: onChild, onDataChange: onData,
		childSubs: map[string]bool{}, dataSubs: map[string]bool{}, armed: map[watchKey]bool{},
		kick: make(chan struct{}, 1), closed: make(chan struct{}), stateChanged: make(chan struct{}),
	}
	z.eventThread.Add(1)
	go z.runEventThread()
	return z
}

func (z *zkConn) op(op, path string) { z.opResult(op, path, "") }

// opResult records a round trip whose outcome a figure needs (result: timeline.ZKOwnerConflict).
func (z *zkConn) opResult(op, path, result string) {
	if op == "read" {
		z.reads.Add(1)
	} else {
		z.writes.Add(1)
	}
	z.rec.Emit(timeline.Record{Kind: timeline.ZKOp, Op: op, Path: path, Result: result})
	if h := z.testHookAfterOp; h != nil {
		h(op, path)
	}
}

// abs is path on the server (below the chroot).
func (z *zkConn) abs(path string) string { return z.root + path }

// notify is called by go-zookeeper's event callback for a watch notification: the watches it
// spends are disarmed, the notification recorded and queued for the event thread. Never blocks.
func (z *zkConn) notify(ev zk.Event) {
	if !strings.HasPrefix(ev.Path, z.root+"/") {
		return // outside the chroot: not ours
	}
	ev.Path = strings.TrimPrefix(ev.Path, z.root)
	z.mu.Lock()
	switch ev.Type {
	case zk.EventNodeCreated, zk.EventNodeDataChanged:
		delete(z.armed, watchKey{ev.Path, watchData})
	case zk.EventNodeChildrenChanged:
		delete(z.armed, watchKey{ev.Path, watchChildren})
	case zk.EventNodeDeleted:
		delete(z.armed, watchKey{ev.Path, watchData})
		delete(z.armed, watchKey{ev.Path, watchChildren})
	}
	z.queue = append(z.queue, ev)
	z.mu.Unlock()
	z.rec.Emit(timeline.Record{Kind: timeline.ZKWatch, Path: ev.Path, Type: eventTypeName(ev.Type)})
	z.wake()
}

func (z *zkConn) wake() {
	select {
	case z.kick <- struct{}{}:
	default:
	}
}

// eventTypeName is ZooKeeper's Watcher.Event.EventType name (NodeChildrenChanged, ...).
func eventTypeName(t zk.EventType) string {
	return strings.TrimPrefix(t.String(), "Event")
}

// runEventThread is ZkClient's ZkEventThread: one notification at a time, in order.
func (z *zkConn) runEventThread() {
	defer z.eventThread.Done()
	for {
		select {
		case <-z.closed:
			return
		case <-z.kick:
		}
		for {
			z.mu.Lock()
			if len(z.queue) == 0 {
				z.mu.Unlock()
				break
			}
			ev := z.queue[0]
			z.queue = z.queue[1:]
			z.mu.Unlock()
			z.process(ev)
		}
	}
}

// process is ZkClient.processDataOrChildChange with fireChildChangedEvents / fireDataChangedEvents.
// The reads wait out a lost connection (retryUntilConnected); once the connector shuts down the
// listener is not called.
func (z *zkConn) process(ev zk.Event) {
	path := ev.Path
	z.mu.Lock()
	child, data := z.childSubs[path], z.dataSubs[path]
	z.mu.Unlock()
	if child && (ev.Type == zk.EventNodeChildrenChanged || ev.Type == zk.EventNodeCreated || ev.Type == zk.EventNodeDeleted) {
		_, err := z.exists(path)
		if err == nil {
			_, err = z.childrenMayNotExist(path)
		}
		if errors.Is(err, ErrShutdown) {
			return
		}
		z.onChildChange(path)
	}
	if data && (ev.Type == zk.EventNodeDataChanged || ev.Type == zk.EventNodeCreated || ev.Type == zk.EventNodeDeleted) {
		_, err := z.exists(path)
		deleted := false
		if err == nil {
			_, err = z.get(path)
			deleted = errors.Is(err, zk.ErrNoNode)
		}
		if errors.Is(err, ErrShutdown) {
			return
		}
		z.onDataChange(path, deleted)
	}
}

// connectionLost reports whether err is a ZooKeeper request's failure for want of a connection or
// session (ZooKeeper's CONNECTIONLOSS and SESSIONEXPIRED; a connection loss leaves it unknown
// whether the server applied the request), as opposed to the server's answer.
func connectionLost(err error) bool {
	var ne net.Error
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) || errors.As(err, &ne)
}

// request sends one request (call) with retryUntilConnected and records it: every try is a zk_op.
func (z *zkConn) request(op, path string, call func() error) error {
	last, err := z.retryUntilConnected(op, path, call)
	if last {
		z.op(op, path)
	}
	return err
}

// retryUntilConnected is ZkClient.retryUntilConnected: call (one request) is sent again, once a
// session is connected, for as long as it fails for want of a connection or session. It returns
// last=true with call's first other outcome — that try is for the caller to record — or, when the
// connector shuts down meanwhile, last=false and ErrShutdown wrapping the last failure. Each failed
// try is recorded here as a request (op, path) when it fails.
func (z *zkConn) retryUntilConnected(op, path string, call func() error) (last bool, err error) {
	for {
		err := call()
		if !connectionLost(err) {
			return true, err
		}
		z.op(op, path)
		if _, ok := z.waitSession(); !ok {
			return false, fmt.Errorf("%w: %s %s: %w", ErrShutdown, op, path, err)
		}
	}
}

// waitSession is ZkClient.waitUntilConnected: it returns once a session is connected (its id) —
// woken by the session state events (sessionStateChanged), as ZkClient by its state condition — or
// ok=false when the connector shuts down first.
func (z *zkConn) waitSession() (id int64, ok bool) {
	for {
		z.mu.Lock()
		changed := z.stateChanged
		z.mu.Unlock()
		if id := z.conn.SessionID(); id != 0 && z.conn.State() == zk.StateHasSession {
			return id, true
		}
		select {
		case <-changed:
		case <-z.stop:
			return 0, false
		case <-z.closed:
			return 0, false
		}
	}
}

// sessionStateChanged is called by go-zookeeper's event callback for each session event, once the
// connection's state (and, with a session, its id) is set: it wakes the requests waiting for a
// session. Never blocks.
func (z *zkConn) sessionStateChanged() {
	z.mu.Lock()
	close(z.stateChanged)
	z.stateChanged = make(chan struct{})
	z.mu.Unlock()
}

// fireAll is ZkClient.fireAllEvents after a new session: every subscription re-reads its path
// (re-setting the watches the expired session lost) and calls its listener. These are not
// notifications: no zk_watch is recorded.
func (z *zkConn) fireAll() {
	z.mu.Lock()
	for p := range z.childSubs {
		z.queue = append(z.queue, zk.Event{Type: zk.EventNodeChildrenChanged, Path: p})
	}
	for p := range z.dataSubs {
		z.queue = append(z.queue, zk.Event{Type: zk.EventNodeDataChanged, Path: p})
	}
	z.mu.Unlock()
	z.wake()
}

// resetWatches forgets every armed watch: the expired session's watches are gone on the server.
func (z *zkConn) resetWatches() {
	z.mu.Lock()
	z.armed = map[watchKey]bool{}
	z.mu.Unlock()
}

// subscribeChildChanges is ZkClient.subscribeChildChanges → watchForChilds: exists(watch) +
// getChildren(watch) (a missing path is fine: the exists watch sees it appear).
func (z *zkConn) subscribeChildChanges(path string) error {
	z.mu.Lock()
	z.childSubs[path] = true
	z.mu.Unlock()
	if _, err := z.exists(path); err != nil {
		return err
	}
	_, err := z.childrenMayNotExist(path)
	return err
}

// subscribeDataChanges is ZkClient.subscribeDataChanges → watchForData: exists(watch).
func (z *zkConn) subscribeDataChanges(path string) error {
	z.mu.Lock()
	z.dataSubs[path] = true
	z.mu.Unlock()
	_, err := z.exists(path)
	return err
}

// takeWatch reports whether a read of path should carry the watch flag: the path is subscribed
// (ZkClient.hasListeners) and its watch of this kind is spent. It marks the watch armed; the caller
// drops the mark when no watch resulted.
func (z *zkConn) takeWatch(path string, kind watchKind) bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	k := watchKey{path, kind}
	if !(z.childSubs[path] || z.dataSubs[path]) || z.armed[k] {
		return false
	}
	z.armed[k] = true
	return true
}

func (z *zkConn) dropWatch(path string, kind watchKind) {
	z.mu.Lock()
	delete(z.armed, watchKey{path, kind})
	z.mu.Unlock()
}

// exists is one exists request (with the watch flag per takeWatch; it watches a missing node too).
func (z *zkConn) exists(path string) (bool, error) {
	var ok bool
	err := z.request("read", path, func() (err error) {
		if z.takeWatch(path, watchData) {
			ok, _, _, err = z.conn.ExistsW(z.abs(path))
			if err != nil {
				z.dropWatch(path, watchData)
			}
		} else {
			ok, _, err = z.conn.Exists(z.abs(path))
		}
		return err
	})
	return ok, err
}

// children is one getChildren request. zk.ErrNoNode when path is absent (no watch is then set).
func (z *zkConn) children(path string) ([]string, error) {
	var kids []string
	err := z.request("read", path, func() (err error) {
		if z.takeWatch(path, watchChildren) {
			kids, _, _, err = z.conn.ChildrenW(z.abs(path))
			if err != nil {
				z.dropWatch(path, watchChildren)
			}
		} else {
			kids, _, err = z.conn.Children(z.abs(path))
		}
		return err
	})
	return kids, err
}

// childrenMayNotExist is ZkUtils.getChildrenParentMayNotExist: a missing path has no children.
func (z *zkConn) childrenMayNotExist(path string) ([]string, error) {
	kids, err := z.children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return kids, err
}

// get is one getData request. zk.ErrNoNode when path is absent (no watch is then set).
func (z *zkConn) get(path string) ([]byte, error) {
	data, _, err := z.getStat(path)
	return data, err
}

// getStat is get with the node's Stat (its ephemeralOwner: the session that owns an ephemeral node).
func (z *zkConn) getStat(path string) ([]byte, *zk.Stat, error) {
	var data []byte
	var st *zk.Stat
	err := z.request("read", path, func() (err error) {
		if z.takeWatch(path, watchData) {
			data, st, _, err = z.conn.GetW(z.abs(path))
			if err != nil {
				z.dropWatch(path, watchData)
			}
		} else {
			data, st, err = z.conn.Get(z.abs(path))
		}
		return err
	})
	return data, st, err
}

// getMaybeNull is ZkUtils.readDataMaybeNull: ok=false and no error when the node is absent.
func (z *zkConn) getMaybeNull(path string) (data []byte, ok bool, err error) {
	data, err = z.get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// create creates path (ephemeral when flags says so) with an open ACL.
// Sent again after a connection loss, it may meet the node it created itself: zk.ErrNodeExists.
func (z *zkConn) create(path string, data []byte, flags int32) error {
	return z.request("write", path, func() error {
		_, err := z.conn.Create(z.abs(path), data, flags, zk.WorldACL(zk.PermAll))
		return err
	})
}

// createOwner is the create of ZkUtils.createEphemeralPathExpectConflict for an owner znode: path
// ephemeral with data thread (missing parents created persistent). Every try is recorded, except,
// when the answer is NodeExists, the last one: whether the node is ours (the create sent again after
// a connection loss, meeting its own node) or another thread's is known only after the read-back, and
// the caller records the write with that outcome (recordOwnerWrite), after the read, for the
// ownership_conflicts figure. Errors: zk.ErrNodeExists; createParents' error; ErrShutdown; others
// wrapped as "claiming <path>: ...".
func (z *zkConn) createOwner(path, thread string) error {
	last := false // the create's last try is to be recorded here (false: shut down, all recorded)
	create := func() (err error) {
		last, err = z.retryUntilConnected("write", path, func() error {
			_, err := z.conn.Create(z.abs(path), []byte(thread), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
			return err
		})
		return err
	}
	err := create()
	if errors.Is(err, zk.ErrNoNode) { // owners/<topic> does not exist yet
		z.op("write", path)
		if err = z.createParents(path); err != nil {
			return err
		}
		err = create()
	}
	switch {
	case err == nil:
		z.op("write", path)
		return nil
	case errors.Is(err, zk.ErrNodeExists):
		return err // recorded by the caller, once the read-back decided
	default:
		if last {
			z.op("write", path)
		}
		return fmt.Errorf("claiming %s: %w", path, err)
	}
}

// recordOwnerWrite records the create of createOwner that met NodeExists, with result
// timeline.ZKOwnerConflict when another thread owns the node ("" when it is ours, or unknown).
func (z *zkConn) recordOwnerWrite(path, result string) { z.opResult("write", path, result) }

// createEphemeralChecked is 0.9's ZKCheckedEphemeral.create (KAFKA-1387), over ZkClient's
// retries: create path ephemeral (missing parents persistent); on NodeExists read the node, and a
// node whose ephemeralOwner is the current session is ours — created by this very request before a
// connection loss, or in this session by an earlier registration — and counts as created; a node
// that vanished meanwhile is created again. It returns the session that owns the node. Errors:
// zk.ErrNodeExists when another session owns it (owner says which); ErrShutdown; the server's
// other errors.
//
// Which session ran a create that succeeded is known when the session was the same before and
// after it; if the session changed while the request waited for a connection, the node's Stat says.
func (z *zkConn) createEphemeralChecked(path string, data []byte) (owner int64, err error) {
	for {
		before, ok := z.waitSession()
		if !ok {
			return 0, ErrShutdown
		}
		err := z.createWithParents(path, data, zk.FlagEphemeral)
		if err == nil && z.conn.SessionID() == before {
			return before, nil
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return 0, err
		}
		_, st, err := z.getStat(path)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone while we looked (an expired session's node): create it again
		}
		if err != nil {
			return 0, err
		}
		if st.EphemeralOwner == 0 || st.EphemeralOwner != z.conn.SessionID() {
			return st.EphemeralOwner, zk.ErrNodeExists // 0: a persistent node
		}
		return st.EphemeralOwner, nil
	}
}

// createParents is ZkClient.createPersistent(parent, createParents = true) for path's parent:
// existing levels are fine, missing ones are created top-down (one create per level tried).
func (z *zkConn) createParents(path string) error {
	parent := path[:strings.LastIndex(path, "/")]
	if parent == "" {
		return nil
	}
	err := z.create(parent, nil, 0)
	if errors.Is(err, zk.ErrNoNode) {
		if err = z.createParents(parent); err != nil {
			return err
		}
		err = z.create(parent, nil, 0)
	}
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

// createWithParents creates path, creating missing parents on NoNode (ZkUtils.createEphemeralPath
// and createPersistentPath).
func (z *zkConn) createWithParents(path string, data []byte, flags int32) error {
	err := z.create(path, data, flags)
	if errors.Is(err, zk.ErrNoNode) {
		if err = z.createParents(path); err != nil {
			return err
		}
		err = z.create(path, data, flags)
	}
	return err
}

// makeSurePersistentPathExists is ZkUtils.makeSurePersistentPathExists: exists, create if not.
func (z *zkConn) makeSurePersistentPathExists(path string) error {
	ok, err := z.exists(path)
	if err != nil || ok {
		return err
	}
	if err := z.createWithParents(path, nil, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	return nil
}

// set overwrites path's data (any version).
func (z *zkConn) set(path string, data []byte) error {
	return z.request("write", path, func() error {
		_, err := z.conn.Set(z.abs(path), data, -1)
		return err
	})
}

// updatePersistent is ZkUtils.updatePersistentPath: set; on NoNode create (with parents); on a
// racing create, set again.
func (z *zkConn) updatePersistent(path string, data []byte) error {
	err := z.set(path, data)
	if !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	err = z.createWithParents(path, data, 0)
	if errors.Is(err, zk.ErrNodeExists) {
		err = z.set(path, data)
	}
	return err
}

// delete is ZkUtils.deletePath: a node already gone is fine (also after a delete sent again after a
// connection loss).
func (z *zkConn) delete(path string) error {
	err := z.request("write", path, func() error { return z.conn.Delete(z.abs(path), -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// close ends the event thread, then the session (its ephemeral nodes go with it). The event thread
// goes first — its request in flight, if any, ends (a lost connection's wait ends with closed) —
// so that no request is queued while the connection closes: go-zookeeper can then answer a
// request twice, and its connection goroutine blocks for good on the second answer.
func (z *zkConn) close() {
	z.mu.Lock()
	select {
	case <-z.closed:
	default:
		close(z.closed)
	}
	z.mu.Unlock()
	z.eventThread.Wait()
	if z.conn != nil {
		z.conn.Close()
	}
}
