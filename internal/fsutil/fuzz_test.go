package fsutil

import (
	"bytes"
	"testing"
)

// FuzzUnsealText: no input panics UnsealText; what it accepts seals back
// to the same bytes; and sealing any newline-terminated body unseals to it.
func FuzzUnsealText(f *testing.F) {
	for _, body := range []string{"", "\n", "{}\n", "line one\nline two\n", "blake3:00\n"} {
		raw := SealText([]byte(body))
		f.Add(raw)
		f.Add(raw[:len(raw)-1])
		f.Add(raw[:len(raw)/2])
		f.Add(append(bytes.Clone(raw), '\n'))
		flipped := bytes.Clone(raw)
		flipped[len(flipped)/2] ^= 1
		f.Add(flipped)
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		body, err := UnsealText(raw)
		if err == nil && !bytes.Equal(SealText(body), raw) {
			t.Fatalf("accepted %q, which does not seal its body %q", raw, body)
		}
		if len(raw) > 0 && raw[len(raw)-1] == '\n' {
			back, err := UnsealText(SealText(raw))
			if err != nil || !bytes.Equal(back, raw) {
				t.Fatalf("body %q does not survive sealing: %q, %v", raw, back, err)
			}
		}
	})
}
