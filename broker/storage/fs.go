package storage

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// File is the part of *os.File the log uses. Every file the log writes is opened
// with os.O_APPEND: Write always appends at the current end, ReadAt reads at any
// position, Truncate cuts the file to size bytes, Sync makes the content durable.
type File interface {
	io.ReaderAt
	io.Writer
	Sync() error
	Truncate(size int64) error
	Close() error
	// Size returns the current length of the file in bytes.
	Size() (int64, error)
}

// FS is the file system the log lives on: OS in production, a crash-simulating
// file system in tests. Names are full paths (filepath.Join(dir, base)).
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	Rename(a, b string) error
	MkdirAll(dir string, perm os.FileMode) error
	// ReadDir returns the base names of the entries of dir, in any order.
	ReadDir(dir string) ([]string, error)
}

// DirSyncer is implemented by an FS that can make a directory's entries durable
// (fsync of the directory on POSIX). When the FS implements it, the log calls it
// after creating, renaming or removing files, so that a new segment that holds
// fsynced records is itself still there after a power loss. OS implements it.
type DirSyncer interface {
	SyncDir(dir string) error
}

// OS is the real file system (package os).
var OS FS = osFS{}

type osFS struct{}

type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // a nil File, not a File holding a nil *os.File
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) Rename(a, b string) error                    { return os.Rename(a, b) }
func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

func (osFS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes dir's entries durable when fs can.
func syncDir(fs FS, dir string) error {
	if ds, ok := fs.(DirSyncer); ok {
		return ds.SyncDir(dir)
	}
	return nil
}

// writeCheckpoint replaces dir/name with data atomically and durably, as Kafka's CheckpointFile.write
// does: write name.tmp, fsync it, rename it over name, fsync the directory. A crash leaves the old
// file or the new one, never a torn one.
func writeCheckpoint(fs FS, dir, name string, data []byte) error {
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	f, err := fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("storage: write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(fs, dir)
	}
	if err != nil {
		return fmt.Errorf("storage: write %s: %w", path, err)
	}
	return nil
}
