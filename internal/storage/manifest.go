package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/evpack/evpack/internal/fsutil"
)

// Stored format versions. A reader refuses any other.
const (
	// Format is the index format named in MANIFEST.json.
	Format = "evpack-index/2"
	// oldFormat is the unsealed format of evpack before storage was sealed.
	oldFormat = "evpack-index/1"
	// BatchFormat is the format of a batch file that holds facts: chunk
	// lines, then fact lines.
	BatchFormat = "evpack-chunks/3"
	// ChunksOnlyFormat is the format of a batch file without facts, read
	// and written as before facts existed.
	ChunksOnlyFormat = "evpack-chunks/2"
	// pendingFormat is the format of PENDING.json.
	pendingFormat = "evpack-pending/1"
)

// Names in an index directory.
const (
	ManifestName = "MANIFEST.json"
	PendingName  = "PENDING.json"
	LockName     = "LOCK"
	ChunksDir    = "chunks"
	LexicalDir   = "lexical"
)

// Manifest is the commit point: a generation exists once the manifest names
// it. It is stored sealed (fsutil.SealText).
type Manifest struct {
	Format     string `json:"format"`
	Generation int64  `json:"generation"`
	Docs       int64  `json:"docs"`   // chunks over all batches
	Tokens     int64  `json:"tokens"` // analyzed tokens over all chunks (BM25's field length)
	// Purged counts the chunks whose text a purge deleted: they stay in
	// Docs, but not in the lexical index.
	Purged  int64   `json:"purged,omitempty"`
	Batches []Batch `json:"batches"`
	Dense   *Dense  `json:"dense,omitempty"`
	// Checkpoint, when set, names a generation's checkpoint
	// (CheckpointName) and CheckpointSum its checksum: derived data, the
	// state Open would otherwise rebuild from every batch file. It is the
	// manifest's generation's, or an earlier one's when every later batch
	// holds facts alone (CheckpointGeneration): Open adds their facts to
	// it, and a commit of facts need not write the whole state again.
	Checkpoint    string `json:"checkpoint,omitempty"`
	CheckpointSum string `json:"checkpoint_sum,omitempty"`
}

// CheckpointName is the file name of generation gen's checkpoint.
func CheckpointName(gen int64) string { return fmt.Sprintf("state-%08d.bin", gen) }

// CheckpointGeneration returns the generation whose state the manifest's
// checkpoint holds, 0 when it names none (or a name no generation has,
// which Validate refuses).
func (m *Manifest) CheckpointGeneration() int64 {
	var g int64
	if n, err := fmt.Sscanf(m.Checkpoint, "state-%08d.bin", &g); err != nil || n != 1 || m.Checkpoint != CheckpointName(g) {
		return 0
	}
	return g
}

// Batch names one generation's batch file and its checksum.
type Batch struct {
	Generation int64  `json:"generation"`
	File       string `json:"file"`             // under chunks/
	Sum        string `json:"sum"`              // BLAKE3 of the whole stored file
	Chunks     int    `json:"chunks"`           // chunk lines after the header
	Facts      int    `json:"facts,omitempty"`  // fact lines after the chunks
	Purges     int    `json:"purges,omitempty"` // purge lines after the facts
	// Chain, set when a later purge rewrote the file (File is then
	// RedactedName), is the checksum the file had when committed: the link
	// the next generation's header names, and the purge record's.
	Chain       string `json:"chain,omitempty"`
	CommittedAt string `json:"committed_at"` // RFC 3339, UTC, seconds
	// Analysis, when set, names the batch's analysis file (AnalysisName)
	// and AnalysisSum its checksum: derived data that spares Open the
	// analysis of every stored text (see Analysis).
	Analysis    string `json:"analysis,omitempty"`
	AnalysisSum string `json:"analysis_sum,omitempty"`
}

// Dense names the stored vectors of the latest generation, the embedder
// that made them and, when kept, the HNSW graph over them with the settings
// it was built with.
type Dense struct {
	File       string `json:"file"`
	Sum        string `json:"sum"`
	Embedder   string `json:"embedder"`
	Graph      string `json:"graph,omitempty"`
	GraphSum   string `json:"graph_sum,omitempty"`
	GraphBuild string `json:"graph_build,omitempty"`
}

// DenseName is the file name of the vectors stored with generation gen.
func DenseName(gen int64) string { return fmt.Sprintf("dense-%08d.bin", gen) }

// GraphName is the file name of the HNSW graph stored with generation gen.
func GraphName(gen int64) string { return fmt.Sprintf("graph-%08d.bin", gen) }

// BatchName is the file name of generation gen's batch.
func BatchName(gen int64) string { return fmt.Sprintf("%08d.jsonl", gen) }

// RedactedName is the file name of generation gen's batch as the purge of
// generation purge rewrote it.
func RedactedName(gen, purge int64) string { return fmt.Sprintf("%08d.p%08d.jsonl", gen, purge) }

// ChainSum is the checksum the next generation's batch header names as its
// previous: the file's checksum as committed.
func (b Batch) ChainSum() string {
	if b.Chain != "" {
		return b.Chain
	}
	return b.Sum
}

// ChainHead returns the checksum the next generation's batch header names
// as its previous: the last batch's as committed, "" before the first.
func (m *Manifest) ChainHead() string {
	if len(m.Batches) == 0 {
		return ""
	}
	return m.Batches[len(m.Batches)-1].ChainSum()
}

// Clone returns a deep copy of m.
func (m *Manifest) Clone() *Manifest {
	cp := *m
	cp.Batches = slices.Clone(m.Batches)
	if m.Dense != nil {
		d := *m.Dense
		cp.Dense = &d
	}
	return &cp
}

// Files lists every file m names, relative to the index directory, in a
// fixed order.
func (m *Manifest) Files() []string {
	var out []string
	for _, b := range m.Batches {
		out = append(out, ChunksDir+"/"+b.File)
		if b.Analysis != "" {
			out = append(out, ChunksDir+"/"+b.Analysis)
		}
	}
	if m.Dense != nil {
		out = append(out, m.Dense.File)
		if m.Dense.Graph != "" {
			out = append(out, m.Dense.Graph)
		}
	}
	if m.Checkpoint != "" {
		out = append(out, m.Checkpoint)
	}
	return out
}

// EncodeManifest returns the sealed bytes of m.
func EncodeManifest(m *Manifest) ([]byte, error) {
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return fsutil.SealText(append(raw, '\n')), nil
}

// DecodeManifest checks and parses a stored manifest. name is used in
// errors.
func DecodeManifest(name string, raw []byte) (*Manifest, error) {
	body, err := fsutil.UnsealText(raw)
	if err != nil {
		var old struct{ Format string }
		if json.Unmarshal(raw, &old) == nil && old.Format == oldFormat {
			return nil, fmt.Errorf("%w: %s: format %s predates sealed storage (%s); rebuild the index by ingesting its sources into a new directory",
				ErrOldFormat, name, oldFormat, Format)
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: %s: data after the manifest", ErrCorrupt, name)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	return &m, nil
}

// validate checks what a manifest must say of itself: its format, one batch
// per generation 1..Generation in order, and plain file names.
func (m *Manifest) validate() error {
	if m.Format != Format {
		return fmt.Errorf("format %q, this evpack reads %q", m.Format, Format)
	}
	if m.Generation < 0 || m.Docs < 0 || m.Tokens < 0 {
		return fmt.Errorf("negative generation or totals")
	}
	if int64(len(m.Batches)) != m.Generation {
		return fmt.Errorf("generation %d but %d batches", m.Generation, len(m.Batches))
	}
	var chunks int64
	for i, b := range m.Batches {
		switch {
		case b.Generation != int64(i+1):
			return fmt.Errorf("batch %d names generation %d", i+1, b.Generation)
		case b.Chain == "" && b.File != BatchName(b.Generation):
			return fmt.Errorf("batch of generation %d is %q, want %q", b.Generation, b.File, BatchName(b.Generation))
		case b.Chain != "" && !redactedBy(b, m.Generation):
			return fmt.Errorf("batch of generation %d is %q, not a later purge's rewrite of it", b.Generation, b.File)
		case !validSum(b.Sum) || (b.Chain != "" && !validSum(b.Chain)):
			return fmt.Errorf("batch %s: bad checksum %q", b.File, b.Sum)
		case b.Chunks < 0 || b.Facts < 0 || b.Purges < 0 || b.Chunks+b.Facts+b.Purges < 1:
			return fmt.Errorf("batch %s: %d chunks, %d facts, %d purges", b.File, b.Chunks, b.Facts, b.Purges)
		case b.Analysis != "" && (b.Analysis != AnalysisName(b.Generation) || b.Chain != "" || !validSum(b.AnalysisSum)):
			return fmt.Errorf("batch %s: analysis file %q (checksum %q) is not this batch's", b.File, b.Analysis, b.AnalysisSum)
		case b.Analysis == "" && b.AnalysisSum != "":
			return fmt.Errorf("batch %s: an analysis checksum but no analysis file", b.File)
		}
		chunks += int64(b.Chunks)
	}
	if chunks != m.Docs {
		return fmt.Errorf("docs %d but the batches hold %d chunks", m.Docs, chunks)
	}
	if d := m.Dense; d != nil {
		if !plainName(d.File) || !validSum(d.Sum) || (d.Graph != "" && (!plainName(d.Graph) || !validSum(d.GraphSum))) {
			return fmt.Errorf("dense: bad file name or checksum")
		}
	}
	if m.Checkpoint == "" && m.CheckpointSum == "" {
		return nil
	}
	g := m.CheckpointGeneration()
	if g < 1 || g > m.Generation || !validSum(m.CheckpointSum) {
		return fmt.Errorf("checkpoint %q (checksum %q) is not of a generation up to %d", m.Checkpoint, m.CheckpointSum, m.Generation)
	}
	for _, b := range m.Batches[g:] {
		if b.Purges > 0 || redactedBy(b, m.Generation) {
			return fmt.Errorf("checkpoint %q is of generation %d, but generation %d purges after it", m.Checkpoint, g, b.Generation)
		}
	}
	return nil
}

// redactedBy reports whether b's file is the rewrite of its batch by a purge
// of a later generation, at most latest.
func redactedBy(b Batch, latest int64) bool {
	_ = latest // a replica may hold a batch as a purge it has yet to apply rewrote it
	p, ok := RedactingPurge(b)
	return ok && p > b.Generation
}

// RedactingPurge returns the purge generation b's file name says rewrote
// it (RedactedName), and false for a batch as committed.
func RedactingPurge(b Batch) (int64, bool) {
	var g, p int64
	if n, err := fmt.Sscanf(b.File, "%08d.p%08d.jsonl", &g, &p); err != nil || n != 2 || g != b.Generation || b.File != RedactedName(g, p) {
		return 0, false
	}
	return p, true
}

func plainName(s string) bool {
	return s != "" && !strings.ContainsAny(s, `/\`) && !strings.HasPrefix(s, ".")
}

func validSum(s string) bool {
	h, ok := strings.CutPrefix(s, "blake3:")
	if !ok || len(h) != 64 {
		return false
	}
	for _, r := range h {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}
