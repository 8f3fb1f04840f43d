package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteAtomicParts: the file is the parts one after the other (empty
// parts and none at all included), it replaces the file before it, and no
// temp file is left beside it.
func TestWriteAtomicParts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.bin")
	for _, c := range []struct {
		name  string
		parts [][]byte
		want  string
	}{
		{"one part, as before parts", [][]byte{[]byte("whole")}, "whole"},
		{"parts in order, empty ones among them", [][]byte{[]byte("head"), nil, []byte("-body-"), {}, []byte("pad")}, "head-body-pad"},
		{"no part: an empty file", nil, ""},
	} {
		if err := WriteAtomic(path, c.parts...); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != c.want {
			t.Fatalf("%s: file holds %q (%v), want %q", c.name, got, err, c.want)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
			t.Fatalf("%s: mode %v (%v), want 0644", c.name, fi.Mode(), err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) != 1 {
			t.Fatalf("%s: the directory holds %v (%v), want the file alone", c.name, entries, err)
		}
	}
}

// TestWriteAtomicFailureLeavesNothing: a write that cannot be made (its
// directory is gone) returns an error naming the directory, and makes none.
func TestWriteAtomicFailureLeavesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "f.bin")
	err := WriteAtomic(path, []byte("a"), []byte("b"))
	if err == nil || !strings.Contains(err.Error(), filepath.Dir(path)) {
		t.Fatalf("a write into a missing directory: %v, want an error naming %s", err, filepath.Dir(path))
	}
	if _, statErr := os.Stat(filepath.Dir(path)); !os.IsNotExist(statErr) {
		t.Fatalf("the missing directory exists now: %v", statErr)
	}
}

// TestTempFiles: the temp file WriteAtomic makes is what IsTemp names, a
// write stopped before its rename (as a kill -9 there would) leaves it, and
// RemoveTemps removes it and nothing else of the directory.
func TestTempFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "00000001.jsonl")
	var tmp string
	stop := os.ErrDeadlineExceeded
	err := WriteAtomicHooked(path, func(name string) error {
		tmp = name
		// what a crash at this point leaves: a copy, as the error path removes its own
		raw, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(name+"0", raw, 0o644); err != nil {
			return err
		}
		return stop
	}, []byte("secret text\n"))
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("a write failed before its rename: %v, want an error naming %s", err, path)
	}
	if !IsTemp(filepath.Base(tmp)) || !strings.HasPrefix(filepath.Base(tmp), ".00000001.jsonl.tmp-") {
		t.Fatalf("temp file %q is not named as IsTemp expects", tmp)
	}
	for name, want := range map[string]bool{
		".MANIFEST.json.tmp-123": true, ".a.tmp-0": true, ".00000002.analysis.tmp-99": true,
		"MANIFEST.json": false, ".lexical.tmp-": false, ".x.tmp-12a": false, "a.tmp-1": false, ".tmp-1": false,
	} {
		if IsTemp(name) != want {
			t.Errorf("IsTemp(%q) = %v, want %v", name, !want, want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "keep.jsonl"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".dir.tmp-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	gone, err := RemoveTemps(dir)
	if err != nil || len(gone) != 1 || gone[0] != filepath.Base(tmp)+"0" {
		t.Fatalf("RemoveTemps removed %q (%v), want the left temp file alone", gone, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if strings.Join(left, ",") != ".dir.tmp-1,keep.jsonl" {
		t.Fatalf("the directory holds %q, want the directory and the kept file", left)
	}
}

// TestWriteTempRuns: a file of several write-back runs, in parts that
// straddle them, holds the parts in order; stop is asked once before each
// run, and once it says true the write gives up and leaves no file.
func TestWriteTempRuns(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.bin")
	// 2.5 runs, cut where no run ends.
	whole := make([]byte, 5*writeBackEvery/2)
	for i := range whole {
		whole[i] = byte(i * 7 / 3)
	}
	parts := [][]byte{whole[:writeBackEvery/3], whole[writeBackEvery/3 : 2*writeBackEvery+1], whole[2*writeBackEvery+1:]}
	const runs = 3
	asked := 0
	tmp, err := WriteTemp(path, func() bool { asked++; return false }, parts...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(tmp)
	if err != nil || string(got) != string(whole) {
		t.Fatalf("the temp file holds %d bytes (%v), not the %d of the parts in order", len(got), err, len(whole))
	}
	if asked != runs {
		t.Fatalf("stop was asked %d times, want once before each of the %d runs", asked, runs)
	}
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}

	asked = 0
	_, err = WriteTemp(path, func() bool { asked++; return asked == runs }, parts...)
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("stop said true before the last run: err %v, want ErrStopped", err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Fatalf("a stopped write left %v (%v), want nothing", entries, err)
	}
}
