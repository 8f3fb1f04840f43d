package evpack

import (
	"context"

	"github.com/evpack/evpack/internal/state"
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
	return state.RebuildLexical(ctx, dir, opts.LockWait, opts.lexicalOptions())
}
