package storage

import (
	"bytes"
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
)

// memFS is an in-memory FS that simulates what survives a power loss.
// Each file (node) has the bytes readers see and the bytes last fsynced; the
// directory namespace likewise has a live and a durable (last SyncDir) view.
// crash() throws away everything not synced: files created or renamed since
// the last SyncDir of their directory vanish, removed ones come back, and each
// file keeps only its synced bytes (plus, if keep says so, a prefix of the
// unsynced tail — a torn write).
type memFS struct {
	mu      sync.Mutex
	dirs    map[string]bool
	live    map[string]*memNode
	durable map[string]*memNode
	// writeHook may fail a write: it returns how many bytes of p to write and
	// the error to return with them.
	writeHook func(name string, p []byte) (int, error)
	// syncHook may fail a file Sync.
	syncHook func(name string) error
	// opHook may fail OpenFile, Remove, Rename and SyncDir ("open", "remove",
	// "rename", "syncdir") before they take effect.
	opHook func(op, name string) error
	syncs  map[string]int // successful Syncs by file name
}

type memNode struct {
	data   []byte // what reads see
	synced []byte // what a crash leaves
}

type memFile struct {
	fs       *memFS
	name     string
	node     *memNode
	writable bool
	closed   bool
}

func newMemFS() *memFS {
	return &memFS{dirs: map[string]bool{"/": true, ".": true}, live: map[string]*memNode{}, durable: map[string]*memNode{}, syncs: map[string]int{}}
}

func pathErr(op, name string, err error) error { return &os.PathError{Op: op, Path: name, Err: err} }

func (m *memFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opHook != nil {
		if err := m.opHook("open", name); err != nil {
			return nil, err
		}
	}
	if !m.dirs[filepath.Dir(name)] {
		return nil, pathErr("open", name, iofs.ErrNotExist)
	}
	n := m.live[name]
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, iofs.ErrNotExist)
	case n == nil:
		n = &memNode{}
		m.live[name] = n
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, pathErr("open", name, iofs.ErrExist)
	}
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if flag&os.O_TRUNC != 0 && writable {
		n.data = nil
	}
	return &memFile{fs: m, name: name, node: n, writable: writable}, nil
}

func (m *memFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opHook != nil {
		if err := m.opHook("remove", name); err != nil {
			return err
		}
	}
	if m.live[name] == nil {
		return pathErr("remove", name, iofs.ErrNotExist)
	}
	delete(m.live, name)
	return nil
}

func (m *memFS) Rename(a, b string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opHook != nil {
		if err := m.opHook("rename", a); err != nil {
			return err
		}
	}
	n := m.live[a]
	if n == nil {
		return pathErr("rename", a, iofs.ErrNotExist)
	}
	if !m.dirs[filepath.Dir(b)] {
		return pathErr("rename", b, iofs.ErrNotExist)
	}
	delete(m.live, a)
	m.live[b] = n
	return nil
}

func (m *memFS) MkdirAll(dir string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := filepath.Clean(dir); !m.dirs[d]; d = filepath.Dir(d) {
		m.dirs[d] = true // directories themselves are durable at once
	}
	return nil
}

func (m *memFS) ReadDir(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[filepath.Clean(dir)] {
		return nil, pathErr("readdir", dir, iofs.ErrNotExist)
	}
	var names []string
	for name := range m.live {
		if filepath.Dir(name) == filepath.Clean(dir) {
			names = append(names, filepath.Base(name))
		}
	}
	sort.Strings(names)
	return names, nil
}

func (m *memFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opHook != nil {
		if err := m.opHook("syncdir", dir); err != nil {
			return err
		}
	}
	dir = filepath.Clean(dir)
	for name := range m.durable {
		if filepath.Dir(name) == dir {
			delete(m.durable, name)
		}
	}
	for name, n := range m.live {
		if filepath.Dir(name) == dir {
			m.durable[name] = n
		}
	}
	return nil
}

// crash simulates a power loss; keep (nil = keep nothing) says how many of a
// file's unsynced tail bytes made it to disk anyway.
func (m *memFS) crash(keep func(name string, unsynced []byte) int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live = map[string]*memNode{}
	for name, n := range m.durable {
		m.live[name] = n
		data := slices.Clone(n.synced)
		if keep != nil && bytes.HasPrefix(n.data, n.synced) {
			tail := n.data[len(n.synced):]
			data = append(data, tail[:keep(name, tail)]...)
		}
		n.data, n.synced = data, slices.Clone(data)
	}
}

// clone returns an independent copy (same crash state) with no hooks.
func (m *memFS) clone() *memFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := newMemFS()
	for d := range m.dirs {
		c.dirs[d] = true
	}
	nodes := map[*memNode]*memNode{}
	cp := func(n *memNode) *memNode {
		if nodes[n] == nil {
			nodes[n] = &memNode{data: slices.Clone(n.data), synced: slices.Clone(n.synced)}
		}
		return nodes[n]
	}
	for name, n := range m.live {
		c.live[name] = cp(n)
	}
	for name, n := range m.durable {
		c.durable[name] = cp(n)
	}
	return c
}

// mutate changes a file's bytes as if on disk (synced).
func (m *memFS) mutate(name string, f func([]byte) []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.live[name]
	if n == nil {
		panic("mutate: no file " + name)
	}
	n.data = f(slices.Clone(n.data))
	n.synced = slices.Clone(n.data)
}

// files returns every live file's content.
func (m *memFS) files() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for name, n := range m.live {
		out[name] = string(n.data)
	}
	return out
}

func (m *memFS) content(name string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.live[name]; n != nil {
		return slices.Clone(n.data)
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0, os.ErrClosed
	}
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0, os.ErrClosed
	}
	if !f.writable {
		return 0, pathErr("write", f.name, errors.New("file not open for writing"))
	}
	n, err := len(p), error(nil)
	if f.fs.writeHook != nil {
		n, err = f.fs.writeHook(f.name, p)
	}
	f.node.data = append(f.node.data, p[:n]...) // every write appends (O_APPEND)
	return n, err
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return os.ErrClosed
	}
	if f.fs.syncHook != nil {
		if err := f.fs.syncHook(f.name); err != nil {
			return err
		}
	}
	f.node.synced = slices.Clone(f.node.data)
	f.fs.syncs[f.name]++
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return os.ErrClosed
	}
	if size < 0 {
		return errors.New("negative size")
	}
	if size <= int64(len(f.node.data)) {
		f.node.data = slices.Clone(f.node.data[:size])
	} else {
		f.node.data = append(f.node.data, make([]byte, size-int64(len(f.node.data)))...)
	}
	return nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return os.ErrClosed
	}
	f.closed = true
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0, os.ErrClosed
	}
	return int64(len(f.node.data)), nil
}
