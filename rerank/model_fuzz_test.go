package rerank

import (
	"testing"

	"github.com/evpack/evpack/internal/fsutil"
)

// FuzzDecodeModelPayload: any payload, sealed, decodes to a model or
// ErrModel, never a panic; a model it accepts scores rows the same both ways
// and re-encodes to the same bytes.
func FuzzDecodeModelPayload(f *testing.F) {
	m, err := DefaultModel()
	if err != nil {
		f.Fatal(err)
	}
	raw := m.Encode()
	f.Add(raw[len(modelMagic) : len(raw)-32])
	small, err := NewModel("r", [][]Node{{{Feature: 0, Threshold: 5, Left: 1, Right: 2}, {Feature: -1, Value: 3}, {Feature: -1, Value: -4}}})
	if err != nil {
		f.Fatal(err)
	}
	sr := small.Encode()
	f.Add(sr[len(modelMagic) : len(sr)-32])
	f.Fuzz(func(t *testing.T, payload []byte) {
		raw := fsutil.Seal(append([]byte(modelMagic), payload...))
		m, err := DecodeModel(raw, "fuzz.evm")
		if err != nil {
			return
		}
		if string(m.Encode()) != string(raw) {
			t.Fatalf("accepted model re-encodes to other bytes")
		}
		rows := make([]Row, 70)
		for i := range rows {
			for j := range rows[i] {
				rows[i][j] = int64((i*7+j*13)%23-11) * int64(1+i%3)
			}
		}
		out := make([]int64, len(rows))
		m.ScoreRows(rows, out)
		for i := range rows {
			if s := m.Score(&rows[i]); s != out[i] {
				t.Fatalf("row %d: Score %d, ScoreRows %d", i, s, out[i])
			}
		}
	})
}
