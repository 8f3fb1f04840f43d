package connectors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/strictjson"
)

// JSONL reads one chunk, or one fact about a chunk, per line from each of
// its files.
//
// A chunk line's fields (see the README): id, doc_id, version, text,
// source_url, retrieved_at (RFC 3339), anchor (YYYY-MM-DD or RFC 3339),
// valid_from, valid_to (YYYY-MM-DD), tenant, meta (object of strings). The
// same id sent again with the same text and an earlier (or newly set)
// valid_to is how a later fetch says the stored chunk stopped being valid:
// ingest records it as a validity end (see Record).
//
// A fact line is one that has a "fact" key: fact (ended, superseded or
// retracted), id (the chunk it is about), end (YYYY-MM-DD, the first day the
// chunk is no longer valid), anchor (YYYY-MM-DD or RFC 3339, when the end
// became knowable) and by (the replacing chunk; superseded only). It becomes
// a Record with Fact set.
//
// Unknown fields are an error on either kind of line: a misspelt
// "retreived_at" would otherwise silently make a chunk uncitable. So are a
// key given twice (at the top or in meta) and a key spelt in another case
// ("TEXT"), of which encoding/json would keep one without a word.
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

// jsonlFact is a fact line.
type jsonlFact struct {
	Fact   string `json:"fact"`
	ID     string `json:"id"`
	End    string `json:"end"`
	Anchor string `json:"anchor"`
	By     string `json:"by"`
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

// MaxJSONLLine is the longest line, in bytes, that JSONL reads; a longer
// one is ErrSyntax naming its line.
const MaxJSONLLine = 64 << 20

// ReadFrom parses r as JSONL; path names it in errors. A UTF-8 byte order
// mark before the first line is skipped.
func (j *JSONL) ReadFrom(ctx context.Context, path string, r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxJSONLLine)
	line := 1
	for ; sc.Scan(); line++ {
		if line%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		raw := sc.Bytes()
		if line == 1 { // a UTF-8 byte order mark, as Windows editors write
			raw = bytes.TrimPrefix(raw, []byte("\ufeff"))
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", path, line)
		if isFactLine(raw) {
			var r jsonlFact
			if err := decodeLine(where, raw, &r, factKeys); err != nil {
				return nil, err
			}
			f, err := fact(where, &r)
			if err != nil {
				return nil, err
			}
			out = append(out, Record{Fact: f, Where: where})
			continue
		}
		var r jsonlRecord
		if err := decodeLine(where, raw, &r, chunkKeys); err != nil {
			return nil, err
		}
		c, err := j.chunk(where, &r)
		if err != nil {
			return nil, err
		}
		out = append(out, Record{Chunk: c, Where: where})
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return nil, &evidence.ChunkError{Where: fmt.Sprintf("%s:%d", path, line), Err: fmt.Errorf("%w: line longer than %d bytes", ErrSyntax, MaxJSONLLine)}
	case err != nil: // the line the reader failed in
		return nil, &evidence.ChunkError{Where: fmt.Sprintf("%s:%d", path, line), Err: fmt.Errorf("connectors: jsonl: %w", err)}
	}
	return out, nil
}

// The keys of a chunk line and of a fact line, spelt as the README spells
// them.
var (
	chunkKeys = []string{"id", "doc_id", "version", "text", "source_url", "retrieved_at", "anchor", "valid_from", "valid_to", "tenant", "meta"}
	factKeys  = []string{"fact", "id", "end", "anchor", "by"}
)

// decodeLine decodes one line into v, refusing bytes that are not UTF-8,
// unknown fields, trailing values, and keys (names lists them) that are repeated or spelt in another
// case, which encoding/json would take without a word.
func decodeLine(where string, raw []byte, v any, names []string) error {
	if off := invalidUTF8(raw); off >= 0 {
		return &evidence.ChunkError{Where: where, Err: fmt.Errorf("%w: %w: at column %d", ErrSyntax, evidence.ErrNotUTF8, off+1)}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &evidence.ChunkError{Where: where, Err: fmt.Errorf("%w: %v", ErrSyntax, err)}
	}
	if off := strictjson.Trailing(raw, dec); off >= 0 {
		return &evidence.ChunkError{Where: where, Err: fmt.Errorf("%w: data after the value on the line, at column %d", ErrSyntax, off+1)}
	}
	if err := checkKeys(raw, names); err != nil {
		return &evidence.ChunkError{Where: where, Err: fmt.Errorf("%w: %w", ErrSyntax, err)}
	}
	return nil
}

// checkKeys walks the keys of the object raw (which has decoded): each must
// be one of names as spelt there, once, and the keys of its "meta" object
// must differ. encoding/json matches keys without regard to case and keeps
// the last of equal ones.
func checkKeys(raw []byte, names []string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return err // null: no keys
	}
	seen := make(map[string]bool, len(names)) // looked up only
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := tok.(string)
		if !slices.Contains(names, k) {
			if i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, k) }); i >= 0 {
				return fmt.Errorf("key %q: the field is spelt %q", k, names[i])
			}
			return fmt.Errorf("key %q is not a field", k)
		}
		if seen[k] {
			return fmt.Errorf("key %q appears twice", k)
		}
		seen[k] = true
		if k == "meta" {
			if err := checkMetaKeys(dec); err != nil {
				return err
			}
			continue
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

// checkMetaKeys reads the meta value at dec (an object of strings, or null)
// and refuses a key it holds twice.
func checkMetaKeys(dec *json.Decoder) error {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return err
	}
	seen := map[string]bool{} // looked up only
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := tok.(string)
		if seen[k] {
			return fmt.Errorf("meta key %q appears twice", k)
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

// factKey is a fact line's distinguishing key as it appears in the bytes.
var factKey = []byte(`"fact"`)

// isFactLine reports whether raw is an object with a "fact" key. The byte
// search spares chunk lines (nearly all) a second decoding: a key spelt
// "fact" must appear literally. A line that is not an object, or does not
// decode, is left to the chunk decoder to report.
func isFactLine(raw []byte) bool {
	if !bytes.Contains(raw, factKey) {
		return false
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) != nil {
		return false
	}
	_, ok := keys["fact"]
	return ok
}

// fact turns a fact line into a prepared evidence.Fact.
func fact(where string, r *jsonlFact) (*evidence.Fact, error) {
	f := &evidence.Fact{Kind: evidence.FactKind(r.Fact), ChunkID: r.ID, By: r.By}
	var err error
	if r.End != "" {
		if f.End, err = asof.ParseDate(r.End); err != nil {
			return nil, FieldError(where, r.ID, "end", err)
		}
	}
	if r.Anchor != "" {
		if f.Anchor, err = asof.ParseInstant(r.Anchor); err != nil {
			return nil, FieldError(where, r.ID, "anchor", err)
		}
	}
	if err := f.Prepare(); err != nil {
		// Every refusal of Prepare is of a field of the line (kind, id, end,
		// anchor, by): ErrField as for a chunk line, and evidence.ErrBadFact.
		// Prepare names the chunk; the line adds where the fact came from.
		var ce *evidence.ChunkError
		if errors.As(err, &ce) {
			err = ce.Err
		}
		return nil, &evidence.ChunkError{ChunkID: r.ID, Where: where, Err: fmt.Errorf("%w: %w", ErrField, err)}
	}
	return f, nil
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
