package evidence

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/evpack/evpack/asof"
)

// Bytes returns the canonical JSON form of the pack: object keys in byte
// order, no insignificant white space, integers only, strings as NFC UTF-8
// with the minimal JSON escapes, "\n" line ends, no trailing newline.
func (p *Pack) Bytes() []byte {
	var w canon
	// Most of a pack is its passages' text: room for it up front spares
	// the buffer's doublings (an estimate; escapes may still grow it).
	n := 1024 + len(p.Question)
	for i := range p.Citations {
		n += 512 + len(p.Citations[i].Text)
	}
	w.b.Grow(n)
	w.begin()
	w.key("as_of")
	w.str(p.AsOf.String())
	w.key("citations")
	w.array(len(p.Citations), func(i int) { writeCitation(&w, &p.Citations[i]) })
	w.key("filters")
	w.array(len(p.Filters), func(i int) {
		w.begin()
		w.key("key")
		w.str(p.Filters[i].Key)
		w.key("value")
		w.str(p.Filters[i].Value)
		w.end()
	})
	w.key("fingerprint")
	w.begin()
	for _, s := range p.Fingerprint {
		w.key(s.Key)
		w.str(s.Value)
	}
	w.end()
	w.key("format")
	w.str(cmp.Or(p.Format, FormatVersion))
	if p.Format != FormatV1 { // the first form had no generation
		w.key("generation")
		w.int(p.Generation)
	}
	w.key("k")
	w.int(int64(p.K))
	if len(p.Ledger) > 0 { // only packs of non-bit-stable rerankers carry one
		w.key("ledger")
		w.array(len(p.Ledger), func(i int) {
			w.begin()
			w.key("chunk_id")
			w.str(p.Ledger[i].ChunkID)
			w.key("score")
			w.int(p.Ledger[i].Score)
			w.end()
		})
	}
	if p.Period != "" || p.PeriodFrom != "" { // only packs ranked for a period carry them
		w.key("period")
		w.str(p.Period)
		w.key("period_from")
		w.str(p.PeriodFrom)
	}
	w.key("question")
	w.str(p.Question)
	w.key("tenant")
	w.str(p.Tenant)
	w.key("trace")
	w.begin()
	w.key("dropped")
	w.array(len(p.Trace.Dropped), func(i int) {
		w.begin()
		w.key("chunk_id")
		w.str(p.Trace.Dropped[i].ChunkID)
		w.key("reason")
		w.str(p.Trace.Dropped[i].Reason)
		w.end()
	})
	w.key("steps")
	w.array(len(p.Trace.Steps), func(i int) { w.str(p.Trace.Steps[i]) })
	w.end()
	w.end()
	return w.b.Bytes()
}

func writeCitation(w *canon, c *Citation) {
	w.begin()
	w.key("anchor")
	w.str(asof.FormatInstant(c.Anchor.At))
	w.key("anchor_field")
	w.str(c.Anchor.Field)
	w.key("chunk_id")
	w.str(c.ChunkID)
	w.key("connector")
	w.str(c.Connector)
	w.key("content_hash")
	w.str(c.ContentHash)
	w.key("doc_id")
	w.str(c.DocID)
	w.key("index")
	w.int(int64(c.Index))
	w.key("meta")
	w.begin()
	for _, k := range SortedKeys(c.Meta) {
		w.key(k)
		w.str(c.Meta[k])
	}
	w.end()
	w.key("retrieved_at")
	w.str(asof.FormatInstant(c.RetrievedAt))
	w.key("score")
	w.int(c.Score)
	w.key("source_url")
	w.str(c.SourceURL)
	w.key("text")
	w.str(c.Text)
	w.key("valid_from")
	w.str(c.Valid.From.String())
	w.key("valid_to")
	w.str(c.Valid.To.String())
	w.key("version")
	w.str(c.Version)
	w.end()
}

// canon writes canonical JSON. Callers emit keys in ascending byte order; the
// tests check that every object in a rendered pack obeys it.
type canon struct {
	b     bytes.Buffer
	first []bool // per open object: no key written yet
}

func (w *canon) begin() { w.b.WriteByte('{'); w.first = append(w.first, true) }
func (w *canon) end()   { w.b.WriteByte('}'); w.first = w.first[:len(w.first)-1] }

func (w *canon) key(k string) {
	if !w.first[len(w.first)-1] {
		w.b.WriteByte(',')
	}
	w.first[len(w.first)-1] = false
	w.str(k)
	w.b.WriteByte(':')
}

func (w *canon) int(n int64) { w.b.WriteString(strconv.FormatInt(n, 10)) }

// array writes n elements, each by item, comma-separated in brackets.
func (w *canon) array(n int, item func(i int)) {
	w.b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			w.b.WriteByte(',')
		}
		item(i)
	}
	w.b.WriteByte(']')
}

// str writes s with the minimal escapes: quote, backslash, and control
// characters (short forms for \b \t \n \f \r, \u00XX otherwise), and a
// byte that is not UTF-8 as \ufffd. Everything else, including <, > and &,
// is written as raw UTF-8, a run at a time.
func (w *canon) str(s string) {
	w.b.WriteByte('"')
	run := 0 // s[run:i] needs no escape and is not written yet
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size // valid UTF-8 is written as it is
				continue
			}
		}
		w.b.WriteString(s[run:i])
		switch {
		case c == '"':
			w.b.WriteString(`\"`)
		case c == '\\':
			w.b.WriteString(`\\`)
		case c == '\b':
			w.b.WriteString(`\b`)
		case c == '\t':
			w.b.WriteString(`\t`)
		case c == '\n':
			w.b.WriteString(`\n`)
		case c == '\f':
			w.b.WriteString(`\f`)
		case c == '\r':
			w.b.WriteString(`\r`)
		case c < 0x20:
			fmt.Fprintf(&w.b, `\u%04x`, c)
		default: // a byte that is not UTF-8
			w.b.WriteString(`\ufffd`)
		}
		i++
		run = i
	}
	w.b.WriteString(s[run:])
	w.b.WriteByte('"')
}

// wire mirrors the canonical form for Parse.
type wirePack struct {
	AsOf        string            `json:"as_of"`
	Citations   []wireCitation    `json:"citations"`
	Filters     []wireKV          `json:"filters"`
	Fingerprint map[string]string `json:"fingerprint"`
	Format      string            `json:"format"`
	Generation  *int64            `json:"generation"` // nil in FormatV1
	K           int               `json:"k"`
	Ledger      []struct {
		ChunkID string `json:"chunk_id"`
		Score   int64  `json:"score"`
	} `json:"ledger"`
	Period     string `json:"period"`
	PeriodFrom string `json:"period_from"`
	Question   string `json:"question"`
	Tenant     string `json:"tenant"`
	Trace      struct {
		Dropped []struct {
			ChunkID string `json:"chunk_id"`
			Reason  string `json:"reason"`
		} `json:"dropped"`
		Steps []string `json:"steps"`
	} `json:"trace"`
}

type wireKV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type wireCitation struct {
	Anchor      string            `json:"anchor"`
	AnchorField string            `json:"anchor_field"`
	ChunkID     string            `json:"chunk_id"`
	Connector   string            `json:"connector"`
	ContentHash string            `json:"content_hash"`
	DocID       string            `json:"doc_id"`
	Index       int               `json:"index"`
	Meta        map[string]string `json:"meta"`
	RetrievedAt string            `json:"retrieved_at"`
	Score       int64             `json:"score"`
	SourceURL   string            `json:"source_url"`
	Text        string            `json:"text"`
	ValidFrom   string            `json:"valid_from"`
	ValidTo     string            `json:"valid_to"`
	Version     string            `json:"version"`
}

// Parse reads a pack from its canonical bytes, of FormatVersion or of the
// older FormatV1 (Pack.Format then says so). It fails with ErrBadPack when
// the bytes are not a pack of either, and with ErrNotCanonical
// when they are a pack but not byte-identical to its canonical rendering
// (re-indented, reordered, or edited by hand).
func Parse(b []byte) (*Pack, error) {
	var w wirePack
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadPack, err)
	}
	switch {
	case w.Format == FormatV1 && w.Generation != nil:
		return nil, fmt.Errorf("%w: format %q has no generation", ErrBadPack, w.Format)
	case w.Format == FormatV1:
	case w.Format != FormatVersion:
		return nil, fmt.Errorf("%w: format %q, this build reads %q and %q", ErrBadPack, w.Format, FormatVersion, FormatV1)
	case w.Generation == nil:
		return nil, fmt.Errorf("%w: format %q needs a generation", ErrBadPack, w.Format)
	}
	if err := checkWireHeader(&w); err != nil {
		return nil, err
	}
	p := &Pack{Question: w.Question, Tenant: w.Tenant, K: w.K, Period: w.Period, PeriodFrom: w.PeriodFrom}
	if w.Format == FormatV1 {
		p.Format = FormatV1
	} else {
		p.Generation = *w.Generation
	}
	var err error
	if p.AsOf, err = asof.ParseDate(w.AsOf); err != nil {
		return nil, fmt.Errorf("%w: as_of: %w", ErrBadPack, err)
	}
	for _, f := range w.Filters {
		p.Filters = append(p.Filters, Filter(f)) // same fields; the wire type only adds JSON tags
	}
	for _, k := range SortedKeys(w.Fingerprint) {
		p.Fingerprint = append(p.Fingerprint, Setting{Key: k, Value: w.Fingerprint[k]})
	}
	for _, d := range w.Trace.Dropped {
		p.Trace.Dropped = append(p.Trace.Dropped, Drop{ChunkID: d.ChunkID, Reason: d.Reason})
	}
	p.Trace.Steps = w.Trace.Steps
	for _, s := range w.Ledger {
		p.Ledger = append(p.Ledger, Scored{ChunkID: s.ChunkID, Score: s.Score})
	}
	for i, wc := range w.Citations {
		c := Citation{Index: wc.Index, ChunkID: wc.ChunkID, DocID: wc.DocID, Version: wc.Version,
			Text: wc.Text, SourceURL: wc.SourceURL, Connector: wc.Connector, ContentHash: wc.ContentHash,
			Score: wc.Score, Anchor: asof.Anchor{Field: wc.AnchorField}}
		if len(wc.Meta) > 0 {
			c.Meta = wc.Meta
		}
		if c.RetrievedAt, err = optInstant(wc.RetrievedAt); err == nil {
			if c.Anchor.At, err = optInstant(wc.Anchor); err == nil {
				if c.Valid.From, err = optDate(wc.ValidFrom); err == nil {
					c.Valid.To, err = optDate(wc.ValidTo)
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: citation %d: %w", ErrBadPack, i+1, err)
		}
		p.Citations = append(p.Citations, c)
	}
	if !bytes.Equal(p.Bytes(), b) {
		return nil, ErrNotCanonical
	}
	return p, nil
}

// checkWireHeader refuses header values no index writes: a negative
// generation, k below 1, more citations than k, citations not numbered
// 1..n in order. Each is ErrBadPack naming the field, never a pack that a
// replay could only call different.
func checkWireHeader(w *wirePack) error {
	switch {
	case w.Generation != nil && *w.Generation < 0:
		return fmt.Errorf("%w: generation %d is negative", ErrBadPack, *w.Generation)
	case w.K < 1:
		return fmt.Errorf("%w: k %d is below 1", ErrBadPack, w.K)
	case len(w.Citations) > w.K:
		return fmt.Errorf("%w: citations: %d, more than k %d", ErrBadPack, len(w.Citations), w.K)
	}
	for i, c := range w.Citations {
		if c.Index != i+1 {
			return fmt.Errorf("%w: citations[%d].index is %d, want %d", ErrBadPack, i, c.Index, i+1)
		}
	}
	return nil
}

func optInstant(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return asof.ParseInstant(s)
}

func optDate(s string) (asof.Date, error) {
	if s == "" {
		return asof.Date{}, nil
	}
	return asof.ParseDate(s)
}
