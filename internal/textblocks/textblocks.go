// Package textblocks turns documents into paragraphs and whole tables, and
// packs them into chunks that never split a table or a sentence. The EDGAR
// and files connectors share it.
package textblocks

import (
	"bytes"
	"regexp"
	"strings"

	"golang.org/x/net/html"

	"github.com/evpack/evpack/evidence"
)

// DefaultMax is the chunk length the connectors use.
const DefaultMax = 1500

// Block is a paragraph or a whole table (rows on lines, cells joined by
// " | ").
type Block struct {
	Text  string
	Table bool
}

var skipTags = map[string]bool{"script": true, "style": true, "head": true, "title": true}
var blockTags = map[string]bool{"p": true, "div": true, "br": true, "li": true, "h1": true, "h2": true, "h3": true,
	"h4": true, "h5": true, "h6": true, "section": true, "article": true, "ul": true, "ol": true, "body": true, "center": true}

// HTML extracts paragraphs and tables from an HTML document. It never
// fails: the tokenizer recovers from any input.
func HTML(doc []byte) []Block {
	z := html.NewTokenizer(bytes.NewReader(doc))
	var out []Block
	var para strings.Builder
	skip := 0
	var table *tableBuilder
	flush := func() {
		if t := collapse(para.String()); t != "" {
			out = append(out, Block{Text: t})
		}
		para.Reset()
	}
	for {
		switch z.Next() {
		case html.ErrorToken:
			flush()
			return out
		case html.TextToken:
			if skip > 0 {
				continue
			}
			if table != nil {
				table.cell.Write(z.Text())
			} else {
				para.Write(z.Text())
			}
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			tok := z.Token()
			tag := tok.Data
			end := tok.Type == html.EndTagToken
			switch {
			case skipTags[tag]:
				if end {
					skip = max(0, skip-1)
				} else if tok.Type != html.SelfClosingTagToken {
					skip++
				}
			case tag == "table" && !end:
				flush()
				table = &tableBuilder{}
			case tag == "table" && end && table != nil:
				if t := table.finish(); t != "" {
					out = append(out, Block{Text: t, Table: true})
				}
				table = nil
			case table != nil && (tag == "td" || tag == "th") && end:
				table.endCell()
			case table != nil && tag == "tr" && end:
				table.endRow()
			case table == nil && blockTags[tag]:
				flush()
			}
		}
	}
}

type tableBuilder struct {
	cell  strings.Builder
	row   []string
	lines []string
}

func (t *tableBuilder) endCell() { t.row = append(t.row, collapse(t.cell.String())); t.cell.Reset() }
func (t *tableBuilder) endRow() {
	if t.cell.Len() > 0 {
		t.endCell()
	}
	if line := strings.TrimSpace(strings.Join(t.row, " | ")); strings.Trim(line, " |") != "" {
		t.lines = append(t.lines, line)
	}
	t.row = nil
}
func (t *tableBuilder) finish() string {
	if len(t.row) > 0 || t.cell.Len() > 0 {
		t.endRow()
	}
	return strings.Join(t.lines, "\n")
}

// collapse joins white space runs (the non-breaking space included) into one
// space.
func collapse(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\u00a0", " ")), " ")
}

var blankLine = regexp.MustCompile(`\n\s*\n`)

// Text splits plain text at blank lines.
func Text(doc string) []Block {
	var out []Block
	for _, p := range blankLine.Split(evidence.Normalize(doc), -1) {
		if t := collapse(p); t != "" {
			out = append(out, Block{Text: t})
		}
	}
	return out
}

// Pack groups blocks into chunks of at most max bytes, never splitting a
// table or a sentence (either may exceed max alone).
func Pack(blocks []Block, max int) []string {
	var pieces []string
	for _, b := range blocks {
		if b.Table || len(b.Text) <= max {
			pieces = append(pieces, b.Text)
			continue
		}
		pieces = append(pieces, Sentences(b.Text, max)...)
	}
	var out []string
	var cur strings.Builder
	for _, p := range pieces {
		if cur.Len() > 0 && cur.Len()+2+len(p) > max {
			out = append(out, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteString("\n\n")
		}
		cur.WriteString(p)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// Sentences splits p after ". ", "! " or "? " when an upper-case letter, a
// digit or an opening bracket follows, and groups the sentences into pieces
// of at most max bytes.
func Sentences(p string, max int) []string {
	var out []string
	start := 0
	var cur strings.Builder
	emit := func(s string) {
		if cur.Len() > 0 && cur.Len()+1+len(s) > max {
			out = append(out, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(s)
	}
	for i := 0; i+2 < len(p); i++ {
		if (p[i] == '.' || p[i] == '!' || p[i] == '?') && p[i+1] == ' ' {
			next := p[i+2]
			if next >= 'A' && next <= 'Z' || next >= '0' && next <= '9' || next == '(' {
				emit(p[start : i+1])
				start = i + 2
			}
		}
	}
	emit(p[start:])
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
