package retrieve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evpack/evpack/internal/fsutil"
)

// TestLayoutSeal: a new partitioned lexical directory writes its layout
// sealed (format 2); the unsealed layout of format 1, which indexes made
// before the seal hold, still opens with the same analyzer and span; and a
// layout whose seal fails, or that claims format 2 unsealed, or is not a
// layout at all, is refused with ErrLexical naming the file.
func TestLayoutSeal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lexical")
	l, err := OpenLexical(dir, LexicalOptions{Analyzer: "standard", PartitionDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, layoutName)
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"format":"evpack-lexical-parts/2","analyzer":"standard","partition_days":30}` + "\n"
	if want := string(fsutil.SealText([]byte(body))); string(raw) != want {
		t.Fatalf("layout file holds %q, want %q", raw, want)
	}
	an, days, err := ReadLayout(dir)
	if err != nil || an != "standard" || days != 30 {
		t.Fatalf("ReadLayout: %q, %d, %v; want standard, 30", an, days, err)
	}

	v1 := `{"format":"evpack-lexical-parts/1","analyzer":"standard","partition_days":30}` + "\n"
	for _, c := range []struct {
		name, content, want string // want: "" opens, else a part of the error
	}{
		{"format 1, unsealed", v1, ""},
		{"format 2, sealed", string(fsutil.SealText([]byte(body))), ""},
		{"format 2, unsealed", body, "checksum mismatch"},
		{"format 1, sealed", string(fsutil.SealText([]byte(v1))), "this build reads"},
		{"format 2, a byte changed under the seal", strings.Replace(string(fsutil.SealText([]byte(body))), "30", "31", 1), "checksum mismatch"},
		{"format 1, no span", `{"format":"evpack-lexical-parts/1","analyzer":"standard","partition_days":0}` + "\n", "this build reads"},
		{"format 1, an unknown field", `{"format":"evpack-lexical-parts/1","analyzer":"standard","partition_days":30,"x":1}` + "\n", "checksum mismatch"},
		{"empty", "", "checksum mismatch"},
		// json.Decoder.More reports false before a closing brace: a check
		// with it let this one through
		{"format 1, a brace after it", strings.TrimSuffix(v1, "\n") + "}\n", "checksum mismatch"},
	} {
		if err := os.WriteFile(name, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := OpenLexical(dir, LexicalOptions{})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == "" && (l.Analyzer() != "standard" || l.days != 30):
			t.Errorf("%s: analyzer %q, span %d; want standard, 30", c.name, l.Analyzer(), l.days)
		case c.want != "" && (!errors.Is(err, ErrLexical) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), name)):
			t.Errorf("%s: %v, want ErrLexical naming %s and saying %q", c.name, err, name, c.want)
		}
		if l != nil && err == nil {
			l.Close()
		}
	}
}

// FuzzReadLayout: no layout file panics readLayout, and what it accepts
// names a format this build reads, an analyzer and a positive span.
func FuzzReadLayout(f *testing.F) {
	body := `{"format":"evpack-lexical-parts/2","analyzer":"en","partition_days":90}` + "\n"
	f.Add(fsutil.SealText([]byte(body)))
	f.Add([]byte(`{"format":"evpack-lexical-parts/1","analyzer":"en","partition_days":90}` + "\n"))
	f.Add([]byte(body))
	f.Add([]byte("{}"))
	name := filepath.Join(f.TempDir(), layoutName)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if err := os.WriteFile(name, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		lay, err := readLayout(name)
		if err != nil {
			if !errors.Is(err, ErrLexical) {
				t.Fatalf("%q: %v, not ErrLexical", raw, err)
			}
			return
		}
		if (lay.Format != layoutFormat && lay.Format != layoutFormatV1) || lay.Analyzer == "" || lay.PartitionDays <= 0 {
			t.Fatalf("%q: accepted %+v", raw, lay)
		}
	})
}
