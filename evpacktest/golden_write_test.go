package evpacktest_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/evpacktest"
)

// TestGoldenUpdateReplacesTheFileWhole: -update writes a temporary file and
// renames it over the golden, so that a crash mid-write never leaves half a
// golden, and a file the golden shared its inode with (a hard link, a
// copy-on-write checkout) keeps its bytes. It wrote through the old file.
func TestGoldenUpdateReplacesTheFileWhole(t *testing.T) {
	before, after := packs(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "retention.json")
	other := filepath.Join(dir, "other.json")
	require.NoError(t, os.WriteFile(other, before.Bytes(), 0o644))
	require.NoError(t, os.Link(other, path))

	t.Setenv(evpacktest.EnvUpdate, "1")
	f := &fakeTB{TB: t}
	evpacktest.Golden(f, path, after)
	require.Empty(t, f.errors)

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, after.Bytes(), raw)
	raw, err = os.ReadFile(other)
	require.NoError(t, err)
	require.True(t, bytes.Equal(before.Bytes(), raw), "the update wrote through the golden's old inode")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, names, 2, "a temporary file was left behind: %v", names)
}

// TestGoldenMismatchNamesTheFirstDifference: a golden that differs by one
// byte is reported with where: the byte offset, line and column of the first
// difference, also when the two do not both parse (the diff of the parsed
// packs cannot say where then).
func TestGoldenMismatchNamesTheFirstDifference(t *testing.T) {
	before, _ := packs(t)
	got := before.Bytes()
	for _, tc := range []struct {
		name   string
		golden func([]byte) []byte
		want   string
	}{
		{"a byte changed", func(b []byte) []byte { b[1] = '!'; return b }, "first difference at byte 1 (line 1, column 2)"},
		{"the last byte dropped", func(b []byte) []byte { return b[:len(b)-1] }, "the golden ends at byte"},
		{"one byte more", func(b []byte) []byte { return append(b, ' ') }, "the golden goes on after"},
	} {
		path := filepath.Join(t.TempDir(), "g.json")
		require.NoError(t, os.WriteFile(path, tc.golden(append([]byte(nil), got...)), 0o644))
		f := &fakeTB{TB: t}
		evpacktest.GoldenBytes(f, path, got)
		require.Len(t, f.errors, 1, tc.name)
		require.Contains(t, f.errors[0], "pack differs from golden file "+path, tc.name)
		require.Contains(t, f.errors[0], tc.want, tc.name)
	}
}

// TestGoldenReadsOnlyARegularFile: a golden path that names a FIFO is an
// error saying so; reading it waited for a writer for ever.
func TestGoldenReadsOnlyARegularFile(t *testing.T) {
	before, _ := packs(t)
	path := filepath.Join(t.TempDir(), "fifo.json")
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		evpacktest.Golden(f, path, before)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		w, err := os.OpenFile(path, os.O_WRONLY, 0) // release the reader
		if err == nil {
			w.Close()
		}
		<-done
		t.Fatal("Golden blocked reading a FIFO")
	}
	require.Len(t, f.errors, 1)
	require.Contains(t, f.errors[0], path)
	require.Contains(t, f.errors[0], "not a regular file")
}

// TestUpdateRefusesANonBoolFlag: when something registered -update before
// evpacktest as another kind of flag, Update says so; it answered false
// whatever the flag said, so -update=... compared instead of writing.
func TestUpdateRefusesANonBoolFlag(t *testing.T) {
	t.Setenv(evpacktest.EnvUpdate, "")
	saved := flag.CommandLine
	t.Cleanup(func() { flag.CommandLine = saved })
	flag.CommandLine = flag.NewFlagSet("other", flag.ContinueOnError)
	flag.CommandLine.String("update", "", "someone else's")
	require.NoError(t, flag.CommandLine.Set("update", "all"))
	on, err := evpacktest.Update()
	require.False(t, on)
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "-update") && strings.Contains(err.Error(), "not a boolean"), err.Error())
	require.False(t, errors.Is(err, os.ErrNotExist))
}
