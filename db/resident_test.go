package db

import (
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkResident bulk-loads FPDB_BULK_N random fingerprints (default
// 100 000) with 10-byte ids in batches of 10 000, closes the database,
// opens it again as a server would, calls Warm, and reports the growth of
// the process's resident memory from before the load, per document
// ("B/doc", after a collection that returns free memory to the system),
// with the live Go heap per document, the time Open and Warm took, and
// the database's size on disk per document after Compact ("disk-B/doc").
// FPDB_GROUP_BITS sets the width of the index groups (default 16):
//
//	FPDB_BULK_N=10000000 go test ./db -run XXX -bench BenchmarkResident -benchtime 1x
//	FPDB_BULK_N=10000000 FPDB_GROUP_BITS=18 go test ./db -run XXX -bench BenchmarkResident -benchtime 1x
func BenchmarkResident(b *testing.B) {
	n, bits := envInt(b, "FPDB_BULK_N", 100_000), envInt(b, "FPDB_GROUP_BITS", DefaultGroupWidth)
	for b.Loop() {
		dir := b.TempDir()
		rss0, heap0 := settled()
		bulkLoadRandom(b, dir, n, bits)
		start := time.Now()
		d, err := Open(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		opened := time.Since(start)
		if err := d.Warm(ctx); err != nil {
			b.Fatal(err)
		}
		warmed := time.Since(start) - opened
		rss, heap := settled()
		if rss0 == 0 || rss == 0 {
			b.Skip("no /proc/self/status on this system: resident memory unknown")
		}
		b.ReportMetric(float64(rss-rss0)/float64(n), "B/doc")
		b.ReportMetric(float64(int64(heap)-int64(heap0))/float64(n), "heap-B/doc")
		b.ReportMetric(opened.Seconds(), "open-s")
		b.ReportMetric(warmed.Seconds(), "warm-s")
		if _, err := d.Compact(ctx); err != nil {
			b.Fatal(err)
		}
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(treeSize(b, dir))/float64(n), "disk-B/doc")
	}
}

// settled collects garbage, returns free memory to the system and returns
// the resident set size (0 when unknown) and the live Go heap, in bytes.
func settled() (rss int64, heap uint64) {
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, ms.HeapAlloc
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, ms.HeapAlloc
			}
		}
	}
	return 0, ms.HeapAlloc
}

// bulkLoadRandom creates a database in dir in groups of bits bits and
// bulk-loads n random fingerprints into it, with 10-byte ids, in batches
// of 10 000; it closes the database.
func bulkLoadRandom(b *testing.B, dir string, n, bits int) {
	b.Helper()
	if n <= 0 || bits <= 0 {
		b.Fatalf("%d documents in groups of %d bits: want positive numbers (FPDB_BULK_N, FPDB_GROUP_BITS)", n, bits)
	}
	d, err := Open(dir, &Options{BulkLoad: true, GroupWidths: EqualWidths(DefaultK, bits)})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	docs := make([]Input, 0, 10_000)
	for lo := 0; lo < n; lo += cap(docs) {
		docs = docs[:0]
		for i := lo; i < min(lo+cap(docs), n); i++ {
			docs = append(docs, Input{ID: "d" + strconv.Itoa(100_000_000 + i)[1:], Fingerprint: randFP(r, DefaultK)})
		}
		addBatch(b, d, docs)
	}
	if err := d.Close(); err != nil {
		b.Fatal(err)
	}
}
