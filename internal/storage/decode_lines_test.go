package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evpack/evpack/evidence"
)

// TestDecodeChunkLinesAsAlone: decoding a batch's chunk lines on every
// core, most of them by decodeChunkFast, gives, line by line, exactly what
// decoding each line alone with encoding/json gives (strictJSON, then the
// chunk): the same stored form, the same chunk, the same error, whatever
// the damage to a line or to the lines around it. Lines are damaged at
// random (the seed is printed; EVPACK_SEED replays one).
func TestDecodeChunkLinesAsAlone(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("EVPACK_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("EVPACK_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (replay with EVPACK_SEED=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 1))
	damages := []struct {
		name string
		do   func(line string) string
	}{
		{"as written", func(l string) string { return l }},
		{"trailing spaces: accepted alone", func(l string) string { return l + "  \t" }},
		{"leading spaces: accepted alone", func(l string) string { return " " + l }},
		{"a second value after it", func(l string) string { return l + l }},
		{"a second value after a space", func(l string) string { return l + " {}" }},
		{"an unknown field", func(l string) string { return strings.Replace(l, `{"id":`, `{"zz":1,"id":`, 1) }},
		{"a field of the wrong type", func(l string) string { return strings.Replace(l, `"tenant":"acme"`, `"tenant":5`, 1) }},
		{"left open: the next line would close it", func(l string) string { return l[:len(l)/2] }},
		{"only a closing brace", func(string) string { return "}" }},
		{"empty", func(string) string { return "" }},
		{"a date that does not parse: valid JSON, a bad chunk", func(l string) string {
			return strings.Replace(l, `"valid_from":"2024-06-01"`, `"valid_from":"2024-13-01"`, 1)
		}},
		{"a fact line: skipped", func(string) string { return `{"fact":"x"}` }},
		{"a purge line: skipped", func(string) string { return `{"purge":"x"}` }},
	}
	for _, n := range []int{1, 3, 700} {
		var body bytes.Buffer
		body.WriteString(`{"format":"x"}` + "\n")
		var used []string
		for i := range n {
			c := testChunk(t, fmt.Sprintf("c%d", i), "text "+strings.Repeat("word ", r.IntN(200)))
			raw, lines, err := EncodeBatchLines(testHeader(), Contents{Chunks: []*evidence.Chunk{c}})
			if err != nil {
				t.Fatal(err)
			}
			line := string(raw[lines[0].Off : lines[0].Off+int64(lines[0].Len)])
			d := damages[0]
			if r.IntN(3) == 0 {
				d = damages[r.IntN(len(damages))]
			}
			used = append(used, d.name)
			body.WriteString(d.do(line) + "\n")
		}
		var lines [][]byte
		for rest := body.Bytes(); len(rest) > 0; {
			cut := bytes.IndexByte(rest, '\n')
			lines, rest = append(lines, rest[:cut]), rest[cut+1:]
		}
		got := decodeChunkLines(lines)
		for i := 1; i < len(lines); i++ {
			var want parsedChunk
			if !bytes.HasPrefix(lines[i], factPrefix) && !bytes.HasPrefix(lines[i], purgePrefix) {
				if want.jsonErr = strictJSON(lines[i], &want.s); want.jsonErr == nil {
					want.c, want.err = want.s.chunk()
				}
			}
			g := got[i]
			switch {
			case fmt.Sprint(g.jsonErr) != fmt.Sprint(want.jsonErr):
				t.Fatalf("%d lines, line %d (%s): JSON error %v, alone %v", n, i+1, used[i-1], g.jsonErr, want.jsonErr)
			case fmt.Sprint(g.err) != fmt.Sprint(want.err):
				t.Fatalf("%d lines, line %d (%s): chunk error %v, alone %v", n, i+1, used[i-1], g.err, want.err)
			case !reflect.DeepEqual(g.s, want.s) || !reflect.DeepEqual(g.c, want.c):
				t.Fatalf("%d lines, line %d (%s): decodes otherwise than alone", n, i+1, used[i-1])
			}
		}
	}
}
