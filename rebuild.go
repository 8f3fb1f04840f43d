package evpack

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
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// RebuildLexical rebuilds the lexical index (bleve) of the on-disk index in
// dir from its batch files, the source of truth, for when it is found
// damaged (a partition bleve refuses, a segment lost to a power cut): Open
// or Check then fail with ErrCorrupt naming a file under lexical/. The
// batch files and the manifest must be whole: every one is checked against
// its checksum. The new index keeps the old one's analyzer and partition
// span when its layout file is readable, else opts'. It is built beside
// the old one and renamed into place; the old one is then removed (it may
// hold a purged chunk's text in a segment never merged away). A commit a
// crash left unfinished is settled first, as Open would. It returns how
// many documents the new index holds.
func RebuildLexical(ctx context.Context, dir string, opts Options) (uint64, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return 0, err
	}
	d, err := storage.Open(dir, storage.Options{LockWait: opts.LockWait})
	if err != nil {
		return 0, err
	}
	defer d.Close()
	fail := func(err error) (uint64, error) {
		return 0, fmt.Errorf("evpack: rebuild lexical index of %s: %w", dir, err)
	}
	lexDir := filepath.Join(dir, storage.LexicalDir)
	lexOpts := opts.lexicalOptions()
	if an, days, err := retrieve.ReadLayout(lexDir); err == nil && an != "" {
		lexOpts.Analyzer, lexOpts.PartitionDays, lexOpts.Unpartitioned = an, days, false
	} else if err == nil { // unpartitioned: bleve's mapping is in the damaged store
		lexOpts.PartitionDays, lexOpts.Unpartitioned = 0, true
	}
	tmp, err := os.MkdirTemp(dir, "."+storage.LexicalDir+".rebuild-")
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
	st, err := state.LoadState(d, lex, nil, nil)
	if err != nil {
		return fail(err)
	}
	// A purged chunk's document is indexed and deleted again, then every
	// partition merged (as Purge does): its partition then exists, with
	// the key and the summary the checkpoint's catalog records, and its
	// text is in no segment.
	var docs []retrieve.Doc
	var purged []*evidence.Chunk
	for doc, held := range st.LexDocs() {
		docs = append(docs, doc)
		if !held {
			purged = append(purged, doc.Chunk)
		}
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
		return fail(fmt.Errorf("%w: the batch files give %d lexical documents, the manifest %d chunks, %d of them purged", ErrCorrupt, n, m.Docs, m.Purged))
	}
	if err := closeLex(); err != nil {
		return fail(err)
	}
	if err := fsutil.SyncDir(tmp); err != nil {
		return fail(err)
	}
	old := filepath.Join(dir, "."+storage.LexicalDir+".damaged-"+strconv.FormatInt(time.Now().UnixNano(), 10))
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
