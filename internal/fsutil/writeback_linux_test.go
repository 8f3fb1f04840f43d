package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWriteBackFallsBackToFsync: where sync_file_range is missing (ENOSYS,
// EOPNOTSUPP) writeBack fsyncs instead; any other failure is returned as
// a *os.PathError that names the file and wraps the errno.
func TestWriteBackFallsBackToFsync(t *testing.T) {
	const wantFlags = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
	missing := func(t *testing.T, errno error) func(int, int64, int64, int) error {
		return func(_ int, off, n int64, flags int) error {
			if off != 3 || n != 7 || flags != wantFlags {
				t.Errorf("sync_file_range asked for [%d, +%d) with flags %#x, want [3, +7) with %#x", off, n, flags, wantFlags)
			}
			return errno
		}
	}
	for _, tc := range []struct {
		name   string
		errno  error
		closed bool  // the file is closed first: fsync, if called, fails
		want   error // nil: no error
		reason string
	}{
		{"enosys", unix.ENOSYS, false, nil, "no sync_file_range: fsync, which succeeds"},
		{"eopnotsupp", unix.EOPNOTSUPP, false, nil, "the file system has none: fsync"},
		{"enosys, fsync fails", unix.ENOSYS, true, os.ErrClosed, "the fallback's fsync ran: its error is the one returned"},
		{"eio", unix.EIO, false, unix.EIO, "a failed write-back is not hidden by an fsync"},
		{"works", nil, true, nil, "sync_file_range succeeds: nothing else is asked (no fsync, which would fail)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write([]byte("some bytes")); err != nil {
				t.Fatal(err)
			}
			if tc.closed {
				f.Close()
			}
			err = writeBackWith(f, 3, 7, missing(t, tc.errno))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("%s: got %v, want no error", tc.reason, err)
				}
				return
			}
			var pe *os.PathError
			if !errors.As(err, &pe) || pe.Path != path || pe.Op != "write back" || !errors.Is(err, tc.want) {
				t.Fatalf("%s: got %#v, want a write back *os.PathError on %s wrapping %v", tc.reason, err, path, tc.want)
			}
		})
	}
}
