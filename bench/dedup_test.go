package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestDedupSection runs the dedup section end to end on 3 000 records:
// every format's output holds every record once, consistently, and puts
// at least 99 % of the planted pairs with exact Jaccard ≥ 0.8 in one
// cluster.
func TestDedupSection(t *testing.T) {
	c := DedupCase{Records: 3000, DocBytes: 2048, Threshold: 0.8, RowGroupRows: 500, ApproxRecall: 0.999}
	res, err := RunDedup(ctx, c, filepath.Join(t.TempDir(), "dedup"), 3, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Truth
	if tr.Clusters < 50 || tr.Copies < 100 || tr.ExactCopies == 0 || tr.True < 100 || tr.True == tr.Pairs {
		t.Fatalf("ground truth: %+v", tr)
	}
	if res.MeanTextBytes < 1800 || res.MeanTextBytes > 2300 || res.MeanWords < 280 || res.MeanWords > 400 {
		t.Errorf("texts of %.0f bytes, %.0f words: want about 2 KB and 330 words", res.MeanTextBytes, res.MeanWords)
	}
	if res.ParquetRowGroups != 6 {
		t.Errorf("%d Parquet row groups, want 6", res.ParquetRowGroups)
	}
	if len(res.Runs) != len(DedupFormats)+1 || res.Runs[len(DedupFormats)].Approx != c.ApproxRecall {
		t.Fatalf("%d runs", len(res.Runs))
	}
	for _, r := range res.Runs {
		ck := r.Check
		if !ck.OK() || ck.Kept+ck.Removed != c.Records {
			t.Errorf("%s: kept %d + removed %d of %d; %d missing, %d repeated, %d unknown, %d bad, %d inconsistent",
				r.Format, ck.Kept, ck.Removed, c.Records, ck.Missing, ck.Repeated, ck.Unknown, ck.Bad, ck.Inconsistent)
		}
		want := 1.0 // an exact plan's
		if r.Approx > 0 {
			want = r.Approx
		}
		if r.Summary.Recall < want {
			t.Errorf("%s: the pairs plan %s has expected recall %v", r.Label(), r.Summary.Plan, r.Summary.Recall)
		}
		if ck.TruePairs != tr.True || ck.Recall < 0.99 {
			t.Errorf("%s: recall %.4f (%d of %d true pairs, ground truth %d)", r.Format, ck.Recall, ck.Recalled, ck.TruePairs, tr.True)
		}
		if ck.RemovedPairs == 0 || ck.Precision < 0.9 {
			t.Errorf("%s: precision %.4f over %d removed records", r.Format, ck.Precision, ck.RemovedPairs)
		}
		if int64(ck.Kept) != r.Summary.Kept || int64(ck.Removed) != r.Summary.Removed {
			t.Errorf("%s: read back kept %d removed %d, the summary says %d and %d", r.Format, ck.Kept, ck.Removed, r.Summary.Kept, r.Summary.Removed)
		}
		if r.RecordsPerSec <= 0 || r.PeakRSS <= 0 || r.LoadPeakRSS <= 0 || r.PairsPeakRSS < r.LoadPeakRSS || r.PeakRSS < r.PairsPeakRSS || r.DBBytes <= 0 || r.LoadCPUSeconds <= 0 || r.PairsCPUSeconds < 0 || r.LoadCPUSeconds+r.PairsCPUSeconds > r.CPUSeconds {
			t.Errorf("%s: not measured: %+v", r.Format, r)
		}
	}
	rep := &Report{Dedup: res}
	if ts := dedupTargets(rep); len(ts) != 5 || ts[2].Status != "pass" || ts[4].Status == "not measured" {
		t.Errorf("targets: %+v", ts)
	}
}

// TestDedupDatasetDeterministic checks that the generated files depend
// only on the seed, not on the number of cores, and that originals come
// before their copies.
func TestDedupDatasetDeterministic(t *testing.T) {
	dir := t.TempDir()
	gen := func(sub string) *DedupDataset {
		ds, err := GenerateDedup(ctx, filepath.Join(dir, sub), 500, 2048, 100, 0.8, 9)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	a := gen("a")
	prev := runtime.GOMAXPROCS(1)
	b := gen("b")
	runtime.GOMAXPROCS(prev)
	for _, f := range DedupFormats {
		x, err := os.ReadFile(a.Files[f])
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(b.Files[f])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between runs", f)
		}
	}
	for g := range a.clusters {
		ms := a.members[a.start[g]:a.start[g+1]]
		for i, p := range ms {
			if int(a.specs[p].member) != i || (i > 0 && ms[i-1] >= p) {
				t.Fatalf("cluster %d: members %v", g, ms)
			}
		}
	}
}
