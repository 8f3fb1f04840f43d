//go:build unix

package checkpoint

import (
	"os"
	"syscall"
)

// mapBody maps n bytes of f from off (a page boundary) for reading, and
// asks the kernel not to read ahead: a query touches a few rows here and
// there, and read-ahead would make the whole file resident.
func mapBody(f *os.File, off, n int64) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	b, err := syscall.Mmap(int(f.Fd()), off, int(n), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	_ = syscall.Madvise(b, syscall.MADV_RANDOM) // advice only: reads work without it
	return b, nil
}

// unmapBody releases a mapping mapBody made. Nothing may read b after.
func unmapBody(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return syscall.Munmap(b)
}

// mapScratch maps n bytes of anonymous memory for a Scratch section.
func mapScratch(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

// unmapScratch releases what mapScratch made.
func unmapScratch(b []byte) error { return syscall.Munmap(b) }

// releasePages drops b's pages, a part of a mapping mapBody made, from the
// process's resident set; they stay in the page cache, and a later read
// maps them again. Advice only: a kernel that refuses it keeps them.
func releasePages(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }
