package edgar

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

// TestReadRefusesAFIFO: a submissions file of the mirror that is a FIFO is
// an error naming it; reading it waited for a writer for ever.
func TestReadRefusesAFIFO(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "submissions"), 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(root, "submissions", "CIK0001234567.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err = New(root, retrieved).Read(context.Background())
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
	if !errors.Is(err, fsutil.ErrNotRegular) || err.Error() != "edgar: "+fifo+": not a regular file" {
		t.Fatalf("got %v, want fsutil.ErrNotRegular naming %s", err, fifo)
	}
}
