package evidence

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers match them with errors.Is; the wrapping error says
// which chunk or input and where.
var (
	// ErrEmptyText: a chunk's text is empty after normalization.
	ErrEmptyText = errors.New("evidence: empty text")
	// ErrMissingID: a chunk has no chunk ID or no document ID.
	ErrMissingID = errors.New("evidence: missing id")
	// ErrDuplicateChunk: two chunks share an ID but not their content hash
	// (their text or any other field Chunk.ComputeHash covers).
	ErrDuplicateChunk = errors.New("evidence: duplicate chunk id with different content")
	// ErrBadMeta: a metadata key is empty, longer than MaxMetaKeyLen or uses
	// characters outside [a-z0-9_.-]; or a metadata value is not valid UTF-8,
	// holds a control character or is longer than MaxMetaValueLen.
	ErrBadMeta = errors.New("evidence: bad metadata")
	// ErrBadTenant: a tenant name is not valid UTF-8, holds a control
	// character (unicode.IsControl) or is longer than MaxTenantLen.
	ErrBadTenant = errors.New("evidence: bad tenant name")
	// ErrNotUTF8: a chunk's ID, document ID, version, source URL, connector
	// or anchor field is not valid UTF-8 (the text is normalized instead:
	// bad bytes there become U+FFFD).
	ErrNotUTF8 = errors.New("evidence: field is not valid UTF-8")
	// ErrNotCanonical: bytes offered as a pack are not in canonical form.
	ErrNotCanonical = errors.New("evidence: pack bytes are not canonical")
	// ErrBadFact: a fact is malformed (unknown kind, no end or anchor), names
	// no committed chunk, or contradicts it (an end on or before the day its
	// validity starts; an end after a committed chunk's own end, which also
	// matches ErrValidityExtended).
	ErrBadFact = errors.New("evidence: bad fact")
	// ErrValidityExtended: a record would extend or reopen a stored chunk's
	// validity. Facts only end validity; a new version needs a new chunk ID.
	ErrValidityExtended = errors.New("evidence: validity cannot be extended")
	// ErrBadPack: bytes offered as a pack cannot be read as one.
	ErrBadPack = errors.New("evidence: malformed pack")
)

// ChunkError ties an error to the chunk and, when known, the input position
// (file:line) it came from.
type ChunkError struct {
	ChunkID string // may be empty when the ID itself is missing
	Where   string // "file:line", or "" when the chunk came from memory
	Err     error
}

// Error implements error: "file:line: chunk \"id\": reason".
func (e *ChunkError) Error() string {
	switch {
	case e.Where != "" && e.ChunkID != "":
		return fmt.Sprintf("%s: chunk %q: %v", e.Where, e.ChunkID, e.Err)
	case e.Where != "":
		return fmt.Sprintf("%s: %v", e.Where, e.Err)
	default:
		return fmt.Sprintf("chunk %q: %v", e.ChunkID, e.Err)
	}
}

// Unwrap returns the underlying error.
func (e *ChunkError) Unwrap() error { return e.Err }
