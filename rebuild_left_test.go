package evpack

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/internal/storage"
)

// TestRebuildInterruptedLeavesNoPurgedText: RebuildLexical moves the old
// lexical index aside (.lexical.damaged-N), renames the new one into place
// and then removes the old one, which "may hold a purged chunk's text in a
// segment never merged away" (a purge whose merge failed on the damage).
// A kill or power cut during that removal (seconds at a million chunks)
// left the old index beside the new one for ever: the index opened and
// Check passed (listing it as a harmless stray), and running
// rebuild-lexical again left it too, so the purged text stayed in the
// index directory. Check must report it, and a rebuild must remove what
// an interrupted one left.
func TestRebuildInterruptedLeavesNoPurgedText(t *testing.T) {
	ctx := context.Background()
	dir, e := purgeFixture(t)
	// The lexical index as it was when the chunk's deleted document was
	// still in a segment: what the interrupted rebuild moved aside.
	aside := t.TempDir()
	require.NoError(t, exec.Command("cp", "-a", filepath.Join(dir, storage.LexicalDir), aside).Run())
	_, err := e.Purge(ctx, []string{"memo-roe"}, "erasure")
	require.NoError(t, err)
	require.NoError(t, e.Close())
	require.NoError(t, os.Rename(filepath.Join(aside, storage.LexicalDir), filepath.Join(dir, "."+storage.LexicalDir+".damaged-1700000000000000000")))

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	err = e.Check()
	require.ErrorIs(t, err, ErrCheck, "a lexical index an interrupted rebuild left, holding purged text")
	require.Contains(t, err.Error(), ".lexical.damaged-1700000000000000000")
	require.NoError(t, e.Close())

	_, err = RebuildLexical(ctx, dir, Options{})
	require.NoError(t, err)
	left, err := filepath.Glob(filepath.Join(dir, ".lexical*"))
	require.NoError(t, err)
	require.Empty(t, left, "the lexical index an interrupted rebuild left (its dictionaries hold the purged chunk's terms)")
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.Check())
}
