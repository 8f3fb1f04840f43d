package fsutil

import (
	"encoding/json"
	"io"
)

// JSONEnded reports whether nothing but white space follows the value dec
// decoded last. A stored file holds one JSON value; json.Decoder.More,
// the obvious check, reports false before a stray '}' or ']', so such a
// file read as whole.
func JSONEnded(dec *json.Decoder) bool {
	_, err := dec.Token()
	return err == io.EOF
}
