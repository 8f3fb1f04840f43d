//go:build !cgo

package bert

import "fmt"

const cgoBuild = false

// newSession without cgo: onnxruntime is a C library, so this build cannot
// run models. Everything else in evpack works without cgo.
func newSession(Options, []byte, string, string) (session, error) {
	return nil, fmt.Errorf("%w: this binary was built without cgo (CGO_ENABLED=0 or no C compiler); rebuild with cgo to run ONNX models", ErrLibrary)
}
