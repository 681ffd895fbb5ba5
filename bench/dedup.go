package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/dedup"
	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/splitmix"
)

// DedupCase configures the dedup section: end-to-end deduplication
// (dedup.Run, what `fpdb dedup` does) of one generated dataset written as
// JSON Lines, zstd-compressed JSON Lines and Parquet.
type DedupCase struct {
	// Records is the number of records (0: the section is skipped).
	Records int `json:"records"`
	// DocBytes is the approximate size of a record's text.
	DocBytes int `json:"doc_bytes"`
	// Threshold is the dedup threshold, and the exact Jaccard resemblance
	// from which a planted pair counts as a true near duplicate.
	Threshold float64 `json:"threshold"`
	// RowGroupRows is the number of rows per row group of the Parquet
	// input.
	RowGroupRows int `json:"parquet_row_group_rows"`
	// Rounds is how many times each format runs, the formats interleaved
	// (0: once): on a shared machine, a format's throughput is its
	// fastest round's.
	Rounds int `json:"rounds"`
	// ApproxRecall, when above 0, adds to each round a run of the JSON
	// Lines input with an approximate pairs plan of that least expected
	// recall (fpdb dedup --plan approx --recall R).
	ApproxRecall float64 `json:"approx_recall,omitempty"`
}

func (c DedupCase) String() string {
	return fmt.Sprintf("records=%d doc bytes=%d threshold=%v rounds=%d approx recall=%v", c.Records, c.DocBytes, c.Threshold, max(c.Rounds, 1), c.ApproxRecall)
}

// The dedup dataset's parameters.
const (
	// dedupVocab is the vocabulary size (Zipf exponent 1.0).
	dedupVocab = 20_000
	// dedupClusterShare is the probability that a group of records is a
	// planted cluster (else a single record): with 2–5 members, about
	// 10 % of the records are then copies of an earlier record.
	dedupClusterShare = 1 / 22.5
	// dedupMinSize and dedupMaxSize bound a planted cluster's size (the
	// original included), drawn uniformly.
	dedupMinSize, dedupMaxSize = 2, 5
	// dedupExactShare is the share of copies that are exact.
	dedupExactShare = 0.2
	// dedupMinEdit and dedupMaxEdit bound the share of words edited in a
	// copy that is not exact (uniform between them); each edit substitutes,
	// inserts or deletes one word.
	dedupMinEdit, dedupMaxEdit = 0.005, 0.025
	// dedupMaxClusterPairs bounds the size of an output cluster whose
	// pairs are all checked against the exact resemblance.
	dedupMaxClusterPairs = 100
)

// DedupFormats are the input formats of the dedup section, in the order
// they run: the extension of the input and output files.
var DedupFormats = []string{"jsonl", "jsonl.zst", "parquet"}

// DedupDataset is a generated dataset on disk and its ground truth.
//
// Records are groups: single records, and planted clusters of 2 to 5 (an
// original and copies of it, each exact or with 0.5–2.5 % of its words
// substituted, inserted or deleted), shuffled so that the copies are spread
// through the file; a cluster's original comes before its copies. Record i
// of the files has the id "doc" and i in 7 digits and a text of about
// DocBytes bytes of words drawn from a Zipf vocabulary. Every text is
// regenerated from the seed, its group and its member number, so nothing
// is held in memory but 8 bytes per record.
type DedupDataset struct {
	N        int
	DocBytes int
	Seed     uint64
	// Files holds each format's input file; Bytes their sizes.
	Files map[string]string
	Bytes map[string]int64
	// TextBytes and Words are the total size and word count of the texts.
	TextBytes, Words int64
	// ParquetRowGroups is the number of row groups of the Parquet input.
	ParquetRowGroups int

	vocab    *Zipf
	specs    []dedupSpec // by position in the files
	clusters int         // groups below it are planted clusters
	// members lists the positions of each planted cluster's members, in
	// member order: members[start[g]:start[g+1]].
	members, start []int32
	// pairs holds the exact resemblance of every pair of members of a
	// planted cluster, keyed by pairKey.
	pairs map[uint64]float64
	// Truth describes the planted pairs.
	Truth DedupTruth
}

// dedupSpec is a record: its group and its member number in the group (0:
// the original).
type dedupSpec struct {
	group  int32
	member uint8
}

// DedupTruth is the ground truth of a dataset: the exact Jaccard
// resemblance of the 4-word shingle sets (ShingleSet, fpdb's own
// normalization and shingle width) of every pair of records of a planted
// cluster.
type DedupTruth struct {
	Clusters    int `json:"planted_clusters"`
	Copies      int `json:"copies"`
	ExactCopies int `json:"exact_copies"`
	// Pairs counts the pairs of records of one planted cluster; True those
	// with resemblance ≥ the threshold, TrueOriginal those of them made of
	// an original and a copy.
	Pairs        int `json:"planted_pairs"`
	True         int `json:"true_pairs"`
	TrueOriginal int `json:"true_pairs_with_original"`
	// MinCopy and MeanCopy are the least and mean resemblance of a copy to
	// its original.
	MinCopy  float64 `json:"min_copy_resemblance"`
	MeanCopy float64 `json:"mean_copy_resemblance"`
	// Bands counts the true pairs by resemblance.
	Bands []DedupBand `json:"bands"`
	// Seconds is the time the ground truth took.
	Seconds float64 `json:"seconds"`
}

// DedupBand is a range of exact resemblance [Lo, Hi) (Hi > 1: exactly 1)
// and the true pairs in it; in a run, those the output put in one cluster.
type DedupBand struct {
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	Pairs    int     `json:"pairs"`
	Recalled int     `json:"recalled,omitempty"`
}

func (b DedupBand) String() string {
	if b.Hi > 1 {
		return "J = 1"
	}
	return fmt.Sprintf("%.2f ≤ J < %.2f", b.Lo, b.Hi)
}

// dedupBands returns the empty bands of the true pairs at threshold t.
func dedupBands(t float64) []DedupBand {
	var bs []DedupBand
	for _, lo := range []float64{t, t + 0.05, t + 0.1} {
		if lo < 1 {
			bs = append(bs, DedupBand{Lo: lo, Hi: min(lo+0.05, 1)})
		}
	}
	bs[len(bs)-1].Hi = 1
	return append(bs, DedupBand{Lo: 1, Hi: 2})
}

func bandOf(bs []DedupBand, j float64) int {
	for i, b := range bs {
		if j >= b.Lo && j < b.Hi {
			return i
		}
	}
	return -1
}

func pairKey(a, b int32) uint64 {
	if a > b {
		a, b = b, a
	}
	return uint64(a)<<32 | uint64(uint32(b))
}

// newDedupVocab returns the dataset's vocabulary: NewZipf's words
// lengthened to about English lengths (the 90 most frequent words of 3
// letters, the next 8 010 of 7, the others of 9: a mean of about 5
// letters), so that DocBytes of text hold about as many words as English
// text (≈ 330 in 2 KB).
func newDedupVocab(seed uint64) *Zipf {
	z := NewZipf(dedupVocab, 1.0, seed)
	const cons, vow = "bcdfghjklmnprstvwz", "aeiou"
	for i, w := range z.words {
		// Words of one length differ in their first letters already.
		if len(w) == 2 {
			w += cons[i%len(cons) : i%len(cons)+1]
		} else {
			w += string([]byte{vow[i%5], cons[(i/5)%len(cons)], vow[(i/90)%5]})
		}
		z.words[i] = w
	}
	return z
}

// newDedupDataset lays out n records (their groups, shuffled) without
// writing them.
func newDedupDataset(n, docBytes int, seed uint64) *DedupDataset {
	ds := &DedupDataset{N: n, DocBytes: docBytes, Seed: seed, vocab: newDedupVocab(seed), Files: map[string]string{}, Bytes: map[string]int64{}}
	rng := rand.New(rand.NewPCG(seed, 0x6465647570))
	var sizes []int
	singles := 0
	for total := 0; total < n; {
		if n-total >= dedupMinSize && rng.Float64() < dedupClusterShare {
			s := min(dedupMinSize+rng.IntN(dedupMaxSize-dedupMinSize+1), n-total)
			sizes = append(sizes, s)
			total += s
		} else {
			singles++
			total++
		}
	}
	ds.clusters = len(sizes)
	ds.specs = make([]dedupSpec, 0, n)
	ds.start = make([]int32, len(sizes)+1)
	for g, s := range sizes {
		for range s {
			ds.specs = append(ds.specs, dedupSpec{group: int32(g)})
		}
		ds.start[g+1] = ds.start[g] + int32(s)
	}
	for i := range singles {
		ds.specs = append(ds.specs, dedupSpec{group: int32(len(sizes) + i)})
	}
	rng.Shuffle(len(ds.specs), func(i, j int) { ds.specs[i], ds.specs[j] = ds.specs[j], ds.specs[i] })
	// The first member of a cluster in the file is its original.
	ds.members = make([]int32, ds.start[len(sizes)])
	seen := make([]uint8, len(sizes))
	for p := range ds.specs {
		if g := ds.specs[p].group; int(g) < ds.clusters {
			ds.specs[p].member = seen[g]
			ds.members[ds.start[g]+int32(seen[g])] = int32(p)
			seen[g]++
		}
	}
	return ds
}

// words returns the words of the record at position p.
func (ds *DedupDataset) words(p int) []string {
	sp := ds.specs[p]
	g := uint64(sp.group)
	words := ds.vocab.Fork(splitmix.Mix(ds.Seed + (g+1)*splitmix.Phi)).Doc(ds.DocBytes)
	if sp.member == 0 {
		return words
	}
	e := ds.vocab.Fork(splitmix.Mix(splitmix.Mix(ds.Seed+(g+1)*splitmix.Phi) ^ uint64(sp.member)*splitmix.Psi))
	if e.rng.Float64() < dedupExactShare {
		return words
	}
	share := dedupMinEdit + e.rng.Float64()*(dedupMaxEdit-dedupMinEdit)
	for range max(1, int(math.Round(share*float64(len(words))))) {
		words = e.Edit(words, EditKind(e.rng.IntN(3)), 1) // substitute, insert or delete
	}
	return words
}

// text returns the text of the record at position p.
func (ds *DedupDataset) text(p int) []byte { return Render(ds.words(p)) }

// shingles returns the shingle set of the record at position p.
func (ds *DedupDataset) shingles(p int) ([]uint64, error) {
	return ShingleSet(ds.text(p), db.DefaultShingleWidth)
}

// dedupID is the id of the record at position p.
func dedupID(p int) string { return fmt.Sprintf("doc%07d", p) }

// dedupPos returns the position of an id dedupID made, or -1.
func dedupPos(id string, n int) int {
	s, ok := strings.CutPrefix(id, "doc")
	if !ok || len(s) < 7 {
		return -1
	}
	p, err := strconv.Atoi(s)
	if err != nil || p < 0 || p >= n {
		return -1
	}
	return p
}

// dedupRow is a row of the Parquet input.
type dedupRow struct {
	ID   string `parquet:"id"`
	Text string `parquet:"text"`
}

// GenerateDedup writes a dataset of n records of about docBytes bytes into
// dir, as input.jsonl, input.jsonl.zst and input.parquet (row groups of
// rowGroupRows rows, zstd-compressed pages), and computes its ground truth
// at threshold. Texts are generated on all cores, in batches, while the
// previous batch is written; the files depend only on the arguments.
func GenerateDedup(ctx context.Context, dir string, n, docBytes, rowGroupRows int, threshold float64, seed uint64) (_ *DedupDataset, err error) {
	if n < 1 || docBytes < 64 || rowGroupRows < 1 || !(threshold > 0 && threshold <= 1) {
		return nil, fmt.Errorf("bench: dedup dataset: invalid n=%d doc bytes=%d row group rows=%d threshold=%v", n, docBytes, rowGroupRows, threshold)
	}
	ds := newDedupDataset(n, docBytes, seed)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: dedup dataset: %w", err)
	}
	for _, f := range DedupFormats {
		ds.Files[f] = filepath.Join(dir, "input."+f)
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			if cerr := f.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("bench: dedup dataset: %w", cerr)
			}
		}
	}()
	create := func(f string) (*os.File, error) {
		fh, err := os.Create(ds.Files[f])
		if err != nil {
			return nil, fmt.Errorf("bench: dedup dataset: %w", err)
		}
		files = append(files, fh)
		return fh, nil
	}
	jf, err := create("jsonl")
	if err != nil {
		return nil, err
	}
	zf, err := create("jsonl.zst")
	if err != nil {
		return nil, err
	}
	pf, err := create("parquet")
	if err != nil {
		return nil, err
	}
	jw := bufio.NewWriterSize(jf, 1<<20)
	zb := bufio.NewWriterSize(zf, 1<<20)
	zw, err := zstd.NewWriter(zb)
	if err != nil {
		return nil, fmt.Errorf("bench: dedup dataset: %w", err)
	}
	defer zw.Close()
	pw := parquet.NewGenericWriter[dedupRow](pf, parquet.MaxRowsPerRowGroup(int64(rowGroupRows)), parquet.Compression(&parquet.Zstd))

	const batch = 4096
	workers := runtime.GOMAXPROCS(0)
	gen := func(lo int) <-chan [][]byte {
		ch := make(chan [][]byte, 1)
		hi := min(lo+batch, n)
		go func() {
			texts := make([][]byte, hi-lo)
			var wg sync.WaitGroup
			per := (len(texts) + workers - 1) / workers
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w * per; i < min((w+1)*per, len(texts)); i++ {
						texts[i] = ds.text(lo + i)
					}
				}()
			}
			wg.Wait()
			ch <- texts
		}()
		return ch
	}
	var line []byte
	rows := make([]dedupRow, 0, batch)
	next := gen(0)
	for lo := 0; lo < n; lo += batch {
		texts := <-next
		if lo+batch < n {
			next = gen(lo + batch)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rows = rows[:0]
		for i, t := range texts {
			id := dedupID(lo + i)
			ds.TextBytes += int64(len(t))
			ds.Words += int64(bytes.Count(t, []byte{' '}) + bytes.Count(t, []byte{'\n'}))
			q, err := json.Marshal(string(t))
			if err != nil {
				return nil, fmt.Errorf("bench: dedup dataset: %w", err)
			}
			line = append(append(append(append(line[:0], `{"id":"`...), id...), `","text":`...), q...)
			line = append(line, "}\n"...)
			if _, err := jw.Write(line); err != nil {
				return nil, fmt.Errorf("bench: dedup dataset: %w", err)
			}
			if _, err := zw.Write(line); err != nil {
				return nil, fmt.Errorf("bench: dedup dataset: %w", err)
			}
			rows = append(rows, dedupRow{ID: id, Text: string(t)})
		}
		if _, err := pw.Write(rows); err != nil {
			return nil, fmt.Errorf("bench: dedup dataset: parquet: %w", err)
		}
	}
	if err := errors.Join(jw.Flush(), zw.Close(), zb.Flush(), pw.Close()); err != nil {
		return nil, fmt.Errorf("bench: dedup dataset: %w", err)
	}
	for _, f := range DedupFormats {
		fi, err := os.Stat(ds.Files[f])
		if err != nil {
			return nil, fmt.Errorf("bench: dedup dataset: %w", err)
		}
		ds.Bytes[f] = fi.Size()
	}
	if _, err := pf.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("bench: dedup dataset: %w", err)
	}
	pq, err := parquet.OpenFile(pf, ds.Bytes["parquet"])
	if err != nil {
		return nil, fmt.Errorf("bench: dedup dataset: reading back the parquet input: %w", err)
	}
	ds.ParquetRowGroups = len(pq.RowGroups())
	if err := ds.truth(ctx, threshold); err != nil {
		return nil, err
	}
	return ds, nil
}

// truth computes the exact resemblance of every pair of records of each
// planted cluster, on all cores.
func (ds *DedupDataset) truth(ctx context.Context, threshold float64) error {
	start := time.Now()
	type pair struct {
		key  uint64
		j    float64
		orig bool // an original and a copy
		// exact: a copy identical to its original
		exact bool
	}
	workers := runtime.GOMAXPROCS(0)
	out := make([][]pair, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := w; g < ds.clusters; g += workers {
				if g%1024 == 0 && ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
				ms := ds.members[ds.start[g]:ds.start[g+1]]
				texts := make([][]byte, len(ms))
				sets := make([][]uint64, len(ms))
				for i, p := range ms {
					texts[i] = ds.text(int(p))
					s, err := ShingleSet(texts[i], db.DefaultShingleWidth)
					if err != nil {
						errs[w] = err
						return
					}
					sets[i] = s
				}
				for a := range ms {
					for b := a + 1; b < len(ms); b++ {
						out[w] = append(out[w], pair{key: pairKey(ms[a], ms[b]), j: Jaccard(sets[a], sets[b]), orig: a == 0, exact: a == 0 && bytes.Equal(texts[a], texts[b])})
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench: dedup ground truth: %w", err)
	}
	t := DedupTruth{Clusters: ds.clusters, Copies: len(ds.members) - ds.clusters, MinCopy: 1, Bands: dedupBands(threshold)}
	ds.pairs = make(map[uint64]float64)
	sumCopy := 0.0
	for _, ps := range out {
		for _, p := range ps {
			ds.pairs[p.key] = p.j
			t.Pairs++
			if p.orig {
				sumCopy += p.j
				t.MinCopy = min(t.MinCopy, p.j)
			}
			if p.exact {
				t.ExactCopies++
			}
			if p.j >= threshold {
				t.True++
				if p.orig {
					t.TrueOriginal++
				}
				t.Bands[bandOf(t.Bands, p.j)].Pairs++
			}
		}
	}
	if t.Copies > 0 {
		t.MeanCopy = sumCopy / float64(t.Copies)
	}
	t.Seconds = time.Since(start).Seconds()
	ds.Truth = t
	return nil
}

// resemblance returns the exact resemblance of the records at positions a
// and b: the ground truth's for members of one planted cluster, else
// computed from their regenerated texts.
func (ds *DedupDataset) resemblance(a, b int) (float64, error) {
	if a == b {
		return 1, nil
	}
	if ga, gb := ds.specs[a].group, ds.specs[b].group; ga == gb && int(ga) < ds.clusters {
		return ds.pairs[pairKey(int32(a), int32(b))], nil
	}
	sa, err := ds.shingles(a)
	if err != nil {
		return 0, err
	}
	sb, err := ds.shingles(b)
	if err != nil {
		return 0, err
	}
	return Jaccard(sa, sb), nil
}

// DedupResult is the dedup section's report.
type DedupResult struct {
	Case DedupCase `json:"case"`
	// MeanTextBytes and MeanWords describe the records' texts.
	MeanTextBytes float64 `json:"mean_text_bytes"`
	MeanWords     float64 `json:"mean_words"`
	Vocabulary    int     `json:"vocabulary"`
	// InputBytes is each input file's size, ParquetRowGroups the Parquet
	// input's row groups.
	InputBytes       map[string]int64 `json:"input_bytes"`
	ParquetRowGroups int              `json:"parquet_row_groups"`
	GenerateSeconds  float64          `json:"generate_seconds"`
	Truth            DedupTruth       `json:"truth"`
	GOMAXPROCS       int              `json:"gomaxprocs"`
	NumCPU           int              `json:"num_cpu"`
	// ScanGBs is the one-goroutine scan's speed (bitvec.Scan) over 1 M
	// random 512-bit fingerprints, caches evicted: the machine's memory
	// bandwidth, as the other sections report it.
	ScanGBs float64 `json:"scan_gb_per_s"`
	// PeakRSSReset says whether the process's peak RSS could be reset
	// before each run (/proc/self/clear_refs); if not, each run's PeakRSS
	// is the high-water mark of the whole process so far.
	PeakRSSReset bool       `json:"peak_rss_reset"`
	Runs         []DedupRun `json:"runs"`
}

// DedupRun is one format's dedup.Run.
type DedupRun struct {
	Format string `json:"format"`
	Round  int    `json:"round"`
	// Approx is the least expected recall of the run's approximate pairs
	// plan; 0 for the default, exact, plan.
	Approx float64 `json:"approx,omitempty"`
	// Seconds is the wall time of db.Open, dedup.Run and Close, as the
	// command line spends them; RunSeconds that of dedup.Run alone.
	Seconds      float64 `json:"seconds"`
	RunSeconds   float64 `json:"run_seconds"`
	OpenSeconds  float64 `json:"open_seconds"`
	CloseSeconds float64 `json:"close_seconds"`
	// RecordsPerSec is Records / Seconds; per core, divided by GOMAXPROCS.
	RecordsPerSec        float64 `json:"records_per_sec"`
	RecordsPerSecPerCore float64 `json:"records_per_sec_per_core"`
	// CPUSeconds is the process's user and system time over the run;
	// LoadCPUSeconds and PairsCPUSeconds those of the load (with Open)
	// and pairs phases, read when the next phase began.
	CPUSeconds      float64 `json:"cpu_seconds"`
	LoadCPUSeconds  float64 `json:"load_cpu_seconds"`
	PairsCPUSeconds float64 `json:"pairs_cpu_seconds"`
	// StartRSS is the RSS of the run's process (a child of the bench's)
	// when the run began, PeakRSS its VmHWM at the end.
	StartRSS int64 `json:"start_rss_bytes"`
	PeakRSS  int64 `json:"peak_rss_bytes"`
	// LoadPeakRSS and PairsPeakRSS are the VmHWM when the pairs phase and
	// when the write phase began (dedup.Options.Progress): the peak of
	// the load, and of the load and the pairs.
	LoadPeakRSS  int64 `json:"load_peak_rss_bytes"`
	PairsPeakRSS int64 `json:"pairs_peak_rss_bytes"`
	// DBBytes is the size on disk of the work database after Close (its
	// postings deferred, as fpdb dedup leaves its work database).
	DBBytes          int64          `json:"db_bytes"`
	DBBytesPerRecord float64        `json:"db_bytes_per_record"`
	OutputBytes      int64          `json:"output_bytes"`
	Summary          *dedup.Summary `json:"summary"`
	Check            DedupCheck     `json:"check"`
}

// DedupCheck is a run's output checked against the dataset.
type DedupCheck struct {
	// Kept and Removed count the records read back from each output.
	Kept    int `json:"kept"`
	Removed int `json:"removed"`
	// Missing counts input records in neither output, Repeated those
	// written more than once, Unknown output records that are no input
	// record, Bad those written as bad records (fpdb_cluster −1).
	Missing  int `json:"missing"`
	Repeated int `json:"repeated"`
	Unknown  int `json:"unknown"`
	Bad      int `json:"bad"`
	// Inconsistent counts records whose added fields contradict the file
	// they are in or their cluster (a kept record naming another as kept,
	// a removed one kept for itself or in no cluster, a cluster whose
	// members name different kept records or whose kept record is not in
	// the kept output).
	Inconsistent int `json:"inconsistent"`
	// Clusters is the number of output clusters, Largest the largest's
	// size.
	Clusters int `json:"clusters"`
	Largest  int `json:"largest"`
	// TruePairs counts the planted pairs with resemblance ≥ the threshold,
	// Recalled those put in one output cluster; Bands splits them by
	// resemblance.
	TruePairs int         `json:"true_pairs"`
	Recalled  int         `json:"recalled"`
	Recall    float64     `json:"recall"`
	Bands     []DedupBand `json:"bands"`
	// RemovedPairs are the (removed record, record kept for it) pairs the
	// output asserts; RemovedNear those with exact resemblance ≥ threshold
	// − 0.1, RemovedAbove those ≥ the threshold. SimError is the mean
	// |fpdb_similarity − exact resemblance| over them.
	RemovedPairs     int     `json:"removed_pairs"`
	RemovedNear      int     `json:"removed_pairs_near"`
	RemovedAbove     int     `json:"removed_pairs_above"`
	Precision        float64 `json:"precision"`
	PrecisionStrict  float64 `json:"precision_strict"`
	SimError         float64 `json:"mean_similarity_error"`
	MaxSimError      float64 `json:"max_similarity_error"`
	ClusterPairs     int     `json:"cluster_pairs"`
	ClusterPairsNear int     `json:"cluster_pairs_near"`
	// CrossPairs counts the pairs of one output cluster that are not of
	// one planted cluster; Unchecked the members of clusters too large to
	// check every pair (more than dedupMaxClusterPairs members).
	CrossPairs int `json:"cross_pairs"`
	Unchecked  int `json:"unchecked_members"`
	// Compressed tells, for a .zst output, whether both outputs are
	// Zstandard streams.
	Compressed *bool `json:"compressed,omitempty"`
}

// OK reports whether every record was written exactly once, none as bad
// and none inconsistently.
func (c *DedupCheck) OK() bool {
	return c.Missing == 0 && c.Repeated == 0 && c.Unknown == 0 && c.Bad == 0 && c.Inconsistent == 0
}

// RunDedup generates the dataset of c into dir, measures the one-goroutine
// scan, then deduplicates each format with a fresh database and checks
// the outputs. logf, if set, reports progress.
func RunDedup(ctx context.Context, c DedupCase, dir string, seed uint64, logf func(string, ...any)) (*DedupResult, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("bench: dedup: %w", err)
	}
	defer os.RemoveAll(dir)
	res := &DedupResult{Case: c, Vocabulary: dedupVocab, GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU()}
	logf("dedup n=%d: generating %s", c.Records, strings.Join(DedupFormats, ", "))
	start := time.Now()
	ds, err := GenerateDedup(ctx, filepath.Join(dir, "input"), c.Records, c.DocBytes, c.RowGroupRows, c.Threshold, seed)
	if err != nil {
		return nil, err
	}
	res.GenerateSeconds = time.Since(start).Seconds()
	res.MeanTextBytes = float64(ds.TextBytes) / float64(ds.N)
	res.MeanWords = float64(ds.Words) / float64(ds.N)
	res.InputBytes, res.ParquetRowGroups, res.Truth = ds.Bytes, ds.ParquetRowGroups, ds.Truth
	tr := ds.Truth
	logf("dedup n=%d: generated in %.1f s (%.0f bytes, %.0f words per text; %d planted clusters, %d copies of which %d exact; %d true pairs at J ≥ %.2f)",
		c.Records, res.GenerateSeconds, res.MeanTextBytes, res.MeanWords, tr.Clusters, tr.Copies, tr.ExactCopies, tr.True, c.Threshold)
	res.ScanGBs = scanSpeed()
	logf("dedup: one-goroutine scan %.1f GB/s", res.ScanGBs)
	res.PeakRSSReset = true
	type variant struct {
		format string
		approx float64
	}
	var variants []variant
	for _, f := range DedupFormats {
		variants = append(variants, variant{f, 0})
	}
	if c.ApproxRecall > 0 {
		variants = append(variants, variant{"jsonl", c.ApproxRecall})
	}
	for round := range max(c.Rounds, 1) {
		for _, v := range variants {
			f := v.format
			run, reset, err := ds.run(ctx, f, dir, c.Threshold, v.approx)
			if err != nil {
				return res, err
			}
			run.Round = round + 1
			res.PeakRSSReset = res.PeakRSSReset && reset
			res.Runs = append(res.Runs, *run)
			ck := &run.Check
			logf("dedup %-9s round %d: %.1f s (load %.1f, pairs %.1f, write %.1f): %.0f records/s, %.0f per core, %.1f CPU s; peak RSS %.0f MiB; %.0f B/record on disk; kept %d removed %d; recall %.4f (%d/%d), precision %.4f; output ok %v",
				run.Label(), run.Round, run.Seconds, run.Summary.LoadSeconds, run.Summary.PairsSeconds, run.Summary.WriteSeconds, run.RecordsPerSec, run.RecordsPerSecPerCore, run.CPUSeconds,
				float64(run.PeakRSS)/(1<<20), run.DBBytesPerRecord, ck.Kept, ck.Removed, ck.Recall, ck.Recalled, ck.TruePairs, ck.Precision, ck.OK())
		}
	}
	return res, nil
}

// scanSpeed is the one-goroutine scan's speed over 1 M random 512-bit
// fingerprints in GB/s (p50 of 20 scans, CPU caches evicted before each).
func scanSpeed() float64 {
	const n, words = 1 << 20, 8
	rng := rand.New(rand.NewPCG(11, 13))
	flat := make([]uint64, n*words)
	for i := range flat {
		flat[i] = rng.Uint64()
	}
	var ev evictor
	var scans []time.Duration
	for range 20 {
		q := flat[rng.IntN(n)*words:][:words]
		ev.evict()
		start := time.Now()
		bitvec.Scan(flat, words, q, 128, func(int, int) {})
		scans = append(scans, time.Since(start))
	}
	return float64(len(flat)*8) / Summarize(scans).P50.Seconds() / 1e9
}

// resetPeakRSS resets the process's VmHWM to its current RSS (Linux ≥ 4.0).
func resetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// processCPU is the user and system time of this process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// run deduplicates the dataset's input of format f as `fpdb dedup` does
// (db.Open with BulkLoad and a 64 MiB memtable, synced; dedup.Run with the
// id field "id"; Close) in a child process (RunDedupChild), so that its time,
// CPU and peak RSS are the run's alone, not those of the bench's dataset
// and ground truth; then it checks the outputs. reset tells whether the
// child could reset its peak RSS.
func (ds *DedupDataset) run(ctx context.Context, f, dir string, threshold, approx float64) (_ *DedupRun, reset bool, err error) {
	work := filepath.Join(dir, "db-"+strings.ReplaceAll(f, ".", "-"))
	kept, removed := filepath.Join(dir, "kept."+f), filepath.Join(dir, "removed."+f)
	for _, p := range []string{work, kept, removed} {
		if err := os.RemoveAll(p); err != nil {
			return nil, false, fmt.Errorf("bench: dedup: %w", err)
		}
	}
	defer func() {
		for _, p := range []string{work, kept, removed} {
			if rerr := os.RemoveAll(p); err == nil && rerr != nil {
				err = fmt.Errorf("bench: dedup: %w", rerr)
			}
		}
	}()
	spec := dedupChildSpec{Format: f, Input: ds.Files[f], Work: work, Kept: kept, Removed: removed, Threshold: threshold, Approx: approx}
	r, reset, err := runDedupChild(ctx, spec)
	if err != nil {
		return nil, false, fmt.Errorf("bench: dedup %s: %w", f, err)
	}
	r.RecordsPerSec = float64(ds.N) / r.Seconds
	r.RecordsPerSecPerCore = r.RecordsPerSec / float64(runtime.GOMAXPROCS(0))
	r.DBBytes = DirSize(work)
	r.DBBytesPerRecord = float64(r.DBBytes) / float64(ds.N)
	r.OutputBytes = DirSize(kept) + DirSize(removed)
	ck, err := ds.check(kept, removed, f, threshold)
	if err != nil {
		return nil, reset, fmt.Errorf("bench: dedup %s: checking the output: %w", f, err)
	}
	r.Check = *ck
	return r, reset, nil
}

// DedupChildEnv is the environment variable that makes a bench binary a
// dedup run's child process (RunDedupChild): it holds the run's
// dedupChildSpec as JSON.
const DedupChildEnv = "FPDB_BENCH_DEDUP_CHILD"

// dedupChildSpec is what a dedup child process runs.
type dedupChildSpec struct {
	Format, Input, Work, Kept, Removed string
	Threshold                          float64
	// Approx, when above 0, asks for an approximate pairs plan of that
	// least expected recall.
	Approx float64
}

// dedupChildResult is what a dedup child process prints.
type dedupChildResult struct {
	Run   *DedupRun `json:"run"`
	Reset bool      `json:"reset"`
	Err   string    `json:"err,omitempty"`
}

// runDedupChild runs the bench's own binary as a dedup child with spec
// and returns what it measured.
func runDedupChild(ctx context.Context, spec dedupChildSpec) (*DedupRun, bool, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, false, err
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, false, err
	}
	cmd := exec.CommandContext(ctx, exe)
	// The child runs on as many cores as the bench (GOMAXPROCS may have
	// been set in code, as go test -cpu does).
	cmd.Env = append(os.Environ(), DedupChildEnv+"="+string(js), "GOMAXPROCS="+strconv.Itoa(runtime.GOMAXPROCS(0)))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, false, fmt.Errorf("child process: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var res dedupChildResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return nil, false, fmt.Errorf("child process output: %w: %q", err, stdout.Bytes())
	}
	if res.Err != "" {
		return nil, false, errors.New(res.Err)
	}
	if res.Run == nil {
		return nil, false, errors.New("child process output: no run")
	}
	return res.Run, res.Reset, nil
}

// RunDedupChild makes the process a dedup run's child when DedupChildEnv
// is set: it runs the dedup it names, prints the measurements as JSON on
// standard output and exits. Otherwise it returns at once. The bench's
// command and its tests' TestMain call it first thing.
func RunDedupChild() {
	js, ok := os.LookupEnv(DedupChildEnv)
	if !ok {
		return
	}
	var res dedupChildResult
	var spec dedupChildSpec
	if err := json.Unmarshal([]byte(js), &spec); err != nil {
		res.Err = fmt.Sprintf("%s: %v", DedupChildEnv, err)
	} else {
		res.Run, res.Reset, err = measureDedup(context.Background(), spec)
		if err != nil {
			res.Err = err.Error()
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// measureDedup is the measured part of a run, in the child process.
func measureDedup(ctx context.Context, spec dedupChildSpec) (_ *DedupRun, reset bool, err error) {
	runtime.GC()
	debug.FreeOSMemory()
	reset = resetPeakRSS() == nil
	r := &DedupRun{Format: spec.Format, Approx: spec.Approx, StartRSS: procKB("VmRSS")}
	var plan db.Plan
	if spec.Approx > 0 {
		plan = db.Plan{Kind: db.PlanApprox, MinRecall: spec.Approx}
	}
	cpu0 := processCPU()
	t0 := time.Now()
	d, err := db.Open(spec.Work, &db.Options{BulkLoad: true, MemTableSize: 64 << 20})
	if err != nil {
		return nil, reset, err
	}
	t1 := time.Now()
	sum, err := dedup.Run(ctx, d, dedup.Options{
		LoadOptions: dedup.LoadOptions{RecordOptions: dedup.RecordOptions{IDField: "id"}, Inputs: []string{spec.Input}, Progress: func(p dedup.Progress) {
			switch {
			case p.Phase == "pairs" && r.LoadPeakRSS == 0:
				r.LoadPeakRSS = PeakRSS()
				r.LoadCPUSeconds = (processCPU() - cpu0).Seconds()
			case p.Phase == "write" && r.PairsPeakRSS == 0:
				r.PairsPeakRSS = PeakRSS()
				r.PairsCPUSeconds = (processCPU() - cpu0).Seconds() - r.LoadCPUSeconds
			}
		}},
		Threshold: spec.Threshold,
		Out:       spec.Kept,
		Removed:   spec.Removed,
		Plan:      plan,
	})
	t2 := time.Now()
	cerr := d.CloseUnflushed() // as fpdb dedup closes its work database before removing it
	t3 := time.Now()
	if err != nil {
		return nil, reset, err
	}
	if cerr != nil {
		return nil, reset, fmt.Errorf("close: %w", cerr)
	}
	r.CPUSeconds = (processCPU() - cpu0).Seconds()
	// VmHWM never decreases, but the kernel's counters are read
	// approximately (per-CPU): later reads can come out a few pages lower.
	r.PairsPeakRSS = max(r.PairsPeakRSS, r.LoadPeakRSS)
	r.PeakRSS = max(PeakRSS(), r.PairsPeakRSS)
	r.OpenSeconds, r.RunSeconds, r.CloseSeconds, r.Seconds = t1.Sub(t0).Seconds(), t2.Sub(t1).Seconds(), t3.Sub(t2).Seconds(), t3.Sub(t0).Seconds()
	r.Summary = sum
	return r, reset, nil
}

// dedupOut is an output record's added fields.
type dedupOut struct {
	pos, kept int // positions; kept -1 when none
	cluster   int64
	sim       float64
	err       string
}

// check reads both outputs back and checks them against the dataset.
func (ds *DedupDataset) check(kept, removed, f string, threshold float64) (*DedupCheck, error) {
	ck := &DedupCheck{Bands: dedupBands(threshold)}
	n := ds.N
	count := make([]uint8, n)
	cluster := make([]int64, n)
	keptOf := make([]int32, n)
	sim := make([]float32, n)
	inKept := make([]bool, n)
	read := func(path string, isKept bool) error {
		add := func(o dedupOut) {
			if o.pos < 0 {
				ck.Unknown++
				return
			}
			if isKept {
				ck.Kept++
			} else {
				ck.Removed++
			}
			if count[o.pos] < 255 {
				count[o.pos]++
			}
			if count[o.pos] > 1 {
				return
			}
			cluster[o.pos], keptOf[o.pos], sim[o.pos], inKept[o.pos] = o.cluster, int32(o.kept), float32(o.sim), isKept
			switch {
			case o.cluster < 0:
				ck.Bad++
			case o.err != "",
				isKept && o.kept != o.pos,
				!isKept && (o.kept == o.pos || o.kept < 0 || o.cluster == 0):
				ck.Inconsistent++
			}
		}
		if f == "parquet" {
			return readParquetOutput(path, n, add)
		}
		c, err := readJSONLOutput(path, n, add)
		if strings.HasSuffix(f, ".zst") {
			if ck.Compressed == nil {
				ck.Compressed = &c
			} else {
				*ck.Compressed = *ck.Compressed && c
			}
		}
		return err
	}
	if err := read(kept, true); err != nil {
		return nil, err
	}
	if err := read(removed, false); err != nil {
		return nil, err
	}
	byCluster := map[int64][]int32{}
	for p := range n {
		switch {
		case count[p] == 0:
			ck.Missing++
			continue
		case count[p] > 1:
			ck.Repeated++
		}
		if cluster[p] > 0 {
			byCluster[cluster[p]] = append(byCluster[cluster[p]], int32(p))
		}
	}
	ck.Clusters = len(byCluster)
	for _, ms := range byCluster {
		ck.Largest = max(ck.Largest, len(ms))
		k := keptOf[ms[0]]
		for _, p := range ms {
			if keptOf[p] != k {
				ck.Inconsistent++
			}
		}
		if k < 0 || !inKept[k] || cluster[k] != cluster[ms[0]] {
			ck.Inconsistent++
		}
	}
	// Recall over the planted pairs.
	for key, j := range ds.pairs {
		if j < threshold {
			continue
		}
		a, b := int(key>>32), int(uint32(key))
		ck.TruePairs++
		bi := bandOf(ck.Bands, j)
		ck.Bands[bi].Pairs++
		if cluster[a] > 0 && cluster[a] == cluster[b] && count[a] > 0 && count[b] > 0 {
			ck.Recalled++
			ck.Bands[bi].Recalled++
		}
	}
	ck.Recall = ratio(ck.Recalled, ck.TruePairs)
	// Precision of the (removed, kept) pairs.
	var errSum float64
	for p := range n {
		if count[p] == 0 || inKept[p] || cluster[p] <= 0 || keptOf[p] < 0 {
			continue
		}
		j, err := ds.resemblance(p, int(keptOf[p]))
		if err != nil {
			return nil, err
		}
		ck.RemovedPairs++
		if j >= threshold-0.1 {
			ck.RemovedNear++
		}
		if j >= threshold {
			ck.RemovedAbove++
		}
		e := math.Abs(float64(sim[p]) - j)
		errSum += e
		ck.MaxSimError = max(ck.MaxSimError, e)
	}
	ck.Precision = ratio(ck.RemovedNear, ck.RemovedPairs)
	ck.PrecisionStrict = ratio(ck.RemovedAbove, ck.RemovedPairs)
	if ck.RemovedPairs > 0 {
		ck.SimError = errSum / float64(ck.RemovedPairs)
	}
	// Every pair of each output cluster.
	for _, ms := range byCluster {
		if len(ms) > dedupMaxClusterPairs {
			ck.Unchecked += len(ms)
			continue
		}
		for a := range ms {
			for b := a + 1; b < len(ms); b++ {
				pa, pb := int(ms[a]), int(ms[b])
				if ga, gb := ds.specs[pa].group, ds.specs[pb].group; ga != gb || int(ga) >= ds.clusters {
					ck.CrossPairs++
				}
				j, err := ds.resemblance(pa, pb)
				if err != nil {
					return nil, err
				}
				ck.ClusterPairs++
				if j >= threshold-0.1 {
					ck.ClusterPairsNear++
				}
			}
		}
	}
	return ck, nil
}

// ratio is a / b, or 1 when b = 0 (nothing to find, nothing wrong).
func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// zstdMagic starts a Zstandard frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// readJSONLOutput reads a JSON Lines output (Zstandard-compressed or not:
// told by its first bytes) and passes each record's added fields to fn;
// compressed tells which it was.
func readJSONLOutput(path string, n int, fn func(dedupOut)) (compressed bool, err error) {
	fh, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer fh.Close()
	br := bufio.NewReaderSize(fh, 1<<20)
	var r io.Reader = br
	if head, _ := br.Peek(4); bytes.Equal(head, zstdMagic) {
		compressed = true
		zr, err := zstd.NewReader(br)
		if err != nil {
			return true, err
		}
		defer zr.Close()
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var rec struct {
		ID      string  `json:"id"`
		Cluster *int64  `json:"fpdb_cluster"`
		Kept    string  `json:"fpdb_kept"`
		Sim     float64 `json:"fpdb_similarity"`
		Err     string  `json:"fpdb_error"`
	}
	line := 0
	for sc.Scan() {
		line++
		rec.ID, rec.Cluster, rec.Kept, rec.Sim, rec.Err = "", nil, "", 0, ""
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return compressed, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if rec.Cluster == nil {
			return compressed, fmt.Errorf("%s:%d: no %s", path, line, dedup.FieldCluster)
		}
		fn(dedupOut{pos: dedupPos(rec.ID, n), kept: dedupPos(rec.Kept, n), cluster: *rec.Cluster, sim: rec.Sim, err: rec.Err})
	}
	return compressed, sc.Err()
}

// readParquetOutput reads a Parquet output's id and added columns, row
// group by row group, and passes each record's added fields to fn.
func readParquetOutput(path string, n int, fn func(dedupOut)) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(fh, fi.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	names := []string{"id", dedup.FieldCluster, dedup.FieldKept, dedup.FieldSimilarity, dedup.FieldError}
	cols := make([]int, len(names))
	for i, name := range names {
		leaf, ok := pf.Schema().Lookup(name)
		if !ok {
			return fmt.Errorf("%s: no column %q", path, name)
		}
		cols[i] = leaf.ColumnIndex
	}
	for gi, rg := range pf.RowGroups() {
		rows := int(rg.NumRows())
		vals := make([][]parquet.Value, len(cols))
		for i, c := range cols {
			v, err := readColumn(rg.ColumnChunks()[c])
			if err != nil {
				return fmt.Errorf("%s: row group %d, column %s: %w", path, gi, names[i], err)
			}
			if len(v) != rows {
				return fmt.Errorf("%s: row group %d, column %s: %d values for %d rows", path, gi, names[i], len(v), rows)
			}
			vals[i] = v
		}
		for r := range rows {
			fn(dedupOut{pos: dedupPos(vals[0][r].String(), n), cluster: vals[1][r].Int64(), kept: dedupPos(vals[2][r].String(), n), sim: vals[3][r].Double(), err: vals[4][r].String()})
		}
	}
	return nil
}

// readColumn returns the values of a column chunk (byte arrays copied).
func readColumn(cc parquet.ColumnChunk) ([]parquet.Value, error) {
	pages := cc.Pages()
	defer pages.Close()
	var out []parquet.Value
	buf := make([]parquet.Value, 1024)
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		vr := p.Values()
		for {
			k, err := vr.ReadValues(buf)
			for _, v := range buf[:k] {
				out = append(out, v.Clone())
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				parquet.Release(p)
				return nil, err
			}
		}
		parquet.Release(p)
	}
}

// runDedup is the dedup section.
func (s *Suite) runDedup(ctx context.Context) error {
	c := s.Cfg.Dedup
	if c.Records == 0 {
		return nil
	}
	res, err := RunDedup(ctx, c, filepath.Join(s.Cfg.TmpDir, "dedup"), s.Cfg.Seed+900, s.logf)
	s.rep.Dedup = res
	if err != nil {
		return err
	}
	if !res.PeakRSSReset {
		s.note("dedup: the peak RSS could not be reset before each run (/proc/self/clear_refs): each run's peak RSS is the high-water mark of the whole process so far")
	}
	for _, r := range res.Runs {
		if ck := r.Check; ck.Compressed != nil && !*ck.Compressed {
			s.note("dedup: the outputs of the %s run (kept.%s, removed.%s) are not Zstandard-compressed although their names end in .zst", r.Format, r.Format, r.Format)
		}
	}
	return nil
}

// Label names the run's format and, for an approximate plan, its recall.
func (run *DedupRun) Label() string {
	if run.Approx > 0 {
		return fmt.Sprintf("%s, approx %v", run.Format, run.Approx)
	}
	return run.Format
}

// Best returns the fastest run of format f with the default (exact) plan,
// or nil.
func (r *DedupResult) Best(f string) *DedupRun { return r.best(f, 0) }

// best returns the fastest run of format f with approximate plan approx
// (0: the exact plan), or nil.
func (r *DedupResult) best(f string, approx float64) *DedupRun {
	var best *DedupRun
	for i := range r.Runs {
		if run := &r.Runs[i]; run.Format == f && run.Approx == approx && (best == nil || run.Seconds < best.Seconds) {
			best = run
		}
	}
	return best
}

// formatRatios returns the least and the greatest ratio of a format's
// records/s (its fastest round) to JSON Lines' (its fastest round), and
// those formats.
func (r *DedupResult) formatRatios() (lo, hi float64, loF, hiF string) {
	base := r.Best("jsonl")
	if base == nil {
		return 0, 0, "", ""
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, f := range DedupFormats {
		run := r.Best(f)
		if run == nil {
			continue
		}
		x := run.RecordsPerSec / base.RecordsPerSec
		if x < lo {
			lo, loF = x, f
		}
		if x > hi {
			hi, hiF = x, f
		}
	}
	return lo, hi, loF, hiF
}

// dedupTargets are the dedup section's targets.
func dedupTargets(rep *Report) []Target {
	status := func(ok bool) string {
		if ok {
			return "pass"
		}
		return "fail"
	}
	r := rep.Dedup
	n := "1M"
	if r != nil {
		n = fmtN(r.Case.Records)
	}
	ts := []Target{
		{Target: fmt.Sprintf("dedup end to end (dedup.Run: load, pairs, write; db.Open and Close included), %s records of 2 KB, JSONL: ≥ 20 000 records/s per core (issue target at 1M)", n)},
		{Target: fmt.Sprintf("dedup of %s records: peak RSS ≤ 1 GB (10^9 bytes) in every format", n)},
		{Target: fmt.Sprintf("dedup of %s records: recall ≥ 0.99 of the planted pairs with exact Jaccard ≥ the threshold in every format, every record written once", n)},
		{Target: fmt.Sprintf("dedup of %s records: JSONL.zst and Parquet throughput within 20 %% of JSONL's", n)},
	}
	if r != nil && r.Case.ApproxRecall > 0 {
		ts = append(ts, Target{Target: fmt.Sprintf("dedup end to end of %s records, JSONL, with an approximate pairs plan (fpdb dedup --plan approx --recall %v): ≥ 20 000 records/s per core and recall ≥ 0.99 of the planted pairs with exact Jaccard ≥ the threshold, every record written once", n, r.Case.ApproxRecall)})
	}
	if r == nil || len(r.Runs) == 0 {
		for i := range ts {
			ts[i].Measured, ts[i].Status = "—", "not measured"
		}
		return ts
	}
	jsonl := r.Best("jsonl")
	if jsonl != nil {
		ts[0].Measured = fmt.Sprintf("%.0f records/s per core (%.0f records/s in %.1f s / GOMAXPROCS %d; NumCPU %d; %.0f records per CPU second; fastest of %d rounds); one-goroutine scan %.1f GB/s",
			jsonl.RecordsPerSecPerCore, jsonl.RecordsPerSec, jsonl.Seconds, r.GOMAXPROCS, r.NumCPU, float64(r.Case.Records)/jsonl.CPUSeconds, max(r.Case.Rounds, 1), r.ScanGBs)
		ts[0].Status = status(jsonl.RecordsPerSecPerCore >= 20000)
	} else {
		ts[0].Measured, ts[0].Status = "—", "not measured"
	}
	var peak int64
	var peakF string
	for _, run := range r.Runs {
		if run.PeakRSS > peak {
			peak, peakF = run.PeakRSS, run.Label()
		}
	}
	ts[1].Measured = fmt.Sprintf("%.0f MiB = %.3f GB (%s; VmHWM of the run's process", float64(peak)/(1<<20), float64(peak)/1e9, peakF)
	if r.PeakRSSReset {
		ts[1].Measured += ", reset before each run)"
	} else {
		ts[1].Measured += " so far: it could not be reset)"
	}
	ts[1].Status = status(peak > 0 && peak <= 1e9)
	minRecall, ok := 1.0, true
	var parts []string
	for _, f := range DedupFormats {
		// The worst round of each format.
		var worst *DedupRun
		for i := range r.Runs {
			run := &r.Runs[i]
			if run.Format == f && run.Approx == 0 && (worst == nil || !run.Check.OK() || run.Check.Recall < worst.Check.Recall) {
				worst = run
			}
		}
		if worst == nil {
			continue
		}
		ck := worst.Check
		minRecall = min(minRecall, ck.Recall)
		ok = ok && ck.OK()
		parts = append(parts, fmt.Sprintf("%s %.4f (%d of %d)", f, ck.Recall, ck.Recalled, ck.TruePairs))
		if !ck.OK() {
			parts[len(parts)-1] += fmt.Sprintf(" output wrong in round %d: %d missing, %d repeated, %d unknown, %d bad, %d inconsistent", worst.Round, ck.Missing, ck.Repeated, ck.Unknown, ck.Bad, ck.Inconsistent)
		}
	}
	ts[2].Measured = "recall " + strings.Join(parts, ", ")
	if r.Case.Rounds > 1 {
		ts[2].Measured += " (the worst round of each)"
	}
	ts[2].Status = status(ok && minRecall >= 0.99)
	lo, hi, loF, hiF := r.formatRatios()
	if jsonl == nil || loF == hiF {
		ts[3].Measured, ts[3].Status = "—", "not measured"
	} else {
		var rs, cpu []string
		for _, f := range DedupFormats {
			if run := r.Best(f); run != nil {
				rs = append(rs, fmt.Sprintf("%s %.0f", f, run.RecordsPerSec))
				cpu = append(cpu, fmt.Sprintf("%s %.0f", f, float64(r.Case.Records)/run.CPUSeconds))
			}
		}
		ts[3].Measured = fmt.Sprintf("records/s (fastest of %d rounds): %s; slowest %s at %.2fx JSONL's, fastest %s at %.2fx; records per CPU second of the same runs: %s",
			max(r.Case.Rounds, 1), strings.Join(rs, ", "), loF, lo, hiF, hi, strings.Join(cpu, ", "))
		ts[3].Status = status(lo >= 0.8 && hi <= 1.2)
	}
	if len(ts) > 4 {
		best := r.best("jsonl", r.Case.ApproxRecall)
		var worst *DedupRun
		for i := range r.Runs {
			if run := &r.Runs[i]; run.Approx > 0 && (worst == nil || !run.Check.OK() || run.Check.Recall < worst.Check.Recall) {
				worst = run
			}
		}
		if best == nil || worst == nil {
			ts[4].Measured, ts[4].Status = "—", "not measured"
		} else {
			ck := worst.Check
			ts[4].Measured = fmt.Sprintf("%.0f records/s per core (%.0f records/s in %.1f s, pairs %.1f s, plan %s with expected recall %.4f at the threshold; fastest of %d rounds); recall %.4f (%d of %d; the worst round), output ok %v; exact plan: %s",
				best.RecordsPerSecPerCore, best.RecordsPerSec, best.Seconds, best.Summary.PairsSeconds, best.Summary.Plan, best.Summary.Recall, max(r.Case.Rounds, 1), ck.Recall, ck.Recalled, ck.TruePairs, ck.OK(), ts[0].Measured)
			ts[4].Status = status(best.RecordsPerSecPerCore >= 20000 && ck.Recall >= 0.99 && ck.OK())
		}
	}
	return ts
}

// dedupMarkdown renders the dedup section.
func dedupMarkdown(b *strings.Builder, r *DedupResult) {
	c, t := r.Case, r.Truth
	fmt.Fprintf(b, "## Dedup end to end (`dedup.Run`, %s records)\n\n", fmtN(c.Records))
	fmt.Fprintf(b, "One generated dataset written three ways: JSON Lines (%.0f MB), JSON Lines with zstd (%.0f MB) and Parquet (%.0f MB, %d row groups, zstd pages). %d records `{\"id\": \"doc0000123\", \"text\": …}`, texts of %.0f bytes and %.0f words on average drawn from a Zipf vocabulary of %d words (exponent 1.0). Planted clusters: %d of 2 to 5 records (an original and copies, each exact or with 0.5–2.5 %% of its words substituted, inserted or deleted), shuffled through the file with each original before its copies: %d copies (%.1f %% of the records), %d of them exact. Generated in %.0f s; the ground truth in %.1f s.\n\n",
		float64(r.InputBytes["jsonl"])/1e6, float64(r.InputBytes["jsonl.zst"])/1e6, float64(r.InputBytes["parquet"])/1e6, r.ParquetRowGroups,
		c.Records, r.MeanTextBytes, r.MeanWords, r.Vocabulary, t.Clusters, t.Copies, 100*float64(t.Copies)/float64(max(c.Records, 1)), t.ExactCopies, r.GenerateSeconds, t.Seconds)
	fmt.Fprintf(b, "Ground truth: the exact Jaccard resemblance J of the 4-word shingle sets (fpdb's default shingle width, words split and normalized by internal/normalize as fpdb does) of every pair of records of one planted cluster: %d pairs, of which %d have J ≥ %.2f (the true pairs; %d of them an original and a copy). A copy resembles its original at J ≥ %.3f (mean %.3f). Pairs of records of different planted clusters are not enumerated: random Zipf texts share few shingles (J near 0); any such pair the output puts in one cluster is counted and its J computed from the texts.\n\n",
		t.Pairs, t.True, c.Threshold, t.TrueOriginal, t.MinCopy, t.MeanCopy)
	fmt.Fprintf(b, "Each run: a child process of the bench (its own binary, so that the bench's dataset and ground truth weigh neither on the run's memory nor on its garbage collector) opens a fresh `db.Open(dir, &db.Options{BulkLoad: true, MemTableSize: 64 << 20})` (what `fpdb dedup` opens; writes synced), `dedup.Run` with threshold %.2f, id field `id`, keep `first`, kept and removed outputs in the input's format, then `CloseUnflushed` (fpdb dedup's work database is removed at the end: the postings of its bulk load are not written). Wall time includes Open and Close; per core = records/s ÷ GOMAXPROCS (%d; NumCPU %d); CPU s is the child process's user + system time over the run (by phase: read when the next phase begins; the write phase's includes Close). The machine's one-goroutine scan (bitvec.Scan over 1 M random 512-bit fingerprints, caches evicted) runs at %.1f GB/s. Peak RSS is the child process's VmHWM, %s, read when the pairs phase begins (the load's peak), when the write phase begins and at the end; the RSS at the start is the child's before it opens the database.\n\n",
		c.Threshold, r.GOMAXPROCS, r.NumCPU, r.ScanGBs, map[bool]string{true: "reset (/proc/self/clear_refs) just before it", false: "not reset (the child's high-water mark from its start)"}[r.PeakRSSReset])
	fmt.Fprintf(b, "Each format ran %d time(s), the formats interleaved (round 1: every format, then round 2, …); the targets take each format's fastest round for throughput, the largest peak RSS and the worst check of all rounds.", max(c.Rounds, 1))
	if c.ApproxRecall > 0 {
		fmt.Fprintf(b, " Each round also ran the JSON Lines input with an approximate pairs plan (`dedup.Options.Plan` = PlanApprox with MinRecall %v: `fpdb dedup --plan approx --recall %v`), labelled *jsonl, approx*: the throughput, recall and format targets leave it out (it has a target of its own), the peak RSS target counts it.", c.ApproxRecall, c.ApproxRecall)
	}
	b.WriteString("\n\n")
	b.WriteString("| format | round | wall s | records/s | per core | CPU s | records per CPU s | load s (CPU s) | pairs s (CPU s) | write s (CPU s) | open + close s | peak RSS MiB: load / + pairs / run (at start) | DB B/record | output MB |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	mib := func(x int64) float64 { return float64(x) / (1 << 20) }
	for _, run := range r.Runs {
		fmt.Fprintf(b, "| %s | %d | %.1f | %.0f | %.0f | %.1f | %.0f | %.1f (%.1f) | %.1f (%.1f) | %.1f (%.1f) | %.2f | %.0f / %.0f / %.0f (%.0f) | %.0f | %.0f |\n", run.Label(), run.Round, run.Seconds, run.RecordsPerSec, run.RecordsPerSecPerCore,
			run.CPUSeconds, float64(c.Records)/run.CPUSeconds, run.Summary.LoadSeconds, run.LoadCPUSeconds, run.Summary.PairsSeconds, run.PairsCPUSeconds,
			run.Summary.WriteSeconds, run.CPUSeconds-run.LoadCPUSeconds-run.PairsCPUSeconds, run.OpenSeconds+run.CloseSeconds,
			mib(run.LoadPeakRSS), mib(run.PairsPeakRSS), mib(run.PeakRSS), mib(run.StartRSS), run.DBBytesPerRecord, float64(run.OutputBytes)/1e6)
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "Outputs read back (JSON Lines: `fpdb_cluster`, `fpdb_kept`, `fpdb_similarity`, `fpdb_error` of each line; Parquet: those columns read with parquet-go). **Recall** = true pairs (J ≥ %.2f) whose two records have the same `fpdb_cluster` > 0 / true pairs. **Precision** = removed records whose exact J with the record kept for them (`fpdb_kept`) is ≥ %.2f (threshold − 0.1; estimates scatter around J) / removed records; strict: J ≥ %.2f. **Cluster pairs**: every pair of records of one output cluster (clusters of at most %d records), and the share with J ≥ %.2f (under ClusterCenters two removed records need not resemble each other at the threshold). *sim. error*: mean and largest |`fpdb_similarity` − J| over the removed records. *output ok*: every input record in exactly one output, none bad, the added fields consistent with the file and the cluster.\n\n",
		c.Threshold, c.Threshold-0.1, c.Threshold, dedupMaxClusterPairs, c.Threshold-0.1)
	b.WriteString("| format | round | kept | removed | clusters (largest) | recall | precision (strict) | cluster pairs with J ≥ t−0.1 | pairs across planted clusters | sim. error mean / max | output ok |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, run := range r.Runs {
		ck := run.Check
		okText := "yes"
		if !ck.OK() {
			okText = fmt.Sprintf("**no**: %d missing, %d repeated, %d unknown, %d bad, %d inconsistent", ck.Missing, ck.Repeated, ck.Unknown, ck.Bad, ck.Inconsistent)
		}
		if ck.Compressed != nil && !*ck.Compressed {
			okText += "; outputs named .zst are not zstd-compressed"
		}
		fmt.Fprintf(b, "| %s | %d | %d | %d | %d (%d) | %.4f (%d / %d) | %.4f (%.4f) of %d | %d / %d | %d | %.3f / %.3f | %s |\n", run.Label(), run.Round, ck.Kept, ck.Removed, ck.Clusters, ck.Largest,
			ck.Recall, ck.Recalled, ck.TruePairs, ck.Precision, ck.PrecisionStrict, ck.RemovedPairs, ck.ClusterPairsNear, ck.ClusterPairs, ck.CrossPairs, ck.SimError, ck.MaxSimError, okText)
	}
	b.WriteString("\nRecall by exact resemblance of the true pairs:\n\n| format | round |")
	if len(r.Runs) > 0 {
		for _, bd := range r.Runs[0].Check.Bands {
			fmt.Fprintf(b, " %s |", bd)
		}
		b.WriteString("\n| --- | --- |" + strings.Repeat(" --- |", len(r.Runs[0].Check.Bands)) + "\n")
		for _, run := range r.Runs {
			fmt.Fprintf(b, "| %s | %d |", run.Label(), run.Round)
			for _, bd := range run.Check.Bands {
				fmt.Fprintf(b, " %.4f (%d / %d) |", ratio(bd.Recalled, bd.Pairs), bd.Recalled, bd.Pairs)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
	if slices.ContainsFunc(r.Runs, func(run DedupRun) bool { return run.Check.Unchecked > 0 }) {
		b.WriteString("Some output clusters had more than 100 records: their pairs were not all checked (see the JSON report, `unchecked_members`).\n\n")
	}
}
