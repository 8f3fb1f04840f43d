package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// DirOptions say how OpenDir opens an index directory.
type DirOptions struct {
	// Create makes a new index where dir is missing or empty.
	Create bool
	// LockWait is how long to wait for another holder's lock
	// (storage.Options).
	LockWait time.Duration
	// Lexical are the lexical index's options (its analyzer and partitions
	// when the index is new).
	Lexical retrieve.LexicalOptions
	// Embedder and Graph are the dense leg's, for a state built from the
	// batch files.
	Embedder retrieve.Embedder
	Graph    *retrieve.GraphOptions
	// Check, when set, is called once the lexical index is open and before
	// anything is recovered or read: an error refuses the open, nothing
	// written.
	Check func(lex *retrieve.Lexical) error
	// Damaged marks an error reading the lexical index of an index that
	// holds committed documents (internal/audit.CorruptLexical).
	Damaged func(error) error
}

// Opened is an index directory opened and recovered: its files, its
// lexical index and its committed state.
type Opened struct {
	Store *storage.Dir
	Lex   *retrieve.Lexical
	State *State
	// ReadOnly, when set, says why the index must refuse writes: the
	// rollback of a commit a crash interrupted could not be written (a full
	// disk), so the lexical index still holds that commit's documents.
	ReadOnly error
}

// OpenDir opens the index directory dir: it takes the lock, reads and checks
// the manifest, opens the lexical index, and reads the committed state from
// the generation's checkpoint (or, for an index without one, or with a
// dense leg, from every batch file). A commit that a crash interrupted is
// rolled back, or finished, as its record says; nothing else is ever
// deleted.
func OpenDir(dir string, o DirOptions) (Opened, error) {
	d, err := storage.Open(dir, storage.Options{Create: o.Create, LockWait: o.LockWait})
	if err != nil {
		return Opened{}, err
	}
	fail := func(err error) (Opened, error) {
		d.Close()
		if d.Manifest().Generation > 0 { // a lexical index that held committed documents is damaged, not bad input
			err = o.Damaged(err)
		}
		return Opened{}, fmt.Errorf("evpack: open %s: %w", dir, err)
	}
	lexDir := filepath.Join(dir, storage.LexicalDir)
	lexOpts := o.Lexical
	lexOpts.Deferred = true // the checkpoint's catalog settles them, or OpenAll below
	never := d.Manifest().Generation == 0
	// openLex opens the lexical index; of an index that never committed,
	// every partition too (it has no checkpoint to defer them to).
	openLex := func() (*retrieve.Lexical, error) {
		lex, err := retrieve.OpenLexical(lexDir, lexOpts)
		if err == nil && never {
			if err = lex.OpenAll(); err != nil {
				lex.Close()
			}
		}
		return lex, err
	}
	lex, err := openLex()
	if err != nil && never {
		// Nothing was ever committed, so the lexical directory holds at most
		// what a crash interrupted while creating it or writing the first
		// commit (after a power cut, bleve's newest snapshot can name a
		// segment whose directory entry was lost, and its older one hold no
		// mapping yet): make it again, empty, rather than refuse a new index
		// forever. The record of that commit, if any, is rolled back below.
		if rerr := os.RemoveAll(lexDir); rerr != nil {
			return fail(errors.Join(err, rerr))
		}
		lex, err = openLex()
	}
	if err != nil {
		return fail(err)
	}
	var st *State
	failLex := func(err error) (Opened, error) {
		lex.Close()
		if st != nil && st.Rows != nil {
			st.Rows.Close() // its checkpoint's mapping with it
		}
		return fail(err)
	}
	if o.Check != nil {
		if err := o.Check(lex); err != nil {
			lex.Close()
			d.Close()
			return Opened{}, err
		}
	}
	gen := d.Manifest().Generation
	engine := func(st *State) (Opened, error) { return Opened{Store: d, Lex: lex, State: st}, nil }
	if !d.Unfinished() && d.Manifest().Checkpoint != "" && o.Embedder == nil {
		// The committed state first: a checkpoint's catalog of the lexical
		// partitions lets each be opened, and checked against it, when a
		// request first reads it (retrieve.Lexical.Adopt), so that a
		// process maps only what its requests read.
		if st, err = OpenState(d, lex, o.Embedder, o.Graph); err != nil {
			return failLex(err)
		}
		if st.Rows != nil && len(st.Rows.Catalog()) > 0 {
			raw, later, err := st.OpenCatalog()
			if err != nil {
				return failLex(err)
			}
			n, err := lex.Adopt(raw, gen, later)
			if errors.Is(err, retrieve.ErrCatalogMismatch) {
				err = fmt.Errorf("%w: %s: %w", storage.ErrCorrupt, d.Manifest().Checkpoint, err)
			}
			if err != nil {
				return failLex(err)
			}
			if m := d.Manifest(); n != uint64(m.Docs-m.Purged) {
				return failLex(fmt.Errorf("%w: %s catalogs %d lexical documents, the manifest (generation %d) %d chunks, %d of them purged",
					storage.ErrCorrupt, m.Checkpoint, n, m.Generation, m.Docs, m.Purged))
			}
			return engine(st)
		}
	}
	if err := lex.OpenAll(); err != nil {
		return failLex(err)
	}
	above := func(g int64) (uint64, error) { return lex.CountAbove(context.Background(), g) }
	load := func() (err error) {
		if st == nil || st.Rows != nil {
			if st != nil {
				st.Rows.Close() // its checkpoint's mapping with it: a read error only
			}
			st, err = LoadState(d, lex, o.Embedder, o.Graph)
		}
		return err
	}
	var rollbackErr error
	if _, err := d.Recover(above, func() error {
		// The committed state comes from the batch files the manifest
		// names, which an unfinished commit never touches: the lexical
		// documents its facts re-indexed are put back as that state has
		// them.
		if err := load(); err != nil {
			return err
		}
		if _, err := lex.RollBack(context.Background(), gen, st.LexDoc); err != nil {
			rollbackErr = err
			return err
		}
		if err := RestoreMissing(context.Background(), lex, st); err != nil {
			rollbackErr = err
			return err
		}
		return nil
	}); err != nil {
		if rollbackErr == nil || errors.Is(rollbackErr, storage.ErrCorrupt) {
			return failLex(err)
		}
		// The rollback could not be written (a full disk): the index opens
		// read-only at its last generation, its lexical index reopened as
		// bleve last persisted it, the record kept for a later Open.
		lex.Close()
		if lex, err = retrieve.OpenLexical(lexDir, lexOpts); err == nil {
			if err = lex.OpenAll(); err != nil {
				lex.Close()
			}
		}
		if err != nil {
			return fail(errors.Join(rollbackErr, err))
		}
		return Opened{Store: d, Lex: lex, State: st, ReadOnly: fmt.Errorf("%w: %s records an unfinished commit of generation %d that could not be rolled back (%v); free space and reopen the index",
			ErrReadOnly, filepath.Join(dir, storage.PendingName), gen+1, rollbackErr)}, nil
	}
	if n, err := lex.DocCount(); err != nil {
		return failLex(err)
	} else if m := d.Manifest(); n != uint64(m.Docs-m.Purged) {
		return failLex(fmt.Errorf("%w: %s holds %d documents, the manifest (generation %d) %d chunks, %d of them purged",
			storage.ErrCorrupt, filepath.Join(dir, storage.LexicalDir), n, m.Generation, m.Docs, m.Purged))
	}
	if st == nil {
		if st, err = OpenState(d, lex, o.Embedder, o.Graph); err != nil {
			return failLex(err)
		}
	}
	return engine(st)
}

// RestoreMissing indexes again every chunk of st that is neither purged nor
// in lex: what an unfinished purge had deleted.
func RestoreMissing(ctx context.Context, lex *retrieve.Lexical, st *State) error {
	n, err := lex.DocCount()
	if err != nil || n == uint64(len(st.Chunks)-len(st.Purged)) {
		return err
	}
	have := map[string]bool{}
	if err := lex.Docs(ctx, func(d retrieve.StoredDoc) error { have[d.ID] = true; return nil }); err != nil {
		return err
	}
	var docs []retrieve.Doc
	for _, id := range evidence.SortedKeys(st.Chunks) {
		if _, purged := st.Purged[id]; !purged && !have[id] {
			d, err := st.LexDoc(id)
			if err != nil {
				return err
			}
			docs = append(docs, d)
		}
	}
	return lex.Index(ctx, docs)
}
