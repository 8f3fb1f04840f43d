package checkpoint

import (
	"context"
	"fmt"
	"os"
	"unsafe"
)

// checkAllRun is how many blocks CheckAll checks between two looks at its
// context and two releases of the pages it read: a MiB of the body.
const checkAllRun = 256

// CheckAll checks every block of the body a read has not checked yet, as
// reads check them (its sum, and that nothing in it points outside the
// file), so that a damaged block is found before a request reads it, and
// no later read pays for the check (a third of the time of a fresh
// process's first requests in a profile at a million chunks, though no
// benchmark moved: docs/benchmarks.md, issue 30, stop 69). It returns
// the first failure, which is then the table's error (Err), as when a
// read finds it, or ctx's error, wrapped, when ctx is done first (the
// blocks checked so far stay checked). Once the table is closed it checks
// nothing more.
//
// It reads the body through the mapping, and hands each MiB's pages back
// once checked (releasePages): the pages stay in the page cache, not in
// the process's resident set, which would otherwise hold the whole
// checkpoint where requests touch a few rows of it.
func (t *Table) CheckAll(ctx context.Context) error {
	secs := []struct {
		s    *section
		name string
	}{
		{&t.rows, "rows"}, {&t.byID, "ID order"}, {&t.ids, "chunk IDs"},
		{&t.numSec, "reranker terms"}, {&t.docs, "document table"}, {&t.keys, "document keys"},
	}
	for _, sec := range secs {
		s := sec.s
		for lo := 0; lo < len(s.done); lo += checkAllRun {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("checkpoint %s: check: %w", t.name, err)
			}
			hi := min(lo+checkAllRun, len(s.done))
			if err := t.checkRun(s, lo, hi); err != nil {
				t.failed(fmt.Errorf("%s: %w", sec.name, err))
				return t.Err()
			}
		}
	}
	return t.Err()
}

// checkRun checks blocks [lo, hi) of s and releases their pages, under
// the read lock. A closed table has nothing left to check: the state that
// read it is gone, and no read of it will follow.
func (t *Table) checkRun(s *section, lo, hi int) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return nil
	}
	from, to := lo*s.block, min(hi*s.block, s.length)
	if err := s.check(from, to-from); err != nil {
		return err
	}
	t.release(s.data[from:to])
	return nil
}

// release hands back the pages wholly inside b, a part of the body.
func (t *Table) release(b []byte) {
	if len(b) == 0 {
		return
	}
	pg := uintptr(os.Getpagesize()) // the mapping starts on one
	base := uintptr(unsafe.Pointer(unsafe.SliceData(t.body)))
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - base
	end := start + uintptr(len(b))
	first := (start + pg - 1) &^ (pg - 1)
	last := end &^ (pg - 1)
	if first < last {
		releasePages(t.body[first:last])
	}
}
