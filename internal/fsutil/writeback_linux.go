package fsutil

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// writeBackEvery is how many bytes WriteTemp writes between write-backs.
// Linux writes a run back without flushing the disk's cache
// (sync_file_range), so a run can be small: a commit's fsync waits for one
// run of the file at most. At a million chunks, in temporary builds that
// printed them, the commits made while the checkpoint was written took 15
// to 47 ms with an fsync every 32 MB and 12 to 47 ms with a write-back
// every 2 MB; once the writer also gave way to the commits in flight, the
// slowest commit of its whole window took 36 to 39 ms (docs/benchmarks.md,
// "The checkpoint's writer gives way").
const writeBackEvery = 2 << 20

// writeBack writes bytes [off, off+n) of f to the disk and waits for them.
// It makes nothing durable: WriteTemp's fsync at the end does. Where the
// kernel or the file system has no sync_file_range (WSL1, some sandboxes:
// ENOSYS, EOPNOTSUPP), it fsyncs instead, as other systems do.
func writeBack(f *os.File, off int64, n int) error {
	return writeBackWith(f, off, n, unix.SyncFileRange)
}

// writeBackWith is writeBack with syncRange in place of sync_file_range:
// tests hand it one that fails as a kernel without it does.
func writeBackWith(f *os.File, off int64, n int, syncRange func(fd int, off, n int64, flags int) error) error {
	const flags = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
	err := syncRange(int(f.Fd()), off, int64(n), flags)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		err = f.Sync()
	}
	if err != nil {
		return &os.PathError{Op: "write back", Path: f.Name(), Err: err}
	}
	return nil
}
