package evpack

import (
	"context"
	"errors"

	"github.com/evpack/evpack/internal/audit"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
)

// Preload does, before a service takes requests, the first-time work a
// fresh process's requests would each pay, and returns how many bytes of
// files it read: it reads the checkpoint, the dense files, the lexical
// index's files and the batch files (the cited texts) into the page cache
// (after a reboot, a request waited on the disk for each page it touched
// first: docs/benchmarks.md, issue 30, stops 75 and 78), checks every block
// of the checkpoint before a request reads it, and opens every lexical
// partition, reads the numbers its filter compares and checks its segments
// against their checksums (retrieve.Lexical.Preload: a partition that fails
// is ErrCorrupt for Preload and for every request that reads it after).
//
// Call it when the index fits in memory; it may run beside queries and
// ingests (on Windows, before writes start). A checkpoint block that fails
// its check is ErrCorrupt; a damaged partition's error is returned once the
// others are open. It stops when ctx is done, returning what it had read
// and ctx's error, wrapped; a Close before it ends makes it ErrClosed.
func (e *Engine) Preload(ctx context.Context) (int64, error) {
	paths, rows, err := e.preloadPaths()
	if err != nil {
		return 0, err
	}
	n, err := storage.ReadPaths(ctx, paths)
	if err == nil {
		err = rows.CheckCurrent(ctx, func() *state.RowTable { e.mu.RLock(); defer e.mu.RUnlock(); return e.st.Rows })
	}
	if err == nil {
		err = e.lex.Preload(ctx)
	}
	if _, serr := e.snapshot(); errors.Is(serr, ErrClosed) {
		return n, ErrClosed // the steps skipped, or failed on, what Close closed
	}
	return n, audit.LexicalErr(err)
}

// preloadPaths returns the files Preload reads and the checkpoint's rows.
func (e *Engine) preloadPaths() ([]string, *state.RowTable, error) {
	e.mu.RLock()
	closed := e.closed
	var m *storage.Manifest
	var rows *state.RowTable
	if !closed && e.store != nil {
		m, rows = e.store.Manifest(), e.st.Rows
	}
	e.mu.RUnlock()
	switch {
	case closed:
		return nil, nil, ErrClosed
	case m == nil: // in memory
		return nil, nil, nil
	}
	paths, err := storage.PreloadPaths(e.dir, m)
	return paths, rows, err
}
