// Package resident says how much of a memory mapping the process holds in
// its resident set, from /proc/self/smaps. It is for tests of code that
// hands mapped pages back to the kernel (a checkpoint's blocks once
// checked, a segment's pages once its columns are read): a page handed
// back no longer counts, though the file's bytes stay in the page cache.
package resident

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"
)

// KiB returns how many KiB of the mapping that starts at b's first byte
// are resident. ok is false where /proc/self/smaps cannot be read (not
// Linux) or lists no mapping starting there; err is set where a line of
// it cannot be read.
func KiB(b []byte) (kib int, ok bool, err error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, false, nil
	}
	defer f.Close()
	start := strconv.FormatUint(uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), 16)
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0:
		case strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"): // a mapping's first line
			lo, _, _ := strings.Cut(fields[0], "-")
			in = lo == start
		case in && fields[0] == "Rss:" && len(fields) > 1:
			n, err := strconv.Atoi(fields[1])
			if err != nil {
				return 0, false, fmt.Errorf("resident: smaps: %q: %w", sc.Text(), err)
			}
			return n, true, nil
		}
	}
	return 0, false, sc.Err()
}
