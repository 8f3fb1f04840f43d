package main

import (
	"context"
	"fmt"
	"io"

	"github.com/evpack/evpack"
)

// cmdRebuildLexical rebuilds the lexical index of --index from its batch
// files (evpack.RebuildLexical), then checks the whole index.
func cmdRebuildLexical(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("rebuild-lexical", stderr)
	dir := fs.String("index", "", "index directory")
	lockWait := fs.Duration("lock-wait", 0, "how long to wait for another process that has the index open, as Options.LockWait: 0 means the default (2s), a negative duration (-1s) fails at once")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *dir == "" || len(pos) != 0 {
		return usageErr("need --index DIR and nothing else")
	}
	wait := *lockWait
	n, err := evpack.RebuildLexical(ctx, *dir, evpack.Options{LockWait: wait})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "rebuilt the lexical index of %s from its batch files: %d documents\n", *dir, n)
	eng, err := evpack.OpenExisting(*dir, evpack.Options{LockWait: wait})
	if err != nil {
		return err
	}
	defer eng.Close()
	if err := eng.Check(); err != nil {
		return &exitError{code: 1, err: err}
	}
	fmt.Fprintln(stdout, "ok: the index checks whole")
	return nil
}
