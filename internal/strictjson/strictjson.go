// Package strictjson reads one JSON value and nothing else.
//
// Why a package of its own: encoding/json is lenient where evpack must not
// be. json.Decoder.More reports false before a stray '}' or ']', so a value
// followed by one reads as whole; and decoding keeps the last of two equal
// keys (equal regardless of case, for a struct's fields) without a word, so
// a second valid_to could extend a chunk's validity. Stored files, sources
// and training files are read through these checks.
package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Ended reports whether nothing but white space follows the value dec
// decoded last.
func Ended(dec *json.Decoder) bool {
	_, err := dec.Token()
	return err == io.EOF
}

// Trailing returns the offset in raw of the first byte other than JSON
// white space after the value dec has just decoded from it, or -1 when
// there is none. dec.More misses a stray closing bracket ("{...}}"), which
// it reads as the end of an enclosing value.
func Trailing(raw []byte, dec *json.Decoder) int64 {
	rest := bytes.TrimLeft(raw[dec.InputOffset():], " \t\r\n")
	if len(rest) == 0 {
		return -1
	}
	return int64(len(raw) - len(rest))
}

// DuplicateKey finds the first object in raw (valid JSON) that holds a key
// twice, compared as encoding/json matches keys to fields (regardless of
// case): it returns the offset of the second key and why, or -1. Decoding
// keeps the last of them without a word.
func DuplicateKey(raw []byte) (int64, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var off int64 = -1
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]string{} // folded key -> key as spelt; looked up only
			for dec.More() {
				// The key starts after the white space and comma before it.
				at := int64(len(raw) - len(bytes.TrimLeft(raw[dec.InputOffset():], " \t\r\n,")))
				tok, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := tok.(string)
				if first, ok := seen[strings.ToLower(k)]; ok {
					off = at
					if first != k {
						return fmt.Errorf("key %q appears twice in one object (as %q)", first, k)
					}
					return fmt.Errorf("key %q appears twice in one object", k)
				}
				seen[strings.ToLower(k)] = k
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk(); err != nil {
		return off, err
	}
	return -1, nil
}
