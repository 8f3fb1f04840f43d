package evpack

import (
	"errors"
	"sync/atomic"

	"github.com/evpack/evpack/internal/checkpoint"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
)

// A checkpoint written ahead (state.Plan): the commit past the checkpoint's
// lag starts writing its state's checkpoint on a goroutine, once it is
// committed, and a later commit names the file, waiting for it only if it
// is not done. Which commit starts one and which names it depends on the
// log alone; only who writes the bytes, and when, depends on the process.

// checkpointAhead is one checkpoint being written ahead.
type checkpointAhead struct {
	gen  int64         // the generation whose state it holds
	done chan struct{} // closed once file and sum, or err, are set
	stop atomic.Bool   // set: give up (no commit will name it)
	file *storage.Ahead
	sum  string
	err  error
}

// startAhead starts writing the checkpoint of the committed state ahead.
// The caller holds ingestMu, which every commit and Close take: no commit
// closes the rows it reads before it ends (rebase and Close drop it
// first).
func (e *Engine) startAhead() {
	e.dropAhead()
	// Registered before aheadMu is let go, st read under it: whoever
	// replaces st and then waits for the writer (Engine.writable) either
	// replaced it first or finds this one to wait for.
	e.aheadMu.Lock()
	e.mu.RLock()
	st := e.st
	e.mu.RUnlock()
	a := &checkpointAhead{gen: st.Gen, done: make(chan struct{})}
	e.ahead = a
	e.aheadMu.Unlock()
	go func() {
		defer close(a.done)
		f, err := state.CheckpointAhead(st, e.lex, a.stop.Load)
		if err == nil {
			a.sum, err = checkpoint.Sum(f.Head())
		}
		if err == nil {
			a.file, err = e.store.WriteAhead(storage.CheckpointName(a.gen), a.stop.Load, f...)
		}
		a.err = err
	}()
}

// takeAhead returns the checkpoint of generation gen written ahead and its
// checksum, once written; nil when none was started for gen or its write
// failed (then the caller writes it).
func (e *Engine) takeAhead(gen int64) (*storage.Ahead, string) {
	e.aheadMu.Lock()
	a := e.ahead
	e.ahead = nil
	e.aheadMu.Unlock()
	if a == nil {
		return nil, ""
	}
	<-a.done
	if a.gen != gen || a.err != nil {
		a.file.Discard()
		return nil, ""
	}
	return a.file, a.sum
}

// dropAhead stops the checkpoint being written ahead, if one is, waits
// for its writer to return (it asks every state.stopEvery rows or chunks,
// every run of the encoder and every 32 MB written; the ID sort, 0.2 s at
// a million chunks, does not ask) and removes what it wrote: no commit will name it. Before stop,
// Close waited for the whole write (seconds at a million chunks), and a
// process that opened, committed once and closed paid the checkpoint
// twice: at Close, and in the commit that names it.
func (e *Engine) dropAhead() error {
	e.aheadMu.Lock()
	a := e.ahead
	e.ahead = nil
	e.aheadMu.Unlock()
	if a == nil {
		return nil
	}
	a.stop.Store(true)
	<-a.done
	return a.file.Discard()
}

// waitAhead waits for the checkpoint being written ahead, if one is, and
// leaves it: before the rows it reads are closed.
func (e *Engine) waitAhead() {
	e.aheadMu.Lock()
	a := e.ahead
	e.aheadMu.Unlock()
	if a != nil {
		<-a.done
	}
}

// checkpointAt returns the checkpoint of generation gen, earlier than the
// committed one, built from the manifest's checkpoint and the batch files
// after it up to gen, or, when that checkpoint cannot be read (an engine
// with a dense leg never reads it at Open, so a damaged one is found
// here), from the batch files alone: the same bytes, for the plan names
// this file whatever this process can read.
func (e *Engine) checkpointAt(gen int64) (checkpoint.File, error) {
	st, err := state.OpenStateAt(e.store, e.lex, gen)
	if err != nil {
		if st, err = state.LoadStateAt(e.store, e.lex, gen); err != nil {
			return nil, err
		}
	}
	f, err := state.CheckpointAhead(st, e.lex, nil)
	return f, errors.Join(err, st.Rows.Close())
}
