//go:build !linux

package fsutil

import "os"

// writeBackEvery is how many bytes WriteTemp writes between write-backs.
// Without Linux's sync_file_range a write-back is an fsync, which flushes
// the disk's cache too, so runs are larger.
const writeBackEvery = 32 << 20

// writeBack writes f to the disk and waits (an fsync): off and n are the
// run written since the last, which sync_file_range would name.
func writeBack(f *os.File, _ int64, _ int) error { return f.Sync() }
