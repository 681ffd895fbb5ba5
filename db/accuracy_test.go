package db

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/corpus"
)

// corpusDir returns ../shared/corpus/debian beside the repository, or skips
// the test when it is absent (a user's own clone does not have it).
func corpusDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FPDB_CORPUS")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		root := wd
		for {
			if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(root)
			if parent == root {
				t.Fatal("go.mod not found above the test directory")
			}
			root = parent
		}
		dir = filepath.Join(root, "..", "shared", "corpus", "debian")
	}
	if _, err := os.Stat(filepath.Join(dir, "pairs.tsv")); err != nil {
		t.Skipf("real corpus not found at %s (CI has it as ../shared/corpus/debian; set FPDB_CORPUS to run this test): %v", dir, err)
	}
	return dir
}

// TestAccuracyDebianCorpus checks the answers against the exact Jaccard
// resemblance of 4 006 real documents: with default options, pairs with
// Jaccard ≥ r+0.1 are found (recall ≥ 0.95) and returned pairs have Jaccard
// ≥ r−0.1 (precision ≥ 0.95), for r = 0.7 and 0.8.
func TestAccuracyDebianCorpus(t *testing.T) {
	dir := corpusDir(t)
	if testing.Short() {
		t.Skip("accuracy test on the real corpus is not short")
	}
	d := openTest(t, "", &Options{NoSync: true})
	files, err := filepath.Glob(filepath.Join(dir, "docs", "*.txt"))
	if err != nil || len(files) < 4000 {
		t.Fatalf("corpus docs: %d files, %v", len(files), err)
	}
	stored := map[string][]uint64{}
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".txt")
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res, err := d.Add(ctx, Input{ID: id, Text: text}, nil)
		if err != nil {
			t.Logf("not stored: %v", err)
			continue
		}
		stored[id] = res.Doc.Fingerprint
	}
	if len(stored) < len(files)-10 {
		t.Fatalf("only %d of %d documents stored", len(stored), len(files))
	}

	truth, err := corpus.ReadPairs(filepath.Join(dir, "pairs.tsv"))
	if err != nil {
		t.Fatal(err)
	}

	for _, r := range []float64{0.7, 0.8} {
		found := map[corpus.Pair]bool{}
		for id, fp := range stored {
			res, err := d.QueryFingerprint(ctx, fp, QueryOptions{Threshold: r})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Matches {
				if m.ID == id {
					continue
				}
				p := corpus.Pair{min(id, m.ID), max(id, m.ID)}
				found[p] = true
			}
		}
		var relevant, recalled, good int
		for p, j := range truth {
			if j >= r+0.1 && stored[p[0]] != nil && stored[p[1]] != nil {
				relevant++
				if found[p] {
					recalled++
				} else if testing.Verbose() {
					a, _ := d.Get(ctx, p[0])
					b, _ := d.Get(ctx, p[1])
					t.Logf("r=%.1f: missed %s (%d words) ~ %s (%d words), Jaccard %.3f, estimate %.3f",
						r, p[0], a.Words, p[1], b.Words, j, 1-2*float64(bitvec.Hamming(a.Fingerprint, b.Fingerprint))/float64(len(a.Fingerprint)*64))
				}
			}
		}
		for p := range found {
			if truth[p] >= r-0.1 { // pairs not listed have Jaccard < 0.5
				good++
			}
		}
		recall := float64(recalled) / float64(relevant)
		precision := float64(good) / float64(len(found))
		t.Logf("r=%.1f: recall %.4f (%d of %d pairs with J ≥ %.1f), precision %.4f (%d of %d returned pairs with J ≥ %.1f)",
			r, recall, recalled, relevant, r+0.1, precision, good, len(found), r-0.1)
		if relevant == 0 || len(found) == 0 {
			t.Fatalf("r=%.1f: nothing to measure", r)
		}
		if recall < 0.95 {
			t.Errorf("r=%.1f: recall %.4f < 0.95", r, recall)
		}
		if precision < 0.95 {
			t.Errorf("r=%.1f: precision %.4f < 0.95", r, precision)
		}
	}
	tuneOnCorpus(t, truth, stored)
}

// tuneOnCorpus: on the corpus's exact-Jaccard pairs, the threshold that
// Recommend gives to catch J ≥ 0.8 with probability 0.99 catches at least
// 99 % of those pairs; and labelled with "J ≥ 0.8 is a duplicate", the
// threshold of best F1 lies near 0.8. (Its F1 is only about 0.7: the corpus
// has many pairs with J close to 0.8 on both sides, which no threshold can
// tell apart with the estimator's spread of about ±0.027 there.)
func tuneOnCorpus(t *testing.T, truth map[corpus.Pair]float64, stored map[string][]uint64) {
	t.Helper()
	rec, err := Recommend(DefaultK, 0.8, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	var labelled []LabelledPair
	caught, dups := 0, 0
	for p, j := range truth {
		a, b := stored[p[0]], stored[p[1]]
		if a == nil || b == nil {
			continue
		}
		h := bitvec.Hamming(a, b)
		labelled = append(labelled, LabelledPair{Hamming: h, Dup: j >= 0.8})
		if j >= 0.8 {
			dups++
			if h <= rec.Radius {
				caught++
			}
		}
	}
	share := float64(caught) / float64(dups)
	t.Logf("recommended threshold for J ≥ 0.8 with 99 %%: %v (radius %d); it catches %d of %d pairs with J ≥ 0.8 (%.4f)", rec.Threshold, rec.Radius, caught, dups, share)
	if dups < 1000 || share < 0.99 {
		t.Errorf("recommended threshold %v catches %.4f of %d pairs with J ≥ 0.8, want ≥ 0.99", rec.Threshold, share, dups)
	}
	scores, err := EvaluateThresholds(DefaultK, labelled)
	if err != nil {
		t.Fatal(err)
	}
	best, err := BestThreshold(scores, ThresholdGoal{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("labelled %d pairs (J ≥ 0.5; duplicate when J ≥ 0.8): best F1 %.4f at threshold %v (precision %.4f [%.4f, %.4f], recall %.4f [%.4f, %.4f])",
		len(labelled), best.F1, best.Threshold, best.Precision, best.PrecisionCI.Lo, best.PrecisionCI.Hi, best.Recall, best.RecallCI.Lo, best.RecallCI.Hi)
	if best.Threshold < 0.75 || best.Threshold > 0.85 {
		t.Errorf("best F1 %.4f at threshold %v: want a threshold within 0.05 of 0.8", best.F1, best.Threshold)
	}
}
