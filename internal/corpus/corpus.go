package corpus

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Pair names two documents by their ids, the smaller first.
type Pair [2]string

// ReadPairs reads a pairs.tsv file into a map from each pair to its
// Jaccard resemblance. Lines that do not have three fields (and the
// header) are skipped; a malformed resemblance is an error naming the line.
func ReadPairs(path string) (map[Pair]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[Pair]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Split(sc.Text(), "\t")
		if len(fs) != 3 || fs[0] == "id1" {
			continue
		}
		j, err := strconv.ParseFloat(fs[2], 64)
		if err != nil {
			return nil, fmt.Errorf("corpus: %s: %q: %w", path, sc.Text(), err)
		}
		out[Pair{min(fs[0], fs[1]), max(fs[0], fs[1])}] = j
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("corpus: %s: %w", path, err)
	}
	return out, nil
}
