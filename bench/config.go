package bench

import (
	"fmt"
	"time"

	"github.com/fpdb/fpdb/db"
)

// RandomCase is one (n, k) of workload (a).
type RandomCase struct {
	N, K, Queries int
	Thresholds    []float64
	// GroupBits is the width of the index groups (db.EqualWidths); 0 is
	// db.DefaultGroupWidth. A case with another width is reported as its
	// own workload (RandomName).
	GroupBits int `json:"group_bits,omitempty"`
}

// RandomName names the random workload of index groups of bits bits:
// "random" for the default width, else "random, 18-bit groups".
func RandomName(bits int) string {
	if bits == 0 || bits == db.DefaultGroupWidth {
		return "random"
	}
	return fmt.Sprintf("random, %d-bit groups", bits)
}

// Config is a suite configuration.
type Config struct {
	// Name names the result files (bench/results/<Name>.md, .json).
	Name string `json:"name"`
	// TmpDir holds the stores while they are measured.
	TmpDir string `json:"-"`
	// CorpusDir is the real corpus (../shared/corpus/debian); skipped when
	// absent.
	CorpusDir string `json:"corpus_dir"`
	Seed      uint64 `json:"seed"`

	Random []RandomCase `json:"random"`

	// SkewedDocs documents of the skewed text workload (SkewedWorkload;
	// 0: the section is skipped), SkewedQueries queries at
	// SkewedThresholds.
	SkewedDocs       int       `json:"skewed_docs"`
	SkewedQueries    int       `json:"skewed_queries"`
	SkewedThresholds []float64 `json:"skewed_thresholds"`

	Table1N       int     `json:"table1_n"`
	Table1Queries int     `json:"table1_queries"`
	Table1R       float64 `json:"table1_r"`
	Table1Ks      []int   `json:"table1_ks"`

	TextBases    int `json:"text_bases"`
	TextVariants int `json:"text_variants"`
	DocBytes     int `json:"doc_bytes"`

	// Containment is the containment section (N = 0: skipped).
	Containment ContainmentCase `json:"containment"`

	// Dedup is the dedup section (Records = 0: skipped).
	Dedup DedupCase `json:"dedup"`

	AccKs           []int     `json:"accuracy_ks"`
	AccRs           []float64 `json:"accuracy_rs"`
	TextPlanQueries int       `json:"text_plan_queries"`

	FingerprintTime time.Duration `json:"fingerprint_time_ns"`
	SyncDocs        int           `json:"sync_docs"`
	BulkDocs        int           `json:"bulk_docs"`
	AddFPs          int           `json:"add_fingerprints"`
	AddFPsOne       int           `json:"add_fingerprints_one_at_a_time"`
	StageAddDocs    int           `json:"stage_add_docs"`

	Compare CompareOptions `json:"compare"`
	// Table1Compare bounds the Table 1 runs: no slow-down limit (alg.G is
	// meant to be slow there), only a time budget per plan.
	Table1Compare CompareOptions `json:"table1_compare"`
	AlgGMaxComb   float64        `json:"alg_g_max_combinations"`
	AlgGMaxNodes  int            `json:"alg_g_max_nodes"`
}

var (
	quickThresholds = []float64{0.5, 0.6, 0.7, 0.8, 0.9, 0.95}
	fullThresholds  = []float64{0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0}
	paperKs         = []int{64, 128, 256, 384, 576, 1024}
)

// QuickConfig is `make bench`: at most 15 minutes on a 2-core machine.
func QuickConfig() Config {
	c := Config{
		Name: "quick",
		Seed: 1,
		Random: []RandomCase{
			{N: 100_000, K: 64, Queries: 100, Thresholds: quickThresholds},
			{N: 100_000, K: 256, Queries: 100, Thresholds: quickThresholds},
			{N: 100_000, K: 512, Queries: 100, Thresholds: quickThresholds},
			{N: 100_000, K: 1024, Queries: 100, Thresholds: quickThresholds},
			{N: 1_000_000, K: 512, Queries: 200, Thresholds: fullThresholds},
		},
		SkewedDocs: 100_000, SkewedQueries: 100, SkewedThresholds: quickThresholds,
		Table1N: 300_000, Table1Queries: 100, Table1R: 0.7, Table1Ks: []int{64, 128, 256, 384},
		TextBases: 300, TextVariants: 8, DocBytes: 2048,
		AccKs: []int{64, 128, 256, 512, 1024}, AccRs: []float64{0.5, 0.6, 0.7, 0.8, 0.9},
		TextPlanQueries: 200,
		Containment:     ContainmentCase{N: 300_000, K: 512, Queries: 100, Containments: []float64{0.5, 0.7, 0.9}},
		Dedup:           DedupCase{Records: 100_000, DocBytes: 2048, Threshold: 0.8, RowGroupRows: 10_000, Rounds: 2, ApproxRecall: 0.999},
		FingerprintTime: 3 * time.Second,
		SyncDocs:        200, BulkDocs: 10_000, AddFPs: 1_000_000, AddFPsOne: 20_000, StageAddDocs: 20_000,
		Compare:       CompareOptions{MaxSlowdown: 20, CellBudget: 20 * time.Second, ColdCaches: true},
		Table1Compare: CompareOptions{CellBudget: 45 * time.Second},
		AlgGMaxComb:   1e6, AlgGMaxNodes: 2_000_000,
	}
	return c
}

// FullConfig is `make bench-full`: n from 100 k to 10 M at k = 512 (the
// latency-vs-n plot), k = 64, 256 and 1024 at 1 M, the skewed text
// workload at 1 M, the paper's Table 1 at every k, and the bulk load of
// 10 M fingerprints; at most 60 minutes on a 2-core machine with about
// 8 GB of memory, plus about 15 minutes for the dedup section at 1 M
// records.
func FullConfig() Config {
	c := QuickConfig()
	c.Name = "full"
	c.Random = nil
	for _, n := range []int{100_000, 300_000, 1_000_000, 3_000_000, 10_000_000} {
		q := 500
		if n > 1_000_000 {
			q = 200
		}
		c.Random = append(c.Random, RandomCase{N: n, K: 512, Queries: q, Thresholds: fullThresholds})
	}
	for _, k := range []int{64, 256, 1024} {
		c.Random = append(c.Random, RandomCase{N: 1_000_000, K: k, Queries: 200, Thresholds: fullThresholds})
	}
	// 10 M again in the groups suggested for that size (same fingerprints
	// and queries), last so that the other cases keep their seeds.
	c.Random = append(c.Random, RandomCase{N: 10_000_000, K: 512, Queries: 200, Thresholds: fullThresholds, GroupBits: db.SuggestedGroupWidth(512, 10_000_000)})
	c.SkewedDocs, c.SkewedQueries, c.SkewedThresholds = 1_000_000, 300, fullThresholds
	c.Table1Queries = 200
	c.Table1Ks = paperKs
	c.TextBases, c.TextVariants = 1000, 9
	c.TextPlanQueries = 1000
	c.Containment = ContainmentCase{N: 1_000_000, K: 512, Queries: 200, Containments: []float64{0.5, 0.6, 0.7, 0.8, 0.9}}
	c.Dedup.Records = 1_000_000
	c.FingerprintTime = 10 * time.Second
	c.SyncDocs, c.BulkDocs, c.AddFPs, c.AddFPsOne, c.StageAddDocs = 1000, 100_000, 10_000_000, 100_000, 100_000
	c.Table1Compare = CompareOptions{CellBudget: 30 * time.Second}
	return c
}

// ScaleConfig is `make bench-scale`: the random section at 1 M and 10 M
// fingerprints of 512 bits, cold CPU caches, at the thresholds of issue
// 10's targets, and 10 M again in the groups db.SuggestedGroupWidth
// suggests for that size, on the same fingerprints (about 6 minutes on 2
// cores; a 10 M build holds about 4 GB of memory).
func ScaleConfig() Config {
	c := QuickConfig()
	c.Name = "scale"
	th := []float64{0.6, 0.7, 0.8, 0.9}
	c.Random = []RandomCase{{N: 1_000_000, K: 512, Queries: 200, Thresholds: th}, {N: 10_000_000, K: 512, Queries: 100, Thresholds: th},
		{N: 10_000_000, K: 512, Queries: 100, Thresholds: th, GroupBits: db.SuggestedGroupWidth(512, 10_000_000)}}
	return c
}

// SmokeConfig is a tiny configuration that exercises every section in
// seconds (tests, and checking the runner).
func SmokeConfig() Config {
	c := QuickConfig()
	c.Name = "smoke"
	c.Random = []RandomCase{{N: 20_000, K: 512, Queries: 10, Thresholds: []float64{0.6, 0.7, 0.8, 0.9}}, {N: 20_000, K: 64, Queries: 10, Thresholds: []float64{0.7, 0.9}},
		{N: 20_000, K: 512, Queries: 10, Thresholds: []float64{0.7, 0.9}, GroupBits: 18}}
	c.SkewedDocs, c.SkewedQueries, c.SkewedThresholds = 3000, 10, []float64{0.7, 0.9}
	c.Table1N, c.Table1Queries, c.Table1Ks = 20_000, 5, []int{64, 128}
	c.TextBases, c.TextVariants = 20, 4
	c.AccKs, c.AccRs = []int{64, 512}, []float64{0.7, 0.9}
	c.TextPlanQueries = 10
	c.Containment = ContainmentCase{N: 20_000, K: 512, Queries: 10, Containments: []float64{0.5, 0.9}}
	c.Dedup.Records, c.Dedup.RowGroupRows, c.Dedup.Rounds = 3000, 500, 1
	c.FingerprintTime = 200 * time.Millisecond
	c.SyncDocs, c.BulkDocs, c.AddFPs, c.AddFPsOne, c.StageAddDocs = 10, 200, 20000, 2000, 2000
	c.Compare.CellBudget = 5 * time.Second
	c.Table1Compare.CellBudget = 5 * time.Second
	return c
}
