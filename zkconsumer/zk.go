package zkconsumer

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// zkConn is the one thin wrapper around *zk.Conn (STYLE.md, go-zookeeper): one method per
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
type zkConn struct {
	conn *zk.Conn // set once after zk.Connect
	root string   // the chroot of zookeeper.connect ("" or "/path"); paths here are below it
	rec  *timeline.Recorder

	reads, writes atomic.Int64

	onChildChange func(path string)               // child listener (must only set a flag)
	onDataChange  func(path string, deleted bool) // data listener (must only set a flag)

	mu          sync.Mutex
	childSubs   map[string]bool
	dataSubs    map[string]bool
	armed       map[watchKey]bool
	queue       []zk.Event
	kick        chan struct{}
	closed      chan struct{}
	eventThread sync.WaitGroup

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

func newZKConn(root string, rec *timeline.Recorder, onChild func(string), onData func(string, bool)) *zkConn {
	z := &zkConn{
		root: root, rec: rec, onChildChange: onChild, onDataChange: onData,
		childSubs: map[string]bool{}, dataSubs: map[string]bool{}, armed: map[watchKey]bool{},
		kick: make(chan struct{}, 1), closed: make(chan struct{}),
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
func (z *zkConn) process(ev zk.Event) {
	path := ev.Path
	z.mu.Lock()
	child, data := z.childSubs[path], z.dataSubs[path]
	z.mu.Unlock()
	if child && (ev.Type == zk.EventNodeChildrenChanged || ev.Type == zk.EventNodeCreated || ev.Type == zk.EventNodeDeleted) {
		z.retry(func() error { _, err := z.exists(path); return err })
		z.retry(func() error { _, err := z.childrenMayNotExist(path); return err })
		z.onChildChange(path)
	}
	if data && (ev.Type == zk.EventNodeDataChanged || ev.Type == zk.EventNodeCreated || ev.Type == zk.EventNodeDeleted) {
		z.retry(func() error { _, err := z.exists(path); return err })
		deleted := false
		z.retry(func() error {
			_, err := z.get(path)
			deleted = errors.Is(err, zk.ErrNoNode)
			if deleted {
				return nil
			}
			return err
		})
		z.onDataChange(path, deleted)
	}
}

// retry is ZkClient.retryUntilConnected for the event thread: a request that failed for want of a
// connection is sent again (every 100 ms) until it goes through or the connection is closed.
func (z *zkConn) retry(f func() error) {
	for {
		err := f()
		if !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer) {
			return
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-z.closed:
			return
		}
	}
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
	var err error
	if z.takeWatch(path, watchData) {
		ok, _, _, err = z.conn.ExistsW(z.abs(path))
		if err != nil {
			z.dropWatch(path, watchData)
		}
	} else {
		ok, _, err = z.conn.Exists(z.abs(path))
	}
	z.op("read", path)
	return ok, err
}

// children is one getChildren request. zk.ErrNoNode when path is absent (no watch is then set).
func (z *zkConn) children(path string) ([]string, error) {
	var kids []string
	var err error
	if z.takeWatch(path, watchChildren) {
		kids, _, _, err = z.conn.ChildrenW(z.abs(path))
		if err != nil {
			z.dropWatch(path, watchChildren)
		}
	} else {
		kids, _, err = z.conn.Children(z.abs(path))
	}
	z.op("read", path)
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
	var data []byte
	var err error
	if z.takeWatch(path, watchData) {
		data, _, _, err = z.conn.GetW(z.abs(path))
		if err != nil {
			z.dropWatch(path, watchData)
		}
	} else {
		data, _, err = z.conn.Get(z.abs(path))
	}
	z.op("read", path)
	return data, err
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
func (z *zkConn) create(path string, data []byte, flags int32) error {
	_, err := z.conn.Create(z.abs(path), data, flags, zk.WorldACL(zk.PermAll))
	z.op("write", path)
	return err
}

// claimOwner claims an owner znode for thread (ZkUtils.createEphemeralPathExpectConflict): create
// it ephemeral; on NodeExists read it, and it is ours only if it names our thread. The create's
// write is recorded once the outcome is known, with result timeline.ZKOwnerConflict when another
// thread owns the node (the ownership_conflicts figure), so it follows the read in the timeline.
func (z *zkConn) claimOwner(path, thread string) (claimOutcome, error) {
	create := func() error {
		_, err := z.conn.Create(z.abs(path), []byte(thread), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		return err
	}
	err := create()
	if errors.Is(err, zk.ErrNoNode) { // owners/<topic> does not exist yet
		z.op("write", path)
		if err = z.createParents(path); err != nil {
			return conflict, err
		}
		err = create()
	}
	switch {
	case err == nil:
		z.op("write", path)
		return claimed, nil
	case errors.Is(err, zk.ErrNodeExists):
		stored, exists, rerr := z.getMaybeNull(path)
		if rerr != nil {
			z.op("write", path)
			return conflict, rerr
		}
		if !exists {
			stored = nil // deleted between our create and our read: still a failed claim
		}
		o := decideClaim(thread, false, stored)
		result := ""
		if o == conflict {
			result = timeline.ZKOwnerConflict
		}
		z.opResult("write", path, result)
		if o == conflict {
			return conflict, fmt.Errorf("%s is owned by %q", path, stored)
		}
		return claimed, nil
	default:
		z.op("write", path)
		return conflict, fmt.Errorf("claiming %s: %w", path, err)
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
	_, err := z.conn.Set(z.abs(path), data, -1)
	z.op("write", path)
	return err
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

// delete is ZkUtils.deletePath: a node already gone is fine.
func (z *zkConn) delete(path string) error {
	err := z.conn.Delete(z.abs(path), -1)
	z.op("write", path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// close ends the session (its ephemeral nodes go with it) and the event thread.
func (z *zkConn) close() {
	if z.conn != nil {
		z.conn.Close()
	}
	z.mu.Lock()
	select {
	case <-z.closed:
	default:
		close(z.closed)
	}
	z.mu.Unlock()
	z.eventThread.Wait()
}
