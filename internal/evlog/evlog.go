// Package evlog is the seam between an index and the history it is built
// from: a log of sealed batch entries, one per generation, chained by
// checksum and appended by one fenced writer at a time.
//
// Why a package of its own: an index is a deterministic function of its log,
// so whoever holds the log (a directory today, PostgreSQL when one machine
// is not enough) can rebuild the index byte for byte, and a replica can apply
// the same entries a writer applied. Every implementation must behave the
// same way at the edges (a gap, a fork, a broken chain, a stale writer), so
// the rules live here and package logtest checks them against any Log.
//
// Entry points: [Log] (Head, Append, Read, Wait), [Fence] (a
// writer's lease and its epoch), [Memory] (the reference implementation).
//
// Invariant: entries are numbered 1, 2, 3, ... without gaps; entry g's Prev
// is entry g-1's Sum ("" for entry 1); commit times never go backwards.
//
// Invariant: Sum is the checksum of the entry's body as committed. A purge
// entry may replace the bodies of earlier entries (Entry.Redactions, applied
// in the same step as its append), never their Sum, Prev, commit time or
// generation: the chain stays checkable and shows which entries were
// redacted, and by which later generation.
//
// Invariant: an append whose epoch is not the current writer's, or whose
// writer's lease has expired, changes nothing.
package evlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Sentinel errors. Each is returned wrapped with the generation (and, for
// the fence, the holder) it concerns.
var (
	// ErrGap: an append whose generation is beyond head+1, or a read from a
	// generation the log does not hold.
	ErrGap = errors.New("evlog: generation out of sequence")
	// ErrFork: an append of a generation the log already holds. Two writers
	// cannot both commit generation g: the second is refused whole.
	ErrFork = errors.New("evlog: generation already appended")
	// ErrChain: an append whose Prev is not the head's Sum, or an entry
	// whose stored chain does not link.
	ErrChain = errors.New("evlog: chain mismatch")
	// ErrStaleEpoch: an append or renewal under an epoch that is no longer
	// the writer's (another writer took the lease, or it expired).
	ErrStaleEpoch = errors.New("evlog: stale writer epoch")
	// ErrLeaseHeld: another writer holds an unexpired lease.
	ErrLeaseHeld = errors.New("evlog: writer lease held by another")
	// ErrTimeBackwards: an append whose commit time is before the head's.
	ErrTimeBackwards = errors.New("evlog: commit time before the head's")
	// ErrBadEntry: an entry that is not well formed (no body, no sum, a
	// generation below 1, unsorted tenants).
	ErrBadEntry = errors.New("evlog: bad entry")
)

// Entry is one committed generation: its sealed batch bytes and what links
// it to the one before.
type Entry struct {
	// Generation numbers the entry: 1 for the first.
	Generation int64
	// Prev is the Sum of entry Generation-1, "" for the first.
	Prev string
	// Sum is the checksum of Body as committed. It never changes.
	Sum string
	// CommittedAt is the commit time the writer chose when it prepared the
	// entry (UTC, whole seconds): applying the same entry twice gives the
	// same generation.
	CommittedAt time.Time
	// Clamped says the writer's clock was behind the head's commit time and
	// CommittedAt was raised to it.
	Clamped bool
	// Epoch is the epoch of the writer that appended it.
	Epoch int64
	// Tenants names the tenants whose chunks or facts the entry holds,
	// sorted and distinct ("" for the shared corpus).
	Tenants []string
	// Body is the sealed batch file: as committed, or as the purge named by
	// RedactedBy rewrote it.
	Body []byte
	// RedactedBy is the generation of the purge that last rewrote Body, 0
	// when Body is as committed. Set by the log, never by an appender.
	RedactedBy int64
	// Redactions, on an append, are the new bodies of earlier entries that
	// this entry (a purge) rewrites: applied atomically with the append, or
	// not at all. Read leaves it empty.
	Redactions []Redaction
}

// Redaction is the body that replaces an earlier entry's.
type Redaction struct {
	Generation int64
	Body       []byte
}

// Head is the newest entry's place in the log; the zero Head is an empty log.
type Head struct {
	Generation  int64
	Sum         string
	CommittedAt time.Time
}

// Log is an append-only sequence of entries with one writer at a time.
//
// Contract (checked by logtest.Run): Append is atomic (an entry is there
// whole or not at all) and checks, in one step, the epoch, the generation
// (head+1), the chain (Prev == head's Sum) and the commit time (not before
// the head's); an acknowledged Append is durable as the implementation
// documents. Read yields entries in generation order. Wait returns once the
// head is past a generation. A redaction keeps every field of the entry it
// rewrites but Body and RedactedBy. Implementations are safe for concurrent
// use.
type Log interface {
	// Head returns the newest entry's place.
	Head(ctx context.Context) (Head, error)
	// Append adds e as the next generation under e.Epoch.
	Append(ctx context.Context, e Entry) error
	// Read calls fn with each entry from generation from (≥ 1) to the head
	// as of the call, in order, and stops at fn's first error.
	Read(ctx context.Context, from int64, fn func(Entry) error) error
	// Wait blocks until the head's generation is greater than after, and
	// returns the head, or ctx's error.
	Wait(ctx context.Context, after int64) (Head, error)
}

// Fence hands out the writer's lease. A writer calls Acquire, appends under
// the epoch it returns, and calls Renew before the lease runs out; a writer
// whose lease lapsed or was taken gets ErrStaleEpoch from Renew and Append.
type Fence interface {
	// Acquire takes the lease for holder when it is free, expired or
	// already holder's, and returns a new, higher epoch, which fences every
	// earlier one: holder's too, since two processes may share a holder's
	// name (a restarted one beside the one it replaces), and two writers
	// under one epoch would both append. A live writer keeps its epoch by
	// Renew, not Acquire.
	Acquire(ctx context.Context, holder string, lease time.Duration) (int64, error)
	// Renew extends the lease of epoch by lease from now.
	Renew(ctx context.Context, epoch int64, lease time.Duration) error
	// Release gives the lease of epoch up, so another writer need not wait
	// for it to expire.
	Release(ctx context.Context, epoch int64) error
}

// Check returns nil when e is well formed as an append after head:
// generation head+1, linked to head's sum, not earlier than head. It is the
// check every implementation makes inside its append.
func Check(head Head, e Entry) error {
	switch {
	case e.Generation < 1 || e.Sum == "" || len(e.Body) == 0:
		return fmt.Errorf("%w: generation %d: needs a generation ≥ 1, a sum and a body", ErrBadEntry, e.Generation)
	case !slices.IsSorted(e.Tenants) || len(slices.Compact(slices.Clone(e.Tenants))) != len(e.Tenants):
		return fmt.Errorf("%w: generation %d: tenants %q not sorted and distinct", ErrBadEntry, e.Generation, e.Tenants)
	case e.Generation <= head.Generation:
		return fmt.Errorf("%w: generation %d (head %d)", ErrFork, e.Generation, head.Generation)
	case e.Generation > head.Generation+1:
		return fmt.Errorf("%w: generation %d after head %d", ErrGap, e.Generation, head.Generation)
	case e.Prev != head.Sum:
		return fmt.Errorf("%w: generation %d names prev %q, head %d is %q", ErrChain, e.Generation, e.Prev, head.Generation, head.Sum)
	case e.RedactedBy != 0:
		return fmt.Errorf("%w: generation %d: RedactedBy is the log's to set", ErrBadEntry, e.Generation)
	case e.CommittedAt.Before(head.CommittedAt):
		return fmt.Errorf("%w: generation %d at %s, head %d at %s", ErrTimeBackwards, e.Generation,
			e.CommittedAt.UTC().Format(time.RFC3339), head.Generation, head.CommittedAt.UTC().Format(time.RFC3339))
	}
	for _, r := range e.Redactions {
		if r.Generation < 1 || r.Generation >= e.Generation || len(r.Body) == 0 {
			return fmt.Errorf("%w: generation %d redacts generation %d: only an earlier entry, with a body", ErrBadEntry, e.Generation, r.Generation)
		}
	}
	return nil
}

// CommitTime returns the commit time a writer gives its next entry: now in
// UTC whole seconds, raised to the head's when the writer's clock is behind
// (clamped then reports it). Commit times so never go backwards, whichever
// writer's clock is slow.
func CommitTime(head Head, now time.Time) (at time.Time, clamped bool) {
	at = now.UTC().Truncate(time.Second)
	if at.Before(head.CommittedAt) {
		return head.CommittedAt.UTC(), true
	}
	return at, false
}
