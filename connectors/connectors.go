// Package connectors turns sources into chunks. Each connector declares the
// field that dates its evidence (its anchor); one that declares none is dated
// by retrieval time, which can lose recall but never cites the future.
//
// Entry points: [Connector], [NewJSONL], [NewStatute].
//
// Contract for every Connector: Read either returns every record of its
// inputs or an error naming the file and position of the first bad one, so
// that ingest can apply a batch whole or not at all.
package connectors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/evpack/evpack/evidence"
)

// ErrSyntax reports input that cannot be parsed; it is wrapped in a
// *evidence.ChunkError naming file and position.
var ErrSyntax = errors.New("connectors: syntax error")

// ErrField reports a field with a bad value (an unreadable date, say).
var ErrField = errors.New("connectors: bad field")

// ErrDuplicateVersion reports two versions of one statute sharing a label,
// which names their chunks; it also matches ErrField.
var ErrDuplicateVersion = fmt.Errorf("%w: two versions share a label", ErrField)

// Record is one chunk, or one fact about a chunk, and where it came from
// ("file:line").
//
// A chunk record whose ID is already stored, identical but for an earlier
// (or newly set) end of validity, is how a later fetch says that the stored
// chunk stopped being valid: ingest records that end as a fact
// (evidence.FactSuperseded when By names the replacing chunk,
// evidence.FactEnded otherwise) anchored at the end day, and leaves the
// stored chunk as it was. A fact record (Fact set, Chunk ignored) says so
// explicitly, with its own anchor: a retraction, or an end published after
// it took effect.
type Record struct {
	Chunk evidence.Chunk
	Fact  *evidence.Fact
	// By names the chunk that replaces this one from the end of its
	// validity, when a connector knows it (the next vintage, the amending
	// filing's item, the article's next version).
	By    string
	Where string
}

// Connector reads a source into chunk records.
type Connector interface {
	// Name is stamped on every chunk as its connector.
	Name() string
	// AnchorField names the field that dates this connector's chunks, or ""
	// when retrieval time does.
	AnchorField() string
	// Read returns all records, or the first error with its position.
	Read(ctx context.Context) ([]Record, error)
}

// FieldError reports a bad field value of chunk id (which may be empty) at
// where, wrapping ErrField and err.
func FieldError(where, id, field string, err error) error {
	return &evidence.ChunkError{ChunkID: id, Where: where, Err: fmt.Errorf("%w: %s: %w", ErrField, field, err)}
}

// SyntaxError reports input of path that could not be decoded, wrapping
// ErrSyntax; when err carries a byte offset into raw (a JSON decoding error),
// the position is written path:line:col.
func SyntaxError(path string, raw []byte, err error) error {
	return &evidence.ChunkError{Where: path + offsetOf(raw, err), Err: fmt.Errorf("%w: %v", ErrSyntax, err)}
}

// offsetOf turns a JSON decoding error into ":line:col" when it has an offset.
func offsetOf(raw []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var off int64 = -1
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	return position(raw, off)
}

// position writes byte offset off of raw as ":line:col", or "" when off is
// outside raw.
func position(raw []byte, off int64) string {
	if off < 0 || off > int64(len(raw)) {
		return ""
	}
	line := 1 + bytes.Count(raw[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(raw[:off], '\n'))
	return fmt.Sprintf(":%d:%d", line, col)
}

// Records is a Connector over records already in memory: chunks a program
// built itself, or read by other means. Read returns a copy of the slice.
type Records []Record

// Name implements Connector: "records". A chunk keeps the connector its
// record names.
func (Records) Name() string { return "records" }

// AnchorField implements Connector: each record's chunk names its own.
func (Records) AnchorField() string { return "" }

// Read implements Connector.
func (r Records) Read(ctx context.Context) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return append([]Record(nil), r...), nil
}

// Ranking-text metadata a connector may declare on a chunk about one entity
// (a company, say). A request that filters on MetaEntityKey's key with the
// chunk's value (cik=0000320193) has the names listed under MetaEntityNames
// removed from the text it ranks with: within one entity's documents its
// name is in every boilerplate paragraph and says nothing about which
// passage answers the question. The connector that knows the domain knows
// the names (the EDGAR connector: the company, its name without a corporate
// suffix, its ticker); the engine only applies them.
const (
	// MetaEntityKey names the metadata key that identifies the entity ("cik").
	MetaEntityKey = "entity_key"
	// MetaEntityNames lists the entity's names, separated by "|".
	MetaEntityNames = "entity_names"
)

// invalidUTF8 returns the offset of the first byte of raw that is not part
// of valid UTF-8, or -1. encoding/json would read each such byte as U+FFFD
// without a word: two IDs differing there would become one.
func invalidUTF8(raw []byte) int64 {
	if utf8.Valid(raw) {
		return -1
	}
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && n == 1 {
			return int64(i)
		}
		i += n
	}
	return -1
}
