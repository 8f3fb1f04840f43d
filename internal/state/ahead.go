package state

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evpack/evpack/internal/checkpoint"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// A checkpoint written ahead (Plan): the commit past the checkpoint's lag
// starts writing its state's checkpoint on a goroutine, once it is
// committed, and a later commit names the file, waiting for it only if it
// is not done. Which commit starts one and which names it depends on the
// log alone; only who writes the bytes, and when, depends on the process.

// Ahead is a state's checkpoint being written ahead of the commit that
// names it (Plan.Start, Plan.Name), on a goroutine, into a temp file of
// its index (storage.Dir.WriteAhead).
type Ahead struct {
	gen  int64         // the generation whose state it holds
	own  bool          // it reads a state of its own (WriteAheadAt), not the caller's
	done chan struct{} // closed once file and sum, or err, are set
	// wrote is closed once the state it was handed is no longer read: the
	// file written, or the write given up (WaitRows).
	wrote chan struct{}
	stop  atomic.Bool // set: give up (no commit will name it)
	// taken is set once a commit takes the file (Take): the read-back
	// stops adding the batches after it (Read.catchUp).
	taken atomic.Bool
	// wanted is closed once someone waits for the writer (need): it no
	// longer gives way to the commits in flight (pause).
	wanted   chan struct{}
	wantOnce sync.Once
	file     *storage.Ahead
	sum      string
	err      error
	read     Read // the file read back, once written, when asked (readAhead)
	// sc holds the body's sections while the file is written, outside the
	// Go heap; freed before the writer goes on (checkpoint.Scratch).
	sc checkpoint.Scratch
}

// Read is a checkpoint written ahead and read back on its writer's
// goroutine: the state its file holds (the head decoded, the body mapped)
// and the file's sum. The commit that names the file makes its state from
// it (ReadBack) instead of reading the file again: at a million chunks that
// commit took 20 to 39 ms instead of 51 to 57, the decode off its path. The
// zero value holds none.
type Read struct {
	st  *State
	sum string
}

// Close lets go of the state r holds, if any.
func (r Read) Close() {
	if r.st != nil {
		r.st.Rows.Close()
	}
}

// Then is what a writer does once its file is written.
type Then struct {
	// ReadBack: read the file back (Read) and add the batches committed
	// since (Read.catchUp).
	ReadBack bool
	// Written, when set, runs first, on the writer's goroutine: tests hold
	// the writer there while commits go on.
	Written func()
	// turns, set by the AheadSlot that starts the writer, are the commits
	// it gives way to (pause).
	turns *turns
}

// WriteAhead starts writing the checkpoint of st, a committed state of the
// index in d, for lexical index lex, and then does what then says. It
// only reads st; whoever closes st's rows first waits for it (Wait, or
// Drop).
func WriteAhead(d *storage.Dir, lex *retrieve.Lexical, st *State, then Then) *Ahead {
	return writeAhead(d, lex, st.Gen, then, func(func() bool) (*State, func() error, error) { return st, func() error { return nil }, nil })
}

// WriteAheadAt starts writing the checkpoint of generation gen, committed
// before the state this process holds, of the index in d: the window a
// generation of the log started (Window) when this process opened the
// index after it, so that no one here wrote it ahead. It builds gen's
// state on its goroutine from the manifest's checkpoint and the batch
// files up to gen (OpenStateAt), then writes it as WriteAhead does: the
// same bytes, which the commit that names it would otherwise build and
// write itself (CheckpointAt). When that state cannot be read so, the
// write fails and the naming commit builds it the long way.
func WriteAheadAt(d *storage.Dir, lex *retrieve.Lexical, gen int64, then Then) *Ahead {
	a := writeAhead(d, lex, gen, then, func(stop func() bool) (*State, func() error, error) {
		st, err := openStateAt(d, lex, gen, stop)
		if err != nil {
			return nil, nil, err
		}
		return st, st.Rows.Close, nil
	})
	a.own = true // set before anyone but the goroutine, which never reads it, holds a
	return a
}

// writeAhead starts writing the checkpoint of generation gen, whose state
// build returns with what lets go of it once written, on a goroutine, and
// then does what then says; build is handed the writer's stop.
func writeAhead(d *storage.Dir, lex *retrieve.Lexical, gen int64, then Then, build func(stop func() bool) (*State, func() error, error)) *Ahead {
	a := &Ahead{gen: gen, done: make(chan struct{}), wrote: make(chan struct{}), wanted: make(chan struct{})}
	stop := a.pause(then.turns, giveWayFor)
	go func() {
		defer close(a.done)
		wrote := sync.OnceFunc(func() { close(a.wrote) })
		defer wrote()
		st, release, err := build(stop)
		if err != nil {
			a.err = err
			return
		}
		defer func() { a.err = errors.Join(a.err, release()) }()
		if a.stop.Load() {
			a.err = checkpoint.ErrStopped
			return
		}
		f, name, err := checkpointOf(d, lex, st, a.gen, stop, &a.sc)
		if err == nil {
			a.sum, err = checkpoint.Sum(f.Head())
		}
		if err == nil {
			a.file, err = d.WriteAhead(name, stop, f...)
		}
		err = errors.Join(err, a.sc.Free()) // f's body: nothing reads f after
		a.err = err
		wrote() // what follows reads the file, not st
		if err == nil && then.Written != nil {
			then.Written()
		}
		if err == nil && then.ReadBack && !a.stop.Load() {
			var bad error
			a.read, bad = readAhead(d, lex, a.file, a.sum, a.gen)
			if bad != nil {
				// The file on disk is not the one written (a damaged
				// sector, an edit): no commit may name it (Take discards
				// it, and the naming commit writes the checkpoint itself).
				a.err = fmt.Errorf("evpack: the checkpoint written ahead reads back damaged: %w", bad)
				return
			}
			a.read = a.read.catchUp(d, lex, func() bool { return a.stop.Load() || a.taken.Load() })
		}
	}()
	return a
}

// readAhead reads back file, the checkpoint of generation gen just written
// ahead with sum, as the commit that names it would read it (ReadBack).
// The zero Read when it cannot be: that commit then reads the file again.
// The error, when set, says the file itself does not read back as written
// (its head fails sum, or it is not of gen): no commit may name it.
func readAhead(d *storage.Dir, lex *retrieve.Lexical, file *storage.Ahead, sum string, gen int64) (Read, error) {
	m := d.Manifest()
	if int64(len(m.Batches)) < gen {
		return Read{}, nil
	}
	f, err := file.Open()
	if err != nil {
		return Read{}, nil
	}
	defer f.Close() // the body's mapping outlives it
	// A delta level is read over the manifest's checkpoint, as Open reads it.
	if file.Name() == storage.DeltaName(gen) {
		base, ok, err := openCheckpoint(d, lex, m, m.CheckpointGeneration(), nil)
		if err != nil || !ok {
			return Read{}, nil
		}
		base.Rows.files = batchFiles(m.Batches[:gen])
		st, err := decodeDelta(d, lex, f, file.Name(), sum, gen, base)
		if err != nil {
			base.Rows.Close()
			if errors.Is(err, storage.ErrCorrupt) {
				return Read{}, err
			}
			return Read{}, nil
		}
		return Read{st: st, sum: sum}, nil
	}
	st, ok, err := decodeCheckpoint(file.Name(), f, sum, AnalysisIdentity(lex), d, batchFiles(m.Batches[:gen]))
	switch {
	case errors.Is(err, storage.ErrCorrupt):
		return Read{}, err
	case err != nil:
		return Read{}, nil
	case !ok:
		return Read{}, fmt.Errorf("%w: %s is of another format or other analyzers than it was written in", storage.ErrCorrupt, file.Name())
	}
	if st.Gen != gen {
		st.Rows.Close()
		return Read{}, fmt.Errorf("%w: %s holds generation %d, written as %d", storage.ErrCorrupt, file.Name(), st.Gen, gen)
	}
	return Read{st: st, sum: sum}, nil
}

// catchUp adds to r's state the batches committed after its generation,
// as the commit that names the file would (readBackAhead), until it holds
// the manifest's generation or stop says true; that commit then adds only
// those committed since. Why: the window's commits come while the file is
// written, and at a million chunks, after 511 one-fact commits, adding
// their batch files was most of that commit's 20 to 39 ms. The state goes
// on only from a batch added whole: a batch it cannot add drops it (the
// zero Read), and the naming commit reads the file again and finds what is
// wrong.
func (r Read) catchUp(d *storage.Dir, lex *retrieve.Lexical, stop func() bool) Read {
	for r.st != nil && !stop() {
		m := d.Manifest()
		if m.Generation <= r.st.Gen || m.LevelGeneration() >= r.st.Base {
			return r // caught up; or named already, or passed over: Take decides
		}
		r.st.Rows.setFiles(m)
		err := r.st.addLater(d, m, m.Batches[r.st.Gen:m.Generation], lex, stop)
		if errors.Is(err, checkpoint.ErrStopped) {
			return r
		}
		if err != nil {
			r.Close()
			return Read{}
		}
	}
	return r
}

// giveWayFor is the longest the writer pauses for the commits in flight
// at one of its stops (pause): a commit of one fact takes a few
// milliseconds; one of thousands of chunks should not hold the writer for
// all of its length.
const giveWayFor = 20 * time.Millisecond

// pause returns the writer's stop: before it says whether to give up, it
// waits while a commit is in flight (t, nil: none), for max at most
// (giveWayFor), unless someone waits for the writer. The writer asks it
// often (checkpoint.Input.Stop; every stopEvery rows of its walk and of
// its catalog; every run it writes, fsutil.WriteTemp), about every
// millisecond at a million chunks.
//
// Invariant: the writer gives way for three quarters of its time at most
// (pauseShare; the time some goroutine of it paused: pauseClock), so
// commits back to back, such as a replica's catching up, slow it at most
// four times and never starve it: the commit that names its file would
// wait for all of it.
func (a *Ahead) pause(t *turns, max time.Duration) func() bool {
	if t == nil {
		return a.stop.Load
	}
	c := pauseClock{start: time.Now()}
	return func() bool {
		if owed := c.owed(); owed > 0 {
			c.enter()
			t.wait(min(max, owed), a.wanted)
			c.leave()
		}
		return a.stop.Load()
	}
}

// need says that someone waits for the writer, which then no longer gives
// way to the commits in flight: the one waiting may be one of them (the
// commit that names the file).
func (a *Ahead) need() { a.wantOnce.Do(func() { close(a.wanted) }) }

// Wait waits for the writer to return.
func (a *Ahead) Wait() {
	a.need()
	<-a.done
}

// Take returns the checkpoint of generation gen, once written, its
// checksum and what read it back (Read); nil when a is of another
// generation or its write failed (then the caller writes it, and what a
// wrote is removed).
func (a *Ahead) Take(gen int64) (*storage.Ahead, string, Read) {
	a.taken.Store(true)
	a.need()
	<-a.done
	if a.gen != gen || a.err != nil {
		a.file.Discard()
		a.read.Close()
		return nil, "", Read{}
	}
	return a.file, a.sum, a.read
}

// Drop stops the writer, waits for it to return and removes what it wrote:
// no commit will name it. The writer asks to stop about every millisecond
// (pause says where). Before it could stop, Close
// waited for the whole write, and a process that opened, committed once
// and closed paid the checkpoint twice: at Close, and in the commit that
// names it.
func (a *Ahead) Drop() error {
	a.stop.Store(true)
	a.need()
	<-a.done
	a.read.Close()
	return a.file.Discard()
}

// CheckpointAt returns the checkpoint of generation gen of the index in d,
// earlier than the committed one, for lexical index lex: built from the
// manifest's checkpoint and the batch files after it up to gen, or, when
// that checkpoint cannot be read (an engine with a dense leg never reads it
// at Open, so a damaged one is found here), from the batch files alone.
// The same bytes either way: the plan names this file whatever a process
// can read.
func CheckpointAt(d *storage.Dir, lex *retrieve.Lexical, gen int64) (checkpoint.File, error) {
	st, err := OpenStateAt(d, lex, gen)
	if err != nil {
		if st, err = LoadStateAt(d, lex, gen); err != nil {
			return nil, err
		}
	}
	f, _, err := checkpointOf(d, lex, st, gen, nil, nil)
	return f, errors.Join(err, st.Rows.Close())
}

// checkpointOf returns the checkpoint of st, the state of generation gen
// of the index in d, started past the lag, and its file's name: a delta
// level over the manifest's checkpoint when DeltaAt says so, else whole
// (CheckpointAhead). stop and sc are CheckpointAhead's.
func checkpointOf(d *storage.Dir, lex *retrieve.Lexical, st *State, gen int64, stop func() bool, sc *checkpoint.Scratch) (checkpoint.File, string, error) {
	m := d.Manifest()
	if !DeltaAt(m, gen) {
		f, err := CheckpointAhead(st, lex, stop, sc)
		return f, storage.CheckpointName(gen), err
	}
	base, ok := st.Level()
	if !ok || base.Gen != m.CheckpointGeneration() {
		var err error
		if base, err = LevelOf(d, lex); err != nil {
			return nil, "", err
		}
	}
	f, err := DeltaCheckpoint(st, lex, base, stop, sc)
	return f, storage.DeltaName(gen), err
}

// LevelOf returns the checkpoint the manifest of d names as a delta level
// over it needs it (Level), read from its head; for lexical index lex.
func LevelOf(d *storage.Dir, lex *retrieve.Lexical) (Level, error) {
	m := d.Manifest()
	f, err := d.OpenData(m.Checkpoint)
	if err != nil {
		return Level{}, err
	}
	defer f.Close()
	h, t, ok, err := checkpoint.Decode(m.Checkpoint, f, m.CheckpointSum, AnalysisIdentity(lex), len(m.Batches))
	if err != nil {
		return Level{}, err
	}
	if !ok {
		return Level{}, fmt.Errorf("%w: %s is of another format or other analyzers", storage.ErrCorrupt, m.Checkpoint)
	}
	return Level{Gen: h.Gen, Terms: h.Terms}, t.Close()
}

// AheadSlot holds the checkpoint an engine is writing ahead, one at most
// (the zero value holds none). It is safe for concurrent use.
type AheadSlot struct {
	// Then is what a writer does once its file is written: Then.ReadBack
	// for a commit that reads its state back from the checkpoint it names
	// (ReadBack: an engine without a dense leg). Set before the first
	// Start.
	Then Then

	turns turns // the engine's commits in flight (Committing)
	mu    sync.Mutex
	a     *Ahead
	read  Read // what the last Take's writer read back, for the commit that took it
}

// StartAt starts writing the checkpoint of generation gen (WriteAheadAt)
// unless the slot holds one already (being written, written, or failed:
// the commit that names it takes what it holds).
func (s *AheadSlot) StartAt(d *storage.Dir, lex *retrieve.Lexical, gen int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.a == nil {
		s.a = WriteAheadAt(d, lex, gen, s.then())
	}
}

// Start drops the checkpoint the slot holds, if any, and starts writing
// that of the state current returns, into the index in d for lexical index
// lex. current is called with the slot locked, so that whoever replaces
// that state and then waits (Wait) either replaced it first or finds this
// writer to wait for.
func (s *AheadSlot) Start(d *storage.Dir, lex *retrieve.Lexical, current func() *State) {
	s.Drop()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.a = WriteAhead(d, lex, current(), s.then())
}

// then is Then for a writer the slot starts: giving way to its commits.
func (s *AheadSlot) then() Then {
	then := s.Then
	then.turns = &s.turns
	return then
}

// Committing counts a commit of the engine in flight, which the slot's
// writer gives way to, until the func it returns is called.
func (s *AheadSlot) Committing() (end func()) { return s.turns.begin() }

// take empties the slot and returns what it held.
func (s *AheadSlot) take() *Ahead {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.a
	s.a = nil
	return a
}

// Take empties the slot and returns the checkpoint plan p names that it
// held, once written, and its checksum (Ahead.Take); nil when it held none,
// or one written as the other kind (a delta level or whole: its writer read
// a manifest that another checkpoint replaced), which is removed. It keeps
// what read the file back for TakeRead, in place of any Read an earlier
// Take kept.
func (s *AheadSlot) Take(p Plan) (*storage.Ahead, string) {
	var file *storage.Ahead
	var sum string
	var read Read
	if a := s.take(); a != nil {
		file, sum, read = a.Take(p.Name)
	}
	if file != nil && file.Name() != CheckpointFile(p) {
		file.Discard()
		read.Close()
		file, sum, read = nil, "", Read{}
	}
	s.mu.Lock()
	old := s.read
	s.read = read
	s.mu.Unlock()
	old.Close()
	return file, sum
}

// TakeRead returns what read back the file the last Take returned, and
// forgets it: the caller closes it, or hands it to ReadBack.
func (s *AheadSlot) TakeRead() Read {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.read
	s.read = Read{}
	return r
}

// Drop empties the slot, stopping and removing what it held (Ahead.Drop),
// and lets go of what TakeRead would return.
func (s *AheadSlot) Drop() error {
	s.TakeRead().Close()
	if a := s.take(); a != nil {
		return a.Drop()
	}
	return nil
}

// CatchUp adds to the state the slot's writer read back the batches
// committed since it caught up (Read.catchUp), once the writer is done; a
// writer still at work catches up itself when it is. Each commit of the
// window calls it once published, so that the one that names the file
// adds only its own batch: at a million chunks, after 511 one-fact
// commits, the writer caught up with the 170 committed while it wrote and
// the naming commit still added the other 343, 8.5 ms of its 18 ms. What
// it costs each commit: reading its own batch file again.
//
// Invariant: the caller holds what serializes the engine's commits (its
// ingest lock), as the callers of Take and Drop do, so nothing takes or
// drops the state while it grows.
func (s *AheadSlot) CatchUp(d *storage.Dir, lex *retrieve.Lexical) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.a
	if a == nil {
		return
	}
	select {
	case <-a.done:
	default:
		return
	}
	if a.err == nil {
		a.read = a.read.catchUp(d, lex, func() bool { return false })
	}
}

// WaitRows waits, before the rows of a state its caller handed the
// slot's writer (WriteAhead) are closed, until the writer no longer reads
// them: once its file is written, not read back and caught up. It leaves
// the writer there. A writer that reads a state of its own (WriteAheadAt)
// is not waited for: it may take seconds.
func (s *AheadSlot) WaitRows() {
	s.mu.Lock()
	a := s.a
	s.mu.Unlock()
	if a != nil && !a.own {
		a.need()
		<-a.wrote
	}
}

// Wait waits for the writer the slot holds, if any, and leaves it there.
func (s *AheadSlot) Wait() {
	s.mu.Lock()
	a := s.a
	s.mu.Unlock()
	if a != nil {
		a.Wait()
	}
}
