package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/evpack/evpack/asof"
)

func TestNormalize(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"CRLF and CR become LF", "a\r\nb\rc", "a\nb\nc"},
		{"NFC composes e + combining acute", "caf\u0065\u0301", "caf\u00e9"},
		{"outer white space trimmed", "  \n text \t\n", "text"},
		{"invalid UTF-8 replaced", "a\xffb", "a\uFFFDb"},
	}
	for _, c := range cases {
		if got := Normalize(c.in); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
	a := Chunk{ID: "x", DocID: "d", Text: "caf\u0065\u0301\r\n"}
	b := Chunk{ID: "x", DocID: "d", Text: "caf\u00e9"}
	if a.Prepare() != nil || b.Prepare() != nil || a.ContentHash != b.ContentHash {
		t.Fatal("content hash is over normalized text")
	}
	// BLAKE3-256 of "abc", from the BLAKE3 test vectors.
	if got := Sum([]byte("abc")); got != "blake3:6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85" {
		t.Fatalf("Sum(abc) = %s", got)
	}
}

func samplePack() *Pack {
	at := time.Date(2025, 11, 20, 0, 0, 0, 0, time.UTC)
	return &Pack{
		Question: "Is <b> & \"quoted\" ok?\nYes\u2028", AsOf: asof.MustDate("2026-01-15"), Tenant: "acme", Generation: 7,
		Filters: []Filter{{Key: "kind", Value: "statute"}}, K: 2,
		Citations: []Citation{{
			Index: 1, ChunkID: "c1", DocID: "d", Version: "2025", Text: "Article 2\ttabbed\u0001", SourceURL: "https://x/y?a=1&b=2",
			Connector: "statute", RetrievedAt: at, Anchor: asof.Anchor{At: at, Field: "published"},
			Valid: asof.Interval{From: asof.MustDate("2026-01-01")}, ContentHash: "blake3:00", Score: 123456,
			Meta: map[string]string{"z": "1", "a": "2"},
		}},
		Trace:       Trace{Steps: []string{"lexical: 1 hits", "cited 1"}, Dropped: []Drop{{ChunkID: "c0", Reason: "missing source URL"}}},
		Fingerprint: NewFingerprint(Setting{Key: "pool", Value: "50"}, Setting{Key: "legs", Value: "lexical"}),
	}
}

func TestCanonicalBytes(t *testing.T) {
	want := `{"as_of":"2026-01-15","citations":[{"anchor":"2025-11-20T00:00:00Z","anchor_field":"published","chunk_id":"c1",` +
		`"connector":"statute","content_hash":"blake3:00","doc_id":"d","index":1,"meta":{"a":"2","z":"1"},` +
		`"retrieved_at":"2025-11-20T00:00:00Z","score":123456,"source_url":"https://x/y?a=1&b=2",` +
		`"text":"Article 2\ttabbed\u0001","valid_from":"2026-01-01","valid_to":"","version":"2025"}],` +
		`"filters":[{"key":"kind","value":"statute"}],"fingerprint":{"legs":"lexical","pool":"50"},"format":"evpack-pack/2",` +
		`"generation":7,"k":2,"question":"Is <b> & \"quoted\" ok?\nYes` + "\u2028" + `","tenant":"acme",` +
		`"trace":{"dropped":[{"chunk_id":"c0","reason":"missing source URL"}],"steps":["lexical: 1 hits","cited 1"]}}`
	got := samplePack().Bytes()
	if string(got) != want {
		t.Fatalf("canonical bytes differ:\n%s", cmp.Diff(want, string(got)))
	}
	if !json.Valid(got) {
		t.Fatal("not valid JSON")
	}
	assertSortedKeys(t, got)
}

// assertSortedKeys walks the JSON and fails if any object's keys are not in
// ascending byte order.
func assertSortedKeys(t *testing.T, b []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		obj     bool
		lastKey string
		wantKey bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		top := len(stack) - 1
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top >= 0 && stack[top].obj {
					stack[top].wantKey = true
				}
				stack = append(stack, frame{obj: v == '{', wantKey: true})
			default:
				stack = stack[:top]
			}
		case string:
			if top >= 0 && stack[top].obj && stack[top].wantKey {
				if v <= stack[top].lastKey && stack[top].lastKey != "" {
					t.Fatalf("key %q after %q", v, stack[top].lastKey)
				}
				stack[top].lastKey, stack[top].wantKey = v, false
				continue
			}
			if top >= 0 && stack[top].obj {
				stack[top].wantKey = true
			}
		default:
			if top >= 0 && stack[top].obj {
				stack[top].wantKey = true
			}
		}
	}
}

func TestParseRoundTrip(t *testing.T) {
	p := samplePack()
	b := p.Bytes()
	q, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(q.Bytes(), b) {
		t.Fatal("round trip changed bytes")
	}
	if q.Hash() != p.Hash() || !strings.HasPrefix(q.Hash(), "blake3:") || len(q.Hash()) != len("blake3:")+64 {
		t.Fatalf("hash %s", q.Hash())
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(pretty.Bytes()); !errors.Is(err, ErrNotCanonical) {
		t.Fatalf("re-indented pack: %v", err)
	}
	for name, in := range map[string]string{
		"not json":       "{",
		"unknown key":    `{"format":"evpack-pack/1","as_of":"2026-01-01","extra":1}`,
		"other format":   `{"format":"evpack-pack/0","as_of":"2026-01-01"}`,
		"unreadable day": `{"format":"evpack-pack/1","as_of":"01/01/2026"}`,
	} {
		if _, err := Parse([]byte(in)); !errors.Is(err, ErrBadPack) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestAssembleGate(t *testing.T) {
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(id string, f func(*Chunk)) *Chunk {
		c := &Chunk{ID: id, DocID: "d", Text: "text of " + id, SourceURL: "u", Connector: "c", RetrievedAt: at,
			Anchor: asof.Anchor{At: at, Field: "retrieved_at"}}
		if err := c.Prepare(); err != nil {
			t.Fatal(err)
		}
		if f != nil {
			f(c)
		}
		return c
	}
	store := map[string]*Chunk{
		"ok1":      mk("ok1", nil),
		"nourl":    mk("nourl", func(c *Chunk) { c.SourceURL = "" }),
		"noconn":   mk("noconn", func(c *Chunk) { c.Connector = " " }),
		"notime":   mk("notime", func(c *Chunk) { c.RetrievedAt = time.Time{} }),
		"tampered": mk("tampered", func(c *Chunk) { c.Text = "edited after ingest" }),
		"ok2":      mk("ok2", nil),
		"ok3":      mk("ok3", nil),
	}
	lookup := func(id string) (Entry, bool) { c, ok := store[id]; return Entry{Chunk: c}, ok }
	ranked := []Scored{{"nourl", 9}, {"ok1", 8}, {"noconn", 7}, {"ghost", 6}, {"notime", 5}, {"tampered", 4}, {"ok2", 3}, {"ok3", 2}}
	p := Assemble(Header{Question: "q", AsOf: asof.MustDate("2025-06-01"), K: 2}, ranked, lookup, []string{"pool 8"}, nil)
	if diff := cmp.Diff([]string{"ok1", "ok2"}, []string{p.Citations[0].ChunkID, p.Citations[1].ChunkID}); diff != "" {
		t.Fatal(diff)
	}
	if p.Citations[0].Index != 1 || p.Citations[1].Index != 2 || p.Citations[1].Score != 3 {
		t.Fatalf("numbering: %+v", p.Citations)
	}
	wantDrops := []Drop{{"nourl", "missing source URL"}, {"noconn", "missing connector"}, {"ghost", "not in store"},
		{"notime", "missing retrieval time"}, {"tampered", "content hash mismatch"}}
	if diff := cmp.Diff(wantDrops, p.Trace.Dropped); diff != "" {
		t.Fatal(diff)
	}
	wantSteps := []string{"pool 8", "dropped 5 (missing source URL: nourl; missing connector: noconn; not in store: ghost; " +
		"missing retrieval time: notime; content hash mismatch: tampered)", "cited 2"}
	if diff := cmp.Diff(wantSteps, p.Trace.Steps); diff != "" {
		t.Fatal(diff)
	}
}

func TestPrepare(t *testing.T) {
	c := Chunk{ID: "x", DocID: "d", Text: " a\r\nb ", Meta: map[string]string{"Bad": "v"}}
	var ce *ChunkError
	if err := c.Prepare(); !errors.Is(err, ErrBadMeta) || !errors.As(err, &ce) || ce.ChunkID != "x" {
		t.Fatalf("got %v", err)
	}
	c.Meta = map[string]string{"ok_key.1": "v"}
	if err := c.Prepare(); err != nil || c.Text != "a\nb" || c.ContentHash != c.ComputeHash() {
		t.Fatalf("prepare: %v %q %s", err, c.Text, c.ContentHash)
	}
}

// TestPrepareDatesOutOfRange: an instant or a day a pack could not parse
// back (years 1000 to 9999, as asof parses them) is refused at ingest,
// naming the field, whichever connector built the chunk.
func TestPrepareDatesOutOfRange(t *testing.T) {
	in := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name, field string
		edit        func(c *Chunk)
	}{
		{"retrieved in year 500", "retrieved_at", func(c *Chunk) { c.RetrievedAt = time.Date(500, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"retrieved in year 12000", "retrieved_at", func(c *Chunk) { c.RetrievedAt = time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"anchored in year 500", "anchor", func(c *Chunk) { c.Anchor.At = time.Date(500, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"in force from day -1e6", "valid_from", func(c *Chunk) { c.Valid.From = asof.DateFromDays(-1_000_000) }},
		{"in force to year 10000", "valid_to", func(c *Chunk) { c.Valid.To = asof.DateFromDays(asof.MustDate("9999-12-31").Days() + 1) }},
	}
	for _, tc := range cases {
		c := Chunk{ID: "x", DocID: "d", Text: "t", RetrievedAt: in, Anchor: asof.Anchor{Field: "published", At: in}}
		tc.edit(&c)
		err := c.Prepare()
		var ce *ChunkError
		if !errors.Is(err, asof.ErrBadDate) || !errors.As(err, &ce) || ce.ChunkID != "x" || !strings.Contains(err.Error(), tc.field+": ") {
			t.Fatalf("%s: got %v, want a ChunkError naming %s and wrapping asof.ErrBadDate", tc.name, err, tc.field)
		}
	}
	f := Fact{Kind: FactEnded, ChunkID: "x", End: asof.DateFromDays(1 << 40), Anchor: in}
	if err := f.Prepare(); !errors.Is(err, ErrBadFact) || !errors.Is(err, asof.ErrBadDate) {
		t.Fatalf("fact ending on day 2^40: %v", err)
	}
	f = Fact{Kind: FactEnded, ChunkID: "x", End: asof.MustDate("2025-01-01"), Anchor: time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := f.Prepare(); !errors.Is(err, ErrBadFact) || !errors.Is(err, asof.ErrBadDate) {
		t.Fatalf("fact anchored in year 20000: %v", err)
	}
}

func TestLedgerRoundTrip(t *testing.T) {
	p := samplePack()
	p.Ledger = []Scored{{ChunkID: "c1", Score: 912345}, {ChunkID: "c0", Score: -3}}
	b := p.Bytes()
	if !strings.Contains(string(b), `"k":2,"ledger":[{"chunk_id":"c1","score":912345},{"chunk_id":"c0","score":-3}],"question"`) {
		t.Fatalf("ledger rendering: %s", b)
	}
	assertSortedKeys(t, b)
	q, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p.Ledger, q.Ledger); diff != "" {
		t.Fatal(diff)
	}
}

// TestContentHashCoversEveryField edits one field of a prepared chunk at a
// time, as someone editing a stored batch file would: each edit must make the
// chunk uncitable with "content hash mismatch".
func TestContentHashCoversEveryField(t *testing.T) {
	base := func() Chunk {
		c := Chunk{
			ID: "c1", DocID: "d1", Version: "2024-06-01", Text: "Records are kept ten years.",
			SourceURL: "https://example.test/d1", Connector: "jsonl",
			RetrievedAt: time.Date(2024, 6, 2, 3, 4, 5, 0, time.UTC),
			Anchor:      asof.Anchor{Field: "published", At: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)},
			Valid:       asof.Interval{From: asof.MustDate("2024-07-01"), To: asof.MustDate("2025-07-01")},
			Tenant:      "acme", Meta: map[string]string{"kind": "statute", "lang": "en"},
		}
		if err := c.Prepare(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := base(); c.Citable() != "" {
		t.Fatalf("unedited chunk: %q", c.Citable())
	}
	cases := []struct {
		name, reason string
		edit         func(c *Chunk)
	}{
		{"id", "a chunk cited under another ID is another chunk", func(c *Chunk) { c.ID = "c2" }},
		{"doc_id", "the citation names the document", func(c *Chunk) { c.DocID = "d2" }},
		{"version", "the citation names the version", func(c *Chunk) { c.Version = "2025-01-01" }},
		{"text", "the evidence itself", func(c *Chunk) { c.Text = "Records are kept two years." }},
		{"source_url", "where a person checks the text", func(c *Chunk) { c.SourceURL = "https://evil.test/d1" }},
		{"connector", "which connector vouches for it", func(c *Chunk) { c.Connector = "files" }},
		{"retrieved_at", "the conservative anchor fallback reads it", func(c *Chunk) { c.RetrievedAt = c.RetrievedAt.Add(time.Second) }},
		{"anchor instant", "decides when the chunk is knowable", func(c *Chunk) { c.Anchor.At = c.Anchor.At.AddDate(-1, 0, 0) }},
		{"anchor field", "says which date anchored it", func(c *Chunk) { c.Anchor.Field = "retrieved_at" }},
		{"valid from", "decides when it is in force", func(c *Chunk) { c.Valid.From = asof.MustDate("2020-01-01") }},
		{"valid to", "decides when it stops being in force", func(c *Chunk) { c.Valid.To = asof.Date{} }},
		{"tenant", "decides who may see it", func(c *Chunk) { c.Tenant = "globex" }},
		{"tenant to shared", "the shared tenant is seen by its own scope", func(c *Chunk) { c.Tenant = "" }},
		{"meta value", "filters match on it", func(c *Chunk) { c.Meta["kind"] = "guidance" }},
		{"meta key added", "a filter could now match", func(c *Chunk) { c.Meta["extra"] = "x" }},
		{"meta key removed", "a filter could no longer match", func(c *Chunk) { delete(c.Meta, "lang") }},
		{"meta key and value swapped", "an ambiguous encoding would hash both alike", func(c *Chunk) {
			c.Meta = map[string]string{"kind": "statute", "lang": "", "en": ""}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			c.Meta = maps.Clone(c.Meta)
			tc.edit(&c)
			if got := c.Citable(); got != "content hash mismatch" {
				t.Fatalf("%s (%s): Citable() = %q, want \"content hash mismatch\"", tc.name, tc.reason, got)
			}
		})
	}
}

// TestAssembleRechecksEligibility hands Assemble chunks the request may not
// see, as a faulty reranker or lookup would: each is dropped with its reason.
func TestAssembleRechecksEligibility(t *testing.T) {
	day := func(s string) time.Time { return asof.MustDate(s).Start() }
	mk := func(id string, f func(*Chunk)) *Chunk {
		c := &Chunk{ID: id, DocID: "d", Text: "text of " + id, SourceURL: "u", Connector: "c", RetrievedAt: day("2025-01-01"),
			Anchor: asof.Anchor{At: day("2025-01-01"), Field: "published"}, Tenant: "acme",
			Meta: map[string]string{"kind": "policy"}}
		if f != nil {
			f(c)
		}
		if err := c.Prepare(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	h := Header{Question: "q", AsOf: asof.MustDate("2025-06-01"), Tenant: "acme", Filters: []Filter{{Key: "kind", Value: "policy"}}, K: 10}
	cases := []struct {
		name, reason string
		chunk        *Chunk
		want         string // the drop reason, "" when cited
	}{
		{"eligible", "own tenant, knowable, in force, filter matched", mk("ok", nil), ""},
		{"other tenant", "tenants are sealed", mk("globex", func(c *Chunk) { c.Tenant = "globex" }), "outside the request's tenant scope"},
		{"shared tenant", "a named tenant's scope includes the shared corpus", mk("shared", func(c *Chunk) { c.Tenant = "" }), ""},
		{"anchored after the as-of day", "never cites the future", mk("future", func(c *Chunk) { c.Anchor.At = day("2025-06-02") }), "not yet knowable as of the request"},
		{"anchored on the as-of day", "the anchor day itself is knowable", mk("sameday", func(c *Chunk) { c.Anchor.At = day("2025-06-01").Add(23 * time.Hour) }), ""},
		{"undated", "an undated chunk is never eligible", mk("undated", func(c *Chunk) { c.Anchor.At = time.Time{} }), "undated: never eligible"},
		{"not yet in force", "valid_from after the as-of day", mk("notyet", func(c *Chunk) { c.Valid.From = asof.MustDate("2025-06-02") }), "not in force on the as-of day"},
		{"no longer in force", "valid_to is the first day it no longer is", mk("superseded", func(c *Chunk) { c.Valid.To = asof.MustDate("2025-06-01") }), "not in force on the as-of day"},
		{"filter value differs", "filters are exact", mk("faq", func(c *Chunk) { c.Meta["kind"] = "faq" }), "filter kind=policy not matched"},
		{"filter key missing", "a chunk without the key never matches", mk("nokind", func(c *Chunk) { c.Meta = nil }), "filter kind=policy not matched"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(id string) (Entry, bool) { return Entry{Chunk: tc.chunk}, id == tc.chunk.ID }
			p := Assemble(h, []Scored{{ChunkID: tc.chunk.ID, Score: 1}}, lookup, nil, nil)
			if tc.want == "" {
				if len(p.Citations) != 1 || len(p.Trace.Dropped) != 0 {
					t.Fatalf("%s: want cited, got citations %+v, dropped %+v", tc.reason, p.Citations, p.Trace.Dropped)
				}
				return
			}
			if diff := cmp.Diff([]Drop{{ChunkID: tc.chunk.ID, Reason: tc.want}}, p.Trace.Dropped); diff != "" || len(p.Citations) != 0 {
				t.Fatalf("%s: citations %d, dropped diff %s", tc.reason, len(p.Citations), diff)
			}
			if want := "dropped 1 (" + tc.want + ": " + tc.chunk.ID + ")"; p.Trace.Steps[0] != want {
				t.Fatalf("trace step %q, want %q", p.Trace.Steps[0], want)
			}
		})
	}
}

func TestEncodeIsBytesAndHash(t *testing.T) {
	p := samplePack()
	raw, hash := p.Encode()
	if string(raw) != string(p.Bytes()) || hash != p.Hash() || hash != Sum(raw) {
		t.Fatalf("Encode gives %q %s, Bytes and Hash give %q %s", raw, hash, p.Bytes(), p.Hash())
	}
}

// The index's word on a chunk reaches the gate: a fact that retired it drops
// it with the index's reason; a known later end shows as the citation's
// valid_to only when earlier than the chunk's own.
func TestAssembleEntryFromFacts(t *testing.T) {
	c := &Chunk{ID: "v1", DocID: "d", Text: "t", SourceURL: "https://example.test", Connector: "test",
		RetrievedAt: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC),
		Anchor:      asof.Anchor{At: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Field: "published"},
		Valid:       asof.Interval{From: asof.MustDate("2025-01-01"), To: asof.MustDate("2026-01-01")}}
	c.ContentHash = c.ComputeHash()
	h := Header{Question: "q", AsOf: asof.MustDate("2025-06-01"), K: 1}
	for _, tc := range []struct {
		name, why string
		entry     Entry
		wantDrop  string
		wantTo    string
	}{
		{"nothing known", "the chunk's own validity", Entry{Chunk: c}, "", "2026-01-01"},
		{"earlier end known", "a fact ended it after the as-of day", Entry{Chunk: c, End: asof.MustDate("2025-07-01")}, "", "2025-07-01"},
		{"later end known", "a fact cannot extend validity", Entry{Chunk: c, End: asof.MustDate("2027-01-01")}, "", "2026-01-01"},
		{"retired", "the index's reason drops it", Entry{Chunk: c, Excluded: "superseded by v2 from 2025-05-01"}, "superseded by v2 from 2025-05-01", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Assemble(h, []Scored{{ChunkID: "v1", Score: 1}}, func(string) (Entry, bool) { return tc.entry, true }, nil, nil)
			if tc.wantDrop != "" {
				if len(p.Citations) != 0 || len(p.Trace.Dropped) != 1 || p.Trace.Dropped[0].Reason != tc.wantDrop {
					t.Fatalf("%s: want dropped %q, got %+v %+v", tc.why, tc.wantDrop, p.Citations, p.Trace.Dropped)
				}
				return
			}
			if len(p.Citations) != 1 || p.Citations[0].Valid.To.String() != tc.wantTo {
				t.Fatalf("%s: want cited with valid_to %s, got %+v", tc.why, tc.wantTo, p.Citations)
			}
			if p.Citations[0].Valid.From.String() != "2025-01-01" {
				t.Fatalf("valid_from changed: %+v", p.Citations[0].Valid)
			}
		})
	}
}

func TestFiltersOf(t *testing.T) {
	cases := []struct {
		name, why string
		in        map[string]string
		want      []Filter
		err       error
	}{
		{"none", "no restriction is nil, as a header without filters holds", nil, nil, nil},
		{"empty map", "the same for an empty map", map[string]string{}, nil, nil},
		{"sorted", "a header lists its filters by key, whatever the map's order",
			map[string]string{"kind": "rule", "form": "10-K", "a": ""},
			[]Filter{{"a", ""}, {"form", "10-K"}, {"kind", "rule"}}, nil},
		{"bad key", "a key metadata could not have", map[string]string{"Kind": "rule"}, nil, ErrBadMeta},
		{"bad value", "a control character in a value", map[string]string{"kind": "a\x00b"}, nil, ErrBadMeta},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FiltersOf(tc.in)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("%s: error %v, want %v", tc.why, err, tc.err)
			}
			if !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Fatalf("%s: %#v, want %#v", tc.why, got, tc.want)
			}
		})
	}
	// The first bad pair in key order is the one named.
	_, err := FiltersOf(map[string]string{"z": "\x01", "B": "x"})
	if err == nil || !strings.Contains(err.Error(), `"B"`) {
		t.Fatalf("error %v, want the one of key \"B\" (first in key order)", err)
	}
}
