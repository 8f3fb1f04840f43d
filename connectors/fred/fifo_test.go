package fred_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/evpack/evpack/connectors/fred"
	"github.com/evpack/evpack/internal/fsutil"
)

// TestReadRefusesAFIFO: a series directory whose observations.json is a
// FIFO is an error naming it; reading it waited for a writer for ever.
func TestReadRefusesAFIFO(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(fixture(), "series.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "series.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "observations.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err = fred.New(retrieved, dir).Read(context.Background())
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
	if !errors.Is(err, fsutil.ErrNotRegular) || err.Error() != "fred: "+fifo+": not a regular file" {
		t.Fatalf("got %v, want fsutil.ErrNotRegular naming %s", err, fifo)
	}
}
