package connectors

import (
	"bytes"
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
	"github.com/evpack/evpack/internal/strictjson"
	"github.com/evpack/evpack/internal/textblocks"
)

// DefaultArticlePattern matches a heading line that starts an article:
// "Article 4", "Section 12a", "§ 3". The first capture group is the number.
const DefaultArticlePattern = `(?m)^(?:Article|Section|§)\s+([0-9]+[A-Za-z]?)\b`

// DefaultClausePattern matches a line that starts a clause of an article:
// "(g)", "(2)", "(iv)". The first capture group is the clause's label.
const DefaultClausePattern = `(?m)^\(([a-z]{1,4}|[0-9]{1,3})\)\s`

// MaxClauseChars bounds a chunk: a longer clause is split at sentence ends,
// the pieces numbered with a stable "#n" suffix.
const MaxClauseChars = 1500

// Statute reads versioned statutes: one JSON file per law. A version is
// either given in full (versions) or derived by replaying an amendment onto
// the version before it (amendments); each is in force from its in_force date
// until the next one's. Text is chunked at the law's own numbering: articles,
// then clauses within them (Article 4 (g) becomes chunk art-4/g), never
// mid-clause; a clause longer than MaxClauseChars is split at sentence ends.
// A unit whose text is unchanged from the previous version is not repeated:
// its chunk stays valid across both, anchored at the version that introduced
// it. A unit whose text changes ends its chunk where the new version enters
// into force, and the record names the new version's chunk (Record.By); a
// repealed unit's chunk just ends.
//
// File form:
//
//	{"doc_id": "dpa", "title": "...", "source_url": "https://...",
//	 "retrieved_at": "2026-01-10T00:00:00Z", "tenant": "", "meta": {"k": "v"},
//	 "versions": [{"version": "2019", "published": "2018-12-01",
//	               "in_force": "2019-01-01", "source_url": "...", "text": "Article 1 ..."}],
//	 "amendments": [{"version": "2023", "published": "...", "in_force": "...",
//	                 "changes": [{"article": "2", "replace": "five years", "with": "seven years"},
//	                             {"article": "6", "text": "Article 6 ..."},
//	                             {"article": "3", "repeal": true}]}]}
//
// A key given twice in one object (in_force, or "text" and "TEXT") is
// ErrSyntax: encoding/json would keep the last without a word.
//
// Two versions (or amendments) with the same label are refused
// (ErrDuplicateVersion, naming both): the label is part of every chunk ID.
// An amendment that names text its article does not contain exactly once,
// an article that does not exist, or that comes into force before the version
// it amends, is refused with the reason.
type Statute struct {
	paths   []string
	article *regexp.Regexp
	clause  *regexp.Regexp
}

// NewStatute returns a connector over the given files with the default
// article and clause patterns.
func NewStatute(paths ...string) *Statute {
	return &Statute{paths: paths, article: regexp.MustCompile(DefaultArticlePattern), clause: regexp.MustCompile(DefaultClausePattern)}
}

func compileNumbering(what, pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("%w: %s pattern: %v", ErrField, what, err)
	}
	if re.NumSubexp() < 1 {
		return nil, fmt.Errorf("%w: %s pattern %q has no capture group", ErrField, what, pattern)
	}
	return re, nil
}

// WithArticlePattern returns a copy that splits articles at pattern instead;
// its first capture group must be the article number.
func (s *Statute) WithArticlePattern(pattern string) (*Statute, error) {
	re, err := compileNumbering("article", pattern)
	if err != nil {
		return nil, err
	}
	return &Statute{paths: s.paths, article: re, clause: s.clause}, nil
}

// WithClausePattern returns a copy that splits clauses at pattern instead;
// its first capture group must be the clause label.
func (s *Statute) WithClausePattern(pattern string) (*Statute, error) {
	re, err := compileNumbering("clause", pattern)
	if err != nil {
		return nil, err
	}
	return &Statute{paths: s.paths, article: s.article, clause: re}, nil
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
	Amendments []struct {
		Version   string `json:"version"`
		Published string `json:"published"`
		InForce   string `json:"in_force"`
		SourceURL string `json:"source_url"`
		Changes   []struct {
			Article string `json:"article"`
			Replace string `json:"replace"`
			With    string `json:"with"`
			Text    string `json:"text"`
			Repeal  bool   `json:"repeal"`
		} `json:"changes"`
	} `json:"amendments"`
}

type statuteVersion struct {
	where     string // "versions[i]" or "amendments[i]"
	amendment int    // i of amendments[i], whose changes the walk applies; -1 for a version given in full
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

// Parse reads one statute file's bytes; path names it in errors. A UTF-8
// byte order mark before the object is skipped; bytes that are not UTF-8
// are ErrSyntax and evidence.ErrNotUTF8 at their place.
func (s *Statute) Parse(path string, raw []byte) ([]Record, error) {
	raw = bytes.TrimPrefix(raw, []byte("\ufeff")) // a byte order mark, as Windows editors write
	if off := invalidUTF8(raw); off >= 0 {
		return nil, &evidence.ChunkError{Where: path + position(raw, off), Err: fmt.Errorf("%w: %w", ErrSyntax, evidence.ErrNotUTF8)}
	}
	var f statuteFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, SyntaxError(path, raw, err)
	}
	if off := strictjson.Trailing(raw, dec); off >= 0 {
		return nil, &evidence.ChunkError{Where: path + position(raw, off), Err: fmt.Errorf("%w: data after the statute's object", ErrSyntax)}
	}
	if off, err := strictjson.DuplicateKey(raw); err != nil {
		return nil, &evidence.ChunkError{Where: path + position(raw, off), Err: fmt.Errorf("%w: %w", ErrSyntax, err)}
	}
	if f.DocID == "" {
		return nil, &evidence.ChunkError{Where: path, Err: fmt.Errorf("%w: doc_id is empty", ErrField)}
	}
	for _, k := range []string{"article", "clause"} {
		if _, ok := f.Meta[k]; ok { // each chunk's own: a file's would replace every chunk's
			return nil, FieldError(path, f.DocID, "meta", fmt.Errorf("meta key %q is set on each chunk by the connector", k))
		}
	}
	var err error
	retrieved := time.Time{}
	if f.RetrievedAt != "" {
		if retrieved, err = asof.ParseInstant(f.RetrievedAt); err != nil {
			return nil, FieldError(path, f.DocID, "retrieved_at", err)
		}
	}
	var versions []statuteVersion
	for i, v := range f.Versions {
		where := fmt.Sprintf("%s: versions[%d]", path, i)
		sv := statuteVersion{label: v.Version, url: v.SourceURL, where: fmt.Sprintf("versions[%d]", i), amendment: -1}
		if sv.url == "" {
			sv.url = f.SourceURL
		}
		if sv.published, err = asof.ParseInstant(v.Published); err != nil {
			return nil, FieldError(where, f.DocID, "published", err)
		}
		if sv.inForce, err = asof.ParseDate(v.InForce); err != nil {
			return nil, FieldError(where, f.DocID, "in_force", err)
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
			return nil, FieldError(path, f.DocID, "in_force", fmt.Errorf("versions %q and %q both enter into force on %s",
				versions[i-1].label, versions[i].label, versions[i].inForce))
		}
	}
	for ai := range f.Amendments {
		v, err := amendment(path, ai, &f, versions)
		if err != nil {
			return nil, err
		}
		versions = append(versions, v)
	}
	// A version's label is in its chunks' IDs: two versions sharing one
	// would give two chunks one ID, or (equal texts) merge the second into
	// the first without a word.
	byLabel := make(map[string]string, len(versions)) // label -> where; lookups only
	for _, v := range versions {
		if first, ok := byLabel[v.label]; ok {
			return nil, &evidence.ChunkError{ChunkID: f.DocID, Where: path, Err: fmt.Errorf("%w: %s and %s are both labelled %q (a label given or, when none is, the in_force day)",
				ErrDuplicateVersion, first, v.where, v.label)}
		}
		byLabel[v.label] = v.where
	}

	// Walk versions in force order; a unit (article lead-in, clause, or piece
	// of a long clause) opens a chunk when its text first appears and closes
	// it when a later version changes or drops it. A unit's key names its
	// article, so only the articles a version changes, adds or drops are
	// split again: the work grows with the text and the changes, not with
	// versions times articles.
	type open struct {
		text  string
		index int
	}
	var out []Record
	live := map[string]*open{}      // unit key -> its open chunk
	prev := map[string]string{}     // article -> its text in the version before
	keysOf := map[string][]string{} // article -> its units' keys in the version before
	var cur []article               // the articles an amendment edits: the version before's
	closeUnit := func(key string, end asof.Date) {
		out[live[key].index].Chunk.Valid.To = end
		delete(live, key)
	}
	for _, v := range versions {
		arts := v.articles
		if v.amendment >= 0 {
			if cur, err = s.amend(path, v.amendment, &f, cur); err != nil {
				return nil, err
			}
			arts = cur
		} else {
			cur = slices.Clone(arts)
		}
		kept := 0 // articles of the version before that this one has too
		before := len(prev)
		for _, a := range arts {
			if t, ok := prev[a.num]; ok {
				kept++
				if t == a.text {
					continue // unchanged: its open chunks stay valid
				}
			}
			us, err := s.units(a) // after the amendments, which edit articles
			if err != nil {
				return nil, &evidence.ChunkError{ChunkID: f.DocID, Where: path + ": " + v.where, Err: err}
			}
			keys := make([]string, 0, len(us))
			for _, u := range us {
				keys = append(keys, u.key)
				o, ok := live[u.key]
				if ok && o.text == u.text {
					continue // unchanged: the open chunk stays valid
				}
				id := fmt.Sprintf("%s/%s@%s", f.DocID, u.key, v.label)
				if ok { // changed: this version's text replaces the open chunk
					out[o.index].Chunk.Valid.To = v.inForce
					out[o.index].By = id
				}
				c := evidence.Chunk{
					ID:          id,
					DocID:       f.DocID,
					Version:     v.label,
					Text:        u.text,
					SourceURL:   v.url,
					Connector:   s.Name(),
					RetrievedAt: retrieved,
					Anchor:      asof.ResolveAnchor(s.AnchorField(), v.published, retrieved),
					Valid:       asof.Interval{From: v.inForce},
					Tenant:      f.Tenant,
					Meta:        map[string]string{"article": a.num},
				}
				if u.clause != "" {
					c.Meta["clause"] = u.clause
				}
				for _, k := range evidence.SortedKeys(f.Meta) {
					c.Meta[k] = f.Meta[k]
				}
				live[u.key] = &open{text: u.text, index: len(out)}
				out = append(out, Record{Chunk: c, Where: fmt.Sprintf("%s: %s: %s", path, v.where, u.key)})
			}
			for _, key := range keysOf[a.num] {
				if !slices.Contains(keys, key) { // dropped from the article: nothing replaces it
					closeUnit(key, v.inForce)
				}
			}
			prev[a.num], keysOf[a.num] = a.text, keys
		}
		if kept < before { // an article of the version before is gone: repealed
			present := make(map[string]bool, len(arts))
			for _, a := range arts {
				present[a.num] = true
			}
			for _, num := range evidence.SortedKeys(prev) {
				if !present[num] {
					for _, key := range keysOf[num] {
						closeUnit(key, v.inForce)
					}
					delete(prev, num)
					delete(keysOf, num)
				}
			}
		}
	}
	return out, nil
}

// amendment reads amendment ai of f, which amends the latest of versions:
// its label, dates and source; the walk applies its changes (amend).
func amendment(path string, ai int, f *statuteFile, versions []statuteVersion) (statuteVersion, error) {
	am := f.Amendments[ai]
	where := fmt.Sprintf("%s: amendments[%d]", path, ai)
	v := statuteVersion{label: am.Version, url: am.SourceURL, where: fmt.Sprintf("amendments[%d]", ai), amendment: ai}
	if v.url == "" {
		v.url = f.SourceURL
	}
	var err error
	if v.published, err = asof.ParseInstant(am.Published); err != nil {
		return v, FieldError(where, f.DocID, "published", err)
	}
	if v.inForce, err = asof.ParseDate(am.InForce); err != nil {
		return v, FieldError(where, f.DocID, "in_force", err)
	}
	if v.label == "" {
		v.label = v.inForce.String()
	}
	if len(versions) == 0 {
		return v, FieldError(where, f.DocID, "in_force", fmt.Errorf("no earlier version to amend"))
	}
	base := versions[len(versions)-1]
	if !base.inForce.Before(v.inForce) {
		return v, FieldError(where, f.DocID, "in_force", fmt.Errorf("%s is not after version %q (in force %s), which it amends",
			v.inForce, base.label, base.inForce))
	}
	return v, nil
}

// amend applies amendment ai's changes to articles, the version before's,
// in place, and returns the amended articles.
func (s *Statute) amend(path string, ai int, f *statuteFile, articles []article) ([]article, error) {
	am := f.Amendments[ai]
	where := fmt.Sprintf("%s: amendments[%d]", path, ai)
	for ci, ch := range am.Changes {
		cw := fmt.Sprintf("%s: changes[%d]", where, ci)
		idx := slices.IndexFunc(articles, func(a article) bool { return a.num == ch.Article })
		refuse := func(format string, args ...any) ([]article, error) {
			return nil, &evidence.ChunkError{ChunkID: f.DocID, Where: cw, Err: fmt.Errorf("%w: amendment refused: "+format, append([]any{ErrField}, args...)...)}
		}
		switch {
		case ch.Repeal && ch.Replace == "" && ch.Text == "":
			if idx < 0 {
				return refuse("article %s to repeal does not exist", ch.Article)
			}
			articles = slices.Delete(articles, idx, idx+1)
		case ch.Text != "" && ch.Replace == "" && !ch.Repeal:
			a := article{num: ch.Article, text: evidence.Normalize(ch.Text)}
			if idx < 0 {
				articles = append(articles, a)
			} else {
				articles[idx] = a
			}
		case ch.Replace != "" && ch.Text == "" && !ch.Repeal:
			if idx < 0 {
				return refuse("article %s does not exist", ch.Article)
			}
			switch n := strings.Count(articles[idx].text, ch.Replace); n {
			case 0:
				return refuse("article %s does not contain %q", ch.Article, ch.Replace)
			case 1:
				articles[idx].text = strings.Replace(articles[idx].text, ch.Replace, ch.With, 1)
			default:
				return refuse("article %s contains %q %d times; quote enough to name one", ch.Article, ch.Replace, n)
			}
		default:
			return refuse("a change names exactly one of replace (with with), text, or repeal")
		}
	}
	return articles, nil
}

type unit struct {
	key    string // "art-4", "art-4/g", "art-4/1/a", "art-4/g#2"
	clause string // "g", "1/a", or "" for the lead-in
	text   string
}

// units splits an article at its clauses. The lead-in (the heading and any
// text before the first clause) is one unit; each clause is another, its text
// prefixed with the article's heading line so it reads on its own. A letter
// clause after a numbered one is nested under it (4(1)(a) is art-4/1/a). A
// unit longer than MaxClauseChars is split at sentence ends into pieces #1,
// #2, ... . A clause pattern whose first group matched nothing at a clause
// (a user's pattern, with the group optional or able to match "") is
// ErrField.
func (s *Statute) units(a article) ([]unit, error) {
	base := "art-" + a.num
	locs := s.clause.FindAllStringSubmatchIndex(a.text, -1)
	heading, _, _ := strings.Cut(a.text, "\n")
	var out []unit
	add := func(key, clause, text string) {
		text = strings.TrimSpace(text)
		if text == "" {
			return
		}
		pieces := textblocks.Sentences(text, MaxClauseChars)
		if len(pieces) == 1 {
			out = append(out, unit{key: key, clause: clause, text: text})
			return
		}
		for i, p := range pieces {
			out = append(out, unit{key: fmt.Sprintf("%s#%d", key, i+1), clause: clause, text: p})
		}
	}
	if len(locs) == 0 {
		add(base, "", a.text)
		return out, nil
	}
	add(base, "", a.text[:locs[0][0]])
	parent := ""
	seen := map[string]int{}
	for i, l := range locs {
		label, err := numbering("clause", a.text, l)
		if err != nil {
			return nil, fmt.Errorf("article %s: %w", a.num, err)
		}
		end := len(a.text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		clause := label
		if label[0] >= '0' && label[0] <= '9' {
			parent = label
		} else if parent != "" {
			clause = parent + "/" + label
		}
		if seen[clause]++; seen[clause] > 1 { // a repeated label keeps IDs unique
			clause = fmt.Sprintf("%s~%d", clause, seen[clause])
		}
		add(base+"/"+clause, clause, heading+"\n"+a.text[l[0]:end])
	}
	return out, nil
}

// numbering returns the label that the first capture group of a numbering
// pattern's match l found in text: ErrField where it took no part in the
// match or matched "", which a user's pattern can do.
func numbering(what, text string, l []int) (string, error) {
	if l[2] < 0 || l[3] <= l[2] {
		return "", fmt.Errorf("%w: %s pattern matched %q with no %s label", ErrField, what, text[l[0]:l[1]], what)
	}
	return text[l[2]:l[3]], nil
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
		num, err := numbering("article", text, l)
		if err != nil {
			return nil, err
		}
		if err := add(num, text[start:end]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
