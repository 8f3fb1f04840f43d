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
	"context"
	"errors"
	"fmt"

	"github.com/evpack/evpack/evidence"
)

// ErrSyntax reports input that cannot be parsed; it is wrapped in a
// *evidence.ChunkError naming file and position.
var ErrSyntax = errors.New("connectors: syntax error")

// ErrField reports a field with a bad value (an unreadable date, say).
var ErrField = errors.New("connectors: bad field")

// Record is one chunk and where it came from ("file:line").
type Record struct {
	Chunk evidence.Chunk
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

func fieldErr(where, id, field string, err error) error {
	return &evidence.ChunkError{ChunkID: id, Where: where, Err: fmt.Errorf("%w: %s: %w", ErrField, field, err)}
}
