package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/fingerprint"
)

// IngestResult holds the ingest measurements.
type IngestResult struct {
	DocBytes float64 `json:"mean_doc_bytes"`
	// Fingerprinting on one goroutine (one core), k = 512.
	FingerprintDocsPerSec float64 `json:"fingerprint_docs_per_sec_per_core"`
	FingerprintMBPerSec   float64 `json:"fingerprint_mb_per_sec_per_core"`
	// FingerprintWallDocsPerSec is the same run per wall-clock second.
	FingerprintWallDocsPerSec float64 `json:"fingerprint_docs_per_wall_sec"`
	// db.Add of text documents, synced (default) and NoSync.
	SyncDocs           int     `json:"sync_docs"`
	SyncDocsPerSec     float64 `json:"add_synced_docs_per_sec"`
	BulkDocs           int     `json:"bulk_docs"`
	BulkDocsPerSec     float64 `json:"add_nosync_docs_per_sec"`
	BulkDiskBytes      int64   `json:"add_nosync_disk_bytes"`
	BulkBytesPerDoc    float64 `json:"add_nosync_bytes_per_doc"`
	BatchDocsPerSec    float64 `json:"add_batch_docs_per_sec"`
	EachDocsPerSec     float64 `json:"add_each_checked_docs_per_sec"`
	AddFPs             int     `json:"add_fingerprints"`
	AddFPPerSec        float64 `json:"add_fingerprint_nosync_per_sec"`
	BatchFPs           int     `json:"add_batch_fingerprints"`
	BatchFPPerSec      float64 `json:"add_batch_fingerprints_per_sec"`
	DBDiskBytes        int64   `json:"db_disk_bytes"`
	DBBytesPerDoc      float64 `json:"db_bytes_per_doc"`
	StageAddDocs       int     `json:"stage_add_docs"`
	StageAddFPPerSec   float64 `json:"stage_add_fp_per_sec"`
	StageAddBytesPerFP float64 `json:"stage_add_bytes_per_fp"`
	PeakRSS            int64   `json:"peak_rss_bytes"`
}

// ZipfDocs returns n documents of about size bytes from one Zipf
// vocabulary (50 000 words, exponent 1.0).
func ZipfDocs(n, size int, seed uint64) [][]byte {
	z := NewZipf(50_000, 1.0, seed)
	docs := make([][]byte, n)
	for i := range docs {
		docs[i] = Render(z.Doc(size))
	}
	return docs
}

func (s *Suite) runIngest(ctx context.Context) error {
	c := s.Cfg
	res := &IngestResult{}
	s.rep.Ingest = res
	docs := ZipfDocs(2000, c.DocBytes, c.Seed+7)
	total := 0
	for _, d := range docs {
		total += len(d)
	}
	res.DocBytes = float64(total) / float64(len(docs))

	b, err := fingerprint.NewBuilder(fingerprint.DefaultParams())
	if err != nil {
		return err
	}
	var nDocs, nBytes int
	// Per core means per CPU second of the fingerprinting thread: on a
	// shared machine the wall clock also counts time the thread waited.
	runtime.LockOSThread()
	cpu0 := threadCPU()
	start := time.Now()
	for time.Since(start) < c.FingerprintTime {
		for _, d := range docs[:200] {
			if _, err := b.FromBytes(d); err != nil {
				return err
			}
			nDocs++
			nBytes += len(d)
		}
	}
	el := time.Since(start).Seconds()
	cpu := (threadCPU() - cpu0).Seconds()
	runtime.UnlockOSThread()
	if cpu <= 0 {
		cpu = el
	}
	res.FingerprintDocsPerSec = float64(nDocs) / cpu
	res.FingerprintMBPerSec = float64(nBytes) / cpu / 1e6
	res.FingerprintWallDocsPerSec = float64(nDocs) / el
	s.logf("fingerprint: %.0f docs/s per CPU second (%.0f per wall second), %.1f MB/s, one goroutine", res.FingerprintDocsPerSec, res.FingerprintWallDocsPerSec, res.FingerprintMBPerSec)

	// db.Add, synced.
	dir := filepath.Join(c.TmpDir, "ingest-sync")
	rate, _, err := addDocs(ctx, dir, &db.Options{}, docs, c.SyncDocs)
	if err != nil {
		return err
	}
	res.SyncDocs, res.SyncDocsPerSec = c.SyncDocs, rate
	s.logf("db.Add synced: %.0f docs/s", rate)

	dir = filepath.Join(c.TmpDir, "ingest-bulk")
	rate, size, err := addDocs(ctx, dir, &db.Options{NoSync: true}, docs, c.BulkDocs)
	if err != nil {
		return err
	}
	res.BulkDocs, res.BulkDocsPerSec, res.BulkDiskBytes = c.BulkDocs, rate, size
	res.BulkBytesPerDoc = float64(size) / float64(c.BulkDocs)
	s.logf("db.Add NoSync: %.0f docs/s, %.0f B/doc on disk", rate, res.BulkBytesPerDoc)

	// db.AddBatch of texts, batches of 1 000, synced per batch.
	rate, err = addBatchDocs(ctx, filepath.Join(c.TmpDir, "ingest-batch"), docs, c.BulkDocs)
	if err != nil {
		return err
	}
	res.BatchDocsPerSec = rate
	s.logf("db.AddBatch texts: %.0f docs/s", rate)

	// db.AddEach of texts, checked, batches of 256, synced per batch.
	rate, err = addEachDocs(ctx, filepath.Join(c.TmpDir, "ingest-each"), docs, c.BulkDocs)
	if err != nil {
		return err
	}
	res.EachDocsPerSec = rate
	s.logf("db.AddEach texts, checked: %.0f docs/s", rate)

	// Add of fingerprints one at a time, NoSync.
	fps := NewRandomWorkload(max(c.AddFPs, c.StageAddDocs), 512, 0, nil, c.Seed+8)
	nOne := min(c.AddFPs, c.AddFPsOne)
	dir = filepath.Join(c.TmpDir, "ingest-fp")
	_ = os.RemoveAll(dir)
	d, err := db.Open(dir, &db.Options{NoSync: true})
	if err != nil {
		return err
	}
	start = time.Now()
	for i := range nOne {
		if _, err := d.Add(ctx, db.Input{ID: fmt.Sprintf("fp%08d", i), Fingerprint: fps.Flat[i*8 : (i+1)*8]}, nil); err != nil {
			d.Close()
			return err
		}
	}
	el = time.Since(start).Seconds()
	if err := d.Close(); err != nil {
		return err
	}
	_ = os.RemoveAll(dir)
	res.AddFPs, res.AddFPPerSec = nOne, float64(nOne)/el
	s.logf("db.Add of a fingerprint NoSync: %.0f fp/s", res.AddFPPerSec)

	// AddBatch of fingerprints, batches of 10 000, synced per batch, with
	// BulkLoad and a 64 MiB memtable as `fpdb add --bulk`; the time includes
	// Close, which writes the deferred postings. Then db.Compact and the
	// size on disk.
	d, err = db.Open(dir, &db.Options{MemTableSize: 64 << 20, BulkLoad: true})
	if err != nil {
		return err
	}
	start = time.Now()
	const batch = 10_000
	for lo := 0; lo < c.AddFPs; lo += batch {
		hi := min(lo+batch, c.AddFPs)
		bd := make([]db.Input, 0, hi-lo)
		for i := lo; i < hi; i++ {
			bd = append(bd, db.Input{ID: fmt.Sprintf("fp%08d", i), Fingerprint: fps.Flat[i*8 : (i+1)*8]})
		}
		br, err := d.AddBatch(ctx, bd)
		if err != nil {
			d.Close()
			return err
		}
		if br.Stored != hi-lo {
			d.Close()
			return fmt.Errorf("bench: AddBatch stored %d of %d", br.Stored, hi-lo)
		}
	}
	if err := d.Close(); err != nil {
		return err
	}
	el = time.Since(start).Seconds()
	res.BatchFPs, res.BatchFPPerSec = c.AddFPs, float64(c.AddFPs)/el
	if d, err = db.Open(dir, nil); err != nil {
		return err
	}
	if _, err := d.Compact(ctx); err != nil {
		d.Close()
		return err
	}
	if err := d.Close(); err != nil {
		return err
	}
	res.DBDiskBytes = DirSize(dir)
	res.DBBytesPerDoc = float64(res.DBDiskBytes) / float64(c.AddFPs)
	_ = os.RemoveAll(dir)
	s.logf("db.AddBatch fingerprints: %.0f fp/s; %.0f B/doc on disk after db.Compact", res.BatchFPPerSec, res.DBBytesPerDoc)

	// index.Stage in batches of 1 000, NoSync, then Flush + Compact.
	layout, err := index.NewLayout(512, DefaultWidths(512))
	if err != nil {
		return err
	}
	st, err := BuildStore(ctx, filepath.Join(c.TmpDir, "ingest-stage"), layout, fps.Flat[:c.StageAddDocs*8], 1000)
	if err != nil {
		return err
	}
	res.StageAddDocs = c.StageAddDocs
	res.StageAddFPPerSec = st.Build.FPPerSec
	res.StageAddBytesPerFP = st.Build.BytesPerFP
	st.Close()
	s.logf("index.Stage batches of 1000: %.0f fp/s, %.0f B/fp after compaction", res.StageAddFPPerSec, res.StageAddBytesPerFP)
	res.PeakRSS = PeakRSS()
	return nil
}

// addDocs adds n documents (cycling through docs, each made unique by a
// random word prefix) with db.Add and returns docs/s and the directory's
// size after Close.
func addDocs(ctx context.Context, dir string, o *db.Options, docs [][]byte, n int) (float64, int64, error) {
	_ = os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, o)
	if err != nil {
		return 0, 0, err
	}
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	texts := make([][]byte, n)
	for i := range texts {
		texts[i] = append(fmt.Appendf(nil, "doc%d w%x ", i, rng.Uint64()), docs[i%len(docs)]...)
	}
	start := time.Now()
	for i, t := range texts {
		if _, err := d.Add(ctx, db.Input{ID: fmt.Sprintf("doc%08d", i), Text: t}, nil); err != nil {
			d.Close()
			return 0, 0, err
		}
	}
	el := time.Since(start).Seconds()
	if err := d.Close(); err != nil {
		return 0, 0, err
	}
	return float64(n) / el, DirSize(dir), nil
}

// addBatchDocs stores n texts with db.AddBatch in batches of 1 000 (synced
// per batch) and returns docs/s, fingerprinting included.
func addBatchDocs(ctx context.Context, dir string, docs [][]byte, n int) (float64, error) {
	return batchDocs(ctx, dir, docs, n, 1000, func(d *db.DB, batch []db.Input) (int, error) {
		br, err := d.AddBatch(ctx, batch)
		if err != nil {
			return 0, err
		}
		return len(br.Skipped), nil
	})
}

// addEachDocs stores n texts with db.AddEach in batches of 256, each
// checked at threshold 0.8 against the stored ones and those of its batch
// before it (synced per batch, as fpdb add writes a dataset's records),
// and returns docs/s, fingerprinting and checks included.
func addEachDocs(ctx context.Context, dir string, docs [][]byte, n int) (float64, error) {
	return batchDocs(ctx, dir, docs, n, 256, func(d *db.DB, batch []db.Input) (int, error) {
		res, err := d.AddEach(ctx, batch, &db.AddOptions{Threshold: 0.8})
		if err != nil {
			return 0, err
		}
		return len(res.Skipped), nil
	})
}

// batchDocs stores n texts (each a document of docs with a unique prefix)
// in batches of size with add, which returns the number of documents it
// skipped, and returns docs/s.
func batchDocs(ctx context.Context, dir string, docs [][]byte, n, size int, add func(*db.DB, []db.Input) (int, error)) (float64, error) {
	_ = os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, &db.Options{MemTableSize: 64 << 20}) // postings with every batch
	if err != nil {
		return 0, err
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(uint64(n), 2))
	all := make([]db.Input, n)
	for i := range all {
		all[i] = db.Input{ID: fmt.Sprintf("doc%08d", i), Text: append(fmt.Appendf(nil, "doc%d w%x ", i, rng.Uint64()), docs[i%len(docs)]...)}
	}
	start := time.Now()
	for lo := 0; lo < n; lo += size {
		skipped, err := add(d, all[lo:min(lo+size, n)])
		if err != nil {
			return 0, err
		}
		if skipped > 0 {
			return 0, fmt.Errorf("bench: %d documents skipped", skipped)
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// threadCPU returns the CPU time the calling OS thread has used.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rusageThread is RUSAGE_THREAD (Linux).
const rusageThread = 1
