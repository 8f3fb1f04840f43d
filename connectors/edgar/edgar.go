// Package edgar reads SEC EDGAR filings (10-K, 10-Q, 8-K and their
// amendments) from a directory that mirrors EDGAR's own paths:
//
//	submissions/CIK##########.json                                   (the submissions API response)
//	Archives/edgar/data/<cik>/<accession without dashes>/<primaryDocument>
//
// Every chunk is anchored at the filing's acceptance date-time: the moment
// the SEC received it, which is when the public could first read it. An
// amendment (10-K/A) is a new version of the same report, never an overwrite:
// its chunks get their own IDs, and an item it restates stops being valid in
// the earlier filing from the day the amendment was accepted, the earlier
// item's records naming the amendment's first chunk of that item as their
// replacement (connectors.Record.By).
//
// Documents are split at their own item structure (Item 1, 1A, 7, 7A, 8 ...;
// Item 2.02 for an 8-K), then at paragraphs, never mid-sentence; a table is
// kept whole. Each chunk carries cik, ticker, company, form, fiscal_year, item,
// accession and filing_date as metadata, so a request can be restricted to
// one company; and it declares the company's names (entity_key "cik",
// entity_names: the registered name, the name without its corporate suffix,
// the ticker) so that a question restricted to the company is ranked without
// them (connectors.MetaEntityNames).
package edgar

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/textblocks"
)

// AnchorField is the field that dates EDGAR chunks.
const AnchorField = "acceptance_datetime"

// MaxChunkChars bounds a chunk's length; paragraphs are grouped up to it,
// and a longer paragraph is split at sentence ends. A table or a single
// sentence longer than this stays whole.
const MaxChunkChars = textblocks.DefaultMax

// Forms are the forms read; others in the submissions file are skipped.
var Forms = []string{"10-K", "10-K/A", "10-Q", "10-Q/A", "8-K", "8-K/A"}

// Connector reads an EDGAR mirror.
type Connector struct {
	root      string
	retrieved time.Time
}

// New returns a connector over the mirror at root, stamping retrieved as
// every chunk's retrieval time.
func New(root string, retrieved time.Time) *Connector {
	return &Connector{root: root, retrieved: retrieved}
}

// Name implements connectors.Connector.
func (*Connector) Name() string { return "edgar" }

// AnchorField implements connectors.Connector.
func (*Connector) AnchorField() string { return AnchorField }

// Filing is one filing from a submissions file.
type Filing struct {
	CIK             string // ten digits, zero-padded
	Company         string
	Ticker          string
	Accession       string // 0001234567-25-000010
	Form            string
	FilingDate      asof.Date
	ReportDate      asof.Date // may be unset (8-K)
	Accepted        time.Time
	PrimaryDocument string
}

type submissions struct {
	CIK     string   `json:"cik"`
	Name    string   `json:"name"`
	Tickers []string `json:"tickers"`
	Filings struct {
		Recent struct {
			AccessionNumber    []string `json:"accessionNumber"`
			FilingDate         []string `json:"filingDate"`
			ReportDate         []string `json:"reportDate"`
			AcceptanceDateTime []string `json:"acceptanceDateTime"`
			Form               []string `json:"form"`
			PrimaryDocument    []string `json:"primaryDocument"`
		} `json:"recent"`
	} `json:"filings"`
}

var reAccession = regexp.MustCompile(`^[0-9]{10}-[0-9]{2}-[0-9]{6}$`)

// ParseSubmissions reads a submissions file's recent filings of the forms in
// Forms, in file order.
func ParseSubmissions(path string, raw []byte) ([]Filing, error) {
	var s submissions
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, connectors.SyntaxError(path, raw, err)
	}
	n, err := strconv.ParseUint(strings.TrimLeft(s.CIK, "0"), 10, 64)
	if err != nil || n == 0 || n > 9_999_999_999 {
		return nil, connectors.FieldError(path, "", "cik", fmt.Errorf("%q is not a CIK", s.CIK))
	}
	r := s.Filings.Recent
	cols := map[string]int{"accessionNumber": len(r.AccessionNumber), "filingDate": len(r.FilingDate), "reportDate": len(r.ReportDate),
		"acceptanceDateTime": len(r.AcceptanceDateTime), "form": len(r.Form), "primaryDocument": len(r.PrimaryDocument)}
	for _, k := range evidence.SortedKeys(cols) {
		if cols[k] != len(r.AccessionNumber) {
			return nil, connectors.FieldError(path, "", "filings.recent."+k,
				fmt.Errorf("has %d entries, accessionNumber has %d", cols[k], len(r.AccessionNumber)))
		}
	}
	var out []Filing
	for i := range r.AccessionNumber {
		if !slices.Contains(Forms, r.Form[i]) {
			continue
		}
		where := fmt.Sprintf("%s: filings.recent[%d]", path, i)
		f := Filing{CIK: fmt.Sprintf("%010d", n), Company: strings.TrimSpace(s.Name), Accession: r.AccessionNumber[i],
			Form: r.Form[i], PrimaryDocument: r.PrimaryDocument[i]}
		if len(s.Tickers) > 0 {
			f.Ticker = s.Tickers[0]
		}
		if !reAccession.MatchString(f.Accession) {
			return nil, connectors.FieldError(where, "", "accessionNumber", fmt.Errorf("%q is not an accession number", f.Accession))
		}
		doc := f.PrimaryDocument
		if doc == "" || doc != filepath.Base(doc) || strings.HasPrefix(doc, ".") {
			return nil, connectors.FieldError(where, "", "primaryDocument", fmt.Errorf("%q is not a file name", doc))
		}
		if f.FilingDate, err = asof.ParseDate(r.FilingDate[i]); err != nil {
			return nil, connectors.FieldError(where, "", "filingDate", err)
		}
		if r.ReportDate[i] != "" {
			if f.ReportDate, err = asof.ParseDate(r.ReportDate[i]); err != nil {
				return nil, connectors.FieldError(where, "", "reportDate", err)
			}
		}
		if f.Accepted, err = asof.ParseInstant(r.AcceptanceDateTime[i]); err != nil {
			return nil, connectors.FieldError(where, "", "acceptanceDateTime", err)
		}
		out = append(out, f)
	}
	return out, nil
}

// Read implements connectors.Connector. A submissions file or filing
// document that is not a regular file (a FIFO) is an error naming it, never
// waited on.
func (c *Connector) Read(ctx context.Context) ([]connectors.Record, error) {
	// Glob finds nothing, and says nothing, in a root that is missing: a
	// mistyped path read as an empty mirror.
	if fi, err := os.Stat(filepath.Join(c.root, "submissions")); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("edgar: %s is not a mirror: no submissions directory (%w)", c.root, cmp.Or(err, error(fs.ErrNotExist)))
	}
	subs, err := filepath.Glob(filepath.Join(c.root, "submissions", "CIK*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(subs)
	var out []connectors.Record
	for _, path := range subs {
		raw, err := fsutil.ReadRegular(path)
		if err != nil {
			return nil, fmt.Errorf("edgar: %w", err)
		}
		filings, err := ParseSubmissions(path, raw)
		if err != nil {
			return nil, err
		}
		var recs []connectors.Record
		for _, f := range filings {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			cikNum := strings.TrimLeft(f.CIK, "0")
			docPath := filepath.Join(c.root, "Archives", "edgar", "data", cikNum, strings.ReplaceAll(f.Accession, "-", ""), f.PrimaryDocument)
			doc, err := fsutil.ReadRegular(docPath)
			if err != nil {
				return nil, fmt.Errorf("edgar: filing %s: %w", f.Accession, err)
			}
			recs = append(recs, Chunks(f, docPath, doc, c.retrieved)...)
		}
		out = append(out, recs...)
	}
	// Over every file at once: one company's filings may be listed in two
	// (CIK0001234567.json and CIK1234567.json), an amendment in one and what
	// it restates in the other.
	supersede(out)
	return out, nil
}

// docID names the report a filing and its amendments belong to.
func docID(f Filing) string {
	period := f.ReportDate.String()
	if period == "" {
		period = f.Accession // an 8-K stands alone
	}
	return fmt.Sprintf("edgar/%s/%s/%s", f.CIK, strings.TrimSuffix(f.Form, "/A"), period)
}

// Chunks splits one filing document into records. It never fails: text it
// cannot structure becomes paragraphs of a "cover" item.
func Chunks(f Filing, docPath string, doc []byte, retrieved time.Time) []connectors.Record {
	var blocks []textblocks.Block
	if ext := strings.ToLower(filepath.Ext(f.PrimaryDocument)); ext == ".htm" || ext == ".html" {
		blocks = textblocks.HTML(doc)
	} else {
		blocks = textblocks.Text(string(doc))
	}
	url := fmt.Sprintf("https://www.sec.gov/Archives/edgar/data/%s/%s/%s", strings.TrimLeft(f.CIK, "0"),
		strings.ReplaceAll(f.Accession, "-", ""), f.PrimaryDocument)
	meta := map[string]string{"cik": f.CIK, "company": f.Company, "form": f.Form, "accession": f.Accession,
		"filing_date": f.FilingDate.String()}
	if f.Ticker != "" {
		meta["ticker"] = f.Ticker
	}
	// The company's names, for the engine to leave out of the ranking text of
	// a question restricted to this company (connectors.MetaEntityNames).
	meta[connectors.MetaEntityKey], meta[connectors.MetaEntityNames] = "cik", strings.Join(companyNames(f.Company, f.Ticker), "|")
	if !f.ReportDate.IsZero() {
		meta["fiscal_year"] = f.ReportDate.String()[:4]
	}
	var out []connectors.Record
	for _, it := range items(blocks) {
		for n, text := range textblocks.Pack(it.blocks, MaxChunkChars) {
			m := map[string]string{"item": it.name}
			for k, v := range meta {
				m[k] = v
			}
			out = append(out, connectors.Record{
				Where: fmt.Sprintf("%s: item %s, chunk %d", docPath, it.name, n+1),
				Chunk: evidence.Chunk{
					ID:    fmt.Sprintf("edgar/%s/%s/item-%s/%d", f.CIK, f.Accession, it.name, n+1),
					DocID: docID(f), Version: f.Accession, Text: text, SourceURL: url, Connector: "edgar",
					RetrievedAt: retrieved, Anchor: asof.ResolveAnchor(AnchorField, f.Accepted, retrieved), Meta: m,
				},
			})
		}
	}
	return out
}

// supersede ends the validity of an item in earlier filings of a report on
// the day an amendment restating that item was accepted, and names the
// amendment's first chunk of the item as its replacement (Record.By): the
// earliest amendment accepted after the chunk, the one whose day ends it.
func supersede(recs []connectors.Record) {
	type key struct{ doc, item string }
	type restatement struct {
		at    time.Time
		first string // the item's first chunk in the amendment
	}
	// The amendments restating each (report, item), one entry per amendment,
	// in input order; an amendment's chunks of an item come in order, so the
	// first one seen is chunk 1.
	amended := map[key][]restatement{}
	type listed struct {
		key
		accession string
	}
	seen := map[listed]bool{}
	for _, r := range recs {
		if strings.HasSuffix(r.Chunk.Meta["form"], "/A") {
			k := key{r.Chunk.DocID, r.Chunk.Meta["item"]}
			if l := (listed{k, r.Chunk.Meta["accession"]}); !seen[l] {
				seen[l] = true
				amended[k] = append(amended[k], restatement{at: r.Chunk.Anchor.At, first: r.Chunk.ID})
			}
		}
	}
	for i := range recs {
		c := &recs[i].Chunk
		// The earliest amendment accepted after the chunk (the first in input
		// order among equals) ends it on its acceptance day.
		var by restatement
		for _, a := range amended[key{c.DocID, c.Meta["item"]}] {
			if a.at.After(c.Anchor.At) && (by.first == "" || a.at.Before(by.at)) {
				by = a
			}
		}
		if by.first == "" {
			continue
		}
		if end := asof.DateOf(by.at); c.Valid.To.IsZero() || end.Before(c.Valid.To) {
			c.Valid.To = end
			recs[i].By = by.first
		}
	}
}

type item struct {
	name   string
	blocks []textblocks.Block
}

var reItem = regexp.MustCompile(`(?i)^item\s+([0-9]{1,2}[a-z]?(?:\.[0-9]{2})?)\b`)

// items groups blocks under the item headings; blocks before the first
// heading form the "cover" item. A heading repeated (a table of contents)
// starts the item again rather than a second item of the same name.
func items(blocks []textblocks.Block) []item {
	var out []item
	cur := item{name: "cover"}
	for _, b := range blocks {
		if m := reItem.FindStringSubmatch(b.Text); m != nil && !b.Table {
			if len(cur.blocks) > 0 {
				out = append(out, cur)
			}
			cur = item{name: strings.ToLower(m[1])}
		}
		cur.blocks = append(cur.blocks, b)
	}
	if len(cur.blocks) > 0 {
		out = append(out, cur)
	}
	// Keep the last occurrence of each item name: a table of contents lists
	// every heading before the body does.
	last := map[string]int{}
	for i, it := range out {
		last[it.name] = i
	}
	var kept []item
	for i, it := range out {
		if last[it.name] == i {
			kept = append(kept, it)
		}
	}
	return kept
}

var corporateSuffix = regexp.MustCompile(`(?i)[,\s]+(inc\.?|incorporated|corp\.?|corporation|co\.?|company|ltd\.?|limited|plc|llc|l\.p\.|n\.v\.|s\.a\.|ag|holdings?)$`)

// companyNames returns the names under which a company may appear in a
// question: its registered name, that name without a corporate suffix, and
// its ticker.
func companyNames(company, ticker string) []string {
	var names []string
	if n := strings.TrimSpace(company); n != "" {
		names = append(names, n)
		if short := strings.TrimSpace(corporateSuffix.ReplaceAllString(n, "")); short != "" && short != n {
			names = append(names, short)
		}
	}
	if t := strings.TrimSpace(ticker); t != "" {
		names = append(names, t)
	}
	return names
}
