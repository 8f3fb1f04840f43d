package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/evlog"
	"github.com/evpack/evpack/internal/fsutil"
)

// The file log keeps an evlog.Log in one directory (an index's chunks/):
//
//	NNNNNNNN.jsonl            entry N's body, byte for byte: the batch file today's index stores under that name
//	NNNNNNNN.pPPPPPPPP.jsonl  entry N's body as purge P rewrote it (RedactedName), as today's purges name it
//	NNNNNNNN.entry.json       entry N's record (LogEntryName, LogEntryFormat): what the body does not carry
//	WRITER                    the writer's lease (WriterName, LogWriterFormat)
//	LOG.LOCK                  flock()ed while an append or a lease change runs (LogLockName)
//
// Why a record beside each body rather than one file for the whole log:
// the bodies must stay today's batch files, same names, same bytes, and an
// append must be one rename. The record's rename is the commit point of an
// append: its body (and a purge's rewritten bodies) are written and synced
// first, so a record names only files that are whole. RedactedBy is not
// stored in the redacted entry's record but read from the purge's own: a
// purge is then one rename too, and no record is ever rewritten.
//
// Why a purge writes RedactedName files instead of replacing NNNNNNNN.jsonl:
// that is the name today's manifest gives a rewritten batch (Batch.Chain),
// and writing a new name keeps the old body readable until the purge's
// record commits. Once it has, the old body (which holds the purged text) is
// removed; a crash before that removal is rolled forward by the next
// OpenLog, Head or Read of any FileLog on the directory.

// Stored formats of the file log.
const (
	// LogEntryFormat is the format of an entry's record (LogEntryName).
	LogEntryFormat = "evpack-log-entry/1"
	// LogWriterFormat is the format of the writer's lease (WriterName).
	LogWriterFormat = "evpack-log-writer/1"
)

// Names in a log directory.
const (
	// WriterName is the file that holds the writer's lease.
	WriterName = "WRITER"
	// LogLockName is the file whose flock serializes appends and lease
	// changes across processes. It is not the index's LOCK: the log lock is
	// held for one append, the index's for as long as the index is open.
	LogLockName = "LOG.LOCK"
)

// LogEntryName is the file name of entry gen's record.
func LogEntryName(gen int64) string { return fmt.Sprintf("%08d.entry.json", gen) }

// parseLogEntryName returns the generation whose record name is, or false.
func parseLogEntryName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, ".entry.json")
	if !ok {
		return 0, false
	}
	g, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || g < 1 || LogEntryName(g) != name {
		return 0, false
	}
	return g, true
}

// parseRedactedName returns the generations a RedactedName names, or false.
func parseRedactedName(name string) (gen, purge int64, ok bool) {
	a, rest, found := strings.Cut(name, ".p")
	b, isBatch := strings.CutSuffix(rest, ".jsonl")
	if !found || !isBatch {
		return 0, 0, false
	}
	gen, err1 := strconv.ParseInt(a, 10, 64)
	purge, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || gen < 1 || purge < 1 || RedactedName(gen, purge) != name {
		return 0, 0, false
	}
	return gen, purge, true
}

// DefaultLogLockWait is how long an append or a lease change waits for
// another process's to finish when LogOptions.LockWait is 0.
const DefaultLogLockWait = 30 * time.Second

// DefaultLogPoll is how often Wait re-reads the directory, when
// LogOptions.Poll is 0, for an append made by another process.
const DefaultLogPoll = 200 * time.Millisecond

// LogOptions configure OpenLog. The zero value is the default.
type LogOptions struct {
	// Now is the lease clock (time.Now when nil). Every process on the
	// directory must share it: on one machine they do; a directory shared
	// between machines would need their clocks in step, which is why a
	// log that outlives its machine is pglog's, with the server's clock.
	Now func() time.Time
	// Poll bounds how long Wait takes to see another process's append:
	// appends through this FileLog wake it at once. 0 means DefaultLogPoll.
	Poll time.Duration
	// LockWait bounds the wait for LOG.LOCK (and the context's deadline
	// too): 0 means DefaultLogLockWait. The lock is polled (lockFile), not
	// queued, so a process appending back to back can keep another
	// waiting; under a lease only one process appends.
	LockWait time.Duration
}

// logHooks stop an append at a chosen point, as a crash would, for tests.
// An error a hook returns ends the append there with nothing undone.
type logHooks struct {
	afterBodies func() error // the bodies are in place, the record is not
	afterRecord func() error // the record (the commit point) is in place, the old bodies of a purge not yet removed
}

// FileLog is an evlog.Log and evlog.Fence kept in a directory: the file
// implementation of the log whose entries are today's batch files. It is
// safe for concurrent use, and any number of FileLogs (in any number of
// processes on one machine) may share a directory.
//
// Invariant: entry g exists iff its record LogEntryName(g) exists; the
// records are 1..head without a gap, each one's prev is the one before's
// sum, and the body it names hashes to the checksum it records (a body that
// does not is ErrCorrupt naming the file, never returned).
//
// Invariant: a body without a record (a crash between the two writes) is
// not an entry: the head is unchanged and the next append of that
// generation writes over it.
//
// Invariant: appends and lease changes run under LOG.LOCK, and an append
// checks the lease and evlog.Check against the head read from the
// directory under it; so of any two appends of one generation, from any
// processes, one lands and the other is ErrFork.
type FileLog struct {
	dir      string
	now      func() time.Time
	poll     time.Duration
	lockWait time.Duration
	hooks    logHooks

	amu sync.Mutex // serializes this FileLog's appends and lease changes: the flock is then never contended in-process

	mu        sync.Mutex        // guards what follows
	recs      []*logRecord      // entries 1..head, as read from their records
	purges    map[int64][]int64 // redacted generation → the purges that rewrote it, in order
	unsettled []int64           // purges whose replaced bodies are not yet known removed
	grew      chan struct{}     // closed and replaced whenever recs grows
}

// logRecord is an entry's record as stored (LogEntryFormat), sealed with
// fsutil.SealText.
type logRecord struct {
	Format     string `json:"format"`
	Generation int64  `json:"generation"`
	Prev       string `json:"prev"`
	Sum        string `json:"sum"`
	// Body is the BLAKE3 of BatchName(Generation) as committed. It is not
	// Sum: Sum is whatever chain checksum the writer gives (in an index,
	// the same value), Body is what this log checks the file against.
	Body        string            `json:"body"`
	CommittedAt string            `json:"committed_at"` // RFC 3339 with nanoseconds, UTC
	Clamped     bool              `json:"clamped"`
	Epoch       int64             `json:"epoch"`
	Tenants     []string          `json:"tenants"`
	Redacts     []logRedactRecord `json:"redacts,omitempty"` // a purge's rewrites, by generation

	at time.Time // CommittedAt, parsed
}

// logRedactRecord names one body a purge rewrote: RedactedName(Generation,
// the purge) with checksum Body.
type logRedactRecord struct {
	Generation int64  `json:"generation"`
	Body       string `json:"body"`
}

// writerRecord is the WRITER file (LogWriterFormat), sealed with
// fsutil.SealText. No file is epoch 0: no writer yet.
type writerRecord struct {
	Format  string `json:"format"`
	Epoch   int64  `json:"epoch"`
	Holder  string `json:"holder"`
	Expires string `json:"expires"` // RFC 3339 with nanoseconds, UTC

	expires time.Time
}

// OpenLog opens the log in dir, creating the directory when it is missing.
// Under the log's lock it removes the temp files of interrupted writes and
// the rewritten bodies of a purge that never committed, reads every record
// (checking each one's seal and chain), and rolls forward a committed purge
// whose replaced bodies a crash left in place.
//
// A record past a missing one, a record that fails its seal or its chain,
// is ErrCorrupt naming the file.
func OpenLog(dir string, opts LogOptions) (*FileLog, error) {
	l := &FileLog{dir: dir, now: opts.Now, poll: opts.Poll, lockWait: opts.LockWait, purges: map[int64][]int64{}, grew: make(chan struct{})}
	if l.now == nil {
		l.now = time.Now
	}
	if l.poll <= 0 {
		l.poll = DefaultLogPoll
	}
	if l.lockWait <= 0 {
		l.lockWait = DefaultLogLockWait
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := mkdirDurable(dir); err != nil {
			return nil, fmt.Errorf("storage: log %s: %w", dir, err)
		}
	}
	unlock, err := l.lock(context.Background())
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := fsutil.RemoveTemps(dir); err != nil {
		return nil, fmt.Errorf("storage: log %s: %w", dir, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refreshLocked(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: log %s: %w", dir, err)
	}
	head := int64(len(l.recs))
	var orphans []string
	for _, e := range entries {
		if g, ok := parseLogEntryName(e.Name()); ok && g > head {
			return nil, fmt.Errorf("%w: %s: a record past the log's head %d (%s is missing)",
				ErrCorrupt, filepath.Join(dir, e.Name()), head, LogEntryName(head+1))
		}
		// A purge that never committed wrote these; nothing names them.
		if _, p, ok := parseRedactedName(e.Name()); ok && p > head {
			orphans = append(orphans, e.Name())
		}
	}
	if err := l.remove(orphans); err != nil {
		return nil, err
	}
	return l, nil
}

// Dir returns the log's directory.
func (l *FileLog) Dir() string { return l.dir }

// lock takes LOG.LOCK, waiting at most the lock wait or ctx's deadline,
// whichever is sooner, and returns its release.
func (l *FileLog) lock(ctx context.Context) (func(), error) {
	wait := l.lockWait
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	f, err := lockFile(filepath.Join(l.dir, LogLockName), max(wait, 0))
	if err != nil {
		return nil, err
	}
	return func() { releaseLock(f) }, nil
}

// remove removes names (in the log's directory) that may already be gone,
// then makes their removal durable.
func (l *FileLog) remove(names []string) error {
	gone := false
	for _, n := range names {
		err := os.Remove(filepath.Join(l.dir, n))
		switch {
		case err == nil:
			gone = true
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("storage: log: %w", err)
		}
	}
	if gone {
		if err := fsutil.SyncDir(l.dir); err != nil {
			return fmt.Errorf("storage: log: %w", err)
		}
	}
	return nil
}

// refreshLocked reads the records appended since it last looked (by this
// FileLog or any other), then rolls forward every purge not yet settled.
// l.mu is held.
func (l *FileLog) refreshLocked() error {
	grown := false
	for {
		g := int64(len(l.recs)) + 1
		name := filepath.Join(l.dir, LogEntryName(g))
		raw, err := os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		r, err := decodeLogRecord(name, raw, g)
		if err != nil {
			return err
		}
		if prev := l.headLocked(); r.Prev != prev.Sum {
			return fmt.Errorf("%w: %s names prev %q, entry %d's sum is %q: %w", ErrCorrupt, name, r.Prev, prev.Generation, prev.Sum, evlog.ErrChain)
		} else if r.at.Before(prev.CommittedAt) {
			return fmt.Errorf("%w: %s: committed at %s, before entry %d's %s: %w", ErrCorrupt, name, r.CommittedAt,
				prev.Generation, prev.CommittedAt.Format(time.RFC3339Nano), evlog.ErrTimeBackwards)
		}
		l.recs = append(l.recs, r)
		for _, x := range r.Redacts {
			l.purges[x.Generation] = append(l.purges[x.Generation], g)
		}
		if len(r.Redacts) > 0 {
			l.unsettled = append(l.unsettled, g)
		}
		grown = true
	}
	if grown {
		close(l.grew)
		l.grew = make(chan struct{})
	}
	return l.settleLocked()
}

// settleLocked removes the bodies that the unsettled purges replaced: the
// roll forward of a purge whose record committed. Until it succeeds the
// purge stays unsettled and every Head and Read tries again.
func (l *FileLog) settleLocked() error {
	for len(l.unsettled) > 0 {
		p := l.unsettled[0]
		var old []string
		for _, x := range l.recs[p-1].Redacts {
			old = append(old, BatchName(x.Generation))
			for _, q := range l.purges[x.Generation] {
				if q < p {
					old = append(old, RedactedName(x.Generation, q))
				}
			}
		}
		if err := l.remove(old); err != nil {
			return fmt.Errorf("roll forward the purge of generation %d: %w", p, err)
		}
		l.unsettled = l.unsettled[1:]
	}
	return nil
}

func (l *FileLog) headLocked() evlog.Head {
	if len(l.recs) == 0 {
		return evlog.Head{}
	}
	r := l.recs[len(l.recs)-1]
	return evlog.Head{Generation: r.Generation, Sum: r.Sum, CommittedAt: r.at}
}

// Head implements evlog.Log: the newest record in the directory.
func (l *FileLog) Head(ctx context.Context) (evlog.Head, error) {
	if err := ctx.Err(); err != nil {
		return evlog.Head{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refreshLocked(); err != nil {
		return evlog.Head{}, err
	}
	return l.headLocked(), nil
}

// Append implements evlog.Log. It is acknowledged once the entry's record
// is renamed into place and the directory fsynced: durable on the local
// disk. The order: under LOG.LOCK, check the lease and evlog.Check against
// the directory's head; write each rewritten body of a purge
// (RedactedName(g, e.Generation)) and the body (BatchName), each to a temp
// file, fsynced, renamed, the directory fsynced; then the record, the
// commit point; then remove the bodies a purge replaced.
func (l *FileLog) Append(ctx context.Context, e evlog.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.amu.Lock()
	defer l.amu.Unlock()
	unlock, err := l.lock(ctx)
	if err != nil {
		return fmt.Errorf("storage: log append generation %d: %w", e.Generation, err)
	}
	defer unlock()
	w, err := l.readWriter()
	if err != nil {
		return err
	}
	if err := l.current(w, e.Epoch); err != nil {
		return fmt.Errorf("append generation %d: %w", e.Generation, err)
	}
	l.mu.Lock()
	err = l.refreshLocked()
	head := l.headLocked()
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if err := evlog.Check(head, e); err != nil {
		return fmt.Errorf("storage: log %s: %w", l.dir, err)
	}
	r := &logRecord{Format: LogEntryFormat, Generation: e.Generation, Prev: e.Prev, Sum: e.Sum, Body: evidence.Sum(e.Body),
		CommittedAt: e.CommittedAt.UTC().Format(time.RFC3339Nano), Clamped: e.Clamped, Epoch: e.Epoch,
		Tenants: slices.Clone(e.Tenants), at: e.CommittedAt.UTC()}
	if r.Tenants == nil {
		r.Tenants = []string{}
	}
	// The last redaction of a generation wins, as in evlog.Memory.
	last := map[int64][]byte{}
	for _, x := range e.Redactions {
		last[x.Generation] = x.Body
	}
	for _, g := range sortedGens(last) {
		if err := fsutil.WriteAtomic(filepath.Join(l.dir, RedactedName(g, e.Generation)), last[g]); err != nil {
			return fmt.Errorf("storage: log append generation %d: %w", e.Generation, err)
		}
		r.Redacts = append(r.Redacts, logRedactRecord{Generation: g, Body: evidence.Sum(last[g])})
	}
	if err := fsutil.WriteAtomic(filepath.Join(l.dir, BatchName(e.Generation)), e.Body); err != nil {
		return fmt.Errorf("storage: log append generation %d: %w", e.Generation, err)
	}
	if h := l.hooks.afterBodies; h != nil {
		if err := h(); err != nil {
			return err
		}
	}
	raw, err := encodeLogRecord(r)
	if err != nil {
		return err
	}
	if err := fsutil.WriteAtomic(filepath.Join(l.dir, LogEntryName(e.Generation)), raw); err != nil {
		return fmt.Errorf("storage: log append generation %d: %w", e.Generation, err)
	}
	if h := l.hooks.afterRecord; h != nil {
		if err := h(); err != nil {
			return err
		}
	}
	// Committed. Reading the record back (rather than adding r) keeps one
	// path for this FileLog's appends and other processes'. A failure to
	// remove a replaced body is left to the next Head or Read, which retry
	// it and report it: the append itself stands.
	l.mu.Lock()
	l.refreshLocked()
	l.mu.Unlock()
	return nil
}

func sortedGens(m map[int64][]byte) []int64 {
	gens := make([]int64, 0, len(m))
	for g := range m {
		gens = append(gens, g)
	}
	slices.Sort(gens)
	return gens
}

// Read implements evlog.Log. The records are those of the call's head;
// each body is read when its entry's turn comes and checked against the
// checksum its record (or its latest purge's) holds. A body that a purge
// committed since the call replaced is read as that purge rewrote it.
func (l *FileLog) Read(ctx context.Context, from int64, fn func(evlog.Entry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	err := l.refreshLocked()
	recs := l.recs
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if from < 1 || from > int64(len(recs))+1 {
		return fmt.Errorf("%w: read from %d, head %d (%s)", evlog.ErrGap, from, len(recs), l.dir)
	}
	asOf := int64(len(recs))
	for _, r := range recs[from-1:] {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := l.entry(r, asOf)
		if err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// body returns where entry r's body is as of head asOf: its file, the
// checksum to check it against, and the purge that wrote it (0: none).
func (l *FileLog) body(r *logRecord, asOf int64) (name, sum string, by int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	name, sum = BatchName(r.Generation), r.Body
	for _, p := range l.purges[r.Generation] {
		if p > asOf {
			break
		}
		for _, x := range l.recs[p-1].Redacts {
			if x.Generation == r.Generation {
				name, sum, by = RedactedName(r.Generation, p), x.Body, p
			}
		}
	}
	return name, sum, by
}

// entry reads entry r whole.
func (l *FileLog) entry(r *logRecord, asOf int64) (evlog.Entry, error) {
	name, sum, by := l.body(r, asOf)
	raw, err := os.ReadFile(filepath.Join(l.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		// A purge (of this process or another) may have committed and
		// removed the body since the head was read: look again.
		l.mu.Lock()
		rerr := l.refreshLocked()
		asOf = int64(len(l.recs))
		l.mu.Unlock()
		if rerr != nil {
			return evlog.Entry{}, rerr
		}
		if again, s, b := l.body(r, asOf); again != name {
			name, sum, by = again, s, b
			raw, err = os.ReadFile(filepath.Join(l.dir, name))
		}
	}
	path := filepath.Join(l.dir, name)
	if err != nil {
		return evlog.Entry{}, fmt.Errorf("%w: entry %d (%s): %v", ErrCorrupt, r.Generation, LogEntryName(r.Generation), err)
	}
	if got := evidence.Sum(raw); got != sum {
		return evlog.Entry{}, fmt.Errorf("%w: %s hashes to %s, the log records %s", ErrCorrupt, path, got, sum)
	}
	e := evlog.Entry{Generation: r.Generation, Prev: r.Prev, Sum: r.Sum, CommittedAt: r.at, Clamped: r.Clamped,
		Epoch: r.Epoch, Body: raw, RedactedBy: by}
	if len(r.Tenants) > 0 {
		e.Tenants = slices.Clone(r.Tenants)
	}
	return e, nil
}

// Wait implements evlog.Log. An append through this FileLog wakes it at
// once; one by another FileLog or process is seen when Wait next reads
// the directory, at most the poll interval (LogOptions.Poll) later.
func (l *FileLog) Wait(ctx context.Context, after int64) (evlog.Head, error) {
	for {
		l.mu.Lock()
		grew := l.grew // taken before the head is read, so no append in between is missed
		l.mu.Unlock()
		h, err := l.Head(ctx)
		if err != nil {
			return evlog.Head{}, err
		}
		if h.Generation > after {
			return h, nil
		}
		t := time.NewTimer(l.poll)
		select {
		case <-grew:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return evlog.Head{}, ctx.Err()
		}
		t.Stop()
	}
}

// Acquire implements evlog.Fence: under LOG.LOCK, the WRITER file is
// replaced atomically with the new lease.
func (l *FileLog) Acquire(ctx context.Context, holder string, lease time.Duration) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if holder == "" || lease <= 0 {
		return 0, fmt.Errorf("%w: acquire needs a holder and a positive lease (%q, %s)", evlog.ErrBadEntry, holder, lease)
	}
	var epoch int64
	err := l.fenced(ctx, func(w *writerRecord, now time.Time) error {
		if w.Epoch != 0 && now.Before(w.expires) && w.Holder != holder {
			return fmt.Errorf("%w: %q holds epoch %d until %s (%s)", evlog.ErrLeaseHeld, w.Holder, w.Epoch, w.Expires, filepath.Join(l.dir, WriterName))
		}
		w.Epoch++ // holder's own earlier epoch fenced too (evlog.Fence)
		w.Holder = holder
		w.expires = now.Add(lease)
		epoch = w.Epoch
		return nil
	})
	if err != nil {
		return 0, err
	}
	return epoch, nil
}

// Renew implements evlog.Fence.
func (l *FileLog) Renew(ctx context.Context, epoch int64, lease time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return l.fenced(ctx, func(w *writerRecord, now time.Time) error {
		if err := l.current(*w, epoch); err != nil {
			return fmt.Errorf("renew: %w", err)
		}
		w.expires = now.Add(lease)
		return nil
	})
}

// Release implements evlog.Fence.
func (l *FileLog) Release(ctx context.Context, epoch int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return l.fenced(ctx, func(w *writerRecord, now time.Time) error {
		if err := l.current(*w, epoch); err != nil {
			return fmt.Errorf("release: %w", err)
		}
		w.expires = now
		return nil
	})
}

// fenced runs change on the WRITER record under LOG.LOCK and writes the
// record back when change succeeds.
func (l *FileLog) fenced(ctx context.Context, change func(w *writerRecord, now time.Time) error) error {
	l.amu.Lock()
	defer l.amu.Unlock()
	unlock, err := l.lock(ctx)
	if err != nil {
		return fmt.Errorf("storage: log lease: %w", err)
	}
	defer unlock()
	w, err := l.readWriter()
	if err != nil {
		return err
	}
	if err := change(&w, l.now()); err != nil {
		return err
	}
	w.Format, w.Expires = LogWriterFormat, w.expires.UTC().Format(time.RFC3339Nano)
	raw, err := json.MarshalIndent(&w, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteAtomic(filepath.Join(l.dir, WriterName), fsutil.SealText(append(raw, '\n'))); err != nil {
		return fmt.Errorf("storage: log lease: %w", err)
	}
	return nil
}

// current returns nil when epoch holds w's unexpired lease.
func (l *FileLog) current(w writerRecord, epoch int64) error {
	if epoch == 0 || epoch != w.Epoch {
		return fmt.Errorf("%w: epoch %d, %s names %d", evlog.ErrStaleEpoch, epoch, filepath.Join(l.dir, WriterName), w.Epoch)
	}
	if !l.now().Before(w.expires) {
		return fmt.Errorf("%w: epoch %d's lease expired at %s (%s)", evlog.ErrStaleEpoch, epoch, w.Expires, filepath.Join(l.dir, WriterName))
	}
	return nil
}

// readWriter reads WRITER: the zero record (epoch 0) when there is none.
func (l *FileLog) readWriter() (writerRecord, error) {
	name := filepath.Join(l.dir, WriterName)
	raw, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return writerRecord{}, nil
	}
	if err != nil {
		return writerRecord{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return decodeWriter(name, raw)
}

// decodeWriter checks and parses a WRITER file; name is used in errors.
func decodeWriter(name string, raw []byte) (writerRecord, error) {
	body, err := fsutil.UnsealText(raw)
	if err != nil {
		return writerRecord{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	var w writerRecord
	if err := strictJSON(body, &w); err != nil {
		return writerRecord{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	if w.Format != LogWriterFormat {
		return writerRecord{}, fmt.Errorf("%w: %s: format %q, this evpack reads %q", ErrCorrupt, name, w.Format, LogWriterFormat)
	}
	if w.expires, err = parseStamp(w.Expires); err != nil || w.Epoch < 1 || w.Holder == "" {
		return writerRecord{}, fmt.Errorf("%w: %s: epoch %d, holder %q, expires %q: not a lease", ErrCorrupt, name, w.Epoch, w.Holder, w.Expires)
	}
	return w, nil
}

// parseStamp parses a time as the log writes it (RFC 3339, nanoseconds,
// UTC), refusing any other spelling of it.
func parseStamp(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	if t.UTC().Format(time.RFC3339Nano) != s {
		return time.Time{}, fmt.Errorf("time %q is not in the log's spelling (UTC, RFC 3339)", s)
	}
	return t.UTC(), nil
}

// encodeLogRecord returns the sealed bytes of r.
func encodeLogRecord(r *logRecord) ([]byte, error) {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return fsutil.SealText(append(raw, '\n')), nil
}

// decodeLogRecord checks and parses the record of generation gen; name is
// used in errors.
func decodeLogRecord(name string, raw []byte, gen int64) (*logRecord, error) {
	body, err := fsutil.UnsealText(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	var r logRecord
	if err := strictJSON(body, &r); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	if err := r.validate(gen); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	return &r, nil
}

// validate checks what a record must say of itself; it sets r.at.
func (r *logRecord) validate(gen int64) error {
	var err error
	switch {
	case r.Format != LogEntryFormat:
		return fmt.Errorf("format %q, this evpack reads %q", r.Format, LogEntryFormat)
	case r.Generation != gen:
		return fmt.Errorf("generation %d in the record of %d", r.Generation, gen)
	case r.Sum == "" || (gen == 1) != (r.Prev == "") || r.Epoch < 1:
		return fmt.Errorf("sum %q, prev %q, epoch %d: not an entry", r.Sum, r.Prev, r.Epoch)
	case !validSum(r.Body):
		return fmt.Errorf("bad body checksum %q", r.Body)
	case r.Tenants == nil || !slices.IsSorted(r.Tenants) || len(slices.Compact(slices.Clone(r.Tenants))) != len(r.Tenants):
		return fmt.Errorf("tenants %q not sorted and distinct", r.Tenants)
	}
	if r.at, err = parseStamp(r.CommittedAt); err != nil {
		return err
	}
	for i, x := range r.Redacts {
		if x.Generation < 1 || x.Generation >= gen || (i > 0 && x.Generation <= r.Redacts[i-1].Generation) || !validSum(x.Body) {
			return fmt.Errorf("redaction %d (generation %d, %q): not an earlier entry, in order, with a checksum", i+1, x.Generation, x.Body)
		}
	}
	return nil
}

// IsLogFile reports whether name (a base name in a log directory) is one of
// the file log's own files: a record, WRITER or LOG.LOCK. The bodies are
// batch files, which an index's manifest names.
func IsLogFile(name string) bool {
	_, rec := parseLogEntryName(name)
	return rec || name == WriterName || name == LogLockName
}
