package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
)

// DefaultLockWait is how long Open waits for another holder of the index
// to let go when Options.LockWait is 0.
const DefaultLockWait = 2 * time.Second

// Options configure Open.
type Options struct {
	// Create makes a new index when the directory is missing or empty.
	// Without it such a directory is ErrNotIndex.
	Create bool
	// LockWait bounds the wait for the lock: 0 means DefaultLockWait, a
	// negative value means do not wait.
	LockWait time.Duration
}

// Hooks let tests stop a commit at a chosen point. Each runs, when set, at
// the point its name says; an error it returns fails the commit there, as a
// crash or a full disk would.
type Hooks struct {
	// BeforeManifest runs after the batch reached the lexical index, every
	// data file was written and the manifest was staged (Prepare), just
	// before its rename names them: the window a rollback must close.
	BeforeManifest func() error
	// AfterManifest runs once the manifest is written, before the commit's
	// record (PENDING.json) and the files it made obsolete are removed. The
	// generation is committed by then, so nothing can fail it: a test stops
	// the goroutine here (runtime.Goexit) to play a crash whose record the
	// next Open must tidy up, not roll back.
	AfterManifest func()
	// BeforeRename runs in every data file's atomic write, once the temp
	// file (named tmp) is written and synced, before its rename: where a
	// kill -9 leaves a temp file that holds the batch's text.
	BeforeRename func(tmp string) error
	// BeforeSyncDir runs before each fsync of a directory (its path) that
	// a commit makes, or the tidying up after one: a test sees their order
	// against the files, or fails one as a disk would (an error it returns
	// is that fsync's).
	BeforeSyncDir func(dir string) error
}

// Dir is an open, locked index directory. Its commits must be serialized
// (the engine does); the reads of the manifest (Manifest, ReadBatch,
// OpenData, ReadFile) are safe beside them: each reads the manifest
// committed when it starts.
type Dir struct {
	path    string
	lock    *os.File
	cur     atomic.Pointer[Manifest] // never changed once stored
	pending *pending
	ahead   aheads // files written ahead of their commit (WriteAhead)
	// Hooks are for tests; the zero value does nothing.
	Hooks Hooks
}

// pending is PENDING.json: what a commit in progress writes and what it will
// make obsolete. Its presence after a crash is the only evidence on which
// Open deletes anything.
type pending struct {
	Format     string   `json:"format"`
	Generation int64    `json:"generation"`
	Writes     []string `json:"writes"`   // files the commit creates
	Obsolete   []string `json:"obsolete"` // files it removes once published
}

// Exists reports whether dir holds an evpack index (a manifest).
func Exists(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ManifestName))
	return err == nil
}

// Open locks the index in path and reads its manifest. With opts.Create, a
// missing or empty directory becomes a new index (generation 0). A non-empty
// directory without a manifest is ErrNotIndex, or ErrCorrupt when it holds an
// index's files (its manifest was lost): nothing is written to either.
func Open(path string, opts Options) (*Dir, error) {
	wait := opts.LockWait
	if wait == 0 {
		wait = DefaultLockWait
	}
	wait = max(wait, 0)
	fresh, err := inspect(path, opts.Create)
	if err != nil && !(errors.Is(err, errEmpty) && lockHeld(path)) {
		return nil, err
	}
	if fresh {
		if err := mkdirDurable(path); err != nil {
			return nil, fmt.Errorf("evpack: create %s: %w", path, err)
		}
	}
	lock, err := lockFile(filepath.Join(path, LockName), wait)
	if err != nil {
		return nil, err
	}
	d := &Dir{path: path, lock: lock}
	fail := func(err error) (*Dir, error) {
		releaseLock(lock)
		return nil, err
	}
	// Look again under the lock: another process may have created the
	// index, or removed it, since inspect.
	if fresh, err = inspect(path, opts.Create); err != nil {
		return fail(err)
	}
	if fresh {
		fsutil.RemoveTemps(path) // an interrupted creation's manifest temp file
		d.cur.Store(&Manifest{Format: Format})
		if err := os.MkdirAll(filepath.Join(path, ChunksDir), 0o755); err != nil {
			return fail(fmt.Errorf("evpack: create %s: %w", path, err))
		}
		if err := d.writeManifest(d.cur.Load()); err != nil {
			return fail(err)
		}
		return d, nil
	}
	name := filepath.Join(path, ManifestName)
	raw, err := os.ReadFile(name)
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrCorrupt, err))
	}
	m, err := DecodeManifest(name, raw, func(file string) ([]byte, error) { return os.ReadFile(filepath.Join(path, file)) })
	if err != nil {
		return fail(err)
	}
	d.cur.Store(m)
	if d.pending, err = d.readPending(); err != nil {
		return fail(err)
	}
	// A temp file of an atomic write that a crash interrupted is never
	// committed data, and may hold a batch's text (a chunk purged since):
	// remove it. Best effort: Check reports one that is left.
	for _, sub := range []string{".", ChunksDir} {
		fsutil.RemoveTemps(filepath.Join(path, sub))
	}
	return d, nil
}

// mkdirDurable makes directory path and any missing parents, then fsyncs
// the parent of each directory it made, so that the new index's entry
// survives a power cut (a manifest in a directory whose own entry was lost
// would be lost with it).
func mkdirDurable(path string) error {
	path = filepath.Clean(path)
	var made []string
	for p := path; ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil || filepath.Dir(p) == p {
			break
		}
		made = append(made, p)
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return err
	}
	for _, p := range made {
		if err := fsutil.SyncDir(filepath.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}

// inspect decides whether path is a new index to create (true), an existing
// index (false, nil), or neither (an error). Only the lock file and the
// temporary files of an interrupted manifest write, and the empty chunks
// directory of an interrupted creation, may precede a manifest.
func inspect(path string, create bool) (bool, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !create {
			return false, fmt.Errorf("%w: %s does not exist", ErrNotIndex, path)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("evpack: open %s: %w", path, err)
	case !fi.IsDir():
		return false, fmt.Errorf("%w: %s is not a directory", ErrNotIndex, path)
	}
	if Exists(path) {
		return false, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return false, fmt.Errorf("evpack: open %s: %w", path, err)
	}
	var ours, foreign []string
	for _, e := range entries {
		n := e.Name()
		switch {
		case n == LockName || strings.HasPrefix(n, "."+ManifestName+".tmp-"):
		case n == ChunksDir && emptyDir(filepath.Join(path, n)):
			// Creating an index makes chunks/ before the manifest: a crash
			// in between leaves it empty, and nothing was committed.
		case n == ChunksDir || n == LexicalDir || n == PendingName || strings.HasPrefix(n, "dense-") || strings.HasPrefix(n, "graph-") || strings.HasPrefix(n, "state-") || strings.HasPrefix(n, "delta-") || strings.HasPrefix(n, "batches-"):
			ours = append(ours, n)
		default:
			foreign = append(foreign, n)
		}
	}
	switch {
	case len(ours) > 0:
		return false, fmt.Errorf("%w: %s: %s is missing but the directory holds an index's files (%s); nothing was changed",
			ErrCorrupt, path, ManifestName, strings.Join(ours, ", "))
	case len(foreign) > 0:
		return false, fmt.Errorf("%w: %s is not empty and has no %s (it holds %s); refusing to write into it",
			ErrNotIndex, path, ManifestName, strings.Join(foreign[:min(3, len(foreign))], ", "))
	case !create:
		return false, fmt.Errorf("%w: %s is empty", errEmpty, path)
	}
	return true, nil
}

// errEmpty is inspect's ErrNotIndex for a directory that holds nothing
// but what creating an index makes first (its lock, an empty chunks/):
// where a process holds that lock, it is creating the index, and Open
// waits for it as for any holder (ErrLocked), then looks again.
var errEmpty = fmt.Errorf("%w", ErrNotIndex)

// lockHeld reports whether path's lock file exists and another open of
// it holds its lock now (the lock is not taken; the file is not changed).
func lockHeld(path string) bool {
	f, err := os.Open(filepath.Join(path, LockName))
	if err != nil {
		return false
	}
	defer f.Close()
	held, err := tryLock(f)
	if err == nil && !held {
		unlock(f)
	}
	return err == nil && held
}

// emptyDir reports whether path is a directory with nothing in it.
func emptyDir(path string) bool {
	entries, err := os.ReadDir(path)
	return err == nil && len(entries) == 0
}

// Path returns the index directory.
func (d *Dir) Path() string { return d.path }

// Manifest returns the committed manifest, shared with every other caller:
// it must not be changed (Clone it first). A commit publishes a new one and
// leaves this one as it is.
//
// Why not a copy: a copy holds every generation's entry, and a commit asked
// for the manifest several times, copying the history each time.
//
// A nil Dir (an index in memory) has none: nil.
func (d *Dir) Manifest() *Manifest {
	if d == nil {
		return nil
	}
	return d.cur.Load()
}

// Close releases the lock. The Dir must not be used after.
func (d *Dir) Close() error {
	if d.lock == nil {
		return nil
	}
	err := releaseLock(d.lock)
	d.lock = nil
	return err
}

// ReadBatch reads the batch file b names and checks it against the manifest
// entry: the file's checksum, its seal, its generation, its link to the
// batch before it, and its counts of chunks, facts and purges.
func (d *Dir) ReadBatch(b Batch) (Contents, error) {
	i, m := int(b.Generation)-1, d.cur.Load()
	if i < 0 || i >= len(m.Batches) || m.Batches[i] != b {
		return Contents{}, fmt.Errorf("%w: batch %s is not in the manifest", ErrCorrupt, b.File)
	}
	name := filepath.Join(d.path, ChunksDir, b.File)
	raw, err := d.readSummed(name, b.Sum)
	if err != nil {
		return Contents{}, err
	}
	h, c, err := DecodeBatch(name, raw)
	if err != nil {
		return Contents{}, err
	}
	prev := ""
	if i > 0 {
		prev = m.Batches[i-1].ChainSum()
	}
	switch {
	case h.Generation != b.Generation || h.Prev != prev || h.CommittedAt != b.CommittedAt:
		return Contents{}, fmt.Errorf("%w: %s: header (generation %d, prev %q, committed %s) does not match the manifest (generation %d, prev %q, committed %s)",
			ErrCorrupt, name, h.Generation, h.Prev, h.CommittedAt, b.Generation, prev, b.CommittedAt)
	case len(c.Chunks) != b.Chunks || len(c.Facts) != b.Facts || len(c.Purges) != b.Purges:
		return Contents{}, fmt.Errorf("%w: %s holds %d chunks, %d facts and %d purges, the manifest says %d, %d and %d",
			ErrCorrupt, name, len(c.Chunks), len(c.Facts), len(c.Purges), b.Chunks, b.Facts, b.Purges)
	case b.Chain == "" && len(c.Redacted) > 0:
		return Contents{}, fmt.Errorf("%w: %s holds redacted chunks but the manifest records no purge of it", ErrCorrupt, name)
	}
	// Each redaction is by a purge after the batch and no later than the
	// one the file's name says rewrote it last (a replica may hold a batch
	// as a purge it has yet to apply rewrote it: that purge may be after
	// the manifest's generation).
	by, _ := RedactingPurge(b)
	for _, id := range evidence.SortedKeys(c.Redacted) {
		if r := c.Redacted[id]; r.Generation <= b.Generation || r.Generation > by {
			return Contents{}, fmt.Errorf("%w: %s: a redaction by generation %d, not after the batch's %d and by the %d its name says", ErrCorrupt, name, r.Generation, b.Generation, by)
		}
	}
	return c, nil
}

// OpenData opens data file name (relative to the index directory), which
// the manifest must name; its reader checks it (the checkpoint checks its
// head against the manifest's checksum, and each block of the rest as it
// reads it).
func (d *Dir) OpenData(name string) (*os.File, error) {
	if !d.cur.Load().Names(name) {
		return nil, fmt.Errorf("%w: %s is not in the manifest", ErrCorrupt, name)
	}
	f, err := os.Open(filepath.Join(d.path, name))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return f, nil
}

// OpenBatch opens batch file file (a name under chunks/ that a manifest
// named) for ReadLine.
func (d *Dir) OpenBatch(file string) (*os.File, error) {
	if !plainName(file) {
		return nil, fmt.Errorf("%w: batch file %q", ErrCorrupt, file)
	}
	f, err := os.Open(filepath.Join(d.path, ChunksDir, file))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return f, nil
}

// ReadLine returns line sp of batch file f, unchecked: the caller checks
// what it decodes against what it knows of the line (a chunk's content
// hash).
func ReadLine(f *os.File, sp Span) ([]byte, error) { return ReadLineInto(f, sp, nil) }

// ReadLineInto is ReadLine into buf's array when it has room (else a new
// one): the line returned is only good until the caller reuses buf.
// DecodeChunkLine copies out what it keeps, so a caller may reuse the
// buffer once the line is decoded.
func ReadLineInto(f *os.File, sp Span, buf []byte) ([]byte, error) {
	if sp.Off < 0 || sp.Len < 0 {
		return nil, fmt.Errorf("%w: %s: line %d+%d", ErrCorrupt, f.Name(), sp.Off, sp.Len)
	}
	line := slices.Grow(buf[:0], sp.Len)[:sp.Len]
	if _, err := f.ReadAt(line, sp.Off); err != nil {
		return nil, fmt.Errorf("%w: %s: line at byte %d: %v", ErrCorrupt, f.Name(), sp.Off, err)
	}
	return line, nil
}

// ReadFile reads a data file the manifest names (the dense vectors or the
// graph) and checks it against the checksum recorded there.
func (d *Dir) ReadFile(name, sum string) ([]byte, error) {
	if !d.cur.Load().Names(name) {
		return nil, fmt.Errorf("%w: %s is not in the manifest", ErrCorrupt, name)
	}
	return d.readSummed(filepath.Join(d.path, name), sum)
}

func (d *Dir) readSummed(path, sum string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if got := evidence.Sum(raw); got != sum {
		return nil, fmt.Errorf("%w: %s hashes to %s, the manifest records %s", ErrCorrupt, path, got, sum)
	}
	return raw, nil
}

func (d *Dir) writeManifest(m *Manifest) error {
	raw, err := EncodeManifest(m)
	if err != nil {
		return err
	}
	return fsutil.WriteAtomic(filepath.Join(d.path, ManifestName), raw)
}

func (d *Dir) readPending() (*pending, error) {
	name := filepath.Join(d.path, PendingName)
	raw, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	body, err := fsutil.UnsealText(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	var p pending
	if err := strictJSON(body, &p); err != nil || p.Format != pendingFormat {
		return nil, fmt.Errorf("%w: %s: not a %s record", ErrCorrupt, name, pendingFormat)
	}
	for _, f := range append(slices.Clone(p.Writes), p.Obsolete...) {
		if !ownFile(f) {
			return nil, fmt.Errorf("%w: %s names %q, which is no file of an index", ErrCorrupt, name, f)
		}
	}
	return &p, nil
}

// ownFile reports whether name is a data file a commit may write or remove.
func ownFile(name string) bool {
	if b, ok := strings.CutPrefix(name, ChunksDir+"/"); ok {
		return plainName(b)
	}
	return plainName(name) && (strings.HasPrefix(name, "dense-") || strings.HasPrefix(name, "graph-") || strings.HasPrefix(name, "state-") || strings.HasPrefix(name, "delta-") || strings.HasPrefix(name, "batches-"))
}
