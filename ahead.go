package evpack

import (
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
)

// A checkpoint written ahead (state.Plan, state.Ahead): the commit past the
// checkpoint's lag starts writing its state's checkpoint on a goroutine,
// once it is committed, and a later commit names the file, waiting for it
// only if it is not done. Which commit starts one and which names it
// depends on the log alone; only who writes the bytes, and when, depends
// on the process.

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
	defer e.aheadMu.Unlock()
	e.mu.RLock()
	st := e.st
	e.mu.RUnlock()
	e.ahead = state.WriteAhead(e.store, e.lex, st)
}

// takeAhead hands over the checkpoint being written ahead, if any.
func (e *Engine) takeAhead() *state.Ahead {
	e.aheadMu.Lock()
	defer e.aheadMu.Unlock()
	a := e.ahead
	e.ahead = nil
	return a
}

// aheadOf returns the checkpoint of generation gen written ahead and its
// checksum, once written; nil when none was (then the caller writes it).
func (e *Engine) aheadOf(gen int64) (*storage.Ahead, string) {
	if a := e.takeAhead(); a != nil {
		return a.Take(gen)
	}
	return nil, ""
}

// dropAhead stops the checkpoint being written ahead, if one is, and
// removes what it wrote (state.Ahead.Drop).
func (e *Engine) dropAhead() error {
	if a := e.takeAhead(); a != nil {
		return a.Drop()
	}
	return nil
}

// waitAhead waits for the checkpoint being written ahead, if one is, and
// leaves it: before the rows it reads are closed.
func (e *Engine) waitAhead() {
	e.aheadMu.Lock()
	a := e.ahead
	e.aheadMu.Unlock()
	if a != nil {
		a.Wait()
	}
}
