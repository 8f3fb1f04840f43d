package storage

import "errors"

// Sentinel errors. Each is wrapped with the file (and line, for batch files)
// it concerns.
var (
	// ErrCorrupt: a stored file fails its checksum, names what does not
	// exist, or the directory holds what no commit or crash explains.
	ErrCorrupt = errors.New("evpack: index corrupt")
	// ErrLocked: another process (or another Open in this one) holds the
	// index.
	ErrLocked = errors.New("evpack: index locked")
	// ErrNotIndex: the directory exists, is not empty and is not an evpack
	// index, or does not exist and creating it was not asked for.
	ErrNotIndex = errors.New("evpack: not an evpack index")
	// ErrOldFormat: the index was written by an earlier evpack whose format
	// this one does not read. It wraps ErrCorrupt's meaning for callers that
	// only check that, and says how to rebuild.
	ErrOldFormat = errors.New("evpack: index format too old")
	// ErrNewerFormat: the index was written by a later evpack, in a
	// format this one does not know. It is not ErrCorrupt: the files may
	// be sound, and the evpack that wrote them reads them.
	ErrNewerFormat = errors.New("evpack: index format newer than this evpack")
	// ErrNotDurable: a commit's manifest was renamed into place but the
	// fsync of its directory, which makes the rename durable, failed. The
	// manifest on disk names the generation, which a power cut may still
	// take back: neither undo it (files the manifest names would go) nor
	// trust it. Its files and commit record stay, for the next Open to
	// keep it or roll it back, whichever the disk holds.
	ErrNotDurable = errors.New("evpack: commit not durable")
)

// ErrUnstorable: a chunk would not read back from its batch file exactly as
// given (a field that is not valid UTF-8, say). It is bad input, found
// before anything is written.
var ErrUnstorable = errors.New("evpack: chunk cannot be stored unchanged")
