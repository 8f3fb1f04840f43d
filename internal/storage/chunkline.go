package storage

import (
	"encoding/hex"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A chunk line as EncodeBatchLines writes it has one form: the fields of
// storedChunk in their order, every string field present, meta (when not
// empty) and purged last, no spaces. decodeChunkFast reads that form
// directly, 3.7 to 3.9 times as fast as encoding/json, which scans a line
// twice and sets each field through reflection (BenchmarkDecodeChunkLines).
// The first write after Open, Check, an ingest's read-back and a query's
// chunk reads all decode chunk lines.
//
// Invariant: when decodeChunkFast(line, &s) reports true, strictJSON(line,
// &t) succeeds and s equals t (FuzzDecodeChunkFast,
// TestDecodeChunkFastAsEncodingJSON). Anything else, including lines it
// could read but encoding/json reads otherwise (invalid UTF-8, which
// encoding/json replaces; a lone surrogate escape; a purged chunk's
// redaction; spaces; keys out of order), it leaves to encoding/json, which
// decides and names the error.

// chunkKeys are storedChunk's string fields in the order the encoder writes
// them, each with the opening the line has before its value.
var chunkKeys = [...]string{
	`{"id":`, `,"doc_id":`, `,"version":`, `,"text":`, `,"source_url":`, `,"connector":`,
	`,"retrieved_at":`, `,"anchor":`, `,"anchor_field":`, `,"valid_from":`, `,"valid_to":`,
	`,"tenant":`, `,"content_hash":`,
}

// decodeChunkFast decodes line into s, which must be the zero value, when
// line is in the form the encoder writes, and reports whether it was (s is
// then to be discarded when it was not).
func decodeChunkFast(line []byte, s *storedChunk) bool {
	fields := [...]*string{&s.ID, &s.DocID, &s.Version, &s.Text, &s.SourceURL, &s.Connector,
		&s.RetrievedAt, &s.Anchor, &s.AnchorField, &s.ValidFrom, &s.ValidTo, &s.Tenant, &s.ContentHash}
	rest := line
	var ok bool
	for i, key := range chunkKeys {
		if rest, ok = cut(rest, key); !ok {
			return false
		}
		if *fields[i], rest, ok = jsonString(rest); !ok {
			return false
		}
	}
	if after, found := cut(rest, `,"meta":{`); found {
		rest = after
		s.Meta = map[string]string{}
		for first := true; ; first = false {
			if after, closed := cut(rest, "}"); closed {
				rest = after
				break
			}
			if !first {
				if rest, ok = cut(rest, ","); !ok {
					return false
				}
			}
			var k, v string
			if k, rest, ok = jsonString(rest); !ok {
				return false
			}
			if rest, ok = cut(rest, ":"); !ok {
				return false
			}
			if v, rest, ok = jsonString(rest); !ok {
				return false
			}
			s.Meta[k] = v // a repeated key: the last wins, as in encoding/json
		}
	}
	return string(rest) == "}" // not a redaction (",\"purged\":"), nothing after
}

// jsonString decodes the JSON string at the start of b and returns it and
// the bytes after it; ok is false for anything but a string whose bytes are
// valid UTF-8 and whose escapes are all of a code point outside the
// surrogates (see decodeChunkFast).
func jsonString(b []byte) (s string, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, false
	}
	b = b[1:]
	i, high := 0, false
	for i < len(b) {
		c := b[i]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		high = high || c >= utf8.RuneSelf
		i++
	}
	if i < len(b) && b[i] == '"' { // no escape: the common case
		if high && !utf8.Valid(b[:i]) {
			return "", nil, false
		}
		return string(b[:i]), b[i+1:], true
	}
	// Escaped: the decoded string is never longer than the bytes up to the
	// closing quote (each escape decodes to fewer bytes than it takes), so
	// the builder is sized once and its bytes become the string uncopied:
	// a query decodes the lines of the chunks it cites, and growing the
	// text, then copying it into a string, was most of that.
	end := i
	for end < len(b) && b[end] != '"' {
		if b[end] == '\\' {
			end++
		}
		end++
	}
	var out strings.Builder
	out.Grow(min(end, len(b)))
	out.Write(b[:i])
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			if !utf8.ValidString(out.String()) {
				return "", nil, false
			}
			return out.String(), b[i+1:], true
		case c < 0x20:
			return "", nil, false // not JSON: encoding/json names it
		case c != '\\':
			j := i + 1 // the run up to the next quote, escape or control byte, at once
			for j < len(b) && b[j] != '"' && b[j] != '\\' && b[j] >= 0x20 {
				j++
			}
			out.Write(b[i:j])
			i = j
			continue
		}
		if i+1 >= len(b) {
			return "", nil, false
		}
		switch b[i+1] {
		case '"', '\\', '/':
			out.WriteByte(b[i+1])
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r, ok := hex4(b[i+2:])
			if !ok || utf16.IsSurrogate(r) {
				return "", nil, false
			}
			out.WriteRune(r)
			i += 4
		default:
			return "", nil, false
		}
		i += 2
	}
	return "", nil, false // unterminated
}

// cut returns b without its prefix p, and whether b had it.
func cut(b []byte, p string) ([]byte, bool) {
	if len(b) < len(p) || string(b[:len(p)]) != p {
		return b, false
	}
	return b[len(p):], true
}

// hex4 reads the four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	var u [2]byte
	if len(b) < 4 {
		return 0, false
	}
	if _, err := hex.Decode(u[:], b[:4]); err != nil {
		return 0, false
	}
	return rune(u[0])<<8 | rune(u[1]), true
}
