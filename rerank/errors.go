package rerank

import (
	"errors"
	"fmt"
)

// Sentinel errors of the learned reranker, its model files and its trainer.
// Each is returned wrapped with the place it concerns (a file and byte offset,
// a tree and node, a question ID), so errors.Is matches it. (ErrBadWeights,
// ErrScorer and ErrLedger belong to the rerankers they are declared beside.)
var (
	// ErrModel: a model file is not a model, is truncated or corrupted, or
	// holds an impossible tree (a child before its parent, a feature out of
	// range). Nothing of it is used.
	ErrModel = errors.New("rerank: bad model")
	// ErrModelVersion: a sealed model of another format version, or one
	// trained on another feature set than this build computes.
	ErrModelVersion = errors.New("rerank: model of another version or feature set")
	// ErrModelTooLarge: a model file is larger than MaxModelBytes, or
	// declares more trees or nodes than the format's limits (MaxModelTrees,
	// MaxTreeNodes, MaxModelNodes) or than its bytes can hold; refused
	// before anything is allocated for them. It also matches ErrModel.
	ErrModelTooLarge = fmt.Errorf("%w: too large", ErrModel)
	// ErrTrain: training input or settings the trainer cannot use (no
	// question with a gold chunk in its pool, a feature row of the wrong
	// width, settings out of range).
	ErrTrain = errors.New("rerank: cannot train")
	// ErrGoldNotIndexed: a labelled question names a gold chunk ID that the
	// index does not hold.
	ErrGoldNotIndexed = errors.New("rerank: gold chunk not in the index")
)
