package state

import "errors"

// Errors of the state, re-exported by the root package.
var (
	// ErrBadRequest: a Request is not valid (empty question, no as-of date,
	// K out of range, a malformed tenant name or filter: those also wrap
	// evidence.ErrBadTenant or evidence.ErrBadMeta).
	ErrBadRequest = errors.New("evpack: bad request")
	// ErrBeforeFirstCommit: a request's KnownAt is before the index's first
	// commit, when the index held nothing; it also matches ErrBadRequest.
	ErrBeforeFirstCommit = errors.New("evpack: known-at before the first commit")
	// ErrReadOnly: the index was opened read-only at its last generation,
	// because the rollback of a commit a crash interrupted could not be
	// written (a full disk).
	ErrReadOnly = errors.New("evpack: index opened read-only")
)
