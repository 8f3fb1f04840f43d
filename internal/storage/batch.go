package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
)

// BatchHeader is the first line of a batch file. With Prev, the checksum of
// the previous generation's batch file, the batch files form a hash chain:
// the log from which the index can be rebuilt, and in which no past
// generation can be rewritten without breaking every later link.
type BatchHeader struct {
	Format      string `json:"format"`
	Generation  int64  `json:"generation"`
	Prev        string `json:"prev"` // "" for generation 1
	CommittedAt string `json:"committed_at"`
}

// storedChunk is one line of a batch file.
type storedChunk struct {
	ID          string            `json:"id"`
	DocID       string            `json:"doc_id"`
	Version     string            `json:"version"`
	Text        string            `json:"text"`
	SourceURL   string            `json:"source_url"`
	Connector   string            `json:"connector"`
	RetrievedAt string            `json:"retrieved_at"`
	Anchor      string            `json:"anchor"`
	AnchorField string            `json:"anchor_field"`
	ValidFrom   string            `json:"valid_from"`
	ValidTo     string            `json:"valid_to"`
	Tenant      string            `json:"tenant"`
	ContentHash string            `json:"content_hash"`
	Meta        map[string]string `json:"meta,omitempty"`
}

// storedFact is a fact line of a batch file. Its first key, "fact", is what
// tells it from a chunk line.
type storedFact struct {
	Kind    string `json:"fact"`
	ChunkID string `json:"chunk_id"`
	End     string `json:"end"`
	Anchor  string `json:"anchor"`
	By      string `json:"by,omitempty"`
}

// factPrefix opens every fact line (encoding/json writes fields in order).
var factPrefix = []byte(`{"fact":`)

// EncodeBatch returns the sealed batch file for chunks and then facts. A
// batch with facts is written in BatchFormat, one without in
// ChunksOnlyFormat (the bytes earlier versions wrote). Every chunk is read
// back from the encoded bytes and compared with what was given, so input
// that storage would change (bytes that are not UTF-8 become U+FFFD in JSON)
// is ErrUnstorable here, before anything is written, rather than a chunk
// that hashes differently after the next Open.
func EncodeBatch(h BatchHeader, chunks []*evidence.Chunk, facts []*evidence.Fact) ([]byte, error) {
	h.Format = ChunksOnlyFormat
	if len(facts) > 0 {
		h.Format = BatchFormat
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&h); err != nil {
		return nil, err
	}
	for _, c := range chunks {
		sc := storedChunk{ID: c.ID, DocID: c.DocID, Version: c.Version, Text: c.Text, SourceURL: c.SourceURL,
			Connector: c.Connector, RetrievedAt: asof.FormatInstant(c.RetrievedAt),
			Anchor: asof.FormatInstant(c.Anchor.At), AnchorField: c.Anchor.Field,
			ValidFrom: c.Valid.From.String(), ValidTo: c.Valid.To.String(), Tenant: c.Tenant,
			ContentHash: c.ContentHash, Meta: c.Meta}
		if err := enc.Encode(&sc); err != nil {
			return nil, fmt.Errorf("%w: chunk %q: %v", ErrUnstorable, c.ID, err)
		}
	}
	for _, f := range facts {
		sf := storedFact{Kind: string(f.Kind), ChunkID: f.ChunkID, End: f.End.String(),
			Anchor: asof.FormatInstant(f.Anchor), By: f.By}
		if err := enc.Encode(&sf); err != nil {
			return nil, fmt.Errorf("%w: fact on chunk %q: %v", ErrUnstorable, f.ChunkID, err)
		}
	}
	raw := fsutil.SealText(b.Bytes())
	_, back, backFacts, err := DecodeBatch("(new batch)", raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnstorable, err)
	}
	for i, c := range chunks {
		if field := Differs(c, back[i]); field != "" {
			return nil, fmt.Errorf("%w: chunk %q: its %s would read back changed (not valid UTF-8?)", ErrUnstorable, c.ID, field)
		}
	}
	for i, f := range facts {
		if *f != *backFacts[i] {
			return nil, fmt.Errorf("%w: fact on chunk %q would read back changed (not valid UTF-8?)", ErrUnstorable, f.ChunkID)
		}
	}
	return raw, nil
}

// Differs names the first field in which a and b differ, or "".
func Differs(a, b *evidence.Chunk) string {
	switch {
	case a.ID != b.ID:
		return "id"
	case a.DocID != b.DocID:
		return "doc_id"
	case a.Version != b.Version:
		return "version"
	case a.Text != b.Text:
		return "text"
	case a.SourceURL != b.SourceURL:
		return "source_url"
	case a.Connector != b.Connector:
		return "connector"
	case !a.RetrievedAt.Equal(b.RetrievedAt):
		return "retrieved_at"
	case !a.Anchor.At.Equal(b.Anchor.At) || a.Anchor.Field != b.Anchor.Field:
		return "anchor"
	case a.Valid != b.Valid:
		return "validity"
	case a.Tenant != b.Tenant:
		return "tenant"
	case a.ContentHash != b.ContentHash:
		return "content_hash"
	case len(a.Meta) != len(b.Meta) || !maps.Equal(a.Meta, b.Meta):
		return "meta"
	}
	return ""
}

// DecodeBatch checks the seal of a batch file and parses it: its chunks,
// then its facts. name (the file's path) is used in errors, with the line
// number.
func DecodeBatch(name string, raw []byte) (BatchHeader, []*evidence.Chunk, []*evidence.Fact, error) {
	var h BatchHeader
	body, err := fsutil.UnsealText(raw)
	if err != nil {
		return h, nil, nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	var out []*evidence.Chunk
	var facts []*evidence.Fact
	for line := 1; len(body) > 0; line++ {
		// Lines are split by hand: a chunk's text has no length limit, and
		// a scanner's would make a stored batch unreadable.
		cut := bytes.IndexByte(body, '\n')
		text := body[:cut]
		body = body[cut+1:]
		where := fmt.Sprintf("%s:%d", name, line)
		if line == 1 {
			if err := strictJSON(text, &h); err != nil || (h.Format != BatchFormat && h.Format != ChunksOnlyFormat) {
				return h, nil, nil, fmt.Errorf("%w: %s: want a header with format %q or %q", ErrCorrupt, where, BatchFormat, ChunksOnlyFormat)
			}
			continue
		}
		if bytes.HasPrefix(text, factPrefix) {
			var sf storedFact
			if err := strictJSON(text, &sf); err != nil {
				return h, nil, nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, where, err)
			}
			f, err := sf.fact()
			if err == nil && h.Format != BatchFormat {
				err = fmt.Errorf("a fact in a batch of format %q", h.Format)
			}
			if err != nil {
				return h, nil, nil, fmt.Errorf("%w: %s: fact on chunk %q: %w", ErrCorrupt, where, sf.ChunkID, err)
			}
			facts = append(facts, f)
			continue
		}
		if len(facts) > 0 {
			return h, nil, nil, fmt.Errorf("%w: %s: a chunk after the batch's facts", ErrCorrupt, where)
		}
		var s storedChunk
		if err := strictJSON(text, &s); err != nil {
			return h, nil, nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, where, err)
		}
		c, err := s.chunk()
		if err != nil {
			return h, nil, nil, fmt.Errorf("%w: %s: chunk %q: %w", ErrCorrupt, where, s.ID, err)
		}
		out = append(out, c)
	}
	switch {
	case h.Format == "":
		return h, nil, nil, fmt.Errorf("%w: %s: empty", ErrCorrupt, name)
	case h.Format == BatchFormat && len(facts) == 0:
		return h, nil, nil, fmt.Errorf("%w: %s: format %q without facts", ErrCorrupt, name, h.Format)
	}
	return h, out, facts, nil
}

func (s *storedFact) fact() (*evidence.Fact, error) {
	f := &evidence.Fact{Kind: evidence.FactKind(s.Kind), ChunkID: s.ChunkID, By: s.By}
	var err error
	if f.End, err = asof.ParseDate(s.End); err != nil {
		return nil, err
	}
	if f.Anchor, err = asof.ParseInstant(s.Anchor); err != nil {
		return nil, err
	}
	if err := f.Prepare(); err != nil {
		return nil, err
	}
	return f, nil
}

func (s *storedChunk) chunk() (*evidence.Chunk, error) {
	c := &evidence.Chunk{ID: s.ID, DocID: s.DocID, Version: s.Version, Text: s.Text, SourceURL: s.SourceURL,
		Connector: s.Connector, Tenant: s.Tenant, ContentHash: s.ContentHash, Meta: s.Meta,
		Anchor: asof.Anchor{Field: s.AnchorField}}
	var errs []error
	var err error
	if s.RetrievedAt != "" {
		c.RetrievedAt, err = asof.ParseInstant(s.RetrievedAt)
		errs = append(errs, err)
	}
	if s.Anchor != "" {
		c.Anchor.At, err = asof.ParseInstant(s.Anchor)
		errs = append(errs, err)
	}
	if s.ValidFrom != "" {
		c.Valid.From, err = asof.ParseDate(s.ValidFrom)
		errs = append(errs, err)
	}
	if s.ValidTo != "" {
		c.Valid.To, err = asof.ParseDate(s.ValidTo)
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// strictJSON decodes exactly one JSON value with no unknown fields.
func strictJSON(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}
