package hugepage

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Mapping is what Linux reports of the memory mapping holding an address
// (/proc/self/smaps): for tests and diagnostics.
type Mapping struct {
	// AnonHugeKB is the memory of the mapping backed by huge pages, in KiB.
	AnonHugeKB int
	// Advised reports the huge-page advice on the mapping (VmFlags "hg").
	Advised bool
}

// MappingOf returns the mapping of this process that holds address p; an
// error where /proc/self/smaps cannot be read (other systems) or no
// mapping holds p.
func MappingOf(p uintptr) (Mapping, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return Mapping{}, err
	}
	defer f.Close()
	var m Mapping
	sc := bufio.NewScanner(f)
	found := false // in the mapping's lines
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if sp := strings.IndexByte(line, ' '); sp > 0 && !strings.Contains(line[:sp], ":") {
			if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 {
				if found {
					break // the next mapping
				}
				found = lo <= p && p < hi
				continue
			}
		}
		if !found {
			continue
		}
		switch {
		case strings.HasPrefix(line, "AnonHugePages:"):
			if _, err := fmt.Sscanf(strings.TrimPrefix(line, "AnonHugePages:"), "%d", &m.AnonHugeKB); err != nil {
				return Mapping{}, fmt.Errorf("hugepage: smaps: %q: %w", line, err)
			}
		case strings.HasPrefix(line, "VmFlags:"):
			m.Advised = strings.Contains(" "+strings.TrimPrefix(line, "VmFlags:")+" ", " hg ")
		}
	}
	if err := sc.Err(); err != nil {
		return Mapping{}, err
	}
	if !found {
		return Mapping{}, fmt.Errorf("hugepage: no mapping holds %#x", p)
	}
	return m, nil
}
