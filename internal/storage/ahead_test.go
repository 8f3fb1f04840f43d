package storage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/internal/fsutil"
)

// TestWriteAhead: a file written ahead is a temp file that Strays does not
// list while this process holds it, that only a commit announcing its name
// adopts (once), that an aborted commit removes with what it wrote, and
// that Discard removes; one a crash left is removed by the next Open.
func TestWriteAhead(t *testing.T) {
	dir, _ := committedIndex(t)
	d, err := Open(dir, Options{})
	require.NoError(t, err)
	defer func() { d.Close() }()
	name := CheckpointName(1)
	temps := func() []string {
		t.Helper()
		all, err := filepath.Glob(filepath.Join(dir, "."+name+".tmp-*"))
		require.NoError(t, err)
		return all
	}

	_, err = d.WriteAhead("../"+name, nil)
	require.ErrorContains(t, err, "is no data file of an index")

	a, err := d.WriteAhead(name, nil, []byte("ahead "), []byte("bytes"))
	require.NoError(t, err)
	require.Len(t, temps(), 1)
	strays, err := d.Strays()
	require.NoError(t, err)
	require.Empty(t, strays, "held by this process, its temp file is no stray")

	other := CheckpointName(2)
	c, err := d.Begin(2, []string{other}, nil)
	require.NoError(t, err)
	require.ErrorContains(t, c.Adopt(a), name+" was not announced")
	require.NoError(t, c.Abort())
	require.Len(t, temps(), 1, "a refused adoption leaves it")

	c, err = d.Begin(2, []string{name}, nil)
	require.NoError(t, err)
	require.NoError(t, c.Adopt(a))
	require.Empty(t, temps())
	raw, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	require.Equal(t, "ahead bytes", string(raw))
	require.ErrorContains(t, c.Adopt(a), "adopted or discarded already")
	require.NoError(t, a.Discard(), "discarding one adopted does nothing")
	require.FileExists(t, filepath.Join(dir, name))
	require.NoError(t, c.Abort())
	require.NoFileExists(t, filepath.Join(dir, name), "the aborted commit removes what it adopted")

	_, err = d.WriteAhead(name, func() bool { return true }, []byte("stopped"))
	require.ErrorIs(t, err, fsutil.ErrStopped, "stopped before its first byte")
	require.Empty(t, temps(), "a stopped write leaves no file")
	strays, err = d.Strays()
	require.NoError(t, err)
	require.Empty(t, strays)

	b, err := d.WriteAhead(name, nil, []byte("again"))
	require.NoError(t, err)
	require.NoError(t, b.Discard())
	require.Empty(t, temps())
	require.NoError(t, b.Discard(), "twice does nothing")

	// One left by a crash: a stray to Check until the next Open removes it.
	_, err = d.WriteAhead(name, nil, []byte("left"))
	require.NoError(t, err)
	require.NoError(t, d.Close())
	d, err = Open(dir, Options{})
	require.NoError(t, err)
	require.Empty(t, temps(), "Open removes it as any temp file")
	held, err := d.WriteAhead(name, nil, []byte("held"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "."+name+".tmp-1"), []byte("another's"), 0o644))
	strays, err = d.Strays()
	require.NoError(t, err)
	require.Empty(t, strays, "any temp file of a name being written ahead is held") // the name is the process's while it writes
	require.NoError(t, held.Discard())
	strays, err = d.Strays()
	require.NoError(t, err)
	require.Equal(t, []string{"." + name + ".tmp-1"}, strays, "once discarded, a temp file of that name is a stray")
}
