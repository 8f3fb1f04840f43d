package evpack

import (
	"errors"

	"github.com/evpack/evpack/internal/evlog"
	"github.com/evpack/evpack/internal/pglog"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
)

// Sentinel errors of the engine. Errors from lower packages (asof.ErrBadDate,
// evidence.ErrEmptyText, evidence.ErrDuplicateChunk, connectors.ErrSyntax, ...)
// pass through wrapped, so errors.Is matches them too.
var (
	// ErrBadRequest: a Request is not valid (empty question, no as-of date,
	// K out of range, a malformed tenant name or filter: those also wrap
	// evidence.ErrBadTenant or evidence.ErrBadMeta).
	ErrBadRequest = state.ErrBadRequest
	// ErrBeforeFirstCommit: a request's KnownAt is before the index's first
	// commit, when the index held nothing; it also matches ErrBadRequest.
	ErrBeforeFirstCommit = state.ErrBeforeFirstCommit
	// ErrBadOptions: Options are not valid.
	ErrBadOptions = errors.New("evpack: bad options")
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("evpack: engine closed")
	// ErrCorrupt: an index directory cannot be read: a stored file fails its
	// checksum or is missing, the manifest names what is not there, or the
	// directory holds what no commit or crash explains (the error names the
	// file). Nothing is deleted when it is returned.
	ErrCorrupt = storage.ErrCorrupt
	// ErrOldFormat: the index is of a format this evpack no longer reads; the error says how to rebuild it.
	ErrOldFormat = storage.ErrOldFormat
	// ErrNewerFormat: a later evpack wrote the index, in a format this one does not read.
	ErrNewerFormat = storage.ErrNewerFormat
	// ErrLocked: another process, or another Open in this one, has the index
	// open; Open waited Options.LockWait. The error names the holder. A
	// request also fails with it when a lexical partition's files stayed
	// locked by another holder for Options.LockWait (the error names the
	// partition); the next request tries again.
	ErrLocked = storage.ErrLocked
	// ErrNotIndex: Open was given a directory that is not empty and holds no
	// evpack index (or, from the command line, one that does not exist).
	// Nothing was written to it.
	ErrNotIndex = storage.ErrNotIndex
	// ErrUnstorable: a chunk would not read back from storage exactly as
	// given (a field that is not valid UTF-8); nothing of its batch was
	// written.
	ErrUnstorable = storage.ErrUnstorable
	// ErrBroken: a commit could not be settled in this process (its lexical
	// change not undone, its manifest's rename not durable, or the log the
	// engine leads ahead of it); the engine refuses further work. Reopen:
	// Open settles the commit from its record, and Lead follows the log.
	ErrBroken = errors.New("evpack: index needs reopening")
	// ErrReadOnly: the index was opened read-only at its last generation,
	// because the rollback of a commit a crash interrupted could not be
	// written (a full disk): queries and Check are answered, writes
	// refused until it is reopened with room.
	ErrReadOnly = state.ErrReadOnly
	// ErrCheck: Engine.Check found a broken invariant.
	ErrCheck = errors.New("evpack: check failed")
	// ErrFenced: this engine led a log (Engine.Lead) and its lease passed
	// to another writer, or ran out: the append was refused and nothing was
	// written, anywhere.
	ErrFenced = evlog.ErrStaleEpoch
	// ErrLeaseHeld: another writer holds the log's lease (Engine.Lead).
	ErrLeaseHeld = evlog.ErrLeaseHeld
	// ErrLogClosed: the PostgresLog was closed (a Follow waiting on it ends
	// with it).
	ErrLogClosed = pglog.ErrClosed
	// ErrBehind: a request's MinGeneration was not applied by its context's deadline.
	ErrBehind = errors.New("evpack: replica behind the generation asked")
)
