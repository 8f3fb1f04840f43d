package checkpoint

// Scratch is where Encode makes a body's sections when they are not to
// be made on the Go heap: a checkpoint written ahead holds 319 MB of them
// at a million chunks, made and dropped once a window, and on the heap
// they stayed until a collection freed them and grew the heap's goal with
// them: the process's peak RSS was 300 MiB higher (docs/benchmarks.md,
// "Sections outside the heap").
// On unix each section is an anonymous mapping, zeroed by the kernel a
// page at a time as it is first written; elsewhere it is a slice of the
// heap.
//
// Free releases every section made; nothing may read a File encoded into
// s after it (its body's parts are the sections). The zero Scratch is
// ready to use. A Scratch is not safe for concurrent use: Encode makes its
// sections on one goroutine.
type Scratch struct {
	made  [][]byte // mapped and not yet freed
	count int      // sections mapped, freed or not
}

// make returns n zero bytes, made outside the heap when it can be.
func (s *Scratch) make(n int) []byte {
	if s == nil || n == 0 {
		return make([]byte, n)
	}
	b, err := mapScratch(n)
	if err != nil { // no mapping to be had: the heap still serves
		return make([]byte, n)
	}
	s.made = append(s.made, b)
	s.count++
	return b
}

// Made returns how many sections s has made outside the heap, freed or
// not, and how many bytes of them it still holds.
func (s *Scratch) Made() (sections, held int) {
	for _, b := range s.made {
		held += len(b)
	}
	return s.count, held
}

// Free releases the sections s made, and returns the first error of a
// mapping's release. Calling it again does nothing.
func (s *Scratch) Free() error {
	var first error
	for _, b := range s.made {
		if err := unmapScratch(b); err != nil && first == nil {
			first = err
		}
	}
	s.made = nil
	return first
}
