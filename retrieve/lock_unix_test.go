//go:build unix

package retrieve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holdLock takes how's flock (syscall.LOCK_EX or LOCK_SH) on the root.bolt
// of partition dir, as another holder would (a tool that opened the
// partition directly): flock locks belong to an open file, so a second
// open in this process contends with bleve's. It returns the release.
func holdLock(t *testing.T, dir string, how int) (release func()) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "store", "root.bolt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		t.Fatal(err)
	}
	released := false
	release = func() {
		if !released {
			released = true
			f.Close() // closing the file lets go of its lock
		}
	}
	t.Cleanup(release)
	return release
}

// TestPartitionLockedByAnotherHolder: a partition whose files another
// holder keeps locked fails the call that opens it after LockWait with
// ErrPartitionLocked naming it, instead of waiting for ever (bbolt's own
// default), and the next call, once the holder lets go, opens it: the
// error is not kept as a damaged partition's is. A write that meets a
// holder sharing the lock it needs alone, or one that takes the lock as
// the write closes its read-only handle, fails before any batch and
// leaves the index usable.
func TestPartitionLockedByAnotherHolder(t *testing.T) {
	ctx := context.Background()
	tp := makeTwoParts(t)
	const wait = 20 * time.Millisecond
	opened := func(t *testing.T, dir string) *Lexical {
		t.Helper()
		l, err := OpenLexical(dir, LexicalOptions{Deferred: true, LockWait: wait})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		if _, err := l.Adopt(tp.cat, 1, nil); err != nil {
			t.Fatal(err)
		}
		return l
	}
	wantLocked := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrPartitionLocked) || !strings.Contains(err.Error(), tp.janDir) {
			t.Fatalf("%s: got %v, want ErrPartitionLocked naming %s", what, err, tp.janDir)
		}
	}
	count := func(t *testing.T, l *Lexical, want uint64) {
		t.Helper()
		if n, err := l.DocCount(); err != nil || n != want {
			t.Fatalf("DocCount: %d, %v; want %d", n, err, want)
		}
	}

	t.Run("a read", func(t *testing.T) {
		dir := tp.copyOf(t)
		release := holdLock(t, filepath.Join(dir, tp.janDir), syscall.LOCK_EX)
		l := opened(t, dir)
		_, err := l.DocCount()
		wantLocked(t, "a read while another holds the lock", err)
		release()
		count(t, l, 2)
	})

	t.Run("a write across both partitions", func(t *testing.T) {
		dir := tp.copyOf(t)
		release := holdLock(t, filepath.Join(dir, tp.janDir), syscall.LOCK_EX)
		l := opened(t, dir)
		c, d := tp.doc("c", tp.jan.AddDate(0, 0, 1), 2), tp.doc("d", time.Date(2020, 6, 6, 0, 0, 0, 0, time.UTC), 2)
		wantLocked(t, "a write while another holds one partition's lock", l.Index(ctx, []Doc{c, d}))
		// Both partitions were opened side by side; the locked one's open
		// ran once, not again for its error (each run waits LockWait).
		var runs int64
		l.pmu.RLock()
		for _, p := range l.parts {
			if p.key.dirName() == tp.janDir {
				runs = p.lazy.locked.Load()
			}
		}
		l.pmu.RUnlock()
		if runs != 1 {
			t.Fatalf("the locked partition's open ran %d times in one write, want 1", runs)
		}
		release()
		count(t, l, 2) // nothing written: the checks come before any batch
		if err := l.Index(ctx, []Doc{c, d}); err != nil {
			t.Fatal(err)
		}
		count(t, l, 4)
	})

	t.Run("Open without a catalog", func(t *testing.T) {
		dir := tp.copyOf(t)
		release := holdLock(t, filepath.Join(dir, tp.janDir), syscall.LOCK_EX)
		_, err := OpenLexical(dir, LexicalOptions{LockWait: -1})
		wantLocked(t, "Open, not waiting", err)
		release()
		l, err := OpenLexical(dir, LexicalOptions{LockWait: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		count(t, l, 2)
	})

	t.Run("a holder that takes the lock as a write closes it", func(t *testing.T) {
		// Another process waiting to open the partition for writing gets
		// the lock the moment the write closes its read-only handle: both
		// the write's opens then wait in vain. The partition is closed,
		// not the index failed, and opened afresh, and checked, by the
		// next call once the holder lets go.
		for _, withCatalog := range []bool{true, false} {
			dir := tp.copyOf(t)
			var l *Lexical
			if withCatalog {
				l = opened(t, dir)
			} else { // every partition opened at Open: checked again by its count alone
				var err error
				if l, err = OpenLexical(dir, LexicalOptions{LockWait: wait}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
			}
			count(t, l, 2)
			var release func()
			l.Hooks.ReadOnlyClosed = func(part string) {
				if part == tp.janDir {
					release = holdLock(t, filepath.Join(dir, part), syscall.LOCK_EX)
				}
			}
			c := tp.doc("c", tp.jan.AddDate(0, 0, 1), 2)
			wantLocked(t, "a write whose partition another took as it closed it", l.Index(ctx, []Doc{c}))
			l.Hooks.ReadOnlyClosed = nil
			_, err := l.DocCount()
			wantLocked(t, "a read while the holder keeps it", err)
			release()
			count(t, l, 2)
			if err := l.Index(ctx, []Doc{c}); err != nil {
				t.Fatalf("with a catalog %v: %v", withCatalog, err)
			}
			count(t, l, 3)
		}
	})

	t.Run("a write that needs the lock alone", func(t *testing.T) {
		dir := tp.copyOf(t)
		l := opened(t, dir)
		count(t, l, 2) // both partitions open, read-only
		release := holdLock(t, filepath.Join(dir, tp.janDir), syscall.LOCK_SH)
		c := tp.doc("c", tp.jan.AddDate(0, 0, 1), 2)
		wantLocked(t, "a write while another reads the partition", l.Index(ctx, []Doc{c}))
		count(t, l, 2) // read-only again, and not failed
		release()
		if err := l.Index(ctx, []Doc{c}); err != nil {
			t.Fatal(err)
		}
		count(t, l, 3)
	})
}
