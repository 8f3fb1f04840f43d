package connectors

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
)

// DefaultArticlePattern matches a heading line that starts an article:
// "Article 4", "Section 12a", "§ 3". The first capture group is the number.
const DefaultArticlePattern = `(?m)^(?:Article|Section|§)\s+([0-9]+[A-Za-z]?)\b`

// Statute reads versioned statutes: one JSON file per law, each version the
// full text in force from its in_force date until the next version's. Text is
// chunked at the law's own article headings, never mid-article. An article
// whose text is unchanged from the previous version is not repeated: its chunk
// stays valid across both, anchored at the version that introduced it.
//
// File form:
//
//	{"doc_id": "dpa", "title": "...", "source_url": "https://...",
//	 "retrieved_at": "2026-01-10T00:00:00Z", "tenant": "", "meta": {"k": "v"},
//	 "versions": [{"version": "2019", "published": "2018-12-01",
//	               "in_force": "2019-01-01", "source_url": "...", "text": "Article 1 ..."}]}
type Statute struct {
	paths   []string
	article *regexp.Regexp
}

// NewStatute returns a connector over the given files with the default
// article pattern.
func NewStatute(paths ...string) *Statute {
	return &Statute{paths: paths, article: regexp.MustCompile(DefaultArticlePattern)}
}

// WithArticlePattern returns a copy that splits at pattern instead; its first
// capture group must be the article number.
func (s *Statute) WithArticlePattern(pattern string) (*Statute, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("%w: article pattern: %v", ErrField, err)
	}
	if re.NumSubexp() < 1 {
		return nil, fmt.Errorf("%w: article pattern %q has no capture group", ErrField, pattern)
	}
	return &Statute{paths: s.paths, article: re}, nil
}

// Name implements Connector.
func (*Statute) Name() string { return "statute" }

// AnchorField implements Connector: a version is citable from the day it was
// published, which may precede the day it enters into force.
func (*Statute) AnchorField() string { return "published" }

type statuteFile struct {
	DocID       string            `json:"doc_id"`
	Title       string            `json:"title"`
	SourceURL   string            `json:"source_url"`
	RetrievedAt string            `json:"retrieved_at"`
	Tenant      string            `json:"tenant"`
	Meta        map[string]string `json:"meta"`
	Versions    []struct {
		Version   string `json:"version"`
		Published string `json:"published"`
		InForce   string `json:"in_force"`
		SourceURL string `json:"source_url"`
		Text      string `json:"text"`
	} `json:"versions"`
}

type statuteVersion struct {
	label     string
	published time.Time
	inForce   asof.Date
	url       string
	articles  []article
}

type article struct{ num, text string }

// Read implements Connector.
func (s *Statute) Read(ctx context.Context) ([]Record, error) {
	var out []Record
	for _, path := range s.paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		recs, err := s.readFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

func (s *Statute) readFile(path string) ([]Record, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("connectors: statute: %w", err)
	}
	return s.Parse(path, raw)
}

// Parse reads one statute file's bytes; path names it in errors.
func (s *Statute) Parse(path string, raw []byte) ([]Record, error) {
	var f statuteFile
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, SyntaxError(path, raw, err)
	}
	if f.DocID == "" {
		return nil, &evidence.ChunkError{Where: path, Err: fmt.Errorf("%w: doc_id is empty", ErrField)}
	}
	var err error
	retrieved := time.Time{}
	if f.RetrievedAt != "" {
		if retrieved, err = asof.ParseInstant(f.RetrievedAt); err != nil {
			return nil, fieldErr(path, f.DocID, "retrieved_at", err)
		}
	}
	var versions []statuteVersion
	for i, v := range f.Versions {
		where := fmt.Sprintf("%s: versions[%d]", path, i)
		sv := statuteVersion{label: v.Version, url: v.SourceURL}
		if sv.url == "" {
			sv.url = f.SourceURL
		}
		if sv.published, err = asof.ParseInstant(v.Published); err != nil {
			return nil, fieldErr(where, f.DocID, "published", err)
		}
		if sv.inForce, err = asof.ParseDate(v.InForce); err != nil {
			return nil, fieldErr(where, f.DocID, "in_force", err)
		}
		if sv.label == "" {
			sv.label = sv.inForce.String()
		}
		if sv.articles, err = s.split(v.Text); err != nil {
			return nil, &evidence.ChunkError{ChunkID: f.DocID, Where: where, Err: err}
		}
		versions = append(versions, sv)
	}
	slices.SortStableFunc(versions, func(a, b statuteVersion) int { return int(a.inForce.Days() - b.inForce.Days()) })
	for i := 1; i < len(versions); i++ {
		if versions[i].inForce == versions[i-1].inForce {
			return nil, fieldErr(path, f.DocID, "in_force", fmt.Errorf("versions %q and %q both enter into force on %s",
				versions[i-1].label, versions[i].label, versions[i].inForce))
		}
	}

	// Walk versions in force order; an article opens a chunk when its text
	// first appears and closes it when a later version changes or drops it.
	type open struct {
		rec   Record
		index int
	}
	var out []Record
	live := map[string]*open{}
	for i, v := range versions {
		seen := map[string]bool{}
		for _, a := range v.articles {
			seen[a.num] = true
			if o, ok := live[a.num]; ok && o.rec.Chunk.Text == a.text {
				continue // unchanged: the open chunk stays valid
			}
			if o, ok := live[a.num]; ok {
				out[o.index].Chunk.Valid.To = v.inForce
			}
			c := evidence.Chunk{
				ID:          fmt.Sprintf("%s/art-%s@%s", f.DocID, a.num, v.label),
				DocID:       f.DocID,
				Version:     v.label,
				Text:        a.text,
				SourceURL:   v.url,
				Connector:   s.Name(),
				RetrievedAt: retrieved,
				Anchor:      asof.ResolveAnchor(s.AnchorField(), v.published, retrieved),
				Valid:       asof.Interval{From: v.inForce},
				Tenant:      f.Tenant,
				Meta:        map[string]string{"article": a.num},
			}
			for _, k := range evidence.SortedKeys(f.Meta) {
				c.Meta[k] = f.Meta[k]
			}
			live[a.num] = &open{rec: Record{Chunk: c, Where: fmt.Sprintf("%s: versions[%d]: article %s", path, i, a.num)}, index: len(out)}
			out = append(out, live[a.num].rec)
		}
		for _, num := range evidence.SortedKeys(live) {
			if !seen[num] { // repealed in this version
				out[live[num].index].Chunk.Valid.To = v.inForce
				delete(live, num)
			}
		}
	}
	return out, nil
}

// split cuts a version's text at article headings. Text before the first
// heading becomes article "0" (title, preamble).
func (s *Statute) split(text string) ([]article, error) {
	text = evidence.Normalize(text)
	locs := s.article.FindAllStringSubmatchIndex(text, -1)
	var out []article
	seen := map[string]bool{}
	add := func(num, body string) error {
		body = strings.TrimSpace(body)
		if body == "" {
			return nil
		}
		if seen[num] {
			return fmt.Errorf("%w: article %s appears twice", ErrField, num)
		}
		seen[num] = true
		out = append(out, article{num: num, text: body})
		return nil
	}
	start := 0
	if len(locs) == 0 || locs[0][0] > 0 {
		end := len(text)
		if len(locs) > 0 {
			end = locs[0][0]
		}
		if err := add("0", text[:end]); err != nil {
			return nil, err
		}
	}
	for i, l := range locs {
		start = l[0]
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		if err := add(text[l[2]:l[3]], text[start:end]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
