package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// RebuildLexical rebuilds the lexical index of the index directory dir from
// its batch files (Engine's RebuildLexical says when and how), taking the
// directory's lock with lockWait; lexOpts are the options a new index gets
// when the old layout file cannot be read. It returns how many documents
// the new index holds.
func RebuildLexical(ctx context.Context, dir string, lockWait time.Duration, lexOpts retrieve.LexicalOptions) (uint64, error) {
	d, err := storage.Open(dir, storage.Options{LockWait: lockWait})
	if err != nil {
		return 0, err
	}
	defer d.Close()
	fail := func(err error) (uint64, error) {
		return 0, fmt.Errorf("evpack: rebuild lexical index of %s: %w", dir, err)
	}
	// What an interrupted rebuild left: its new index half built, or the
	// old one it moved aside (which may hold a purged chunk's terms).
	if err := storage.RemoveRebuildLeftovers(dir); err != nil {
		return fail(err)
	}
	lexDir := filepath.Join(dir, storage.LexicalDir)
	if an, days, err := retrieve.ReadLayout(lexDir); err == nil && an != "" {
		lexOpts.Analyzer, lexOpts.PartitionDays, lexOpts.Unpartitioned = an, days, false
	} else if err == nil { // unpartitioned: bleve's mapping is in the damaged store
		lexOpts.PartitionDays, lexOpts.Unpartitioned = 0, true
	}
	tmp, err := os.MkdirTemp(dir, storage.RebuildTempPrefix)
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	built := filepath.Join(tmp, storage.LexicalDir)
	lex, err := retrieve.OpenLexical(built, lexOpts)
	if err != nil {
		return fail(err)
	}
	closeLex := func() error {
		if lex == nil {
			return nil
		}
		err := lex.Close()
		lex = nil
		return err
	}
	defer closeLex()
	// The unfinished commit's documents are not in the new index: rolling
	// it back is removing its files.
	none := func(int64) (uint64, error) { return 0, nil }
	if _, err := d.Recover(none, func() error { return nil }); err != nil {
		return fail(err)
	}
	st, err := LoadState(d, lex, nil, nil)
	if err != nil {
		return fail(err)
	}
	// A purged chunk's document is indexed and deleted again, then every
	// partition merged (as Purge does): its partition then exists, with
	// the key and the summary the checkpoint's catalog records, and its
	// text is in no segment.
	var docs []retrieve.Doc
	var purged []*evidence.Chunk
	var failed error
	for doc, held := range st.LexDocs(&failed) {
		docs = append(docs, doc)
		if !held {
			purged = append(purged, doc.Chunk)
		}
	}
	if failed != nil {
		return fail(failed)
	}
	if err := lex.Index(ctx, docs); err != nil {
		return fail(err)
	}
	if len(purged) > 0 {
		if err := lex.Delete(ctx, purged); err != nil {
			return fail(err)
		}
		if err := lex.Merge(ctx); err != nil {
			return fail(err)
		}
	}
	n, err := lex.DocCount()
	if err != nil {
		return fail(err)
	}
	if m := d.Manifest(); n != uint64(m.Docs-m.Purged) {
		return fail(fmt.Errorf("%w: the batch files give %d lexical documents, the manifest %d chunks, %d of them purged", storage.ErrCorrupt, n, m.Docs, m.Purged))
	}
	if err := closeLex(); err != nil {
		return fail(err)
	}
	if err := fsutil.SyncDir(tmp); err != nil {
		return fail(err)
	}
	old := filepath.Join(dir, storage.RebuildOldPrefix+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := os.Rename(lexDir, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(err)
	}
	if err := os.Rename(built, lexDir); err != nil {
		return fail(err)
	}
	if err := fsutil.SyncDir(dir); err != nil {
		return fail(err)
	}
	if err := os.RemoveAll(old); err != nil {
		return fail(err)
	}
	return n, nil
}
