package storagetest

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// TestExhaustDescriptorsSurvivesAClose: a descriptor closed after use (as
// bleve's merger closes a segment file in the background) must not let the
// next open through. CI failed TestManifestNotDurableStopsServing that way
// when use filled every descriptor up to a limit of 512.
func TestExhaustDescriptorsSurvivesAClose(t *testing.T) {
	held, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	use, restore := ExhaustDescriptors(t)
	if err := use(); err != nil {
		t.Fatal(err)
	}
	held.Close()
	f, err := os.Open(os.DevNull)
	restore()
	if err == nil {
		f.Close()
		t.Fatal("an open after use and a close succeeded, want EMFILE")
	}
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("an open after use and a close = %v, want EMFILE", err)
	}
	f, err = os.Open(os.DevNull)
	if err != nil {
		t.Fatalf("an open after restore = %v, want it to succeed", err)
	}
	f.Close()
}
