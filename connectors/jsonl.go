package connectors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
)

// JSONL reads one chunk per line from each of its files. Fields (see the
// README): id, doc_id, version, text, source_url, retrieved_at (RFC 3339),
// anchor (YYYY-MM-DD or RFC 3339), valid_from, valid_to (YYYY-MM-DD), tenant,
// meta (object of strings). Unknown fields are an error: a misspelt
// "retreived_at" would otherwise silently make a chunk uncitable.
type JSONL struct {
	paths []string
}

// NewJSONL returns a connector over the given files, read in order.
func NewJSONL(paths ...string) *JSONL { return &JSONL{paths: paths} }

// Name implements Connector.
func (*JSONL) Name() string { return "jsonl" }

// AnchorField implements Connector: the record's own "anchor" field, falling
// back to retrieved_at where a record has none.
func (*JSONL) AnchorField() string { return "anchor" }

type jsonlRecord struct {
	ID          string            `json:"id"`
	DocID       string            `json:"doc_id"`
	Version     string            `json:"version"`
	Text        string            `json:"text"`
	SourceURL   string            `json:"source_url"`
	RetrievedAt string            `json:"retrieved_at"`
	Anchor      string            `json:"anchor"`
	ValidFrom   string            `json:"valid_from"`
	ValidTo     string            `json:"valid_to"`
	Tenant      string            `json:"tenant"`
	Meta        map[string]string `json:"meta"`
}

// Read implements Connector.
func (j *JSONL) Read(ctx context.Context) ([]Record, error) {
	var out []Record
	for _, path := range j.paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("connectors: jsonl: %w", err)
		}
		recs, err := j.ReadFrom(ctx, path, f)
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

// ReadFrom parses r as JSONL; path names it in errors.
func (j *JSONL) ReadFrom(ctx context.Context, path string, r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if line%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", path, line)
		var r jsonlRecord
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, &evidence.ChunkError{Where: where, Err: fmt.Errorf("%w: %v", ErrSyntax, err)}
		}
		if dec.More() {
			return nil, &evidence.ChunkError{Where: where, Err: fmt.Errorf("%w: more than one value on the line", ErrSyntax)}
		}
		c, err := j.chunk(where, &r)
		if err != nil {
			return nil, err
		}
		out = append(out, Record{Chunk: c, Where: where})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("connectors: jsonl: %s: %w", path, err)
	}
	return out, nil
}

func (j *JSONL) chunk(where string, r *jsonlRecord) (evidence.Chunk, error) {
	c := evidence.Chunk{ID: r.ID, DocID: r.DocID, Version: r.Version, Text: r.Text,
		SourceURL: r.SourceURL, Connector: j.Name(), Tenant: r.Tenant, Meta: r.Meta}
	var anchor time.Time
	var err error
	if r.RetrievedAt != "" {
		if c.RetrievedAt, err = asof.ParseInstant(r.RetrievedAt); err != nil {
			return c, FieldError(where, r.ID, "retrieved_at", err)
		}
	}
	if r.Anchor != "" {
		if anchor, err = asof.ParseInstant(r.Anchor); err != nil {
			return c, FieldError(where, r.ID, "anchor", err)
		}
	}
	if r.ValidFrom != "" {
		if c.Valid.From, err = asof.ParseDate(r.ValidFrom); err != nil {
			return c, FieldError(where, r.ID, "valid_from", err)
		}
	}
	if r.ValidTo != "" {
		if c.Valid.To, err = asof.ParseDate(r.ValidTo); err != nil {
			return c, FieldError(where, r.ID, "valid_to", err)
		}
	}
	c.Anchor = asof.ResolveAnchor(j.AnchorField(), anchor, c.RetrievedAt)
	return c, nil
}
