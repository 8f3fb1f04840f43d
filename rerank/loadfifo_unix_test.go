//go:build unix

package rerank

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/evpack/evpack/internal/fsutil"
)

// TestLoadModelFromFIFO: a model path that names a FIFO is ErrModel at
// once; LoadModel waited for a writer for ever (an adversarial review,
// stop 80).
func TestLoadModelFromFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "model.evm")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadModel(fifo)
	if !errors.Is(err, ErrModel) || !errors.Is(err, fsutil.ErrNotRegular) {
		t.Fatalf("LoadModel(a FIFO) = %v, want ErrModel wrapping fsutil.ErrNotRegular", err)
	}
}
