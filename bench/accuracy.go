package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/corpus"
	"github.com/fpdb/fpdb/internal/fingerprint"
)

// AccuracyRow is the precision and recall of fpdb's answers at one (k, r)
// against the exact Jaccard resemblance of the documents' shingle sets.
type AccuracyRow struct {
	Workload  string  `json:"workload"`
	Docs      int     `json:"docs"`
	K         int     `json:"k"`
	R         float64 `json:"r"`
	Returned  int     `json:"returned_pairs"`
	Relevant  int     `json:"relevant_pairs"` // pairs with Jaccard ≥ r
	Correct   int     `json:"correct_pairs"`  // returned pairs with Jaccard ≥ r
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	// With a margin of 0.1 (as db's accuracy test): the share of returned
	// pairs with Jaccard ≥ r − 0.1 (−1 when the ground truth does not go
	// that low), and of the pairs with Jaccard ≥ r + 0.1 that were returned.
	PrecisionMargin float64 `json:"precision_margin"`
	RecallMargin    float64 `json:"recall_margin"`
}

// TextCorpus is a set of documents with the exact resemblance of every
// pair with Jaccard ≥ 0.5 (pairs not listed are below 0.5).
type TextCorpus struct {
	Name  string
	IDs   []string
	Docs  [][]byte
	Truth map[[2]int]float64 // (i, j), i < j
	// TruthMin is the least resemblance Truth lists: pairs not in Truth are
	// below it.
	TruthMin float64
}

// SyntheticCorpus is workload (b): bases documents of about size bytes
// drawn from a Zipf vocabulary (50 000 words, exponent 1.0), each followed
// by variants near duplicates made by one kind of edit (substitute, insert,
// delete, move; cycling) applied to a fraction of its words (0.25 % to
// 15 %, cycling). Every pair's Jaccard resemblance over 4-word shingles is
// computed exactly (ShingleSet, SimilarPairs); pairs ≥ 0.4 are kept.
func SyntheticCorpus(bases, variants, size int, seed uint64) (*TextCorpus, error) {
	z := NewZipf(50_000, 1.0, seed)
	fractions := []float64{0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15}
	c := &TextCorpus{Name: "zipf-text", TruthMin: 0.4}
	for b := range bases {
		base := z.Doc(size)
		c.IDs = append(c.IDs, fmt.Sprintf("b%05d", b))
		c.Docs = append(c.Docs, Render(base))
		for v := range variants {
			kind := EditKind((b + v) % 4)
			f := fractions[(b*7+v)%len(fractions)]
			edits := max(1, int(math.Round(f*float64(len(base)))))
			c.IDs = append(c.IDs, fmt.Sprintf("b%05d-%s-%d", b, kind, edits))
			c.Docs = append(c.Docs, Render(z.Edit(base, kind, edits)))
		}
	}
	sets := make([][]uint64, len(c.Docs))
	for i, d := range c.Docs {
		s, err := ShingleSet(d, 4)
		if err != nil {
			return nil, err
		}
		sets[i] = s
	}
	c.Truth = SimilarPairs(sets, c.TruthMin)
	return c, nil
}

// DebianCorpus loads workload (c) from dir (../shared/corpus/debian): the
// documents and the ground truth of pairs.tsv.
func DebianCorpus(dir string) (*TextCorpus, error) {
	files, err := filepath.Glob(filepath.Join(dir, "docs", "*.txt"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("bench: no documents in %s/docs", dir)
	}
	c := &TextCorpus{Name: "debian", Truth: map[[2]int]float64{}, TruthMin: 0.5}
	pos := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		id := strings.TrimSuffix(filepath.Base(f), ".txt")
		pos[id] = len(c.IDs)
		c.IDs = append(c.IDs, id)
		c.Docs = append(c.Docs, b)
	}
	truth, err := corpus.ReadPairs(filepath.Join(dir, "pairs.tsv"))
	if err != nil {
		return nil, err
	}
	for p, j := range truth {
		a, aok := pos[p[0]]
		b, bok := pos[p[1]]
		if aok && bok {
			c.Truth[[2]int{min(a, b), max(a, b)}] = j
		}
	}
	return c, nil
}

func (s *Suite) runAccuracy(ctx context.Context) error {
	s.logf("accuracy: synthetic corpus, %d bases × (1 + %d variants)", s.Cfg.TextBases, s.Cfg.TextVariants)
	tc, err := SyntheticCorpus(s.Cfg.TextBases, s.Cfg.TextVariants, s.Cfg.DocBytes, s.Cfg.Seed+9)
	if err != nil {
		return err
	}
	if err := s.accuracyOn(ctx, tc); err != nil {
		return err
	}
	dir := s.Cfg.CorpusDir
	if _, err := os.Stat(filepath.Join(dir, "pairs.tsv")); err != nil {
		s.note("workload (c) skipped: the real corpus is not at %s (%v)", dir, err)
		return nil
	}
	dc, err := DebianCorpus(dir)
	if err != nil {
		return err
	}
	return s.accuracyOn(ctx, dc)
}

func (s *Suite) accuracyOn(ctx context.Context, c *TextCorpus) error {
	for _, k := range s.Cfg.AccKs {
		b, err := fingerprint.NewBuilder(fingerprint.Params{K: k, ShingleWidth: 4, Seed: fingerprint.DefaultSeed})
		if err != nil {
			return err
		}
		var flat []uint64
		var docOf []int // store id → document index
		skipped := 0
		for i, d := range c.Docs {
			res, err := b.FromBytes(d)
			if err != nil {
				skipped++
				continue
			}
			flat = append(flat, res.FP...)
			docOf = append(docOf, i)
		}
		if skipped > 0 && k == s.Cfg.AccKs[0] {
			s.note("%s: %d of %d documents not fingerprinted (no words or not text) and left out", c.Name, skipped, len(c.Docs))
		}
		stored := make([]bool, len(c.Docs))
		for _, i := range docOf {
			stored[i] = true
		}
		layout, err := index.NewLayout(k, DefaultWidths(k))
		if err != nil {
			return err
		}
		st, err := BulkStore(ctx, filepath.Join(s.Cfg.TmpDir, "acc-"+c.Name), layout, flat)
		if err != nil {
			return err
		}
		stride := k / 64
		for _, r := range s.Cfg.AccRs {
			rh := index.Radius(k, r)
			found := map[[2]int]bool{}
			for sid, i := range docOf {
				hits, _, err := st.Index.Search(ctx, flat[sid*stride:(sid+1)*stride], rh, index.Plan{Kind: index.Auto})
				if err != nil {
					st.Close()
					return err
				}
				for _, h := range hits {
					j := docOf[h.ID]
					if j != i {
						found[[2]int{min(i, j), max(i, j)}] = true
					}
				}
			}
			row := AccuracyRow{Workload: c.Name, Docs: len(docOf), K: k, R: r, Returned: len(found)}
			for p, jac := range c.Truth {
				if jac >= r && stored[p[0]] && stored[p[1]] {
					row.Relevant++
					if found[p] {
						row.Correct++
					}
				}
			}
			if row.Returned > 0 {
				row.Precision = float64(row.Correct) / float64(row.Returned)
			}
			if row.Relevant > 0 {
				row.Recall = float64(row.Correct) / float64(row.Relevant)
			}
			row.PrecisionMargin, row.RecallMargin = -1, -1
			if r-0.1 >= c.TruthMin-1e-9 && row.Returned > 0 {
				good := 0
				for p := range found {
					if c.Truth[p] >= r-0.1 {
						good++
					}
				}
				row.PrecisionMargin = float64(good) / float64(row.Returned)
			}
			var far, farFound int
			for p, jac := range c.Truth {
				if jac >= r+0.1 && stored[p[0]] && stored[p[1]] {
					far++
					if found[p] {
						farFound++
					}
				}
			}
			if far > 0 {
				row.RecallMargin = float64(farFound) / float64(far)
			}
			s.rep.Accuracy = append(s.rep.Accuracy, row)
			s.logf("accuracy %s k=%d r=%.1f: P %.3f R %.3f (%d returned, %d relevant)", c.Name, k, r, row.Precision, row.Recall, row.Returned, row.Relevant)
		}
		if k == 512 {
			nq := min(s.Cfg.TextPlanQueries, len(docOf))
			queries := make([][]uint64, nq)
			for i := range queries {
				// Spread the queries over the corpus.
				sid := i * len(docOf) / nq
				queries[i] = flat[sid*stride : (sid+1)*stride]
			}
			res, err := Compare(ctx, k, queries, s.Cfg.AccRs, s.standardRunners(st.Index, flat), s.Cfg.Compare)
			if err != nil {
				st.Close()
				return err
			}
			skew := MeasureSkew(layout, flat)
			s.rep.Plans = append(s.rep.Plans, PlanRun{Workload: c.Name, N: len(docOf), K: k, Widths: layout.Widths, Queries: nq, Build: st.Build, Results: res, Skew: &skew})
		}
		if err := st.Close(); err != nil {
			return err
		}
	}
	return nil
}
