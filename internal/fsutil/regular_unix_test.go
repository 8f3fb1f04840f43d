//go:build unix

package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadRegular: a regular file reads whole; a FIFO, a directory and a
// missing path fail at once, a FIFO without waiting for a writer.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "model")
	if err := os.WriteFile(file, []byte("weights"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadRegular(file); err != nil || string(got) != "weights" {
		t.Fatalf("ReadRegular(file) = %q, %v", got, err)
	}
	for _, tc := range []struct{ name, path string }{{"a FIFO", fifo}, {"a directory", dir}} {
		if _, err := ReadRegular(tc.path); !errors.Is(err, ErrNotRegular) {
			t.Errorf("%s: %v, want ErrNotRegular", tc.name, err)
		}
	}
	if _, err := ReadRegular(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing path: %v, want os.ErrNotExist", err)
	}
}
