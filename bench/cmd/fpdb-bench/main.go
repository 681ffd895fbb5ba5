// Command fpdb-bench runs fpdb's benchmark suite (package bench) and writes
// its report to bench/results: <name>.md, <name>.json, the SVG plots and
// latest.json.
//
//	go run ./bench/cmd/fpdb-bench -suite quick   # make bench
//	go run ./bench/cmd/fpdb-bench -suite full    # make bench-full
//	go run ./bench/cmd/fpdb-bench -suite scale -sections random   # make bench-scale
//	go run ./bench/cmd/fpdb-bench -sections dedup -dedup-records 1000000 -name dedup   # make bench-dedup
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fpdb/fpdb/bench"
)

func main() {
	bench.RunDedupChild() // a dedup run's child process: runs it and exits
	suite := flag.String("suite", "quick", "suite to run: quick, full, scale (1 M and 10 M, random section) or smoke (seconds, for checking the runner)")
	out := flag.String("out", "bench/results", "directory of the reports")
	tmp := flag.String("tmp", "", "directory for the benchmark stores (default: a fresh one under $TMPDIR)")
	corpus := flag.String("corpus", "", "the real corpus (default: ../shared/corpus/debian beside the repository)")
	name := flag.String("name", "", "report name (default: the suite's; <suite>-partial with -sections)")
	sections := flag.String("sections", "", "comma-separated sections to run (dedup,ingest,random,skewed,containment,table1,accuracy); default all. A partial run does not write latest.json")
	t1ks := flag.String("table1-ks", "", "comma-separated k of the Table 1 section (default: the suite's)")
	t1q := flag.Int("table1-queries", 0, "queries per k of the Table 1 section (default: the suite's)")
	dedupRecords := flag.Int("dedup-records", 0, "records of the dedup section (default: the suite's)")
	flag.Parse()

	var cfg bench.Config
	switch *suite {
	case "quick":
		cfg = bench.QuickConfig()
	case "full":
		cfg = bench.FullConfig()
	case "scale":
		cfg = bench.ScaleConfig()
	case "smoke":
		cfg = bench.SmokeConfig()
	default:
		fmt.Fprintf(os.Stderr, "fpdb-bench: unknown suite %q\n", *suite)
		os.Exit(2)
	}
	if *t1ks != "" {
		cfg.Table1Ks = nil
		for _, f := range strings.Split(*t1ks, ",") {
			k, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				fmt.Fprintf(os.Stderr, "fpdb-bench: -table1-ks: %v\n", err)
				os.Exit(2)
			}
			cfg.Table1Ks = append(cfg.Table1Ks, k)
		}
	}
	if *t1q > 0 {
		cfg.Table1Queries = *t1q
	}
	if *dedupRecords > 0 {
		cfg.Dedup.Records = *dedupRecords
	}
	var only []string
	if *sections != "" {
		only = strings.Split(*sections, ",")
		cfg.Name += "-partial"
	}
	if *name != "" {
		cfg.Name = *name
	}
	cfg.CorpusDir = *corpus
	if cfg.CorpusDir == "" {
		// Relative to the working directory, so reports name no machine path.
		root := moduleRoot()
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, root); err == nil {
				root = rel
			}
		}
		cfg.CorpusDir = filepath.Join(root, "..", "shared", "corpus", "debian")
	}
	dir := *tmp
	if dir == "" {
		d, err := os.MkdirTemp("", "fpdb-bench-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "fpdb-bench:", err)
			os.Exit(2)
		}
		dir = d
		defer os.RemoveAll(d)
	}
	cfg.TmpDir = dir

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	command := "go run ./bench/cmd/fpdb-bench " + strings.Join(os.Args[1:], " ")
	if m := os.Getenv("FPDB_BENCH_COMMAND"); m != "" {
		command = m
	}
	s := &bench.Suite{Cfg: cfg, Log: os.Stderr, Sections: only}
	rep, err := s.Run(ctx, bench.CollectEnv(command))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fpdb-bench:", err)
		os.Exit(1)
	}
	if err := bench.Write(*out, rep); err != nil {
		fmt.Fprintln(os.Stderr, "fpdb-bench:", err)
		os.Exit(1)
	}
	for _, t := range rep.Targets {
		fmt.Printf("%-13s %s: %s\n", t.Status, t.Target, t.Measured)
	}
	fmt.Printf("report: %s\n", filepath.Join(*out, cfg.Name+".md"))
}

// moduleRoot returns the nearest directory above the working directory that
// holds go.mod, or the working directory.
func moduleRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return wd
		}
	}
}
