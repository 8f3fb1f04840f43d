package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/bert"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storagetest"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func corpus(name string) string { return filepath.Join("..", "..", "testdata", "corpus", name) }

// commitTimes returns the commit time of each generation of the index in
// dir, as evpack history --json prints them (the clock is the wall's).
func commitTimes(t *testing.T, dir string) []string {
	t.Helper()
	code, out, errs := runCLI(t, "history", "--index", dir, "--json")
	require.Equal(t, 0, code, errs)
	var h []struct {
		CommittedAt string `json:"committed_at"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &h))
	var at []string
	for _, c := range h {
		at = append(at, c.CommittedAt)
	}
	return at
}

func ingestTestCorpus(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "idx")
	code, out, errs := runCLI(t, "ingest", "--index", dir, "--connector", "statute", corpus("records-act.json"))
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "11 added (1 documents, 3 versions)")
	code, out, errs = runCLI(t, "ingest", "--index", dir, "--connector", "jsonl", corpus("guidance.jsonl"))
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "flagged blog-retention: missing source URL")
	return dir
}

func TestQueryJSONIsTheCanonicalBytes(t *testing.T) {
	dir := ingestTestCorpus(t)
	q := "How long must a licensed firm retain records of client transactions?"
	code, js, errs := runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", "--format", "json", q)
	require.Equal(t, 0, code, errs)
	sum := blake3.Sum256([]byte(js))
	code, text, _ := runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", q, "--k", "10")
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	require.Equal(t, fmt.Sprintf("hash: blake3:%x", sum), lines[len(lines)-1], "b3sum of the json output is the pack hash")
	require.False(t, strings.HasSuffix(js, "\n"), "exactly the canonical bytes, nothing else")

	pack := filepath.Join(t.TempDir(), "pack.json")
	require.NoError(t, os.WriteFile(pack, []byte(js), 0o644))
	code, out, errs := runCLI(t, "verify", "--index", dir, pack)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "replays byte-identically")

	// Tamper with the stored text of the first citation: the index opens
	// (from its checkpoint), and the cited chunk, read from its batch file,
	// no longer hashes to its content hash: the pack does not verify. (Only
	// the batch the checkpoint holds: Open reads those after it whole.)
	for _, b := range []string{filepath.Join(dir, "chunks", "00000001.jsonl")} {
		raw, _ := os.ReadFile(b)
		raw = bytes.Replace(raw, []byte("for ten years"), []byte("for two years"), 1)
		require.NoError(t, os.WriteFile(b, raw, 0o644))
	}
	code, out, errs = runCLI(t, "verify", "--index", dir, pack)
	require.Equal(t, 1, code, errs)
	require.Contains(t, out, "stored chunk no longer hashes to its content hash")
	// Check reads the batch file whole: it no longer matches its checksum.
	code, out, _ = runCLI(t, "check", "--index", dir)
	require.Equal(t, 1, code)
	require.Contains(t, out, "00000001.jsonl hashes to")
}

func TestCLIBadInput(t *testing.T) {
	dir := ingestTestCorpus(t)
	foreign := t.TempDir() // someone's directory: evpack must not write into it
	require.NoError(t, os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644))
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"as-of in an unreadable format", []string{"query", "--index", dir, "--as-of", "15/01/2026", "q"}, `cannot read "15/01/2026" as a date`},
		{"no question", []string{"query", "--index", dir, "--as-of", "2026-01-15"}, "need --index DIR"},
		{"bad filter", []string{"query", "--index", dir, "--as-of", "2026-01-15", "--filter", "novalue", "q"}, "want KEY=VALUE"},
		{"unknown connector", []string{"ingest", "--index", dir, "--connector", "ftp", "x"}, "want jsonl, statute, edgar, fred or files"},
		{"unknown command", []string{"serve"}, "unknown command"},
		{"missing index", []string{"query", "--index", filepath.Join(dir, "nope"), "--as-of", "2026-01-15", "q"}, "nope does not exist"},
		{"a directory that is not an index", []string{"query", "--index", foreign, "--as-of", "2026-01-15", "q"}, "is not empty and has no MANIFEST.json"},
		{"an empty directory", []string{"check", "--index", t.TempDir()}, "is empty"},
		{"ef-search without hnsw", []string{"query", "--index", dir, "--as-of", "2026-01-15", "--ef-search", "64", "q"}, "--ef-search needs --dense-index hnsw"},
		{"hnsw without an embedder", []string{"query", "--index", dir, "--as-of", "2026-01-15", "--dense-index", "hnsw", "q"}, `DenseIndex "hnsw" needs an Embedder`},
		{"unknown dense index", []string{"query", "--index", dir, "--as-of", "2026-01-15", "--dense-index", "ivf", "q"}, `DenseIndex "ivf"`},
	}
	for _, c := range cases {
		code, _, errs := runCLI(t, c.args...)
		require.Equal(t, 2, code, c.name)
		require.Contains(t, errs, c.want, c.name)
	}
	entries, err := os.ReadDir(foreign)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing was written into the foreign directory")

	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(`{"id":"n1","doc_id":"d","text":"new","source_url":"u","retrieved_at":"2026-01-01T00:00:00Z"}`+"\n{oops\n"), 0o644))
	code, _, errs := runCLI(t, "ingest", "--index", dir, "--connector", "jsonl", bad)
	require.Equal(t, 2, code)
	require.Contains(t, errs, bad+":2")
	code, out, _ := runCLI(t, "ingest", "--index", dir, "--connector", "jsonl", corpus("guidance.jsonl"))
	require.Equal(t, 0, code)
	require.Contains(t, out, "0 added (0 documents, 0 versions), 7 unchanged", "nothing of the bad batch was applied")
	require.Contains(t, out, "generation 2")
}

// tinyObliQA writes a two-question dataset in the ObliQA layout.
func tinyObliQA(t *testing.T) (docs, questions string) {
	dir := t.TempDir()
	docs = filepath.Join(dir, "documents")
	require.NoError(t, os.MkdirAll(docs, 0o755))
	passages := []map[string]any{
		{"ID": "p1", "DocumentID": 1, "PassageID": "1.1", "Passage": "A firm must keep a capital buffer of ten percent."},
		{"ID": "p2", "DocumentID": 1, "PassageID": "1.2", "Passage": "Client money must be held in a segregated account."},
		{"ID": "p3", "DocumentID": 1, "PassageID": "1.2", "Passage": "A duplicate key: scoring maps 1.2 to p2, the first."},
		{"ID": "p4", "DocumentID": 1, "PassageID": "1.3", "Passage": ""},
	}
	raw, _ := json.Marshal(passages)
	require.NoError(t, os.WriteFile(filepath.Join(docs, "1.json"), raw, 0o644))
	qs := []map[string]any{
		{"QuestionID": "q1", "Question": "How large must the capital buffer be?", "Group": 1,
			"Passages": []map[string]any{{"DocumentID": 1, "PassageID": "1.1"}}},
		{"QuestionID": "q2", "Question": "Where is client money held?", "Group": 1,
			"Passages": []map[string]any{{"DocumentID": 1, "PassageID": "1.2"}, {"DocumentID": 1, "PassageID": "1.3"}}},
	}
	raw, _ = json.Marshal(qs)
	questions = filepath.Join(dir, "ObliQA_dev.json")
	require.NoError(t, os.WriteFile(questions, raw, 0o644))
	return docs, questions
}

// TestONNXThroughTheCLI: --embedder onnx:DIR and --reranker
// cross-encoder:DIR on the generated tiny models.
func TestONNXThroughTheCLI(t *testing.T) {
	if !bert.Available() {
		t.Skip("built without cgo: ONNX models need onnxruntime through cgo")
	}
	if os.Getenv("EVPACK_ORT_LIB") == "" {
		if os.Getenv("EVPACK_REQUIRE_DATA") == "1" {
			t.Fatal("EVPACK_ORT_LIB is not set")
		}
		t.Skip("EVPACK_ORT_LIB is not set: point it at libonnxruntime.so.1 to run the ONNX CLI test")
	}
	td := filepath.Join("..", "..", "testdata", "onnx")
	modelDir := func(model string) string {
		dir := t.TempDir()
		for src, dst := range map[string]string{model: "model.onnx", "vocab.txt": "vocab.txt"} {
			raw, err := os.ReadFile(filepath.Join(td, src))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, dst), raw, 0o644))
		}
		return dir
	}
	docs, qf := tinyObliQA(t)
	code, out, errs := runCLI(t, "eval", "obliqa", "--docs", docs, "--questions", qf, "--json",
		"--embedder", "onnx:"+modelDir("tiny-bert.onnx"), "--reranker", "cross-encoder:"+modelDir("tiny-bert-cross-encoder.onnx"))
	require.Equal(t, 0, code, errs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &got))
	cfg := got["config"].(map[string]any)
	require.Equal(t, "lexical,dense", cfg["legs"])
	require.Contains(t, cfg["dense"], "onnx bert")
	require.Contains(t, cfg["reranker"], "cross-encoder/")
	require.Equal(t, "false", cfg["reranker_bit_stable"])
}

// TestEvalObliQAOnATinyDataset runs the eval command end to end on a
// hand-made dataset in the ObliQA layout, with metrics computed by hand.
func TestEvalObliQAOnATinyDataset(t *testing.T) {
	docs, qf := tinyObliQA(t)
	code, out, errs := runCLI(t, "eval", "obliqa", "--docs", docs, "--questions", qf, "--json")
	require.Equal(t, 0, code, errs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &got))
	// q1: gold p1 at rank 1 -> recall 1, AP 1. q2: gold p2 (found at rank 1)
	// and p4 (empty, never indexed) -> recall 1/2, AP 1/2.
	require.InDelta(t, 0.75, got["recall@10"], 1e-12)
	require.InDelta(t, 0.75, got["map@10"], 1e-12)
	require.EqualValues(t, 2, got["questions"])
	for _, k := range []string{"ndcg@10", "config", "query_ms_p50", "query_ms_p99"} {
		require.Contains(t, got, k)
	}
	require.Equal(t, "lexical", got["config"].(map[string]any)["legs"])

	code, out, errs = runCLI(t, "eval", "ablate", "--docs", docs, "--questions", qf)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "+ arithmetic rerank, pool 50")
	require.Contains(t, out, "winner:")
}

// TestEvalShapesOnATinyDataset ranks the tiny dataset in every shape with
// the three rerankers; with one passage per question nothing moves, so each
// shape's figures equal the as-is ones (recall and MAP 0.75, hand-computed in
// TestEvalObliQAOnATinyDataset) and every reranker ties with none.
func TestEvalShapesOnATinyDataset(t *testing.T) {
	docs, qf := tinyObliQA(t)
	code, out, errs := runCLI(t, "eval", "shapes", "--docs", docs, "--questions", qf)
	require.Equal(t, 0, code, errs)
	for _, shape := range []string{"as-is", "one-document", "passage-per-document", "no-headings", "shuffled"} {
		for _, rr := range []string{"none", "arithmetic", "learned (default)"} {
			require.Regexp(t, `(?m)^`+regexp.QuoteMeta(shape)+` +`+regexp.QuoteMeta(rr)+` +0\.7500 +0\.7500 `, out)
		}
	}
	require.Equal(t, 10, strings.Count(out, "tied"), out)
	code, _, errs = runCLI(t, "eval", "shapes", "--docs", docs, "--questions", qf, "--shape", "sideways")
	require.Equal(t, 2, code, errs)
}

// TestEveryConnectorDeclaresItsAnchorInThePack ingests each connector's
// fixture through the CLI and checks the anchor field each citation names.
func TestEveryConnectorDeclaresItsAnchorInThePack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	td := filepath.Join("..", "..", "testdata")
	for _, args := range [][]string{
		{"--connector", "edgar", "--retrieved-at", "2026-01-10T12:00:00Z", filepath.Join(td, "edgar")},
		{"--connector", "fred", "--retrieved-at", "2026-01-10T12:00:00Z", filepath.Join(td, "fred", "TTLCONS")},
		{"--connector", "files", filepath.Join(td, "files")},
		{"--connector", "statute", filepath.Join(td, "corpus", "records-act.json")},
		{"--connector", "jsonl", filepath.Join(td, "corpus", "guidance.jsonl")},
	} {
		code, out, errs := runCLI(t, append([]string{"ingest", "--index", dir}, args...)...)
		require.Equal(t, 0, code, "%v: %s", args, errs)
		require.Contains(t, out, "added")
	}
	cases := []struct {
		filter, question, anchor string
	}{
		{"cik=0001234567", "revenue growth fiscal 2024", "acceptance_datetime"},
		{"series=TTLCONS", "construction spending March", "realtime_start"},
		{"kind=memo", "retention ten years", "anchor"},
		{"kind=statute", "retention period", "published"},
		{"kind=guidance", "retention period", "anchor"},
	}
	for _, c := range cases {
		code, js, errs := runCLI(t, "query", "--index", dir, "--as-of", "2026-02-01", "--filter", c.filter, "--format", "json", c.question)
		require.Equal(t, 0, code, errs)
		var p struct {
			Citations []struct {
				AnchorField string `json:"anchor_field"`
			} `json:"citations"`
		}
		require.NoError(t, json.Unmarshal([]byte(js), &p))
		require.NotEmpty(t, p.Citations, c.filter)
		for _, cit := range p.Citations {
			require.Equal(t, c.anchor, cit.AnchorField, c.filter)
		}
	}
}

// TestCheckCommand: evpack check prints what it verified and exits 0 on a
// healthy index, 1 when a forged batch (re-sealed, so Open accepts it)
// fails its content hashes, 3 when the index is corrupt or locked.
func TestCheckCommand(t *testing.T) {
	dir := ingestTestCorpus(t)
	m := storagetest.ReadManifest(t, dir)
	code, out, errs := runCLI(t, "check", "--index", dir)
	require.Equal(t, 0, code, errs)
	want := fmt.Sprintf("index %s: generation 2, 18 chunks\n", dir) +
		fmt.Sprintf("file chunks/00000001.jsonl %s (11 chunks, 5 facts)\n", m.Batches[0].Sum) +
		fmt.Sprintf("file chunks/00000001.analysis %s (11 chunks)\n", m.Batches[0].AnalysisSum) +
		fmt.Sprintf("file chunks/00000002.jsonl %s (7 chunks)\n", m.Batches[1].Sum) +
		fmt.Sprintf("file chunks/00000002.analysis %s (7 chunks)\n", m.Batches[1].AnalysisSum) +
		"ok: every file matches its checksum, every chunk its content hash, the lexical index the chunks\n"
	require.Equal(t, want, out)

	eng, err := evpack.Open(dir, evpack.Options{})
	require.NoError(t, err)
	code, _, errs = runCLI(t, "check", "--index", dir, "--lock-wait", "-1s")
	require.Equal(t, 3, code, "locked: %s", errs)
	require.Contains(t, errs, "index locked")
	require.NoError(t, eng.Close())

	require.True(t, storagetest.ForgeBatches(t, dir, func(lines []byte) []byte {
		return bytes.Replace(lines, []byte("for ten years"), []byte("for two years"), 1)
	}))
	code, out, _ = runCLI(t, "check", "--index", dir)
	require.Equal(t, 1, code)
	require.Contains(t, out, `problem: chunk "records-act/art-2@2025": fields hash to`)

	// A batch the checkpoint holds: the index opens, and check names it.
	require.NoError(t, os.Rename(filepath.Join(dir, "chunks", "00000001.jsonl"), filepath.Join(dir, "00000001.jsonl")))
	code, out, _ = runCLI(t, "check", "--index", dir)
	require.Equal(t, 1, code)
	require.Contains(t, out, "00000001.jsonl: no such file")
	require.NoError(t, os.Rename(filepath.Join(dir, "00000001.jsonl"), filepath.Join(dir, "chunks", "00000001.jsonl")))
	// A batch committed after the checkpoint, which Open reads whole
	// (state.PlanCheckpoint): the index does not open, naming it.
	require.NoError(t, os.Remove(filepath.Join(dir, "chunks", "00000002.jsonl")))
	code, _, errs = runCLI(t, "check", "--index", dir)
	require.Equal(t, 3, code)
	require.Contains(t, errs, "00000002.jsonl: no such file")
}

// TestQueryAtAnEarlierGeneration: --generation and --known-at answer from an
// earlier state, and a pack made then verifies after a later ingest.
func TestQueryAtAnEarlierGeneration(t *testing.T) {
	dir := ingestTestCorpus(t) // generations 1 (statute) and 2 (guidance)
	q := "What guidance applies to retention of client records?"
	code, first, errs := runCLI(t, "query", "--index", dir, "--as-of", "2026-02-01", "--generation", "1", "--format", "json", q)
	require.Equal(t, 0, code, errs)
	require.Contains(t, first, `"generation":1,`)
	require.NotContains(t, first, `"doc_id":"guidance-note-`, "guidance came in generation 2")
	code, latest, _ := runCLI(t, "query", "--index", dir, "--as-of", "2026-02-01", "--format", "json", q)
	require.Equal(t, 0, code)
	require.Contains(t, latest, `"generation":2,`)
	// Before the first commit the index held nothing: an error, not an
	// empty pack that exits 0 (issue 31, item 12).
	code, early, errs := runCLI(t, "query", "--index", dir, "--as-of", "2026-02-01", "--known-at", "2000-01-01T00:00:00Z", "--format", "json", q)
	require.Equal(t, 2, code, early)
	require.Empty(t, early)
	require.Contains(t, errs, "known-at 2000-01-01T00:00:00Z is before the index's first commit (the first was committed at ")

	pack := filepath.Join(t.TempDir(), "pack.json")
	require.NoError(t, os.WriteFile(pack, []byte(first), 0o644))
	extra := filepath.Join(t.TempDir(), "extra.jsonl")
	require.NoError(t, os.WriteFile(extra, []byte(`{"id":"late","doc_id":"late","text":"retention of client records guidance","source_url":"u","retrieved_at":"2026-01-01T00:00:00Z"}`+"\n"), 0o644))
	code, _, errs = runCLI(t, "ingest", "--index", dir, "--connector", "jsonl", extra)
	require.Equal(t, 0, code, errs)
	code, out, errs := runCLI(t, "verify", "--index", dir, pack)
	require.Equal(t, 0, code, "%s %s", out, errs)

	code, _, errs = runCLI(t, "query", "--index", dir, "--as-of", "2026-02-01", "--generation", "9", q)
	require.Equal(t, 2, code)
	require.Contains(t, errs, "generation 9 is not committed")
}

// TestCrossEncoderFlags: --cuda alone is a usage error, and a model
// directory that cannot be loaded is named in the error; neither opens the
// index.
func TestCrossEncoderFlags(t *testing.T) {
	dir := ingestTestCorpus(t)
	code, _, errs := runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", "--cuda", "retention")
	require.Equal(t, 2, code, errs)
	require.Equal(t, "evpack query: --cuda needs --cross-encoder MODEL_DIR\n", errs)

	missing := filepath.Join(t.TempDir(), "no-model")
	for _, args := range [][]string{
		{"query", "--index", dir, "--as-of", "2026-01-15", "--cross-encoder", missing, "retention"},
		{"verify", "--index", dir, "--cross-encoder", missing, corpus("guidance.jsonl")},
	} {
		code, _, errs = runCLI(t, args...)
		require.Equal(t, 2, code, errs)
		require.True(t, strings.HasPrefix(errs, "evpack "+args[0]+": --cross-encoder "+missing+": bert: "), errs)
	}
}

// TestCrossEncoderQueryAndVerify: query --cross-encoder writes a pack with a
// ledger; verify replays it without the model, and with --cross-encoder
// also checks that a fresh model run agrees.
func TestCrossEncoderQueryAndVerify(t *testing.T) {
	if !bert.Available() {
		t.Skip("built without cgo: ONNX models need onnxruntime through cgo")
	}
	if os.Getenv("EVPACK_ORT_LIB") == "" {
		if os.Getenv("EVPACK_REQUIRE_DATA") == "1" {
			t.Fatal("EVPACK_ORT_LIB is not set")
		}
		t.Skip("EVPACK_ORT_LIB is not set: point it at libonnxruntime.so.1 to run the cross-encoder CLI test")
	}
	model := t.TempDir()
	td := filepath.Join("..", "..", "testdata", "onnx")
	for src, dst := range map[string]string{"tiny-bert-cross-encoder.onnx": "model.onnx", "vocab.txt": "vocab.txt"} {
		raw, err := os.ReadFile(filepath.Join(td, src))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(model, dst), raw, 0o644))
	}
	dir := ingestTestCorpus(t)
	q := "How long must a licensed firm retain records of client transactions?"
	code, js, errs := runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", "--format", "json", "--cross-encoder", model, q)
	require.Equal(t, 0, code, errs)
	p, err := evidence.Parse([]byte(js))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(p.Fingerprint.Get("reranker"), "cross-encoder/"+filepath.Base(model)+" "), p.Fingerprint.Get("reranker"))
	require.Equal(t, "false", p.Fingerprint.Get("reranker_bit_stable"))
	require.NotEmpty(t, p.Ledger)

	pack := filepath.Join(t.TempDir(), "pack.json")
	require.NoError(t, os.WriteFile(pack, []byte(js), 0o644))
	sum := blake3.Sum256([]byte(js))
	// The engine's reranker must be the pack's: the default one is not.
	code, out, _ := runCLI(t, "verify", "--index", dir, pack)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, `- reranker: pack says "cross-encoder/`)
	// A retired model, trusted by the identity its packs record: the pack
	// replays from its ledger without the model.
	code, out, errs = runCLI(t, "verify", "--index", dir, "--retired-reranker", p.Fingerprint.Get("reranker"), pack)
	require.Equal(t, 0, code, errs)
	require.Equal(t, fmt.Sprintf("ok: blake3:%x replays byte-identically\n", sum), out)

	code, out, errs = runCLI(t, "verify", "--index", dir, "--cross-encoder", model, pack)
	require.Equal(t, 0, code, errs)
	require.Equal(t, fmt.Sprintf("ok: blake3:%x replays byte-identically\n", sum)+
		"model check: a fresh run of the cross-encoder cites the same chunks in the same order\n", out)

	// --cuda asks for the CUDA execution provider: where the onnxruntime
	// library has none (the CPU build CI uses) it is an error, never a
	// silent run on the CPU.
	if os.Getenv("EVPACK_CUDA") == "" {
		code, _, errs = runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", "--cross-encoder", model, "--cuda", q)
		require.Equal(t, 2, code, errs)
		require.Contains(t, errs, bert.ErrCUDA.Error())
		return
	}
	code, js2, errs := runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", "--format", "json", "--cross-encoder", model, "--cuda", q)
	require.Equal(t, 0, code, errs)
	p2, err := evidence.Parse([]byte(js2))
	require.NoError(t, err)
	require.NotEmpty(t, p2.Ledger)
}

// TestDiffCommand: evpack diff on a pack of Northwind's 10-K items exits 0
// while nothing changed, then 1 with one line per citation after the 10-K/A;
// a missing pack exits 2, a locked index 3. It ranks with --reranker
// arithmetic, which cites three items the amendment replaces.
func TestDiffCommand(t *testing.T) {
	const (
		k  = "edgar/0001234567/0001234567-25-000010/"
		ka = "edgar/0001234567/0001234567-25-000021/"
	)
	edgarDir := func(parts ...string) string {
		return filepath.Join(append([]string{"..", "..", "testdata"}, parts...)...)
	}
	dir := filepath.Join(t.TempDir(), "idx")
	code, _, errs := runCLI(t, "ingest", "--index", dir, "--connector", "edgar", "--retrieved-at", "2026-01-10T12:00:00Z", edgarDir("edgar-history", "before"))
	require.Equal(t, 0, code, errs)
	code, js, errs := runCLI(t, "query", "--index", dir, "--reranker", "arithmetic", "--as-of", "2025-05-01", "--filter", "cik=0001234567", "--k", "3", "--format", "json",
		"What drove Northwind Robotics revenue growth in fiscal 2024?")
	require.Equal(t, 0, code, errs)
	pack := filepath.Join(t.TempDir(), "pack.json")
	require.NoError(t, os.WriteFile(pack, []byte(js), 0o644))
	hash := fmt.Sprintf("blake3:%x", blake3.Sum256([]byte(js)))

	code, out, errs := runCLI(t, "diff", "--index", dir, "--reranker", "arithmetic", pack)
	require.Equal(t, 0, code, "%s%s", out, errs)
	at := commitTimes(t, dir)
	const tenK, tenKA = " (Northwind Robotics Inc. 10-K item ", " (Northwind Robotics Inc. 10-K/A item "
	require.Equal(t, "pack "+hash+" at generation 1 (committed "+at[0]+"); latest generation 1 (committed "+at[0]+")\n"+
		"verified: replays byte-identically at generation 1\n"+
		"[1] "+k+"item-7/1"+tenK+"7, filed 2025-02-14): unchanged\n"+
		"[2] "+k+"item-cover/1"+tenK+"cover, filed 2025-02-14): unchanged\n"+
		"[3] "+k+"item-8/1"+tenK+"8, filed 2025-02-14): unchanged\n"+
		"unchanged: all 3 citations, nothing new\n", out)

	code, _, errs = runCLI(t, "ingest", "--index", dir, "--connector", "edgar", "--retrieved-at", "2026-01-10T12:00:00Z", edgarDir("edgar"))
	require.Equal(t, 0, code, errs)
	code, out, errs = runCLI(t, "diff", "--index", dir, "--reranker", "arithmetic", pack)
	require.Equal(t, 1, code, "%s%s", out, errs)
	at = commitTimes(t, dir)
	gen2 := "generation 2 (committed " + at[1] + ")"
	var want strings.Builder
	want.WriteString("pack " + hash + " at generation 1 (committed " + at[0] + "); latest generation 2 (committed " + at[1] + ")\n" +
		"verified: replays byte-identically at generation 1\n")
	for i, item := range []string{"7", "cover", "8"} {
		fmt.Fprintf(&want, "[%d] %sitem-%s/1%s%s, filed 2025-02-14): superseded by %sitem-%s/1 from 2025-04-20 (fact of generation 2); now replaced by %sitem-%s/1 [%d]\n",
			i+1, k, item, tenK, item, ka, item, ka, item, i+1)
		fmt.Fprintf(&want, "    why: %s recorded that it is superseded by %sitem-%s/1%s%s, filed 2025-04-20) from 2025-04-20\n", gen2, ka, item, tenKA, item)
	}
	for i, item := range []string{"7", "cover", "8"} {
		fmt.Fprintf(&want, "new [%d] %sitem-%s/1%s%s, filed 2025-04-20): committed at generation 2 (%s), backfill\n", i+1, ka, item, tenKA, item, at[1])
	}
	want.WriteString("changed: 3 of 3 citations (3 by facts); 3 new (3 backfill)\n")
	require.Equal(t, want.String(), out)
	require.Equal(t, "evpack diff: pack "+pack+": 3 of 3 citations changed (3 by facts) and 3 new since generation 1 (latest 2)\n", errs)

	code, out, errs = runCLI(t, "diff", "--index", dir, "--reranker", "arithmetic", "--format", "json", pack)
	require.Equal(t, 1, code, errs)
	var rep struct {
		Verified  bool `json:"verified"`
		Citations []struct {
			Status      string `json:"status"`
			Replacement string `json:"replacement"`
			Fact        struct {
				End        string `json:"end"`
				Generation int64  `json:"generation"`
			} `json:"fact"`
		} `json:"citations"`
		New []struct {
			ChunkID  string `json:"chunk_id"`
			Backfill bool   `json:"backfill"`
		} `json:"new"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.True(t, rep.Verified)
	require.Len(t, rep.Citations, 3)
	require.Equal(t, "superseded", rep.Citations[0].Status)
	require.Equal(t, ka+"item-7/1", rep.Citations[0].Replacement)
	require.Equal(t, "2025-04-20", rep.Citations[0].Fact.End)
	require.EqualValues(t, 2, rep.Citations[0].Fact.Generation)
	require.Equal(t, ka+"item-7/1", rep.New[0].ChunkID)
	require.True(t, rep.New[0].Backfill)

	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a missing pack", []string{"diff", "--index", dir, filepath.Join(t.TempDir(), "nope.json")}, 2, "nope.json: no such file or directory"},
		{"no pack", []string{"diff", "--index", dir}, 2, "need --index DIR and one PACK.json"},
		{"an unknown format", []string{"diff", "--index", dir, "--format", "yaml", pack}, 2, `--format "yaml": want text or json`},
		{"not a pack", []string{"diff", "--index", dir, corpus("guidance.jsonl")}, 2, "evpack diff: "},
		{"no index", []string{"diff", "--index", filepath.Join(dir, "nope"), pack}, 2, "nope does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := runCLI(t, c.args...)
			require.Equal(t, c.code, code, errs)
			require.Contains(t, errs, c.want)
		})
	}

	eng, err := evpack.Open(dir, evpack.Options{})
	require.NoError(t, err)
	code, _, errs = runCLI(t, "diff", "--index", dir, "--reranker", "arithmetic", "--lock-wait", "-1s", pack)
	require.Equal(t, 3, code, errs)
	require.Contains(t, errs, "index locked")
	require.NoError(t, eng.Close())
}

// TestPurgeCommand: evpack purge deletes a cited chunk's text; verify then
// says "purged" (exit 1), diff names the purge, and check lists the purge
// file; a chunk that is not committed is bad input (exit 2).
func TestPurgeCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	code, _, errs := runCLI(t, "ingest", "--index", dir, "--connector", "jsonl", filepath.Join("..", "..", "testdata", "corpus", "guidance.jsonl"))
	require.Equal(t, 0, code, errs)
	code, js, errs := runCLI(t, "query", "--index", dir, "--as-of", "2026-02-01", "--k", "2", "--format", "json", "index retained records client transaction history")
	require.Equal(t, 0, code, errs)
	p, err := evidence.Parse([]byte(js))
	require.NoError(t, err)
	require.Equal(t, "gn-2019-04", p.Citations[0].ChunkID)
	require.Len(t, p.Citations, 2)
	pack := filepath.Join(t.TempDir(), "pack.json")
	require.NoError(t, os.WriteFile(pack, []byte(js), 0o644))

	code, _, errs = runCLI(t, "purge", "--index", dir, "--reason", "erasure request 17", "ghost")
	require.Equal(t, 2, code, errs)
	require.Contains(t, errs, `chunk "ghost" is not committed`)
	code, out, errs := runCLI(t, "purge", "--index", dir, "--reason", "erasure request 17", "gn-2019-04")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "purged 1 chunk at generation 2: gn-2019-04\nrewrote chunks/00000001.p00000002.jsonl without their text\n", out)

	// What holds after a purge: the purged citation named, no empty replay
	// hash, the other citation's text still the index's, one "problem".
	code, out, errs = runCLI(t, "verify", "--index", dir, pack)
	require.Equal(t, 1, code, "%s%s", out, errs)
	hash := fmt.Sprintf("blake3:%x", blake3.Sum256([]byte(js)))
	require.Equal(t, "FAILED: "+hash+" cannot be replayed: 1 of its citations cites purged text\n"+
		"- citation [1] gn-2019-04: purged at generation 2 (erasure request 17): its text is deleted, so the pack cannot be replayed\n"+
		"holds: the pack's other 1 citation still matches the index's text\n", out)
	require.Equal(t, "evpack verify: pack "+pack+" does not verify: 1 problem\n", errs)
	code, out, _ = runCLI(t, "diff", "--index", dir, pack)
	require.Equal(t, 1, code)
	require.Contains(t, out, "[1] gn-2019-04 (guidance-note-4, version 1): purged at generation 2: erasure request 17\n")
	code, out, errs = runCLI(t, "check", "--index", dir)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "file chunks/00000002.jsonl ")
	require.Contains(t, out, " (1 purges)\n")
}

// TestHistoryCommand: a living corpus through the CLI. Two fetches of an
// ALFRED series: the second one's ingest line counts and names its facts
// (the advance estimate's supersession is not "unchanged"); then a statute
// for tenant acme and an EDGAR mirror into the shared corpus. evpack
// history lists each generation with its commit time and what it did per
// tenant, names the chunks of a small commit, and --tenant keeps a scope.
func TestHistoryCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	fredDir := func(fetch string) string {
		return filepath.Join("..", "..", "testdata", "fred", "history", fetch, "A191RL1Q225SBEA")
	}
	const (
		q4  = "fred/A191RL1Q225SBEA/2019-10-01@2020-01-30"
		adv = "fred/A191RL1Q225SBEA/2020-01-01@2020-04-29"
		sec = "fred/A191RL1Q225SBEA/2020-01-01@2020-05-28"
		thd = "fred/A191RL1Q225SBEA/2020-01-01@2020-06-25"
	)
	code, out, errs := runCLI(t, "ingest", "--index", dir, "--connector", "fred", "--retrieved-at", "2020-05-15T12:00:00Z", fredDir("2020-05-15"))
	require.Equal(t, 0, code, errs)
	require.Equal(t, "read 2 records: 2 added (1 documents, 2 versions), 0 unchanged, 0 facts, 0 flagged; generation 1\n", out)
	code, out, errs = runCLI(t, "ingest", "--index", dir, "--connector", "fred", "--retrieved-at", "2020-07-01T12:00:00Z", fredDir("2020-07-01"))
	require.Equal(t, 0, code, errs)
	require.Equal(t, "read 4 records: 2 added (1 documents, 2 versions), 1 unchanged, 2 facts (2 superseded), 0 flagged; generation 2\n"+
		"fact: superseded "+adv+" by "+sec+" from 2020-05-28\n"+
		"fact: superseded "+sec+" by "+thd+" from 2020-06-25\n", out)
	statute := filepath.Join(t.TempDir(), "acme.json")
	raw, err := os.ReadFile(corpus("records-act.json"))
	require.NoError(t, err)
	var act map[string]any
	require.NoError(t, json.Unmarshal(raw, &act))
	act["tenant"] = "acme"
	raw, err = json.Marshal(act)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(statute, raw, 0o644))
	code, out, errs = runCLI(t, "ingest", "--index", dir, "--connector", "statute", statute)
	require.Equal(t, 0, code, errs)
	require.True(t, strings.HasPrefix(out, "read 11 records: 11 added (1 documents, 3 versions), 0 unchanged, 5 facts (5 superseded), 0 flagged; generation 3\n"), out)
	code, _, errs = runCLI(t, "ingest", "--index", dir, "--connector", "edgar", "--retrieved-at", "2026-01-10T12:00:00Z", filepath.Join("..", "..", "testdata", "edgar"))
	require.Equal(t, 0, code, errs)

	at := commitTimes(t, dir)
	require.Len(t, at, 4)
	code, out, errs = runCLI(t, "history", "--index", dir)
	require.Equal(t, 0, code, errs)
	require.Equal(t, "generation 1 committed "+at[0]+": shared: 2 added ("+q4+", "+adv+")\n"+
		"generation 2 committed "+at[1]+": shared: 2 added ("+sec+", "+thd+"), 2 superseded ("+adv+", "+sec+")\n"+
		"generation 3 committed "+at[2]+": tenant \"acme\": 11 added, 5 superseded\n"+
		"generation 4 committed "+at[3]+": shared: 15 added, 3 superseded (edgar/0001234567/0001234567-25-000010/item-7/1, "+
		"edgar/0001234567/0001234567-25-000010/item-8/1, edgar/0001234567/0001234567-25-000010/item-cover/1)\n", out)
	code, out, errs = runCLI(t, "history", "--index", dir, "--tenant", "globex")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "generation 3 committed "+at[2]+": nothing in this scope\n")

	code, out, errs = runCLI(t, "history", "--index", dir, "--json", "--tenant", "acme")
	require.Equal(t, 0, code, errs)
	var h []struct {
		Generation  int64  `json:"generation"`
		CommittedAt string `json:"committed_at"`
		Tenants     []struct {
			Tenant     string   `json:"tenant"`
			Added      []string `json:"added"`
			Superseded []string `json:"superseded"`
		} `json:"tenants"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &h))
	require.Len(t, h, 4)
	require.Equal(t, "acme", h[2].Tenants[0].Tenant)
	require.Len(t, h[2].Tenants[0].Added, 11)
	require.Equal(t, []string{"records-act/art-1@2018", "records-act/art-2@2018", "records-act/art-2@2021", "records-act/art-3@2018", "records-act/art-4@2018"},
		h[2].Tenants[0].Superseded)
	require.Equal(t, "", h[3].Tenants[0].Tenant)
	require.Len(t, h[3].Tenants[0].Superseded, 3)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"history"}, "need --index DIR and nothing else"},
		{[]string{"history", "--index", dir, "extra"}, "need --index DIR and nothing else"},
		{[]string{"history", "--index", filepath.Join(dir, "nope")}, "nope does not exist"},
	} {
		code, _, errs := runCLI(t, c.args...)
		require.Equal(t, 2, code, errs)
		require.Contains(t, errs, c.want)
	}
}

// TestDiffCauses: evpack diff says why each citation changed, with the
// commits and the sources' own names. A pack of FRED's 2020Q1 advance
// estimate: the later fetch's supersession (a fact). A pack of tenant
// acme's statute, after an EDGAR mirror went into the shared corpus: no
// fact and no new chunk, but the scope's BM25 statistics moved by one
// commit, and the report says so rather than a bare "changed".
func TestDiffCauses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	fredDir := func(fetch string) string {
		return filepath.Join("..", "..", "testdata", "fred", "history", fetch, "A191RL1Q225SBEA")
	}
	code, _, errs := runCLI(t, "ingest", "--index", dir, "--connector", "fred", "--retrieved-at", "2020-05-15T12:00:00Z", fredDir("2020-05-15"))
	require.Equal(t, 0, code, errs)
	code, js, errs := runCLI(t, "query", "--index", dir, "--as-of", "2020-07-15", "--format", "json", "real GDP percent change 2020Q1")
	require.Equal(t, 0, code, errs)
	fredPack := filepath.Join(t.TempDir(), "fred.json")
	require.NoError(t, os.WriteFile(fredPack, []byte(js), 0o644))
	code, _, errs = runCLI(t, "ingest", "--index", dir, "--connector", "fred", "--retrieved-at", "2020-07-01T12:00:00Z", fredDir("2020-07-01"))
	require.Equal(t, 0, code, errs)
	at := commitTimes(t, dir)
	const (
		series = "FRED series A191RL1Q225SBEA, observation "
		adv    = "fred/A191RL1Q225SBEA/2020-01-01@2020-04-29"
		sec    = "fred/A191RL1Q225SBEA/2020-01-01@2020-05-28"
		thd    = "fred/A191RL1Q225SBEA/2020-01-01@2020-06-25"
	)
	code, out, errs := runCLI(t, "diff", "--index", dir, fredPack)
	require.Equal(t, 1, code, errs)
	lines := strings.Split(out, "\n")
	require.Equal(t, []string{
		"[1] fred/A191RL1Q225SBEA/2019-10-01@2020-01-30 (" + series + "2019-10-01, vintage 2020-01-30): unchanged",
		"[2] " + adv + " (" + series + "2020-01-01, vintage 2020-04-29): superseded by " + sec + " from 2020-05-28 (fact of generation 2); now replaced by " + thd + " [2]",
		"    why: generation 2 (committed " + at[1] + ") recorded that it is superseded by " + sec + " (" + series + "2020-01-01, vintage 2020-05-28) from 2020-05-28",
		"new [2] " + thd + " (" + series + "2020-01-01, vintage 2020-06-25): committed at generation 2 (" + at[1] + "), backfill",
		"changed: 1 of 2 citations (1 by facts); 1 new (1 backfill)",
	}, lines[2:7])

	// Tenant acme's statute, then an unrelated EDGAR mirror into the shared
	// corpus.
	statute := filepath.Join(t.TempDir(), "acme.json")
	raw, err := os.ReadFile(corpus("records-act.json"))
	require.NoError(t, err)
	var act map[string]any
	require.NoError(t, json.Unmarshal(raw, &act))
	act["tenant"] = "acme"
	raw, err = json.Marshal(act)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(statute, raw, 0o644))
	code, _, errs = runCLI(t, "ingest", "--index", dir, "--connector", "statute", statute)
	require.Equal(t, 0, code, errs)
	code, js, errs = runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", "--tenant", "acme", "--k", "4", "--format", "json",
		"records retention period")
	require.Equal(t, 0, code, errs)
	acmePack := filepath.Join(t.TempDir(), "acme-pack.json")
	require.NoError(t, os.WriteFile(acmePack, []byte(js), 0o644))
	code, _, errs = runCLI(t, "ingest", "--index", dir, "--connector", "edgar", "--retrieved-at", "2026-01-10T12:00:00Z", filepath.Join("..", "..", "testdata", "edgar"))
	require.Equal(t, 0, code, errs)
	at = commitTimes(t, dir)
	code, out, errs = runCLI(t, "diff", "--index", dir, acmePack)
	require.Equal(t, 1, code, errs)
	stats := "    why: the scope's statistics changed by 1 commit since the pack, generation 4 (committed " + at[3] + ") " +
		"(1 to the shared corpus, 0 to tenant \"acme\"): no fact touches this citation and no new chunk outranks it; " +
		"the same evidence is scored against BM25 figures (document counts, term frequencies, lengths) that those commits moved\n"
	// The FRED observation, shared, was [4]: the EDGAR commit moved the
	// scope's figures and the statute's article 4 (tenant acme, held since
	// generation 3) outranks it now.
	require.Equal(t, "pack "+fmt.Sprintf("blake3:%x", blake3.Sum256([]byte(js)))+" at generation 3 (committed "+at[2]+"); latest generation 4 (committed "+at[3]+")\n"+
		"verified: replays byte-identically at generation 3\n"+
		"[1] records-act/art-2@2025 (records-act article 2, version 2025): unchanged\n"+
		"[2] records-act/art-0@2018 (records-act article 0, version 2018): unchanged\n"+
		"[3] records-act/art-1@2025 (records-act article 1, version 2025): unchanged\n"+
		"[4] fred/A191RL1Q225SBEA/2019-10-01@2020-01-30 ("+series+"2019-10-01, vintage 2020-01-30): outranked (still eligible, no longer cited)\n"+
		stats+
		"new [4] records-act/art-4@2025 (records-act article 4, version 2025): committed at generation 3 ("+at[2]+")\n"+
		"changed: 1 of 4 citations (1 by the scope's statistics); 1 new (0 backfill)\n", out)
	require.Equal(t, "evpack diff: pack "+acmePack+": 1 of 4 citations changed (1 by the scope's statistics) and 1 new since generation 3 (latest 4)\n", errs)

	code, out, errs = runCLI(t, "diff", "--index", dir, "--format", "json", acmePack)
	require.Equal(t, 1, code, errs)
	var rep struct {
		ScopeCommits []int64 `json:"scope_commits"`
		Citations    []struct {
			Status string `json:"status"`
			Source string `json:"source"`
			Cause  *struct {
				Kind        string  `json:"kind"`
				Generations []int64 `json:"generations"`
			} `json:"cause"`
		} `json:"citations"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, []int64{4}, rep.ScopeCommits)
	changed := 0
	for _, c := range rep.Citations {
		require.NotEmpty(t, c.Source)
		if c.Status == "unchanged" {
			require.Nil(t, c.Cause)
			continue
		}
		changed++
		require.Equal(t, "statistics", c.Cause.Kind)
		require.Equal(t, []int64{4}, c.Cause.Generations)
	}
	require.Positive(t, changed)
}

// TestVerifyOldPackForm: a pack of the first form (no generation) is not
// replayed; verify says what still holds of it and exits 0 when all of it
// does (issue 31, item 9).
func TestVerifyOldPackForm(t *testing.T) {
	dir := ingestTestCorpus(t)
	code, out, errs := runCLI(t, "verify", "--index", dir, filepath.Join("..", "..", "testdata", "oldpacks", "pack1-5fda4c6-retention.json"))
	require.Equal(t, 0, code, "%s %s", out, errs)
	require.True(t, strings.HasPrefix(out, "ok, not replayed: blake3:"), out)
	require.Contains(t, out, " (evpack-pack/1); what still holds:\n- the bytes are a canonical evpack-pack/1 pack and hash to blake3:")
	require.Contains(t, out, "\n- citation [1] records-act/art-2@2025: its text and fields are the stored chunk's")
	require.True(t, strings.HasSuffix(out, "- not replayed: evpack-pack/1 names no generation, and its tenant scope and corpus statistics were the whole index's when it was made\n"), out)
}

// TestExitCodeOfUnreadableIndexes: every error that says an index cannot
// be read, whatever wraps it, exits 3, the documented status; bad input
// exits 2.
func TestExitCodeOfUnreadableIndexes(t *testing.T) {
	cases := []struct {
		name, reason string
		err          error
		want         int
	}{
		{"corrupt", "a stored file fails its checksum", evpack.ErrCorrupt, 3},
		{"old format", "an index of a format this build no longer reads", evpack.ErrOldFormat, 3},
		{"newer format", "an index a later evpack wrote is unreadable here, not bad usage", evpack.ErrNewerFormat, 3},
		{"locked", "another process holds it", evpack.ErrLocked, 3},
		{"bad request", "the caller's input", evpack.ErrBadRequest, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, exitCode(fmt.Errorf("open /x: %w", tc.err)), tc.reason)
		})
	}
}
