package evpack

import (
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/audit"
)

// The reports of Diff, Verify, Replay and Check are computed in
// internal/audit; these are their names in the public API.

// DiffStatus says what became of one citation of a pack (see Engine.Diff).
type DiffStatus = audit.DiffStatus

// The statuses of a cited chunk in a Diff.
const (
	DiffUnchanged   = audit.DiffUnchanged
	DiffMoved       = audit.DiffMoved
	DiffOutranked   = audit.DiffOutranked
	DiffSuperseded  = audit.DiffSuperseded
	DiffEnded       = audit.DiffEnded
	DiffRetracted   = audit.DiffRetracted
	DiffTextChanged = audit.DiffTextChanged
	DiffPurged      = audit.DiffPurged
)

// CitationDiff is what became of one citation of a pack.
type CitationDiff = audit.CitationDiff

// CauseKind names why a citation changed.
type CauseKind = audit.CauseKind

// The causes Diff names.
const (
	CauseText        = audit.CauseText
	CausePurge       = audit.CausePurge
	CauseFact        = audit.CauseFact
	CauseNewEvidence = audit.CauseNewEvidence
	CauseLeftAbove   = audit.CauseLeftAbove
	CauseStatistics  = audit.CauseStatistics
	CauseRanking     = audit.CauseRanking
)

// DiffCause is why a citation changed, with the generations that did it.
type DiffCause = audit.DiffCause

// NewCitation is a chunk the pack would cite today that it did not.
type NewCitation = audit.NewCitation

// DiffReport compares a stored pack with what the index answers today.
type DiffReport = audit.DiffReport

// VerifyReport says whether a pack was made by this index and configuration.
type VerifyReport = audit.VerifyReport

// PurgedCitation is a citation whose text a later purge deleted.
type PurgedCitation = audit.PurgedCitation

// ReplayReport is a VerifyReport with a fresh run of the reranker.
type ReplayReport = audit.ReplayReport

// CheckReport is what Engine.CheckIndex found.
type CheckReport = audit.CheckReport

// CheckedFile is one stored file CheckIndex read and checked.
type CheckedFile = audit.CheckedFile

// SourceName returns the name a chunk's source gives it (EDGAR form and
// item, FRED series and vintage, statute article and version), or "".
func SourceName(c *evidence.Chunk) string { return audit.SourceName(c) }
