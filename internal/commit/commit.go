// Package commit is the one way a generation reaches an index directory:
// ingest, a commit of facts alone and a purge all describe what they write
// as Files and go through Write and Publish.
//
// Why a package of its own: the order of the steps is what makes a crash at
// any point recoverable (files first, announced in storage's PENDING record;
// then the lexical index; then the manifest, the commit point; then the
// swap of the in-memory state), so it is written once, here, and every
// caller gets the same rollback.
//
// Entry points: [Write] (announce and write a generation's files) and
// [Publish] (change the lexical index and publish the manifest, undoing the
// lexical change when either fails).
//
// Invariant: storage.Dir.Begin is called from this package only.
package commit

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/checkpoint"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// DenseMode says what a generation does with the stored vectors of a
// corpus-free embedder.
type DenseMode int

const (
	// DenseKeep leaves the stored vectors and graph as they are (a commit
	// of facts alone changes no vector).
	DenseKeep DenseMode = iota
	// DenseReplace stores Dense (and Graph, when set) under the
	// generation's names and makes the previous files obsolete.
	DenseReplace
	// DenseDrop removes the stored vectors from the manifest (an index
	// written without a corpus-free embedder keeps none).
	DenseDrop
)

// Rewrite is an earlier batch file written again (a purge redacts the text
// of its chunks): Batch is its new manifest record, File named by
// storage.RedactedName; Body its bytes.
type Rewrite struct {
	Batch storage.Batch
	Body  []byte
}

// Files is everything one generation writes, as plain data.
type Files struct {
	// Batch is the generation's manifest record; Write fills in Sum (and
	// AnalysisSum).
	Batch storage.Batch
	// Body is the sealed batch file (storage.EncodeBatch).
	Body []byte
	// Analysis, when set, returns the batch's analysis file, which names
	// the batch's checksum; Batch.Analysis names the file.
	Analysis func(batchSum string) []byte
	// Rewrites are earlier batch files written again without purged text.
	Rewrites []Rewrite
	// Redacts are the earlier generations whose batches the generation's
	// purge redacts, Rewrites' and those an index applying the log holds
	// already as the purge left them: the volumes that list them are
	// written again on every index alike (storage.Manifest.PlanVolumes).
	Redacts []int64
	// Checkpoint is the state as of the generation (storage.CheckpointName).
	// Nil keeps the previous generation's: only for a generation of facts
	// alone, which Open adds to it (storage.Manifest.Checkpoint).
	Checkpoint checkpoint.File
	// Ahead, instead of Checkpoint, is a checkpoint written ahead of this
	// commit (storage.Dir.WriteAhead), AheadSum its checksum
	// (checkpoint.Sum).
	Ahead    *storage.Ahead
	AheadSum string
	// CheckpointGen is the generation whose state Checkpoint or Ahead
	// holds, when it is an earlier one than the commit's: a checkpoint
	// deferred past the generation it is of, which the generations after
	// it follow (storage.Manifest.Checkpoint). Zero: the commit's own.
	CheckpointGen int64
	// Delta: Checkpoint or Ahead is a delta level over the manifest's
	// checkpoint (storage.Manifest.Delta), which stays; else it replaces
	// both.
	Delta bool
	// Dense says what becomes of the stored vectors; Dense, Graph, Embedder
	// and GraphBuild describe them for DenseReplace.
	DenseMode  DenseMode
	Dense      *retrieve.Dense
	Graph      *retrieve.Graph
	Embedder   string
	GraphBuild string
	// AddDocs, AddTokens and AddPurged are what the generation adds to the
	// manifest's totals.
	AddDocs, AddTokens, AddPurged int64
}

// Commit is a generation whose files are written and whose manifest waits
// for Publish.
type Commit struct {
	c *storage.Commit
	m *storage.Manifest
}

// Write announces and writes generation f.Batch.Generation's files in d:
// the batch, its analysis, the rewritten batches, the checkpoint, then the
// vectors and graph. On error nothing of it stays.
func Write(d *storage.Dir, f Files) (*Commit, error) {
	prev := d.Manifest()
	gen := f.Batch.Generation
	m := prev.Clone()
	m.Generation = gen
	m.Docs, m.Tokens, m.Purged = prev.Docs+f.AddDocs, prev.Tokens+f.AddTokens, prev.Purged+f.AddPurged
	b := f.Batch
	batchPath := storage.ChunksDir + "/" + b.File
	writes := []string{batchPath}
	var obsolete []string
	if f.Analysis != nil {
		writes = append(writes, storage.ChunksDir+"/"+b.Analysis)
	}
	for _, r := range f.Rewrites {
		old := prev.Batches[r.Batch.Generation-1]
		writes = append(writes, storage.ChunksDir+"/"+r.Batch.File)
		obsolete = append(obsolete, storage.ChunksDir+"/"+old.File)
		if old.Analysis != "" {
			obsolete = append(obsolete, storage.ChunksDir+"/"+old.Analysis)
		}
	}
	redacted := slices.Clone(f.Redacts)
	for _, r := range f.Rewrites {
		redacted = append(redacted, r.Batch.Generation)
	}
	volumes, oldVolumes := m.PlanVolumes(redacted)
	for _, i := range volumes {
		writes = append(writes, m.Volumes[i].File)
	}
	obsolete = append(obsolete, oldVolumes...)
	if f.Checkpoint != nil && f.Ahead != nil {
		return nil, fmt.Errorf("evpack: commit of generation %d: a checkpoint both written and written ahead", gen)
	}
	if f.Checkpoint != nil || f.Ahead != nil {
		of := cmp.Or(f.CheckpointGen, gen)
		if of < 1 || of > gen || of <= prev.LevelGeneration() || (f.Delta && prev.Checkpoint == "") {
			return nil, fmt.Errorf("evpack: commit of generation %d: a checkpoint of generation %d after %s", gen, of, cmp.Or(prev.Delta, prev.Checkpoint, "none"))
		}
		name := storage.CheckpointName(of)
		if f.Delta {
			name = storage.DeltaName(of)
		}
		if f.Ahead != nil && f.Ahead.Name() != name {
			return nil, fmt.Errorf("evpack: commit of generation %d: checkpoint %s written ahead as %s", gen, name, f.Ahead.Name())
		}
		writes = append(writes, name)
		if prev.Delta != "" {
			obsolete = append(obsolete, prev.Delta)
		}
		m.Delta, m.DeltaSum = "", ""
		if f.Delta {
			m.Delta = name
		} else {
			if prev.Checkpoint != "" {
				obsolete = append(obsolete, prev.Checkpoint)
			}
			m.Checkpoint, m.CheckpointSum = name, ""
		}
	}
	switch f.DenseMode {
	case DenseReplace, DenseDrop:
		m.Dense = nil
		if f.DenseMode == DenseReplace && f.Dense != nil {
			m.Dense = &storage.Dense{File: storage.DenseName(gen), Embedder: f.Embedder}
			writes = append(writes, m.Dense.File)
			if f.Graph != nil {
				m.Dense.Graph, m.Dense.GraphBuild = storage.GraphName(gen), f.GraphBuild
				writes = append(writes, m.Dense.Graph)
			}
		}
		if prev.Dense != nil {
			obsolete = append(obsolete, prev.Dense.File)
			if prev.Dense.Graph != "" {
				obsolete = append(obsolete, prev.Dense.Graph)
			}
		}
	}
	// The batch file is written beside the record, not after it: its temp
	// file needs no record (Open removes any), only its rename does. Why:
	// a commit waits for its syncs one after the other (Prepare).
	type written struct {
		a   *storage.Ahead
		sum string
		err error
	}
	body := make(chan written, 1)
	go func() {
		a, err := d.WriteAhead(batchPath, nil, f.Body)
		body <- written{a, evidence.Sum(f.Body), err}
	}()
	c, err := d.Begin(gen, writes, obsolete)
	w := <-body
	if err != nil {
		return nil, errors.Join(err, w.a.Discard())
	}
	fail := func(err error) (*Commit, error) {
		return nil, errors.Join(fmt.Errorf("generation %d: %w", gen, err), c.Abort()) // storage's errors say "evpack: commit" already
	}
	if w.err != nil {
		return fail(w.err)
	}
	if err := c.Adopt(w.a); err != nil {
		return fail(err)
	}
	b.Sum = w.sum
	if f.Analysis != nil {
		if b.AnalysisSum, err = c.Write(storage.ChunksDir+"/"+b.Analysis, f.Analysis(b.Sum)); err != nil {
			return fail(err)
		}
	}
	for _, r := range f.Rewrites {
		nb := r.Batch
		if nb.Sum, err = c.Write(storage.ChunksDir+"/"+nb.File, r.Body); err != nil {
			return fail(err)
		}
		m.Batches[nb.Generation-1] = nb
	}
	name, sum := &m.Checkpoint, &m.CheckpointSum
	if f.Delta {
		name, sum = &m.Delta, &m.DeltaSum
	}
	if f.Checkpoint != nil {
		if err := c.WriteSealed(*name, f.Checkpoint...); err != nil {
			return fail(err)
		}
		if *sum, err = checkpoint.Sum(f.Checkpoint.Head()); err != nil { // its head's: Open reads no more
			return fail(err)
		}
	}
	if f.Ahead != nil {
		if err := c.Adopt(f.Ahead); err != nil {
			return fail(err)
		}
		*sum = f.AheadSum
	}
	if m.Dense != nil {
		if m.Dense.Sum, err = c.Write(m.Dense.File, f.Dense.Encode()); err != nil {
			return fail(err)
		}
		if m.Dense.Graph != "" {
			if m.Dense.GraphSum, err = c.Write(m.Dense.Graph, f.Graph.Encode()); err != nil {
				return fail(err)
			}
		}
	}
	m.Batches = append(m.Batches, b)
	for _, i := range volumes { // last: a volume may list this commit's entries
		raw, err := storage.EncodeVolume(m.VolumeEntries(i))
		if err != nil {
			return fail(err)
		}
		if m.Volumes[i].Sum, err = c.Write(m.Volumes[i].File, raw); err != nil {
			return fail(err)
		}
	}
	return &Commit{c: c, m: m}, nil
}

// UndoError is Publish's error when the commit can be neither finished nor
// rolled back in this process: undoing the lexical change failed, or the
// manifest is renamed into place and its rename is not durable
// (storage.ErrNotDurable), so that undoing it would remove files the
// manifest on disk names. The files stay, with their PENDING record, for
// the next Open to settle the commit, and the caller must stop serving (its
// lexical index holds a generation that may never have committed).
type UndoError struct {
	Cause error // why the commit failed
	Err   error // why it was not rolled back
}

// errNamed is UndoError.Err for a manifest renamed into place whose rename
// is not durable.
var errNamed = errors.New("the manifest on disk names it already; the next Open keeps it or rolls it back, whichever the disk holds")

// Error says what failed.
func (e *UndoError) Error() string {
	return fmt.Sprintf("commit failed (%v) and could not be rolled back: %v", e.Cause, e.Err)
}

// Unwrap returns both errors.
func (e *UndoError) Unwrap() []error { return []error{e.Cause, e.Err} }

// Publish finishes c (nil for an index in memory): apply changes the
// lexical index while c's files' names are made durable and its manifest
// is written to a temp file beside it (storage.Commit.Prepare: the two
// wait for the disk independently, and neither needs the other), then the
// manifest is renamed into place, the commit point. When any fails, undo
// puts the lexical index back and c's files are removed; when undo fails
// too, or the fsync after the manifest's rename does, the error is an
// *UndoError and the files stay. The caller holds its
// write lock and swaps its state after a nil return.
func Publish(c *Commit, apply, undo func() error) error {
	fail := func(cause error) error {
		if err := undo(); err != nil {
			return &UndoError{Cause: cause, Err: err}
		}
		return errors.Join(cause, Abort(c))
	}
	var synced chan error
	if c != nil {
		synced = make(chan error, 1)
		go func() { synced <- c.c.Prepare(c.m) }()
	}
	err := apply()
	if synced != nil {
		// Joined before anything else touches c, failed or not.
		err = errors.Join(err, <-synced)
	}
	if err != nil {
		return fail(err)
	}
	if c != nil {
		if err := c.c.Publish(c.m); errors.Is(err, storage.ErrNotDurable) {
			return &UndoError{Cause: err, Err: errNamed}
		} else if err != nil {
			return fail(err) // it names the commit already
		}
	}
	return nil
}

// Abort removes the files of c (nil: nothing) when its lexical change never
// happened.
func Abort(c *Commit) error {
	if c == nil {
		return nil
	}
	return c.c.Abort()
}
