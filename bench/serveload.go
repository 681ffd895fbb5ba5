package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/client"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/server"
)

// ServeLoadConfig configures ServeLoad.
type ServeLoadConfig struct {
	// N random 512-bit fingerprints are bulk-loaded first (with planted
	// neighbours around the queries).
	N int
	// Clients query (or add) at once, each for Duration per measurement.
	Clients  int
	Duration time.Duration
	// Thresholds are the resemblances queried.
	Thresholds []float64
	// Dir holds the database (removed at the end).
	Dir  string
	Seed uint64
}

// ServeLoadRow is one measurement: queries at a threshold, or adds.
type ServeLoadRow struct {
	What     string   `json:"what"`
	Requests int      `json:"requests"`
	Errors   int      `json:"errors"`
	PerSec   float64  `json:"per_second"`
	Latency  Latency  `json:"latency"`
	Mean     float64  `json:"mean_matches,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// ServeLoadReport is what ServeLoad measured.
type ServeLoadReport struct {
	Config ServeLoadConfig `json:"config"`
	Load   time.Duration   `json:"load_ns"`
	Warm   time.Duration   `json:"warm_ns"`
	ScanGB float64         `json:"scan_gb_per_s"` // one-goroutine scan of the fingerprints
	Rows   []ServeLoadRow  `json:"rows"`
}

// ServeLoad measures "fpdb serve" on loopback: it loads cfg.N fingerprints
// into a database, serves it on 127.0.0.1 (the server in this process, its
// clients over TCP), and has cfg.Clients clients query by fingerprint at
// each threshold for cfg.Duration, then add texts with check-then-add
// (threshold 0.8, reject) for cfg.Duration. Every loop stops by itself.
func ServeLoad(ctx context.Context, cfg ServeLoadConfig, log io.Writer) (*ServeLoadReport, error) {
	const k = 512
	rep := &ServeLoadReport{Config: cfg}
	w := NewRandomWorkload(cfg.N, k, 200, DefaultPlantSims, cfg.Seed)
	dir := filepath.Join(cfg.Dir, "serveload")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	d, err := db.Open(dir, &db.Options{K: k, BulkLoad: true, NoSync: true, KeepTexts: true, AuditLog: true})
	if err != nil {
		return nil, err
	}
	stride := k / 64
	for lo := 0; lo < cfg.N; lo += 10_000 {
		in := make([]db.Input, 0, 10_000)
		for i := lo; i < min(lo+10_000, cfg.N); i++ {
			in = append(in, db.Input{ID: strconv.Itoa(i), Fingerprint: w.Flat[i*stride : (i+1)*stride]})
		}
		if _, err := d.AddBatch(ctx, in); err != nil {
			d.Close()
			return nil, err
		}
	}
	// Compacted, as a served archive usually is: otherwise the load's own
	// compactions run during the measurements (half the CPU of the adds).
	if _, err := d.Compact(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.Close(); err != nil {
		return nil, err
	}
	rep.Load = time.Since(start)
	d, err = db.Open(dir, nil) // as fpdb serve opens it: synced writes
	if err != nil {
		return nil, err
	}
	defer d.Close()
	start = time.Now()
	if err := d.Warm(ctx); err != nil {
		return nil, err
	}
	rep.Warm = time.Since(start)
	var scans []time.Duration
	for _, q := range w.Queries[:10] {
		t0 := time.Now()
		bitvec.Scan(w.Flat, stride, q, k/4, func(int, int) {})
		scans = append(scans, time.Since(t0))
	}
	rep.ScanGB = float64(len(w.Flat)*8) / Summarize(scans).P50.Seconds() / 1e9
	fmt.Fprintf(log, "loaded %d fingerprints in %v, warmed in %v; one-goroutine scan %.1f GB/s\n", cfg.N, rep.Load.Round(time.Millisecond), rep.Warm.Round(time.Millisecond), rep.ScanGB)

	s, err := server.New(d, &server.Options{MaxConcurrent: 4 * cfg.Clients})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- s.Serve(sctx, ln, 10*time.Second) }()
	defer func() { stop(); <-served }()
	c, err := client.New("http://"+ln.Addr().String(), &client.Options{HTTPClient: httpClientFor(cfg.Clients)})
	if err != nil {
		return nil, err
	}
	hexQ := make([]string, len(w.Queries))
	for i, q := range w.Queries {
		hexQ[i] = db.FormatFingerprint(q)
	}
	for _, r := range cfg.Thresholds {
		row := runLoad(ctx, cfg, fmt.Sprintf("query r=%.1f", r), func(ctx context.Context, rng *rand.Rand) (int, error) {
			res, err := c.Query(ctx, api.QueryRequest{Fingerprint: hexQ[rng.IntN(len(hexQ))], Threshold: r})
			if err != nil {
				return 0, err
			}
			return len(res.Matches), nil
		})
		rep.Rows = append(rep.Rows, row)
		fmt.Fprintf(log, "%-14s %8.0f/s  p50 %-9v p99 %-9v %d requests, %d errors, %.1f matches\n", row.What, row.PerSec, row.Latency.P50, row.Latency.P99, row.Requests, row.Errors, row.Mean)
	}
	row := runLoad(ctx, cfg, "add (check 0.8, reject)", func(ctx context.Context, rng *rand.Rand) (int, error) {
		id := rng.Uint64()
		res, err := c.Add(ctx, api.AddRequest{ID: "load-" + strconv.FormatUint(id, 36), Text: loadText(rng), Threshold: 0.8, Reject: true})
		if err != nil {
			return 0, err
		}
		return len(res.Matches), nil
	})
	rep.Rows = append(rep.Rows, row)
	fmt.Fprintf(log, "%-14s %8.0f/s  p50 %-9v p99 %-9v %d requests, %d errors\n", row.What, row.PerSec, row.Latency.P50, row.Latency.P99, row.Requests, row.Errors)
	return rep, nil
}

// runLoad runs op on cfg.Clients goroutines for cfg.Duration.
func runLoad(ctx context.Context, cfg ServeLoadConfig, what string, op func(context.Context, *rand.Rand) (int, error)) ServeLoadRow {
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	errs, matches := 0, 0
	var wg sync.WaitGroup
	start := time.Now()
	for i := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1))
			for ctx.Err() == nil {
				t0 := time.Now()
				n, err := op(ctx, rng)
				d := time.Since(t0)
				mu.Lock()
				switch {
				case err != nil && ctx.Err() != nil: // cut by the end of the run
				case err != nil:
					errs++
				default:
					lat = append(lat, d)
					matches += n
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	row := ServeLoadRow{What: what, Requests: len(lat), Errors: errs, PerSec: float64(len(lat)) / el.Seconds(), Latency: Summarize(lat)}
	if len(lat) > 0 {
		row.Mean = float64(matches) / float64(len(lat))
	}
	return row
}

// loadText returns a random text of 300 words.
func loadText(rng *rand.Rand) string {
	ws := make([]string, 300)
	for i := range ws {
		ws[i] = "w" + strconv.Itoa(rng.IntN(20_000))
	}
	return strings.Join(ws, " ")
}

// httpClientFor returns an HTTP client keeping a connection per client
// open (the default keeps 2 per host, which would open and close
// connections under load).
func httpClientFor(clients int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = clients
	return &http.Client{Transport: tr}
}
