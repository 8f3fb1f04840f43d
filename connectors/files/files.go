// Package files reads a directory of documents (.txt, .md, .html, .htm, or
// text extracted from PDFs saved as .txt), each with optional front matter:
//
//	---
//	source_url: https://example.org/memo-17
//	retrieved_at: 2026-01-10T09:00:00Z
//	anchor: 2025-03-01
//	valid_from: 2025-01-01
//	valid_to: 2026-01-01
//	doc_id: memo-17
//	version: 2
//	tenant: acme
//	meta.kind: memo
//	---
//	Body text...
//
// A document is chunked at paragraphs (never mid-sentence, tables whole). A
// document without source_url or retrieved_at is ingested and flagged, and
// the citation gate keeps it out of every pack. The anchor is the front
// matter's "anchor", else the retrieval time.
package files

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/textblocks"
)

// AnchorField is the front matter key that dates a document.
const AnchorField = "anchor"

// Extensions are the file name endings read; others are skipped.
var Extensions = []string{".txt", ".md", ".html", ".htm"}

// Connector reads a directory tree.
type Connector struct{ root string }

// New returns a connector over the tree at root.
func New(root string) *Connector { return &Connector{root: root} }

// Name implements connectors.Connector.
func (*Connector) Name() string { return "files" }

// AnchorField implements connectors.Connector.
func (*Connector) AnchorField() string { return AnchorField }

// Read implements connectors.Connector. Files are read in path order; one
// that is not a regular file (a FIFO named notes.txt) is an error naming it,
// never waited on.
func (c *Connector) Read(ctx context.Context) ([]connectors.Record, error) {
	var paths []string
	err := filepath.WalkDir(c.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && slices.Contains(Extensions, strings.ToLower(filepath.Ext(p))) {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("files: %w", err)
	}
	slices.Sort(paths)
	var out []connectors.Record
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		raw, err := fsutil.ReadRegular(p)
		if err != nil {
			return nil, fmt.Errorf("files: %w", err)
		}
		rel, err := filepath.Rel(c.root, p)
		if err != nil {
			return nil, fmt.Errorf("files: %w", err)
		}
		recs, err := Parse(p, filepath.ToSlash(rel), raw)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

// Parse turns one document into records: path names it in errors, rel is
// its path under the root (the default doc_id). It is the fuzzed entry point.
func Parse(path, rel string, raw []byte) ([]connectors.Record, error) {
	// A UTF-8 byte order mark (Windows editors write one) is not text: left
	// in, it hid the front matter.
	src := strings.TrimPrefix(string(raw), "\ufeff")
	text := evidence.Normalize(src)
	fm, body, bodyLine, err := frontMatter(path, text, leadingLines(src))
	if err != nil {
		return nil, err
	}
	base := evidence.Chunk{DocID: rel, Version: "1", Connector: "files", Meta: map[string]string{}}
	var anchor time.Time
	for _, kv := range fm {
		where := fmt.Sprintf("%s:%d", path, kv.line)
		var err error
		switch k, v := kv.key, kv.value; {
		case k == "source_url":
			base.SourceURL = v
		case k == "retrieved_at":
			base.RetrievedAt, err = asof.ParseInstant(v)
		case k == "anchor":
			anchor, err = asof.ParseInstant(v)
		case k == "valid_from":
			base.Valid.From, err = asof.ParseDate(v)
		case k == "valid_to":
			base.Valid.To, err = asof.ParseDate(v)
		case k == "doc_id":
			base.DocID = v
		case k == "version":
			base.Version = v
		case k == "tenant":
			base.Tenant = v
		case strings.HasPrefix(k, "meta.") && len(k) > len("meta."):
			base.Meta[strings.TrimPrefix(k, "meta.")] = v
		default:
			return nil, connectors.FieldError(where, "", k, fmt.Errorf("unknown front matter key"))
		}
		if err != nil {
			return nil, connectors.FieldError(where, "", kv.key, err)
		}
	}
	base.Anchor = asof.ResolveAnchor(AnchorField, anchor, base.RetrievedAt)
	var blocks []textblocks.Block
	if ext := strings.ToLower(filepath.Ext(rel)); ext == ".html" || ext == ".htm" {
		blocks = textblocks.HTML([]byte(body))
	} else {
		blocks = textblocks.Text(body)
	}
	var out []connectors.Record
	for i, t := range textblocks.Pack(blocks, textblocks.DefaultMax) {
		c := base
		c.ID = fmt.Sprintf("%s#%d", rel, i+1)
		c.Text = t
		c.Meta = make(map[string]string, len(base.Meta))
		for k, v := range base.Meta {
			c.Meta[k] = v
		}
		out = append(out, connectors.Record{Chunk: c, Where: fmt.Sprintf("%s:%d: chunk %d", path, bodyLine, i+1)})
	}
	return out, nil
}

type keyValue struct {
	key, value string
	line       int
}

// leadingLines counts the line ends in raw's leading white space, which
// Normalize trims: line numbers in errors count them, so that they name the
// file's lines.
func leadingLines(raw string) int {
	raw = strings.ReplaceAll(strings.ReplaceAll(raw, "\r\n", "\n"), "\r", "\n")
	return strings.Count(raw[:len(raw)-len(strings.TrimLeftFunc(raw, unicode.IsSpace))], "\n")
}

// frontMatter splits a leading "---" block of "key: value" lines from the
// body, returning the body's first line number. A key given twice is
// ErrSyntax naming both lines. text is normalized, and
// lead is the number of lines Normalize trimmed before it.
func frontMatter(path, text string, lead int) ([]keyValue, string, int, error) {
	if !strings.HasPrefix(text, "---\n") {
		return nil, text, lead + 1, nil
	}
	lines := strings.Split(text, "\n")
	var kvs []keyValue
	for i := 1; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "---" {
			return kvs, strings.Join(lines[i+1:], "\n"), lead + i + 2, nil
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, "", 0, &evidence.ChunkError{Where: fmt.Sprintf("%s:%d", path, lead+i+1),
				Err: fmt.Errorf("%w: front matter line is not \"key: value\"", connectors.ErrSyntax)}
		}
		kv := keyValue{key: strings.TrimSpace(k), value: strings.Trim(strings.TrimSpace(v), `"`), line: lead + i + 1}
		if j := slices.IndexFunc(kvs, func(o keyValue) bool { return o.key == kv.key }); j >= 0 {
			return nil, "", 0, &evidence.ChunkError{Where: fmt.Sprintf("%s:%d", path, kv.line),
				Err: fmt.Errorf("%w: front matter key %q is given twice (first on line %d)", connectors.ErrSyntax, kv.key, kvs[j].line)}
		}
		kvs = append(kvs, kv)
	}
	return nil, "", 0, &evidence.ChunkError{Where: fmt.Sprintf("%s:%d", path, lead+1), Err: fmt.Errorf("%w: front matter is not closed by ---", connectors.ErrSyntax)}
}
