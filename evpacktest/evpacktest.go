// Package evpacktest pins evidence packs in golden files from a user's own
// tests, in one line:
//
//	func TestRetentionPack(t *testing.T) {
//		pack, err := eng.Query(ctx, req)
//		if err != nil {
//			t.Fatal(err)
//		}
//		evpacktest.Golden(t, "testdata/golden/retention.json", pack)
//	}
//
// Golden compares the pack's canonical bytes with the file. On a mismatch it
// reports what changed, field by field (a go-cmp diff of the two parsed
// packs: a citation that moved, a score, a trace line), and the two hashes.
//
// To record or rewrite golden files, run the tests with -update:
//
//	go test ./... -run TestRetentionPack -update
//
// or set EVPACK_UPDATE_GOLDEN=1 in the environment (useful where the flag
// cannot reach every package, as in go test ./... over packages that do not
// import evpacktest). Review the rewritten files in the diff before
// committing them: a golden file is a promise that citation 4 stays
// citation 4.
//
// The -update flag is the package's one piece of global state: importing
// evpacktest registers a bool flag named "update" on flag.CommandLine, as
// go test's flags are, unless something initialized earlier already
// registered one (then evpacktest reads that one). A test package that
// imports evpacktest must not define its own -update flag (the flag package
// would panic on the second definition); use [Update] to ask for the
// decision instead.
package evpacktest

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
)

// EnvUpdate is the environment variable that, set to a true value ("1",
// "true"), rewrites golden files as -update does.
const EnvUpdate = "EVPACK_UPDATE_GOLDEN"

// flagName is the flag registered on flag.CommandLine.
const flagName = "update"

func init() {
	if flag.Lookup(flagName) == nil {
		flag.Bool(flagName, false, "rewrite golden files (evpacktest; also "+EnvUpdate+"=1)")
	}
}

// Update reports whether golden files are to be rewritten: the -update flag
// is set, or EnvUpdate holds a true value. An EnvUpdate value that is not a
// boolean is an error naming it.
func Update() (bool, error) {
	if f := flag.Lookup(flagName); f != nil {
		g, ok := f.Value.(flag.Getter)
		if !ok {
			return false, fmt.Errorf("evpacktest: flag -%s=%q is not a boolean flag (registered before evpacktest's)", flagName, f.Value.String())
		}
		on, ok := g.Get().(bool)
		if !ok {
			return false, fmt.Errorf("evpacktest: flag -%s=%q is not a boolean flag (registered before evpacktest's)", flagName, f.Value.String())
		}
		if on {
			return true, nil
		}
	}
	v, ok := os.LookupEnv(EnvUpdate)
	if !ok || v == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("evpacktest: %s=%q: want a boolean (1, true, 0, false): %w", EnvUpdate, v, err)
	}
	return on, nil
}

// Golden checks that pack's canonical bytes equal the golden file at path
// (relative to the test's package directory). With -update or EnvUpdate it
// writes the file instead, creating its directory. A mismatch or a missing
// file is reported with t.Errorf, so one test can check several packs; the
// report names the file, both hashes, where the bytes first differ (byte,
// line, column), and a diff of the parsed packs (- golden, + got). A golden
// path that names something other than a regular file (a FIFO) is an error,
// not read. The update replaces the file whole (a temporary file renamed
// over it).
func Golden(t testing.TB, path string, pack *evidence.Pack) {
	t.Helper()
	if pack == nil {
		t.Errorf("evpacktest: golden %s: pack is nil", path)
		return
	}
	GoldenBytes(t, path, pack.Bytes())
}

// GoldenBytes is Golden for a pack's canonical bytes as a service holds
// them (a response body, a stored pack).
//
// Bytes that are not a pack (an empty body, an error page) are reported and
// never recorded: a golden of them would compare equal to them for ever.
func GoldenBytes(t testing.TB, path string, got []byte) {
	t.Helper()
	if _, err := evidence.Parse(got); err != nil {
		t.Errorf("evpacktest: golden %s: the bytes under test are not a pack: %v", path, err)
		return
	}
	update, err := Update()
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	if update {
		if err := write(path, got); err != nil {
			t.Errorf("evpacktest: %v", err)
			return
		}
		t.Logf("evpacktest: wrote %s (%s)", path, evidence.Sum(got))
		return
	}
	want, err := fsutil.ReadRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Errorf("evpacktest: golden file %s does not exist; run the test with -update (or %s=1) to record it", path, EnvUpdate)
		return
	}
	if err != nil {
		t.Errorf("evpacktest: read golden file: %v", err)
		return
	}
	if bytes.Equal(want, got) {
		return
	}
	t.Errorf("evpacktest: pack differs from golden file %s\ngolden %s\ngot    %s\n%s\n%s\nIf the change is intended, rerun with -update (or %s=1) and review the diff.",
		path, evidence.Sum(want), evidence.Sum(got), firstDifference(want, got), Diff(want, got), EnvUpdate)
}

// firstDifference says where the golden bytes want and got first differ:
// the byte offset, line and column (both from 1) in the golden, or that
// one of them is a prefix of the other.
func firstDifference(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	line := 1 + bytes.Count(want[:i], []byte("\n"))
	col := i - bytes.LastIndexByte(want[:i], '\n')
	switch {
	case i == len(want):
		return fmt.Sprintf("the golden ends at byte %d (line %d, column %d), where the pack goes on", i, line, col)
	case i == len(got):
		return fmt.Sprintf("the golden goes on after the pack's last byte, at byte %d (line %d, column %d)", i, line, col)
	}
	return fmt.Sprintf("first difference at byte %d (line %d, column %d): golden %q, got %q", i, line, col, want[i], got[i])
}

// Diff describes how two packs' canonical bytes differ, for a person: a
// go-cmp diff of the parsed packs (- want, + got), or, when either does not
// parse as a pack, why not. Equal bytes give "".
func Diff(want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	wp, err := evidence.Parse(want)
	if err != nil {
		return fmt.Sprintf("the golden bytes are not a pack: %v", err)
	}
	gp, err := evidence.Parse(got)
	if err != nil {
		return fmt.Sprintf("the bytes under test are not a pack: %v", err)
	}
	d := cmp.Diff(wp, gp, packOptions())
	if d == "" {
		// Same pack, other bytes: a non-canonical rendering (spacing, key
		// order) of one of them.
		return "the parsed packs are equal but the bytes are not: one of them is not in canonical form"
	}
	return "diff (-golden +got):\n" + d
}

// packOptions let go-cmp compare and print packs: dates as YYYY-MM-DD.
func packOptions() cmp.Option {
	return cmp.Comparer(func(a, b asof.Date) bool { return a == b })
}

// write replaces the file at path with b, creating its directory: b goes
// to a temporary file in that directory, synced, then renamed over path, so
// that the golden is the old bytes or the new ones, never part of either,
// and a file that shared the old one's inode (a hard link) keeps its bytes.
func write(path string, b []byte) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("write golden file %s: %w", path, err)
		}
	}()
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(b); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// The rename is durable once the directory is synced.
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
