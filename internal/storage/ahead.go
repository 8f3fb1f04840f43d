package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/evpack/evpack/internal/fsutil"
)

// Ahead is a data file written before the commit that names it: a temp
// file, synced, that a later commit renames into place (Commit.Adopt) or
// that is discarded. A checkpoint costs seconds to write at a million
// chunks; written ahead, on a spare core while commits go on, the commit
// that names it pays a rename.
//
// Until adopted it is a temp file (fsutil.IsTemp): a crash leaves it for
// Open to remove, as it removes any write's, and Strays does not list it
// while it is this process's.
type Ahead struct {
	d    *Dir
	name string // the path it will have, relative to the index directory
	tmp  string // its temp file's path, once written
}

// aheads are the files being written ahead, or written and not yet
// adopted or discarded: their names (relative to the index directory)
// and, once written, their temp files'.
type aheads struct {
	mu   sync.Mutex
	list []*Ahead
}

func (a *aheads) add(x *Ahead) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = append(a.list, x)
}

// remove takes x off the list; false when it was not on it.
func (a *aheads) remove(x *Ahead) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.list)
	a.list = slices.DeleteFunc(a.list, func(y *Ahead) bool { return y == x })
	return len(a.list) < n
}

// holds reports whether file (relative to the index directory) is a temp
// file of one being written ahead: registered before its temp file is
// created, so that Strays never lists it, however the two interleave.
func (a *aheads) holds(file string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.ContainsFunc(a.list, func(x *Ahead) bool { return fsutil.IsTempOf(file, x.name) })
}

// WriteAhead writes file name (a path relative to the index directory) as
// the slices of parts one after the other, for a later commit to adopt. It
// is safe beside a commit: it touches no file a commit names. Once stop
// (nil: never) says true, it gives up with fsutil.ErrStopped, leaving no
// file.
func (d *Dir) WriteAhead(name string, stop func() bool, parts ...[]byte) (*Ahead, error) {
	if !ownFile(name) {
		return nil, fmt.Errorf("evpack: write ahead: %q is no data file of an index", name)
	}
	a := &Ahead{d: d, name: name}
	d.ahead.add(a)
	tmp, err := fsutil.WriteTemp(filepath.Join(d.path, name), stop, parts...)
	if err != nil {
		d.ahead.remove(a)
		return nil, fmt.Errorf("evpack: write ahead: %w", err)
	}
	a.tmp = tmp
	return a, nil
}

// Name returns the path the file will have once adopted.
func (a *Ahead) Name() string { return a.name }

// Open opens the written file for reading, by its temp file's name: only
// before it is adopted or discarded (the writer of a checkpoint ahead
// reads it back before handing it over).
func (a *Ahead) Open() (*os.File, error) { return os.Open(a.tmp) }

// Discard removes the file. Discarding one adopted or discarded already,
// or nil, does nothing.
func (a *Ahead) Discard() error {
	if a == nil || !a.d.ahead.remove(a) {
		return nil
	}
	if err := os.Remove(a.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("evpack: discard %s: %w", a.tmp, err)
	}
	return nil
}

// Adopt makes a, written ahead, the file a.Name() of c, which Begin must
// have announced: a rename, made durable by c's Prepare. Once called, a is
// c's file whatever the outcome: on error, or when c is aborted, it is
// removed as c removes what it wrote.
func (c *Commit) Adopt(a *Ahead) error {
	if c.done || !slices.Contains(c.p.Writes, a.name) {
		return fmt.Errorf("evpack: commit: %s was not announced", a.name)
	}
	if a.d != c.d || !c.d.ahead.remove(a) {
		return fmt.Errorf("evpack: commit: %s was not written ahead in this index, or was adopted or discarded already", a.name)
	}
	if err := fsutil.Rename(a.tmp, filepath.Join(c.d.path, a.name), c.d.Hooks.BeforeRename); err != nil {
		return fmt.Errorf("evpack: commit: %w", err)
	}
	c.unsynced = append(c.unsynced, a.name)
	return nil
}
