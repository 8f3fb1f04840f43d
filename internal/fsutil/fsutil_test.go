package fsutil

import (
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
