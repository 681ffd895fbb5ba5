package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/index"
)

// PlanRun is the comparison of plans on one index.
type PlanRun struct {
	Workload string       `json:"workload"`
	N        int          `json:"n"`
	K        int          `json:"k"`
	Widths   []int        `json:"group_widths"`
	Queries  int          `json:"queries"`
	Build    BuildStats   `json:"build"`
	Results  []PlanResult `json:"results"`
	// Skew describes the posting lists of a text workload (nil for random
	// fingerprints, whose lists are uniform); Clusters and LargestCluster
	// describe the skewed workload's near-duplicate clusters.
	Skew           *PostingSkew `json:"posting_skew,omitempty"`
	Clusters       int          `json:"clusters,omitempty"`
	LargestCluster int          `json:"largest_cluster,omitempty"`
}

// Table1Row is one k of the paper's Table 1 setting.
type Table1Row struct {
	PaperK      int            `json:"paper_k"`
	K           int            `json:"k"`
	Radius      int            `json:"radius"`
	PaperWidths []int          `json:"paper_layout_widths"`
	Widths      []int          `json:"fpdb_layout_widths"`
	Queries     int            `json:"queries"`
	AlgG        Latency        `json:"alg_g"`
	AlgGNote    string         `json:"alg_g_note,omitempty"`
	AlgH        Latency        `json:"alg_h"`
	AlgHNote    string         `json:"alg_h_note,omitempty"`
	Fpdb        Latency        `json:"fpdb"`
	FpdbPlans   map[string]int `json:"fpdb_plans"`
	Scan        Latency        `json:"scan"`
	Scan1       Latency        `json:"scan_1_goroutine"`
	PaperG      string         `json:"paper_alg_g,omitempty"`
	PaperH      string         `json:"paper_alg_h,omitempty"`
	Mismatches  int            `json:"mismatches"`
}

// Report is everything one run measured.
type Report struct {
	Env      Env           `json:"env"`
	Config   Config        `json:"config"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Ingest   *IngestResult `json:"ingest,omitempty"`
	Plans    []PlanRun     `json:"plans"`
	Table1   []Table1Row   `json:"table1"`
	Accuracy []AccuracyRow `json:"accuracy"`
	Notes    []string      `json:"notes"`
	// Sections lists the sections run when not all were.
	Sections []string         `json:"sections,omitempty"`
	PeakRSS  map[string]int64 `json:"peak_rss_bytes_after"`
	Targets  []Target         `json:"targets"`
	// Dedup is the dedup section's report.
	Dedup *DedupResult `json:"dedup,omitempty"`
	// Noise is the machine's latency spread for a fixed amount of work,
	// measured before the random section when it runs with cold caches.
	Noise *NoiseFloor `json:"noise_floor,omitempty"`
}

// Suite runs a configuration.
type Suite struct {
	Cfg Config
	Log io.Writer
	// Sections, when not empty, limits the run to these sections (dedup,
	// ingest, random, skewed, containment, table1, accuracy).
	Sections []string
	rep      *Report
}

func (s *Suite) logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
}

func (s *Suite) note(format string, args ...any) {
	s.rep.Notes = append(s.rep.Notes, fmt.Sprintf(format, args...))
	s.logf("note: "+format, args...)
}

// Run runs every section of the suite and returns the report.
func (s *Suite) Run(ctx context.Context, env Env) (*Report, error) {
	start := time.Now()
	s.rep = &Report{Env: env, Config: s.Cfg, Sections: s.Sections, PeakRSS: map[string]int64{}}
	type section struct {
		name string
		fn   func(context.Context) error
	}
	sections := []section{
		// dedup first: its runs measure the process's peak RSS.
		{"dedup", s.runDedup},
		{"ingest", s.runIngest},
		{"random", s.runRandom},
		{"skewed", s.runSkewed},
		{"containment", s.runContainment},
		{"table1", s.runTable1},
		{"accuracy", s.runAccuracy},
	}
	for _, name := range s.Sections {
		if !slices.ContainsFunc(sections, func(sec section) bool { return sec.name == name }) {
			return s.rep, fmt.Errorf("bench: no section %q (dedup, ingest, random, skewed, containment, table1, accuracy)", name)
		}
	}
	for _, sec := range sections {
		if len(s.Sections) > 0 && !slices.Contains(s.Sections, sec.name) {
			continue
		}
		s.logf("== %s", sec.name)
		if err := sec.fn(ctx); err != nil {
			return s.rep, fmt.Errorf("bench: %s: %w", sec.name, err)
		}
		s.rep.PeakRSS[sec.name] = PeakRSS()
	}
	s.rep.Elapsed = time.Since(start)
	s.rep.Targets = CheckTargets(s.rep)
	return s.rep, nil
}

// DefaultWidths is fpdb's default layout for k (db.EqualWidths(k, 16)).
func DefaultWidths(k int) []int { return db.EqualWidths(k, db.DefaultGroupWidth) }

// PaperWidths is the paper's layout for radius rh: m = rh + 3 groups of
// equal width (the first groups take the extra bits).
func PaperWidths(k, rh int) []int { return index.SplitWidths(k, rh+3) }

// standardRunners are the plans compared on an index with fpdb's layout.
func (s *Suite) standardRunners(ix *index.Index, flat []uint64) []PlanRunner {
	return []PlanRunner{
		IndexPlan("auto", ix, index.Plan{Kind: index.Auto}),
		IndexPlan("alg.H (probe tau=0)", ix, index.Plan{Kind: index.Probe, Tau: 0}),
		IndexPlan("probe tau=1", ix, index.Plan{Kind: index.Probe, Tau: 1}),
		IndexPlan("probe tau=2", ix, index.Plan{Kind: index.Probe, Tau: 2}),
		IndexPlan("approx recall>=0.999", ix, index.Plan{Kind: index.Approx, MinRecall: 0.999}),
		AlgGPlan(ix, s.Cfg.AlgGMaxComb, s.Cfg.AlgGMaxNodes),
		IndexPlan("scan", ix, index.Plan{Kind: index.Scan}),
		RefScan(flat, ix.Layout().K),
	}
}

func (s *Suite) runRandom(ctx context.Context) error {
	if s.Cfg.Compare.ColdCaches {
		nf := MeasureNoise(2000)
		s.rep.Noise = &nf
		s.logf("noise floor: %d random reads after eviction: p50 %v p99 %v (%.1fx)", nf.Reads, nf.P50, nf.P99, float64(nf.P99)/float64(max(nf.P50, 1)))
	}
	for ci, c := range s.Cfg.Random {
		bits := cmp.Or(c.GroupBits, db.DefaultGroupWidth)
		layout, err := index.NewLayout(c.K, db.EqualWidths(c.K, bits))
		if err != nil {
			return err
		}
		name := RandomName(bits)
		s.logf("%s n=%d k=%d: generating", name, c.N, c.K)
		// Cases of the same n, k and number of queries share their
		// fingerprints and queries (the seed of the first), so that layouts
		// compare on the same data.
		seed := ci
		for j := range ci {
			if o := s.Cfg.Random[j]; o.N == c.N && o.K == c.K && o.Queries == c.Queries {
				seed = j
				break
			}
		}
		w := NewRandomWorkload(c.N, c.K, c.Queries, DefaultPlantSims, s.Cfg.Seed+uint64(seed))
		st, err := BulkStore(ctx, filepath.Join(s.Cfg.TmpDir, "random"), layout, w.Flat)
		if err != nil {
			return err
		}
		s.logf("%s n=%d k=%d: built in %v + %v, %.0f B/fp; comparing plans", name, c.N, c.K, st.Build.Ingest.Round(time.Millisecond), st.Build.Compact.Round(time.Millisecond), st.Build.BytesPerFP)
		res, err := Compare(ctx, c.K, w.Queries, c.Thresholds, s.standardRunners(st.Index, w.Flat), s.Cfg.Compare)
		st.Close()
		if err != nil {
			return err
		}
		s.rep.Plans = append(s.rep.Plans, PlanRun{Workload: name, N: c.N, K: c.K, Widths: layout.Widths, Queries: c.Queries, Build: st.Build, Results: res})
		s.logResults(res)
	}
	return nil
}

func (s *Suite) logResults(res []PlanResult) {
	for _, p := range res {
		if p.Latency.N == 0 {
			s.logf("  r=%.2f %-22s %s", p.R, p.Plan, p.Skipped)
			continue
		}
		s.logf("  r=%.2f %-22s p50 %9s p99 %9s  %7.1fx  cand %.0f hits %.1f mism %d %s", p.R, p.Plan, p.Latency.P50.Round(time.Microsecond/10), p.Latency.P99.Round(time.Microsecond/10), p.Speedup, p.Candidates, p.Hits, p.Mismatches, p.Skipped)
	}
}

var paperTable1 = map[int][2]string{64: {"40 s", "15 s"}, 384: {"1 921 s (paper k=400)", "273 s (paper k=400)"}}

var paperKOf = map[int]int{64: 64, 128: 100, 256: 200, 384: 400, 576: 600, 1024: 1000}

func (s *Suite) runTable1(ctx context.Context) error {
	n, r := s.Cfg.Table1N, s.Cfg.Table1R
	for i, k := range s.Cfg.Table1Ks {
		rh := index.Radius(k, r)
		w := NewRandomWorkload(n, k, s.Cfg.Table1Queries, DefaultPlantSims, s.Cfg.Seed+100+uint64(i))
		row := Table1Row{PaperK: paperKOf[k], K: k, Radius: rh, PaperWidths: PaperWidths(k, rh), Widths: DefaultWidths(k), Queries: len(w.Queries)}
		if p, ok := paperTable1[k]; ok {
			row.PaperG, row.PaperH = p[0], p[1]
		}
		pl, err := index.NewLayout(k, row.PaperWidths)
		if err != nil {
			return err
		}
		s.logf("table1 k=%d rh=%d: paper layout %d groups", k, rh, pl.M())
		ps, err := BulkStore(ctx, filepath.Join(s.Cfg.TmpDir, "t1paper"), pl, w.Flat)
		if err != nil {
			return err
		}
		res, err := Compare(ctx, k, w.Queries, []float64{r}, []PlanRunner{
			AlgGPlan(ps.Index, s.Cfg.AlgGMaxComb, s.Cfg.AlgGMaxNodes),
			IndexPlan("alg.H", ps.Index, index.Plan{Kind: index.Probe, Tau: 0}),
			RefScan(w.Flat, k),
		}, s.Cfg.Table1Compare)
		ps.Close()
		if err != nil {
			return err
		}
		s.logResults(res)
		row.AlgG, row.AlgGNote = res[0].Latency, res[0].Skipped
		row.AlgH, row.AlgHNote = res[1].Latency, res[1].Skipped
		row.Mismatches += res[0].Mismatches + res[1].Mismatches
		dl, err := index.NewLayout(k, row.Widths)
		if err != nil {
			return err
		}
		ds, err := BulkStore(ctx, filepath.Join(s.Cfg.TmpDir, "t1fpdb"), dl, w.Flat)
		if err != nil {
			return err
		}
		res2, err := Compare(ctx, k, w.Queries, []float64{r}, []PlanRunner{
			IndexPlan("auto", ds.Index, index.Plan{Kind: index.Auto}),
			IndexPlan("scan", ds.Index, index.Plan{Kind: index.Scan}),
			RefScan(w.Flat, k),
		}, s.Cfg.Table1Compare)
		ds.Close()
		if err != nil {
			return err
		}
		s.logResults(res2)
		row.Fpdb, row.FpdbPlans, row.Scan, row.Scan1 = res2[0].Latency, res2[0].Chosen, res2[1].Latency, res2[2].Latency
		row.Mismatches += res2[0].Mismatches
		s.rep.Table1 = append(s.rep.Table1, row)
	}
	return nil
}
