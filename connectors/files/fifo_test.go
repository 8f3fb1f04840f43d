package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/evpack/evpack/internal/fsutil"
)

// TestReadRefusesAFIFOInTheTree: a FIFO named like a document in the tree
// (notes.txt) is an error naming it; reading it waited for a writer for
// ever, where no one had named it.
func TestReadRefusesAFIFOInTheTree(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("---\nsource_url: https://x\n---\nHello."), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(root, "notes.txt")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err = New(root).Read(context.Background())
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		if w, werr := os.OpenFile(fifo, os.O_WRONLY, 0); werr == nil { // release the reader
			w.Close()
		}
		<-done
		t.Fatal("Read blocked on a FIFO")
	}
	if !errors.Is(err, fsutil.ErrNotRegular) || err.Error() != "files: "+fifo+": not a regular file" {
		t.Fatalf("got %v, want fsutil.ErrNotRegular naming %s", err, fifo)
	}
}
