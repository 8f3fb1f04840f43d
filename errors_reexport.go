package evpack

import (
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/fuse"
	"github.com/evpack/evpack/rerank"
	"github.com/evpack/evpack/retrieve"
)

// The sentinel errors of the lower packages that reach an Engine's caller,
// re-exported so that a service classifies every failure with one import.
// Each is the same value as the one it names (errors.Is matches either), so
// code written against the lower package keeps working. The bert package's
// errors (bert.ErrLibrary, bert.ErrModel, bert.ErrCUDA) are not here: the
// root does not import cgo.
var (
	// ErrBadDate: a date or instant that does not parse or is out of range
	// (asof.ErrBadDate).
	ErrBadDate = asof.ErrBadDate
	// ErrBadInterval: a validity interval that ends on or before it starts
	// (asof.ErrBadInterval).
	ErrBadInterval = asof.ErrBadInterval

	// ErrEmptyText: a chunk with no text (evidence.ErrEmptyText).
	ErrEmptyText = evidence.ErrEmptyText
	// ErrMissingID: a chunk with no ID (evidence.ErrMissingID).
	ErrMissingID = evidence.ErrMissingID
	// ErrDuplicateChunk: a chunk ID already committed with other content
	// (evidence.ErrDuplicateChunk).
	ErrDuplicateChunk = evidence.ErrDuplicateChunk
	// ErrBadMeta: metadata or a filter that is not valid (evidence.ErrBadMeta).
	ErrBadMeta = evidence.ErrBadMeta
	// ErrBadTenant: a tenant name that is not valid (evidence.ErrBadTenant).
	ErrBadTenant = evidence.ErrBadTenant
	// ErrBadFact: a fact naming no committed chunk, a replacement of another
	// scope, or an end before the chunk's start (evidence.ErrBadFact).
	ErrBadFact = evidence.ErrBadFact
	// ErrValidityExtended: a record that would extend or reopen a committed
	// chunk's validity (evidence.ErrValidityExtended).
	ErrValidityExtended = evidence.ErrValidityExtended
	// ErrBadPack: saved pack bytes that do not parse as a pack
	// (evidence.ErrBadPack).
	ErrBadPack = evidence.ErrBadPack
	// ErrNotCanonical: saved pack bytes that parse but are not in the
	// canonical form, so their hash cannot name them (evidence.ErrNotCanonical).
	ErrNotCanonical = evidence.ErrNotCanonical

	// ErrSyntax: a source file a connector cannot read (connectors.ErrSyntax).
	ErrSyntax = connectors.ErrSyntax
	// ErrField: a source record with a field a connector cannot use
	// (connectors.ErrField).
	ErrField = connectors.ErrField

	// ErrBadList: a ranked list given to fusion is not valid (fuse.ErrBadList).
	ErrBadList = fuse.ErrBadList

	// ErrModel: a reranker model file that cannot be used (rerank.ErrModel).
	ErrModel = rerank.ErrModel
	// ErrModelVersion: a reranker model of another format version or feature
	// set (rerank.ErrModelVersion).
	ErrModelVersion = rerank.ErrModelVersion
	// ErrNotPermutation: a reranker returned something other than a
	// permutation of its candidates (rerank.ErrNotPermutation).
	ErrNotPermutation = rerank.ErrNotPermutation
	// ErrScorer: an external reranker's scoring call failed (rerank.ErrScorer).
	ErrScorer = rerank.ErrScorer
	// ErrLedger: a pack's score ledger does not cover the pool its replay
	// finds (rerank.ErrLedger).
	ErrLedger = rerank.ErrLedger
	// ErrRetired: a retired model was asked to score (rerank.ErrRetired).
	ErrRetired = rerank.ErrRetired

	// ErrDims: an embedder's vectors do not have the index's dimensions
	// (retrieve.ErrDims).
	ErrDims = retrieve.ErrDims
	// ErrHTTPEmbedder: an HTTP embedder's call failed (retrieve.ErrHTTPEmbedder).
	ErrHTTPEmbedder = retrieve.ErrHTTPEmbedder
	// ErrLexical: the lexical index failed (retrieve.ErrLexical); a partition
	// that disagrees with the checkpoint's catalog is also ErrCorrupt.
	ErrLexical = retrieve.ErrLexical
	// ErrGraphOptions: HNSW settings out of range (retrieve.ErrGraphOptions).
	ErrGraphOptions = retrieve.ErrGraphOptions
)
