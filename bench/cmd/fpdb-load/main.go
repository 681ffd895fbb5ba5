// Command fpdb-load measures fpdb serve under concurrent clients on
// loopback: it loads N random 512-bit fingerprints, serves them from this
// process on 127.0.0.1, and has C clients query by fingerprint at each
// threshold, then add texts with check-then-add, for a fixed time each.
// It stops by itself and prints one line per measurement (and, with
// -json, the report).
//
//	go run ./bench/cmd/fpdb-load -n 1000000 -clients 16 -duration 20s
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fpdb/fpdb/bench"
)

func main() {
	n := flag.Int("n", 1_000_000, "fingerprints to load")
	clients := flag.Int("clients", 16, "concurrent clients")
	duration := flag.Duration("duration", 20*time.Second, "time per measurement")
	thresholds := flag.String("thresholds", "0.9,0.7", "comma-separated thresholds to query at")
	dir := flag.String("dir", os.TempDir(), "directory for the database (removed at the end)")
	asJSON := flag.Bool("json", false, "also print the report as JSON")
	flag.Parse()
	cfg := bench.ServeLoadConfig{N: *n, Clients: *clients, Duration: *duration, Dir: *dir, Seed: 1}
	for _, s := range strings.Split(*thresholds, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(r > 0 && r <= 1) {
			fmt.Fprintf(os.Stderr, "fpdb-load: bad threshold %q\n", s)
			os.Exit(2)
		}
		cfg.Thresholds = append(cfg.Thresholds, r)
	}
	if *n < 2200 || *clients < 1 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "fpdb-load: need -n ≥ 2200, -clients ≥ 1, -duration > 0")
		os.Exit(2)
	}
	rep, err := bench.ServeLoad(context.Background(), cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fpdb-load:", err)
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	}
}
