package storage

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/strictjson"
)

// Stored format versions. A reader refuses any other.
const (
	// Format is the index format named in MANIFEST.json, evpack-index/
	// and formatVersion. A change to any stored format an index's files
	// are read in raises it, so that the manifest alone tells a reader
	// whether it can read the index (ErrNewerFormat).
	Format = "evpack-index/3"
	// formatVersion is Format's number: a manifest of a higher one was
	// written by a later evpack.
	formatVersion = 3
	// formatNoVolumes is the format before volumes (Volume): every batch
	// in the manifest. It is read as Format; the next commit writes Format.
	formatNoVolumes = "evpack-index/2"
	// VolumeFormat is the format of a volume file (VolumeName).
	VolumeFormat = "evpack-batches/1"
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
	Purged int64 `json:"purged,omitempty"`
	// Batches holds one entry per generation, 1..Generation. Stored, the
	// manifest holds only those after its volumes (VolumesEnd); Decode reads
	// the others from the volumes.
	Batches []Batch `json:"batches"`
	// Volumes list the batch entries of generations 1..VolumesEnd(), a run of
	// them each, so that a commit writes a manifest that grows with the
	// generations since the last volume, not with the whole history.
	Volumes []Volume `json:"volumes,omitempty"`
	Dense   *Dense   `json:"dense,omitempty"`
	// Checkpoint, when set, names a generation's checkpoint
	// (CheckpointName) and CheckpointSum its checksum: derived data, the
	// state Open would otherwise rebuild from every batch file. It is the
	// manifest's generation's, or an earlier one's when every later batch
	// holds facts alone (CheckpointGeneration): Open adds their facts to
	// it, and a commit of facts need not write the whole state again.
	Checkpoint    string `json:"checkpoint,omitempty"`
	CheckpointSum string `json:"checkpoint_sum,omitempty"`
	// Delta, when set, names the delta level over the checkpoint
	// (DeltaName) and DeltaSum its checksum: a later generation's state
	// whose rows hold only the document versions committed to after the
	// checkpoint's generation, so that the checkpoint need not be written
	// whole again each time the log has moved past it. Open reads both,
	// and adds the batches after the delta's generation.
	Delta    string `json:"delta,omitempty"`
	DeltaSum string `json:"delta_sum,omitempty"`
}

// DeltaName is the file name of generation gen's delta level.
func DeltaName(gen int64) string { return fmt.Sprintf("delta-%08d.bin", gen) }

// DeltaGeneration returns the generation whose state the manifest's delta
// level holds, 0 when it names none (or a name no generation has, which
// Validate refuses).
func (m *Manifest) DeltaGeneration() int64 {
	return generationOf(m.Delta, "delta-%08d.bin", DeltaName)
}

// LevelGeneration returns the generation of the newest level the
// manifest names: its delta's, else its checkpoint's; 0 for none. Open
// reads the batches after it.
func (m *Manifest) LevelGeneration() int64 {
	if g := m.DeltaGeneration(); g != 0 {
		return g
	}
	return m.CheckpointGeneration()
}

// CheckpointName is the file name of generation gen's checkpoint.
func CheckpointName(gen int64) string { return fmt.Sprintf("state-%08d.bin", gen) }

// CheckpointGeneration returns the generation whose state the manifest's
// checkpoint holds, 0 when it names none (or a name no generation has,
// which Validate refuses).
func (m *Manifest) CheckpointGeneration() int64 {
	return generationOf(m.Checkpoint, "state-%08d.bin", CheckpointName)
}

// generationOf returns the generation file, a name of the format pattern
// (which named gives), is of; 0 for another name.
func generationOf(file, pattern string, named func(int64) string) int64 {
	var g int64
	if n, err := fmt.Sscanf(file, pattern, &g); err != nil || n != 1 || file != named(g) {
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

// VolumeSize is how many batch entries the stored manifest holds before a
// commit moves them into a volume: a commit then writes at most this many
// entries, plus a line per volume, whatever the length of the history.
const VolumeSize = 256

// Volume names a volume file: the batch entries of the generations after the
// previous volume's Last up to its own, in order. It is immutable; a purge
// that rewrites an entry in it writes the volume again under a new name.
type Volume struct {
	File string `json:"file"` // VolumeName(Last, its writer: see PlanVolumes)
	Sum  string `json:"sum"`  // BLAKE3 of the whole stored file
	Last int64  `json:"last"`
}

// VolumeName is the file name of the volume listing generations up to last
// named for writer: the latest purge that redacted one of its entries, else
// last (PlanVolumes).
func VolumeName(last, writer int64) string {
	return fmt.Sprintf("batches-%08d.%08d.json", last, writer)
}

// writer returns the writer v.File names, and false when the name is not
// VolumeName(v.Last, some generation).
func (v Volume) writer() (int64, bool) {
	var last, w int64
	if n, err := fmt.Sscanf(v.File, "batches-%08d.%08d.json", &last, &w); err != nil || n != 2 || last != v.Last || v.File != VolumeName(last, w) {
		return 0, false
	}
	return w, true
}

// VolumesEnd returns the last generation the volumes list, 0 when none.
func (m *Manifest) VolumesEnd() int64 {
	if len(m.Volumes) == 0 {
		return 0
	}
	return m.Volumes[len(m.Volumes)-1].Last
}

// PlanVolumes sets m.Volumes for the commit of generation m.Generation,
// which appends its own batch entry (not yet in m.Batches) and rewrites the
// entries of the generations in redacted (a purge's: those it rewrites and
// those already applied as it left them). It returns the indexes in
// m.Volumes of the volumes the commit must write (EncodeVolume, then set
// their Sum) and the files of those it replaces.
//
// A volume lists generations k*VolumeSize+1 to (k+1)*VolumeSize, written by
// the commit that reaches its end (or, for an index of the format before
// volumes, by its first commit after); a volume holding an entry the commit
// redacts is written again. Its name's writer (VolumeName) is the latest
// purge up to m.Generation that redacted one of its entries, else its last
// generation: never the generation that happened to write it.
//
// Invariant: the plan is a function of the log alone, so a replica applying
// the same entries, from any generation, names the same volumes as the
// writer, and the manifests match byte for byte.
func (m *Manifest) PlanVolumes(redacted []int64) (write []int, obsolete []string) {
	m.Volumes = slices.Clone(m.Volumes)
	for _, g := range redacted {
		i, _ := slices.BinarySearchFunc(m.Volumes, g, func(v Volume, g int64) int { return cmp.Compare(v.Last, g) })
		if i == len(m.Volumes) || slices.Contains(write, i) {
			continue // in the manifest's own entries, or already written again
		}
		obsolete = append(obsolete, m.Volumes[i].File)
		m.Volumes[i] = Volume{File: VolumeName(m.Volumes[i].Last, m.Generation), Last: m.Volumes[i].Last}
		write = append(write, i)
	}
	for m.Generation-m.VolumesEnd() >= VolumeSize {
		first, last := m.VolumesEnd()+1, m.VolumesEnd()+VolumeSize
		w := m.volumeWriter(m.Batches[first-1:min(last, int64(len(m.Batches)))], last)
		for _, g := range redacted {
			if g >= first && g <= last {
				w = m.Generation
			}
		}
		m.Volumes = append(m.Volumes, Volume{File: VolumeName(last, w), Last: last})
		write = append(write, len(m.Volumes)-1)
	}
	slices.Sort(write)
	return write, obsolete
}

// volumeWriter returns the writer a volume of entries, ending at
// generation last, is named for: the latest purge up to m.Generation that
// redacted one of them, else last. (A replica may hold an entry as a purge
// it has yet to apply left it: that purge names the volume when it is
// applied.)
func (m *Manifest) volumeWriter(entries []Batch, last int64) int64 {
	w := last
	for _, b := range entries {
		if p, ok := RedactingPurge(b); ok && p <= m.Generation {
			w = max(w, p)
		}
	}
	return w
}

// VolumeEntries returns the batch entries volume i of m lists.
func (m *Manifest) VolumeEntries(i int) []Batch {
	first := int64(0)
	if i > 0 {
		first = m.Volumes[i-1].Last
	}
	return m.Batches[first:m.Volumes[i].Last]
}

// EncodeVolume returns the sealed bytes of a volume listing entries.
func EncodeVolume(entries []Batch) ([]byte, error) {
	raw, err := json.MarshalIndent(&storedVolume{Format: VolumeFormat, Batches: entries}, "", "  ")
	if err != nil {
		return nil, err
	}
	return fsutil.SealText(append(raw, '\n')), nil
}

type storedVolume struct {
	Format  string  `json:"format"`
	Batches []Batch `json:"batches"`
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
// as its previous: the last batch's as committed, "" before the first (and of a nil manifest).
func (m *Manifest) ChainHead() string {
	if m == nil || len(m.Batches) == 0 {
		return ""
	}
	return m.Batches[len(m.Batches)-1].ChainSum()
}

// Committed reports whether m holds generation g as committed with chain
// sum sum: the log entry of that generation (false for a nil manifest).
func (m *Manifest) Committed(g int64, sum string) bool {
	return m != nil && g >= 1 && g <= int64(len(m.Batches)) && m.Batches[g-1].Generation == g && m.Batches[g-1].ChainSum() == sum
}

// Clone returns a deep copy of m.
func (m *Manifest) Clone() *Manifest {
	cp := *m
	cp.Batches = slices.Clone(m.Batches)
	cp.Volumes = slices.Clone(m.Volumes)
	if m.Dense != nil {
		d := *m.Dense
		cp.Dense = &d
	}
	return &cp
}

// Names reports whether file (relative to the index directory) is one m
// names: a volume, a batch or analysis file, the vectors, the graph or the
// checkpoint. It answers without listing them (a commit asks it of each
// file it tidies, Check of each file in the directory).
func (m *Manifest) Names(file string) bool {
	if b, ok := strings.CutPrefix(file, ChunksDir+"/"); ok {
		digits := len(b) - len(strings.TrimLeft(b, "0123456789"))
		g, err := strconv.ParseInt(b[:digits], 10, 64)
		if err != nil || g < 1 || g > int64(len(m.Batches)) {
			return false
		}
		e := m.Batches[g-1]
		return b == e.File || (e.Analysis != "" && b == e.Analysis)
	}
	for _, v := range m.Volumes {
		if file == v.File {
			return true
		}
	}
	if d := m.Dense; d != nil && (file == d.File || (d.Graph != "" && file == d.Graph)) {
		return true
	}
	return (m.Checkpoint != "" && file == m.Checkpoint) || (m.Delta != "" && file == m.Delta)
}

// EncodeManifest returns the sealed bytes of m: its batch entries after
// its volumes, which the caller has written.
func EncodeManifest(m *Manifest) ([]byte, error) {
	stored := *m
	stored.Batches = m.Batches[min(m.VolumesEnd(), int64(len(m.Batches))):]
	raw, err := json.MarshalIndent(&stored, "", "  ")
	if err != nil {
		return nil, err
	}
	return fsutil.SealText(append(raw, '\n')), nil
}

// DecodeManifest checks and parses a stored manifest, reading the volumes it
// names with read (a file name relative to the index directory; nil for a
// manifest that names none). name is used in errors.
func DecodeManifest(name string, raw []byte, read func(file string) ([]byte, error)) (*Manifest, error) {
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
		// A later format may add fields: its number, not the field this
		// build does not know, is the answer.
		var peek struct {
			Format string `json:"format"`
		}
		if json.Unmarshal(body, &peek) == nil {
			if err := newerFormat(name, peek.Format); err != nil {
				return nil, err
			}
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	if err := newerFormat(name, m.Format); err != nil {
		return nil, err
	}
	if !strictjson.Ended(dec) {
		return nil, fmt.Errorf("%w: %s: data after the manifest", ErrCorrupt, name)
	}
	if m.Format == formatNoVolumes && len(m.Volumes) == 0 {
		m.Format = Format // the same manifest, read as this format's
	}
	if err := m.readVolumes(read); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	if err := m.validate(nil); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	return &m, nil
}

// newerFormat returns ErrNewerFormat, naming file, when format is an index
// format a later evpack writes (evpack-index/N, N above formatVersion, N
// written as strconv.Itoa writes it); nil for any other.
func newerFormat(file, format string) error {
	n, ok := strings.CutPrefix(format, "evpack-index/")
	v, err := strconv.Atoi(n)
	if !ok || err != nil || v <= formatVersion || n != strconv.Itoa(v) {
		return nil
	}
	return fmt.Errorf("%w: %s: format %s, this evpack reads %s and earlier; open the index with the evpack that wrote it, or a later one",
		ErrNewerFormat, file, format, Format)
}

// readVolumes puts the entries of m's volumes before its own, checking each
// volume's name, checksum, format and span.
func (m *Manifest) readVolumes(read func(file string) ([]byte, error)) error {
	if len(m.Volumes) == 0 {
		return nil
	}
	if err := m.validateVolumes(); err != nil {
		return err
	}
	var entries []Batch
	for i, v := range m.Volumes {
		first := int64(1)
		if i > 0 {
			first = m.Volumes[i-1].Last + 1
		}
		if read == nil {
			return fmt.Errorf("volume %s: no reader for volumes", v.File)
		}
		raw, err := read(v.File)
		if err != nil {
			return err
		}
		if got := evidence.Sum(raw); got != v.Sum {
			return fmt.Errorf("volume %s hashes to %s, the manifest records %s", v.File, got, v.Sum)
		}
		body, err := fsutil.UnsealText(raw)
		if err != nil {
			return fmt.Errorf("volume %s: %w", v.File, err)
		}
		var sl storedVolume
		if err := strictJSON(body, &sl); err != nil {
			return fmt.Errorf("volume %s: %w", v.File, err)
		}
		if sl.Format != VolumeFormat {
			return fmt.Errorf("volume %s: format %q, this evpack reads %q", v.File, sl.Format, VolumeFormat)
		}
		if int64(len(sl.Batches)) != v.Last-first+1 {
			return fmt.Errorf("volume %s lists %d entries for generations %d..%d", v.File, len(sl.Batches), first, v.Last)
		}
		want := m.volumeWriter(sl.Batches, v.Last)
		if w, _ := v.writer(); w != want {
			return fmt.Errorf("volume %s is named for generation %d, its entries for %d", v.File, w, want)
		}
		entries = append(entries, sl.Batches...) // validate checks each entry's generation
	}
	m.Batches = append(entries, m.Batches...)
	return nil
}

// validateVolumes checks that m's volumes follow one another from
// generation 1, each named for its span and a generation that could have
// written it, with a checksum.
func (m *Manifest) validateVolumes() error {
	first := int64(1)
	for _, v := range m.Volumes {
		if w, ok := v.writer(); !ok || v.Last < first || w < v.Last || w > m.Generation {
			return fmt.Errorf("volume %q of generations %d..%d is not one a commit up to %d wrote", v.File, first, v.Last, m.Generation)
		}
		if !validSum(v.Sum) {
			return fmt.Errorf("volume %s: bad checksum %q", v.File, v.Sum)
		}
		first = v.Last + 1
	}
	return nil
}

// validate checks what a manifest must say of itself: its format, one batch
// per generation 1..Generation in order, and plain file names. An entry
// equal to the one at its place in known (the committed manifest's, which
// passed this check) is not checked again, so that a commit pays for its
// own entries, not for the history.
func (m *Manifest) validate(known []Batch) error {
	if m.Format != Format {
		return fmt.Errorf("format %q, this evpack reads %q", m.Format, Format)
	}
	if m.Generation < 0 || m.Docs < 0 || m.Tokens < 0 {
		return fmt.Errorf("negative generation or totals")
	}
	if int64(len(m.Batches)) != m.Generation {
		return fmt.Errorf("generation %d but %d batches", m.Generation, len(m.Batches))
	}
	if err := m.validateVolumes(); err != nil {
		return err
	}
	var chunks int64
	for i, b := range m.Batches {
		chunks += int64(b.Chunks)
		if i < len(known) && b == known[i] {
			continue
		}
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
		if m.Delta != "" || m.DeltaSum != "" {
			return fmt.Errorf("delta %q without a checkpoint", m.Delta)
		}
		return nil
	}
	if m.Delta != "" || m.DeltaSum != "" {
		d := m.DeltaGeneration()
		if d <= m.CheckpointGeneration() || d > m.Generation || !validSum(m.DeltaSum) {
			return fmt.Errorf("delta %q (checksum %q) is not of a generation after checkpoint %q, up to %d", m.Delta, m.DeltaSum, m.Checkpoint, m.Generation)
		}
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
	if !strings.Contains(b.File, ".p") { // most entries: spare them the scan
		return 0, false
	}
	var g, p int64
	if n, err := fmt.Sscanf(b.File, "%08d.p%08d.jsonl", &g, &p); err != nil || n != 2 || g != b.Generation || b.File != RedactedName(g, p) {
		return 0, false
	}
	return p, true
}

// plainName reports whether s names a file in its directory: not empty,
// no separator, no leading dot (a temp file, "." or ".."), and no NUL,
// which no file name can hold (a record naming one would fail its
// removal with an untyped error rather than be refused as corrupt).
func plainName(s string) bool {
	return s != "" && !strings.ContainsAny(s, "/\\\x00") && !strings.HasPrefix(s, ".")
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
