package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
)

// Commit is one generation on its way to the manifest. The protocol:
//
//  1. Begin records in PENDING.json the generation and every file it will
//     write or make obsolete;
//  2. the caller writes those files (Write) and applies the batch to the
//     lexical index; beside that change or in Publish, Prepare makes the
//     files' names durable and writes the manifest to a synced temp file;
//  3. Publish renames the manifest into place, the commit point once the
//     index directory's fsync makes the rename durable, then removes the
//     obsolete files and PENDING.json.
//
// Abort (or, after a crash, Recover at the next Open) undoes a commit that
// never reached step 3, guided by PENDING.json alone. A commit whose
// rename is not durable (ErrNotDurable) is left to Recover, which keeps or
// undoes it as the manifest on disk says.
type Commit struct {
	d        *Dir
	p        pending
	done     bool
	unsynced []string  // files renamed into place whose directories are not synced since
	staged   *Manifest // the manifest Prepare wrote, to tmp
	tmp      string
}

// Begin starts committing generation gen (the manifest's plus one), which
// will write the files in writes and then remove those in obsolete (paths
// relative to the index directory).
func (d *Dir) Begin(gen int64, writes, obsolete []string) (*Commit, error) {
	if d.pending != nil && d.pending.Generation == d.cur.Load().Generation {
		if err := d.finish(d.pending, false); err != nil {
			return nil, err
		}
	}
	if d.pending != nil {
		return nil, fmt.Errorf("evpack: commit: %s records an unfinished commit of generation %d; reopen the index to recover it", PendingName, d.pending.Generation)
	}
	if gen != d.cur.Load().Generation+1 {
		return nil, fmt.Errorf("evpack: commit: generation %d after %d", gen, d.cur.Load().Generation)
	}
	for _, f := range append(slices.Clone(writes), obsolete...) {
		if !ownFile(f) {
			return nil, fmt.Errorf("evpack: commit: %q is no data file of an index", f)
		}
	}
	c := &Commit{d: d, p: pending{Format: pendingFormat, Generation: gen, Writes: slices.Clone(writes), Obsolete: slices.Clone(obsolete)}}
	raw, err := json.MarshalIndent(&c.p, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := fsutil.WriteAtomic(filepath.Join(d.path, PendingName), fsutil.SealText(append(raw, '\n'))); err != nil {
		d.removePending() // a partial temp file is removed by WriteAtomic; the record itself may not exist
		return nil, fmt.Errorf("evpack: commit: %w", err)
	}
	d.pending = &c.p
	return c, nil
}

// Write stores data as name, which Begin must have listed, and returns its
// checksum for the manifest.
func (c *Commit) Write(name string, data []byte) (string, error) {
	if err := c.WriteSealed(name, data); err != nil {
		return "", err
	}
	return evidence.Sum(data), nil
}

// WriteSealed writes file name, announced by Begin, as the slices of parts
// one after the other, and computes no checksum of it: for a file that
// carries its own seal, which the manifest records instead (a checkpoint's
// head), and that is too large to copy into one buffer or to hash twice.
func (c *Commit) WriteSealed(name string, parts ...[]byte) error {
	if c.done || !slices.Contains(c.p.Writes, name) {
		return fmt.Errorf("evpack: commit: %s was not announced", name)
	}
	path := filepath.Join(c.d.path, name)
	tmp, err := fsutil.WriteTemp(path, nil, parts...)
	if err == nil {
		err = fsutil.Rename(tmp, path, c.d.Hooks.BeforeRename)
	}
	if err != nil {
		return fmt.Errorf("evpack: commit: %w", err)
	}
	c.unsynced = append(c.unsynced, name)
	return nil
}

// Prepare readies c to publish m, which must be the next generation: it
// checks m, makes durable the names of the files written (and adopted)
// since, an fsync of each directory they are in, once for all of them
// (their contents were synced as each was written), and writes m to a
// synced temp file beside the manifest, for Publish to rename. Nothing
// depends on either before Publish, so Publish prepares m itself when the
// caller has not; a caller may call Prepare earlier, beside its change to
// the lexical index, which needs neither. m must not change after. It must
// not run beside Write, Adopt, Publish or Abort.
//
// Why: a commit waits for its syncs one after the other, each waiting for
// the file system's journal, and its slowest commits are slow in one of
// them (docs/benchmarks.md, "Syncs beside bleve's batch"): a fact's commit
// synced chunks/ and then the manifest's temp file on either side of
// bleve's batch; now they wait beside it.
func (c *Commit) Prepare(m *Manifest) error {
	gen := c.p.Generation
	if c.done {
		return fmt.Errorf("evpack: commit of generation %d: already finished", gen)
	}
	if m.Generation != gen {
		return fmt.Errorf("evpack: commit of generation %d: a manifest of generation %d", gen, m.Generation)
	}
	fail := func(step string, err error) error {
		return fmt.Errorf("evpack: commit of generation %d: %s: %w", gen, step, err)
	}
	if err := m.validate(c.d.cur.Load().Batches); err != nil {
		return fail("check the manifest", err)
	}
	if err := c.d.syncDirsOf(c.unsynced); err != nil {
		return fail("make its files' names durable", err)
	}
	c.unsynced = nil
	c.unstage()
	raw, err := EncodeManifest(m)
	if err != nil {
		return fail("encode the manifest", err)
	}
	tmp, err := fsutil.WriteTemp(filepath.Join(c.d.path, ManifestName), nil, raw)
	if err != nil {
		return fail("stage the manifest", err)
	}
	c.staged, c.tmp = m, tmp
	return nil
}

// unstage removes the manifest's temp file that Prepare wrote, if any.
func (c *Commit) unstage() {
	if c.tmp != "" {
		os.Remove(c.tmp) // best effort: Open removes a temp file left
	}
	c.staged, c.tmp = nil, ""
}

// Publish makes m, which must be the next generation, the committed
// manifest: it prepares m (Prepare) unless the caller did, then renames
// the manifest into place and fsyncs its directory. An error before the
// rename leaves the commit to Abort. Once renamed, the generation is on
// disk: when the fsync fails, the error is ErrNotDurable and the commit is
// finished in this process, its files and record kept for the next Open;
// failing to tidy up after a durable rename is left to the next Begin or
// Open.
func (c *Commit) Publish(m *Manifest) error {
	if c.staged != m || len(c.unsynced) > 0 {
		if err := c.Prepare(m); err != nil {
			return err
		}
	}
	if h := c.d.Hooks.BeforeManifest; h != nil {
		if err := h(); err != nil {
			return err
		}
	}
	tmp, path := c.tmp, filepath.Join(c.d.path, ManifestName)
	c.staged, c.tmp = nil, "" // renamed, or removed by Rename
	if err := fsutil.Rename(tmp, path, nil); err != nil {
		return fmt.Errorf("evpack: commit: %w", err)
	}
	c.done = true
	c.d.cur.Store(m.Clone())
	if err := c.d.syncDir(c.d.path); err != nil {
		return fmt.Errorf("%w: generation %d: %s is renamed into place and the fsync of its directory failed: %w", ErrNotDurable, m.Generation, path, err)
	}
	if h := c.d.Hooks.AfterManifest; h != nil {
		h()
	}
	c.d.finish(&c.p, true) // best effort: a leftover record is finished later
	return nil
}

// Abort undoes a commit that was not published: it removes the files the
// commit wrote and its record. The caller first removes the batch from the
// lexical index; if that fails, it must not call Abort, so that the next
// Open finds the record and rolls the lexical index back.
func (c *Commit) Abort() error {
	if c.done {
		return nil
	}
	c.done = true
	c.unstage()
	return c.d.undo(&c.p)
}

// Recover settles a commit that a crash interrupted, before anything else
// reads the index. above(g) counts the lexical documents that carry a
// generation after g; rollback removes those after the manifest's. It
// returns what it did, "" when there was nothing to do.
//
// It deletes only what PENDING.json proves an unfinished commit wrote: a
// record of the next generation, whose documents are the only ones above
// the manifest (rolled back), or of the manifest's own generation
// (published; tidied). Lexical documents above the manifest with no such
// record, or any of a later generation than the record's, are ErrCorrupt,
// and nothing is deleted.
func (d *Dir) Recover(above func(gen int64) (uint64, error), rollback func() error) (string, error) {
	p, gen := d.pending, d.cur.Load().Generation
	n, err := above(gen)
	if err != nil {
		return "", err
	}
	var beyond uint64
	if p != nil && p.Generation == gen+1 && n > 0 {
		if beyond, err = above(p.Generation); err != nil {
			return "", err
		}
	}
	switch {
	case p == nil && n == 0:
		return "", nil
	case p == nil:
		return "", fmt.Errorf("%w: %s: the lexical index holds %d documents of generations after %d and no unfinished commit (%s) explains them; nothing was deleted",
			ErrCorrupt, d.path, n, gen, PendingName)
	case p.Generation == gen && n == 0:
		return fmt.Sprintf("generation %d was committed; tidied up after it", gen), d.finish(p, false)
	case p.Generation == gen+1 && beyond == 0:
		// Called even when no document is above gen: a purge deletes
		// documents instead of adding them, and only the caller can tell.
		if err := rollback(); err != nil {
			return "", fmt.Errorf("evpack: recover generation %d: %w", p.Generation, err)
		}
		return fmt.Sprintf("rolled back the unfinished commit of generation %d (%d lexical documents)", p.Generation, n), d.undo(p)
	}
	return "", fmt.Errorf("%w: %s records a commit of generation %d, the manifest is at %d and the lexical index holds %d documents after it; nothing was deleted",
		ErrCorrupt, filepath.Join(d.path, PendingName), p.Generation, gen, n)
}

// PendingFiles lists the files the record of an unfinished commit names
// (those it writes, then those it makes obsolete): the next Open with room
// removes them as the record says.
func (d *Dir) PendingFiles() []string {
	if d.pending == nil {
		return nil
	}
	return append(slices.Clone(d.pending.Writes), d.pending.Obsolete...)
}

// Unfinished reports whether a commit record is left from a commit that a
// crash interrupted: Recover has work to do.
func (d *Dir) Unfinished() bool { return d.pending != nil }

// finish tidies up after a published commit. durable says the manifest's
// rename is known durable (Publish synced its directory); when it is not
// (a record found by Open or left by ErrNotDurable), the directory is
// synced first: removing the files the previous manifest names, with a
// power cut bringing that manifest back, would lose them. The removals are
// made durable (an fsync of each directory they were made in) before the
// record is removed: a power cut in between must find the record, and the
// next Open remove the files again, or a purged batch file, with its text,
// could come back with no record of it.
func (d *Dir) finish(p *pending, durable bool) error {
	if !durable {
		if err := d.syncDir(d.path); err != nil {
			return fmt.Errorf("evpack: commit: %w", err)
		}
	}
	named := d.cur.Load()
	for _, f := range p.Obsolete {
		if !named.Names(f) {
			if err := os.Remove(filepath.Join(d.path, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("evpack: commit: %w", err)
			}
		}
	}
	if err := d.syncDirsOf(p.Obsolete); err != nil {
		return fmt.Errorf("evpack: commit: %w", err)
	}
	return d.removePending()
}

// syncDirsOf fsyncs the directories that hold files (paths relative to
// the index directory): chunks/ and the index directory itself.
func (d *Dir) syncDirsOf(files []string) error {
	var dirs []string
	for _, f := range files {
		if dir := filepath.Dir(f); !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	slices.Sort(dirs)
	for _, dir := range dirs {
		if err := d.syncDir(filepath.Join(d.path, dir)); err != nil {
			return err
		}
	}
	return nil
}

// syncDir fsyncs directory dir, after the BeforeSyncDir hook.
func (d *Dir) syncDir(dir string) error {
	if h := d.Hooks.BeforeSyncDir; h != nil {
		if err := h(dir); err != nil {
			return fmt.Errorf("sync %s: %w", dir, err)
		}
	}
	return fsutil.SyncDir(dir)
}

// undo removes what an unpublished commit wrote.
func (d *Dir) undo(p *pending) error {
	named := d.cur.Load()
	var errs []error
	for _, f := range p.Writes {
		if !named.Names(f) {
			if err := os.Remove(filepath.Join(d.path, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("evpack: undo generation %d: %w", p.Generation, err)
	}
	if err := d.syncDirsOf(p.Writes); err != nil {
		return fmt.Errorf("evpack: undo generation %d: %w", p.Generation, err)
	}
	return d.removePending()
}

// removePending removes the commit record. The removal is not made
// durable (no fsync of the directory): a record a power cut brings back is
// what a crash just before the removal leaves, a state Open already
// settles (TestRecover, "record of the manifest's generation", "record of
// the next generation, nothing above"): its work is done, durably, before
// the removal (finish, undo), and settling it again finds nothing left to
// do. The next commit's record replaces it, durably. Why: a commit waits
// for its syncs in turn, and its slowest are slow in one of them
// (docs/benchmarks.md, "Sections outside the heap"); one fact's commit
// makes seven of evpack's own, four of them in turn (Prepare).
func (d *Dir) removePending() error {
	err := os.Remove(filepath.Join(d.path, PendingName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("evpack: commit: %w", err)
	}
	d.pending = nil
	return nil
}

// Strays lists the files of the index directory that the manifest does
// not name and that are not the index's own (LOCK, the manifest, the
// lexical directory, the record of a commit in progress): leftovers such as
// a crashed write's temp file. Check reports them; nothing deletes them.
// A file this process wrote ahead of its commit (WriteAhead) is not one.
func (d *Dir) Strays() ([]string, error) {
	named := d.cur.Load()
	var out []string
	for _, sub := range []string{".", ChunksDir} {
		entries, err := os.ReadDir(filepath.Join(d.path, sub))
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			n := e.Name()
			if sub != "." {
				n = sub + "/" + n
			}
			own := n == LockName || n == ManifestName || n == LexicalDir || n == ChunksDir || (n == PendingName && d.pending != nil) ||
				d.ahead.holds(n) // a file this process writes ahead of its commit

			if !own && !named.Names(n) {
				out = append(out, n)
			}
		}
	}
	return out, nil
}
