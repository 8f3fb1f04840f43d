package evidence

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zeebo/blake3"
	"golang.org/x/text/unicode/norm"

	"github.com/evpack/evpack/asof"
)

// Chunk is one citable passage as stored at ingest. Chunks are immutable: a
// new version of a passage is a new chunk with its own ID.
type Chunk struct {
	ID          string            // stable chunk ID, unique in an index
	DocID       string            // the document the chunk belongs to
	Version     string            // the document version, e.g. "2024-06-01"
	Text        string            // normalized text (see Normalize)
	SourceURL   string            // where a person can check the text
	Connector   string            // which connector produced the chunk
	RetrievedAt time.Time         // when the connector fetched the source
	Anchor      asof.Anchor       // when the chunk became citable
	Valid       asof.Interval     // the days the version is in force
	Tenant      string            // the owner; "" is the shared tenant
	ContentHash string            // ComputeHash() at ingest: covers every field above and Meta
	Meta        map[string]string // filterable metadata
}

// Normalize puts text in the one form evpack stores, hashes and renders:
// valid UTF-8 (bad bytes become U+FFFD), NFC, "\n" line ends, no leading or
// trailing white space.
func Normalize(text string) string {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	return strings.TrimSpace(norm.NFC.String(text))
}

// HashPrefix names the hash function in every hash evpack writes.
const HashPrefix = "blake3:"

// Sum returns "blake3:<hex>" of b (BLAKE3-256).
func Sum(b []byte) string {
	h := blake3.Sum256(b)
	out := make([]byte, len(HashPrefix)+hex.EncodedLen(len(h)))
	hex.Encode(out[copy(out, HashPrefix):], h[:])
	return string(out)
}

// ChunkHashVersion opens the bytes a chunk's content hash is computed over.
// It changes whenever those bytes would change for an unchanged chunk.
const ChunkHashVersion = "evpack-chunk-hash/1"

// ComputeHash returns the chunk's content hash: Sum of the version tag
// ChunkHashVersion followed by every field that decides whether and how the
// chunk is eligible and cited, in this order: ID, DocID, Version, Text,
// SourceURL, Connector, RetrievedAt, Anchor.At, Anchor.Field, Valid.From,
// Valid.To, Tenant, then the number of Meta entries and each key and value in
// ascending key order. Instants are written RFC 3339 in UTC with nanoseconds
// ("" when zero), dates YYYY-MM-DD ("" when unset). Every field is written
// length-prefixed ("<bytes>:<field>,"), so no two different chunks encode
// alike. Only ContentHash itself is not covered. The text is hashed as stored:
// Prepare normalizes it first.
func (c *Chunk) ComputeHash() string {
	instant := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	fields := [...]string{ChunkHashVersion, c.ID, c.DocID, c.Version, c.Text, c.SourceURL, c.Connector,
		instant(c.RetrievedAt), instant(c.Anchor.At), c.Anchor.Field,
		c.Valid.From.String(), c.Valid.To.String(), c.Tenant, strconv.Itoa(len(c.Meta))}
	keys := SortedKeys(c.Meta)
	// Sized once: the text makes most of the bytes, and growing a buffer
	// for each chunk cost more than hashing it.
	n := 0
	for _, f := range fields {
		n += len(f) + 22 // the field, its length's digits, ':' and ','
	}
	for _, k := range keys {
		n += len(k) + len(c.Meta[k]) + 44
	}
	bp, _ := hashBuffers.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	b := slices.Grow((*bp)[:0], n)
	field := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
		b = append(b, ',')
	}
	for _, f := range fields {
		field(f)
	}
	for _, k := range keys {
		field(k)
		field(c.Meta[k])
	}
	sum := Sum(b)
	if cap(b) <= maxHashBuffer {
		*bp = b[:0]
		hashBuffers.Put(bp)
	}
	return sum
}

// hashBuffers holds the byte buffers ComputeHash writes a chunk's fields
// into (*[]byte), each empty between calls: a query checks every chunk it
// cites that no earlier request read, and a new buffer the size of the
// chunk for each was 5% of the bytes a request allocated at 100k chunks
// (docs/benchmarks.md, issue 30, stop 65). The pool holds scratch only,
// never a result; it is not configuration.
var hashBuffers sync.Pool

// maxHashBuffer bounds the buffers hashBuffers keeps: a chunk far longer
// than usual leaves its buffer to the collector.
const maxHashBuffer = 64 << 10

// SameEvidence reports whether a and b are the same evidence fetched at
// different times: equal in every hashed field except the retrieval time,
// and except the anchor when it falls back to the retrieval time. A source
// fetched again unchanged is that; the stored chunk, fetched first, stays
// (it was knowable earlier).
func SameEvidence(a, b *Chunk) bool {
	ca, cb := *a, *b
	ca.RetrievedAt, cb.RetrievedAt = time.Time{}, time.Time{}
	if ca.Anchor.Field == asof.RetrievedAtField && cb.Anchor.Field == asof.RetrievedAtField {
		ca.Anchor.At, cb.Anchor.At = time.Time{}, time.Time{}
	}
	return ca.ComputeHash() == cb.ComputeHash()
}

// Citable reports why a chunk may not reach a reasoner, or "" when it may.
// The reasons are fixed phrases: they appear in pack traces.
func (c *Chunk) Citable() string {
	if reason := c.MissingCitation(); reason != "" {
		return reason
	}
	if c.ContentHash != c.ComputeHash() {
		return "content hash mismatch"
	}
	return ""
}

// MissingCitation is Citable without the content hash check: why the
// chunk's citation fields keep it from a reasoner, or "". It is for a chunk
// whose hash Prepare has just computed, which cannot mismatch, so that
// ingest does not hash every text twice.
func (c *Chunk) MissingCitation() string {
	switch {
	case strings.TrimSpace(c.SourceURL) == "":
		return "missing source URL"
	case strings.TrimSpace(c.Connector) == "":
		return "missing connector"
	case c.RetrievedAt.IsZero():
		return "missing retrieval time"
	}
	return ""
}

// Prepare normalizes the chunk's text and instants, checks the fields an
// index cannot do without, then fills its content hash (ComputeHash, over the
// prepared fields). A chunk that is merely uncitable (no
// source URL, say) passes: the citation gate keeps it out of packs.
func (c *Chunk) Prepare() error {
	fail := func(err error) error { return &ChunkError{ChunkID: c.ID, Err: err} }
	if strings.TrimSpace(c.ID) == "" {
		return fail(fmt.Errorf("%w: chunk id is empty", ErrMissingID))
	}
	if strings.TrimSpace(c.DocID) == "" {
		return fail(fmt.Errorf("%w: doc_id is empty", ErrMissingID))
	}
	for _, f := range [...]struct{ name, v string }{{"id", c.ID}, {"doc_id", c.DocID}, {"version", c.Version},
		{"source_url", c.SourceURL}, {"connector", c.Connector}, {"anchor_field", c.Anchor.Field}} {
		if !utf8.ValidString(f.v) {
			return fail(fmt.Errorf("%w: %s %q", ErrNotUTF8, f.name, f.v))
		}
	}
	c.Text = Normalize(c.Text)
	if c.Text == "" {
		return fail(ErrEmptyText)
	}
	if err := c.Valid.Validate(); err != nil {
		return fail(err)
	}
	if err := CheckTenant(c.Tenant); err != nil {
		return fail(err)
	}
	for _, k := range SortedKeys(c.Meta) {
		if err := CheckMetaKey(k); err != nil {
			return fail(err)
		}
		if err := CheckMetaValue(k, c.Meta[k]); err != nil {
			return fail(err)
		}
	}
	if err := asof.CheckInstant(c.RetrievedAt); err != nil {
		return fail(fmt.Errorf("retrieved_at: %w", err))
	}
	if err := asof.CheckInstant(c.Anchor.At); err != nil {
		return fail(fmt.Errorf("anchor: %w", err))
	}
	c.RetrievedAt = truncate(c.RetrievedAt)
	c.Anchor.At = truncate(c.Anchor.At)
	c.ContentHash = c.ComputeHash()
	return nil
}

func truncate(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Second)
}

// Limits on names, in bytes.
const (
	MaxTenantLen    = 256  // longest tenant name
	MaxMetaKeyLen   = 256  // longest metadata key
	MaxMetaValueLen = 1024 // longest metadata value
)

// MaxQuestionLen is the longest question a request may ask, in bytes once
// normalized: some 2,500 words, beyond any question a brief asks. A
// request's cost grows with its question's length (a question of 1 MiB
// took a second), so it is bounded where requests are checked.
const MaxQuestionLen = 16 << 10

// CheckTenant returns nil when name may name a tenant: "" (the shared
// tenant), or valid UTF-8 of at most MaxTenantLen bytes without control
// characters (unicode.IsControl). Otherwise it returns an error wrapping
// ErrBadTenant that quotes the name. Ingest (Chunk.Prepare) and requests
// apply the same rule, so that a request can name every stored tenant and no
// name can spell an index's internal terms (which use control characters).
func CheckTenant(name string) error {
	if why := nameProblem(name, MaxTenantLen); why != "" {
		return fmt.Errorf("%w: %q %s", ErrBadTenant, name, why)
	}
	return nil
}

// CheckMetaKey returns nil when k may be a metadata (or filter) key: 1 to
// MaxMetaKeyLen bytes of [a-z0-9_.-]. Otherwise it returns an error wrapping
// ErrBadMeta that quotes the key.
func CheckMetaKey(k string) error {
	if len(k) > MaxMetaKeyLen || !validMetaKey(k) {
		return fmt.Errorf("%w: key %q: want 1 to %d bytes of [a-z0-9_.-]", ErrBadMeta, k, MaxMetaKeyLen)
	}
	return nil
}

// CheckMetaValue returns nil when v may be the metadata (or filter) value of
// key k: valid UTF-8 of at most MaxMetaValueLen bytes without control
// characters; "" is allowed. Otherwise it returns an error wrapping
// ErrBadMeta that quotes the key and the value.
func CheckMetaValue(k, v string) error {
	if why := nameProblem(v, MaxMetaValueLen); why != "" {
		return fmt.Errorf("%w: key %q: value %q %s", ErrBadMeta, k, v, why)
	}
	return nil
}

// Plain reports whether s is valid UTF-8 without control characters: the
// rule for tenants and metadata values (without their bounds on length),
// and for a purge's reason and a log's writer and replica names.
func Plain(s string) bool { return nameProblem(s, len(s)) == "" }

// nameProblem says why s cannot be a name of at most max bytes, or "".
func nameProblem(s string, max int) string {
	if len(s) > max {
		return fmt.Sprintf("is longer than %d bytes", max)
	}
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Sprintf("holds the control character %U", r)
		}
	}
	return ""
}

func validMetaKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// SortedKeys returns the keys of m in ascending order: the only way evpack
// walks a map when building anything that is returned or rendered.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
