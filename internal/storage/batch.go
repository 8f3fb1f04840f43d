package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/strictjson"
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

// Contents is what one batch file holds: the chunks its generation
// committed, the facts it learned of committed chunks, and the chunks whose
// text it purged. Redacted marks chunks of Chunks whose text a later purge
// removed from this file (their Text is then "").
type Contents struct {
	Chunks   []*evidence.Chunk
	Redacted map[string]Redaction // by chunk ID; nil when none
	Facts    []*evidence.Fact
	Purges   []Purge
	// Lines, set by DecodeBatch, is where each chunk's line lies in the
	// file (Lines[i] is Chunks[i]'s): what ReadLine takes.
	Lines []Span
}

// Span is a line of a file: its first byte's offset and its length, the
// newline left out.
type Span struct {
	Off int64
	Len int
}

// Redaction is what a batch file keeps of a chunk whose text was purged:
// the generation of the purge, and the counts the index's statistics took
// from the text (so that every figure of every generation stays as it was
// but the purged chunk's own terms).
type Redaction struct {
	Generation int64 `json:"generation"`
	Tokens     int   `json:"tokens"` // analyzed lexical tokens
	Terms      int   `json:"terms"`  // reranker terms
}

// Purge is the record of one chunk's text deleted for good: the chunk, its
// content hash (which packs citing it still carry) and why.
type Purge struct {
	ChunkID     string
	ContentHash string
	Reason      string
}

// storedChunk is one chunk line of a batch file.
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
	Purged      *Redaction        `json:"purged,omitempty"`
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

// storedPurge is a purge line; its first key is "purge".
type storedPurge struct {
	ChunkID     string `json:"purge"`
	ContentHash string `json:"content_hash"`
	Reason      string `json:"reason"`
}

// The openings of fact and purge lines (encoding/json writes fields in order).
var (
	factPrefix  = []byte(`{"fact":`)
	purgePrefix = []byte(`{"purge":`)
)

// plain reports whether c is written in ChunksOnlyFormat: chunks alone,
// none of them redacted.
func (c Contents) plain() bool {
	return len(c.Facts) == 0 && len(c.Purges) == 0 && len(c.Redacted) == 0
}

// EncodeBatch returns the sealed batch file for c: chunk lines, then fact
// lines, then purge lines. A batch of chunks alone is written in
// ChunksOnlyFormat (the bytes earlier versions wrote), any other in
// BatchFormat. Everything is read back from the encoded bytes and compared
// with what was given, so input that storage would change (bytes that are
// not UTF-8 become U+FFFD in JSON) is ErrUnstorable here, before anything is
// written, rather than a chunk that hashes differently after the next Open.
func EncodeBatch(h BatchHeader, c Contents) ([]byte, error) {
	raw, _, err := EncodeBatchLines(h, c)
	return raw, err
}

// EncodeBatchLines is EncodeBatch, and where each chunk's line lies in the
// file it returns.
func EncodeBatchLines(h BatchHeader, c Contents) ([]byte, []Span, error) {
	h.Format = ChunksOnlyFormat
	if !c.plain() {
		h.Format = BatchFormat
	}
	var b bytes.Buffer
	b.Grow(encodedSize(c) + fsutil.TextSealLen) // once, not by doubling: the texts are most of it
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&h); err != nil {
		return nil, nil, err
	}
	for _, ch := range c.Chunks {
		sc := storedChunk{ID: ch.ID, DocID: ch.DocID, Version: ch.Version, Text: ch.Text, SourceURL: ch.SourceURL,
			Connector: ch.Connector, RetrievedAt: asof.FormatInstant(ch.RetrievedAt),
			Anchor: asof.FormatInstant(ch.Anchor.At), AnchorField: ch.Anchor.Field,
			ValidFrom: ch.Valid.From.String(), ValidTo: ch.Valid.To.String(), Tenant: ch.Tenant,
			ContentHash: ch.ContentHash, Meta: ch.Meta}
		if r, ok := c.Redacted[ch.ID]; ok {
			if ch.Text != "" {
				return nil, nil, fmt.Errorf("%w: chunk %q: redacted but its text is still there", ErrUnstorable, ch.ID)
			}
			sc.Purged = &r
		}
		if err := enc.Encode(&sc); err != nil {
			return nil, nil, fmt.Errorf("%w: chunk %q: %v", ErrUnstorable, ch.ID, err)
		}
	}
	for _, f := range c.Facts {
		sf := storedFact{Kind: string(f.Kind), ChunkID: f.ChunkID, End: f.End.String(),
			Anchor: asof.FormatInstant(f.Anchor), By: f.By}
		if err := enc.Encode(&sf); err != nil {
			return nil, nil, fmt.Errorf("%w: fact on chunk %q: %v", ErrUnstorable, f.ChunkID, err)
		}
	}
	for _, p := range c.Purges {
		if err := enc.Encode(&storedPurge{ChunkID: p.ChunkID, ContentHash: p.ContentHash, Reason: p.Reason}); err != nil {
			return nil, nil, fmt.Errorf("%w: purge of chunk %q: %v", ErrUnstorable, p.ChunkID, err)
		}
	}
	raw := fsutil.AppendSeal(b.Bytes()) // in place when the estimate left room
	_, back, err := DecodeBatch("(new batch)", raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrUnstorable, err)
	}
	for i, ch := range c.Chunks {
		if field := Differs(ch, back.Chunks[i]); field != "" {
			return nil, nil, fmt.Errorf("%w: chunk %q: its %s would read back changed (not valid UTF-8?)", ErrUnstorable, ch.ID, field)
		}
	}
	for i, f := range c.Facts {
		if *f != *back.Facts[i] {
			return nil, nil, fmt.Errorf("%w: fact on chunk %q would read back changed (not valid UTF-8?)", ErrUnstorable, f.ChunkID)
		}
	}
	if !slices.Equal(c.Purges, back.Purges) {
		return nil, nil, fmt.Errorf("%w: a purge record would read back changed (not valid UTF-8?)", ErrUnstorable)
	}
	return raw, back.Lines, nil
}

// encodedSize estimates the bytes of c's lines: its strings (a text's
// escapes add a little) and each line's names, dates and punctuation.
func encodedSize(c Contents) int {
	n := 512
	for _, ch := range c.Chunks {
		n += 512 + len(ch.ID) + len(ch.DocID) + len(ch.Version) + len(ch.Text) + len(ch.Text)/16 +
			len(ch.SourceURL) + len(ch.Connector) + len(ch.Anchor.Field) + len(ch.Tenant) + len(ch.ContentHash)
		for k, v := range ch.Meta {
			n += len(k) + len(v) + 8
		}
	}
	n += 256 * (len(c.Facts) + len(c.Purges))
	return n
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

// DecodeBatch checks the seal of a batch file and parses it. name (the
// file's path) is used in errors, with the line number.
func DecodeBatch(name string, raw []byte) (BatchHeader, Contents, error) {
	var h BatchHeader
	var c Contents
	body, err := fsutil.UnsealText(raw)
	if err != nil {
		return h, c, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	fail := func(where string, format string, args ...any) (BatchHeader, Contents, error) {
		return h, Contents{}, fmt.Errorf("%w: %s: "+format, append([]any{ErrCorrupt, where}, args...)...)
	}
	// Split the lines by hand: a chunk's text has no length limit, and a
	// scanner's would make a stored batch unreadable.
	var lines [][]byte
	var starts []int64 // each line's offset in the file
	for off := 0; len(body) > 0; {
		cut := bytes.IndexByte(body, '\n')
		lines, starts, body = append(lines, body[:cut]), append(starts, int64(off)), body[cut+1:]
		off += cut + 1
	}
	where := func(i int) string { return fmt.Sprintf("%s:%d", name, i+1) }
	// Chunk lines, most of a batch, are decoded on every core first; the
	// pass below then reads the file in order, so the error reported is
	// always the first line's.
	parsed := decodeChunkLines(lines)
	for i, text := range lines {
		switch {
		case i == 0:
			if err := strictJSON(text, &h); err != nil || (h.Format != BatchFormat && h.Format != ChunksOnlyFormat) {
				return fail(where(i), "want a header with format %q or %q", BatchFormat, ChunksOnlyFormat)
			}
		case bytes.HasPrefix(text, purgePrefix):
			var sp storedPurge
			if err := strictJSON(text, &sp); err != nil {
				return fail(where(i), "%v", err)
			}
			if sp.ChunkID == "" || sp.ContentHash == "" || sp.Reason == "" {
				return fail(where(i), "purge of chunk %q: chunk, content hash and reason are required", sp.ChunkID)
			}
			c.Purges = append(c.Purges, Purge(sp))
		case bytes.HasPrefix(text, factPrefix):
			if len(c.Purges) > 0 {
				return fail(where(i), "a fact after the batch's purges")
			}
			var sf storedFact
			if err := strictJSON(text, &sf); err != nil {
				return fail(where(i), "%v", err)
			}
			f, err := sf.fact()
			if err != nil {
				return fail(where(i), "fact on chunk %q: %w", sf.ChunkID, err)
			}
			c.Facts = append(c.Facts, f)
		default:
			if len(c.Facts) > 0 || len(c.Purges) > 0 {
				return fail(where(i), "a chunk after the batch's facts or purges")
			}
			p := parsed[i]
			switch {
			case p.jsonErr != nil:
				return fail(where(i), "%v", p.jsonErr)
			case p.err != nil:
				return fail(where(i), "chunk %q: %w", p.s.ID, p.err)
			}
			ch := p.c
			if p.s.Purged != nil {
				if ch.Text != "" || p.s.Purged.Generation <= h.Generation {
					return fail(where(i), "chunk %q: a redaction keeps no text and comes from a later generation", p.s.ID)
				}
				if c.Redacted == nil {
					c.Redacted = map[string]Redaction{}
				}
				c.Redacted[ch.ID] = *p.s.Purged
			}
			c.Chunks = append(c.Chunks, ch)
			c.Lines = append(c.Lines, Span{Off: starts[i], Len: len(text)})
		}
	}
	switch {
	case h.Format == "":
		return fail(name, "empty")
	case h.Format == BatchFormat && c.plain():
		return fail(name, "format %q for chunks alone", h.Format)
	case h.Format == ChunksOnlyFormat && !c.plain():
		return fail(name, "facts, purges or redactions in a batch of format %q", h.Format)
	}
	return h, c, nil
}

// DecodeChunkLine parses one chunk line of a batch file (as ReadLine
// returns it); where names it in errors, and is called only for one (a
// query reads a line for each chunk it cites: naming it each time cost
// a formatted string a read). redacted is set for a chunk whose text a
// purge removed.
func DecodeChunkLine(where func() string, line []byte) (c *evidence.Chunk, redacted *Redaction, err error) {
	var s storedChunk
	if bytes.HasPrefix(line, purgePrefix) || bytes.HasPrefix(line, factPrefix) {
		return nil, nil, fmt.Errorf("%w: %s: not a chunk line", ErrCorrupt, where())
	}
	// Not strictJSON: the line was checked so when its batch was written,
	// and the caller checks what it decodes against the chunk's content
	// hash, which a field unknown here could not move.
	if !decodeChunkFast(line, &s) {
		s = storedChunk{}
		if err := json.Unmarshal(line, &s); err != nil {
			return nil, nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, where(), err)
		}
	}
	if c, err = s.chunk(); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: chunk %q: %w", ErrCorrupt, where(), s.ID, err)
	}
	return c, s.Purged, nil
}

// parsedChunk is one chunk line decoded: the stored form, the chunk, and
// the line's JSON error or the chunk's field error.
type parsedChunk struct {
	s            storedChunk
	c            *evidence.Chunk
	jsonErr, err error
}

// decodeChunkLines decodes the chunk lines among lines (every line but the
// header, the fact lines and the purge lines) on GOMAXPROCS workers; each
// result sits at its line's index. A line in the form the encoder writes
// is read by decodeChunkFast, any other by strictJSON, which decides and
// names the error: every line decodes, and fails, as strictJSON decodes it
// alone (TestDecodeChunkLinesAsAlone).
func decodeChunkLines(lines [][]byte) []parsedChunk {
	out := make([]parsedChunk, len(lines))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(lines)/256))
	decode := func(w int) {
		for i := 1 + w; i < len(lines); i += workers {
			text := lines[i]
			if bytes.HasPrefix(text, purgePrefix) || bytes.HasPrefix(text, factPrefix) {
				continue
			}
			p := &out[i]
			if !decodeChunkFast(text, &p.s) {
				p.s = storedChunk{}
				p.jsonErr = strictJSON(text, &p.s)
			}
			if p.jsonErr == nil {
				p.c, p.err = p.s.chunk()
			}
		}
	}
	if workers == 1 {
		// A small batch (a commit of a few facts) on the caller's
		// goroutine: a goroutine of its own waited for a core, up to 19 ms
		// at a million chunks while a checkpoint was written beside it.
		decode(0)
		return out
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { decode(w) })
	}
	wg.Wait()
	return out
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
	if !strictjson.Ended(dec) {
		return errors.New("data after the JSON value")
	}
	return nil
}
