package resident

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// TestKiB: a file of 64 pages mapped afresh holds none resident; after
// every page is read, all 64; handed back, none again. An address inside
// the mapping is not where a mapping starts: not found.
func TestKiB(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/smaps is Linux's")
	}
	page := syscall.Getpagesize()
	const pages = 64
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, pages*page), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := syscall.Mmap(int(f.Fd()), 0, pages*page, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	want := func(what string, kib int) {
		t.Helper()
		got, ok, err := KiB(b)
		if err != nil || !ok || got != kib {
			t.Fatalf("%s: %d KiB resident (found %v, %v), want %d", what, got, ok, err, kib)
		}
	}
	want("fresh", 0)
	sum := 0
	for i := range pages {
		sum += int(b[i*page])
	}
	want("every page read", pages*page>>10+sum) // sum is 0: the reads are kept
	if err := syscall.Madvise(b, syscall.MADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	want("handed back", 0)
	if _, ok, err := KiB(b[page:]); ok || err != nil {
		t.Fatalf("a mapping found starting inside another (%v, %v)", ok, err)
	}
}
