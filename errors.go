package evpack

import "errors"

// Sentinel errors of the engine. Errors from lower packages (asof.ErrBadDate,
// evidence.ErrEmptyText, evidence.ErrDuplicateChunk, connectors.ErrSyntax, ...)
// pass through wrapped, so errors.Is matches them too.
var (
	// ErrBadRequest: a Request is not valid (empty question, no as-of date,
	// K out of range, a malformed tenant name or filter: those also wrap
	// evidence.ErrBadTenant or evidence.ErrBadMeta).
	ErrBadRequest = errors.New("evpack: bad request")
	// ErrBadOptions: Options are not valid.
	ErrBadOptions = errors.New("evpack: bad options")
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("evpack: engine closed")
	// ErrCorrupt: an index directory cannot be read (bad manifest, missing
	// or unreadable batch file, unknown format version).
	ErrCorrupt = errors.New("evpack: index corrupt")
	// ErrCheck: Engine.Check found a broken invariant.
	ErrCheck = errors.New("evpack: check failed")
)
