//go:build cgo

package bert

import (
	"fmt"
	"os"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// The onnxruntime environment is process-wide in the C library itself; evpack
// initializes it once, from the first library path it is given, and refuses a
// different path later rather than pretend to switch.
var runtime struct {
	sync.Mutex
	path string
	err  error
}

func initRuntime(lib string) error {
	if lib == "" {
		lib = os.Getenv(EnvLibrary)
	}
	if lib == "" {
		return fmt.Errorf("%w: no library path: set Options.Library or %s (libonnxruntime.so.1, e.g. from npm onnxruntime-node@1.30.0)", ErrLibrary, EnvLibrary)
	}
	runtime.Lock()
	defer runtime.Unlock()
	if runtime.path != "" {
		if runtime.path != lib {
			return fmt.Errorf("%w: already initialized from %s, cannot switch to %s", ErrLibrary, runtime.path, lib)
		}
		return runtime.err
	}
	if _, err := os.Stat(lib); err != nil {
		return fmt.Errorf("%w: %v", ErrLibrary, err)
	}
	ort.SetSharedLibraryPath(lib)
	runtime.path = lib
	if err := ort.InitializeEnvironment(); err != nil {
		runtime.err = fmt.Errorf("%w: %s: %v", ErrLibrary, lib, err)
	}
	return runtime.err
}

const cgoBuild = true

type ortSession struct {
	s      *ort.DynamicAdvancedSession
	output string
}

func newSession(opts Options, raw []byte, modelPath, output string) (session, error) {
	if err := initRuntime(opts.Library); err != nil {
		return nil, err
	}
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("%w: session options: %v", ErrLibrary, err)
	}
	defer so.Destroy()
	if opts.CUDA {
		cuda, err := ort.NewCUDAProviderOptions()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCUDA, err)
		}
		defer cuda.Destroy()
		if err := so.AppendExecutionProviderCUDA(cuda); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCUDA, err)
		}
	}
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(raw, []string{"input_ids", "attention_mask", "token_type_ids"}, []string{output}, so)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrModel, modelPath, err)
	}
	return &ortSession{s: s, output: output}, nil
}

func (o *ortSession) run(shape [2]int64, inputs [3][]int64) ([]float32, []int64, error) {
	var values []ort.Value
	defer func() {
		for _, v := range values {
			v.Destroy()
		}
	}()
	for _, data := range inputs {
		t, err := ort.NewTensor(ort.NewShape(shape[0], shape[1]), data)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: input tensor: %v", ErrModel, err)
		}
		values = append(values, t)
	}
	outputs := []ort.Value{nil}
	if err := o.s.Run(values, outputs); err != nil {
		return nil, nil, fmt.Errorf("%w: run: %v", ErrModel, err)
	}
	defer outputs[0].Destroy()
	t, ok := outputs[0].(*ort.Tensor[float32])
	if !ok {
		return nil, nil, fmt.Errorf("%w: output %s is not float32", ErrModel, o.output)
	}
	return append([]float32(nil), t.GetData()...), t.GetShape(), nil
}

func (o *ortSession) destroy() error { return o.s.Destroy() }
