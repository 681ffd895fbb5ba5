package db

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

var (
	crashCycles = flag.Int("crash.cycles", 0, "kill cycles of TestCrash (default 30; 10 with -short)")
	crashSeed   = flag.Uint64("crash.seed", 0, "seed of TestCrash and TestPowerLoss (default: from the clock, printed)")
)

// Environment variables that make the test binary a child process of a test
// instead of running tests (see TestMain).
const (
	// crashChildEnv holds "dir|log|seed|cycle": run crashChild.
	crashChildEnv = "FPDB_TEST_CRASH_CHILD"
	// lockChildEnv holds a database directory: open it, print "open" and
	// wait to be killed (TestTwoProcesses).
	lockChildEnv = "FPDB_TEST_LOCK_CHILD"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		os.Exit(crashChild(spec))
	}
	if spec := os.Getenv(faultChildEnv); spec != "" {
		os.Exit(faultChild(spec))
	}
	if dir := os.Getenv(lockChildEnv); dir != "" {
		os.Exit(lockChild(dir))
	}
	os.Exit(m.Run())
}

// crashIDs is the number of distinct document ids the crash child uses, so
// that adds replace and deletes find documents.
const crashIDs = 60

// crashText returns the text of text seed ts: 30 to 229 words.
func crashText(ts uint64) string { return text(ts, 30+int(ts%200)) }

// crashChild is the child process of TestCrash: it opens the database (sync
// on) and adds, replaces and deletes documents until it is killed. Before
// each call it appends "I cycle n op id [textseed]" to the side log and
// after the call returns "A cycle n", each line fsynced. It returns (an
// exit code) only on an error.
func crashChild(spec string) int {
	parts := strings.Split(spec, "|")
	if len(parts) != 4 {
		fmt.Fprintf(os.Stderr, "bad %s: %q\n", crashChildEnv, spec)
		return 3
	}
	dir, logPath := parts[0], parts[1]
	seed, _ := strconv.ParseUint(parts[2], 10, 64)
	cycle, _ := strconv.Atoi(parts[3])
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	logf := func(format string, args ...any) error {
		if _, err := fmt.Fprintf(log, format+"\n", args...); err != nil {
			return err
		}
		return log.Sync()
	}
	// Odd cycles bulk-load: postings deferred and flushed
	// every few documents, so kills land in flushes too.
	bulk := cycle%2 == 1
	d, err := Open(dir, &Options{BulkLoad: bulk, KeepTexts: true, AuditLog: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 3
	}
	d.flushAt = 1 + cycle%17
	if err := logf("R %d", cycle); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	r := rand.New(rand.NewPCG(seed, uint64(cycle)))
	for n := 0; ; n++ {
		id := fmt.Sprintf("doc%03d", r.IntN(crashIDs))
		if r.IntN(4) == 0 {
			if err := logf("I %d %d del %s", cycle, n, id); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 3
			}
			if err := d.Delete(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
				fmt.Fprintln(os.Stderr, "delete:", err)
				return 4
			}
		} else {
			ts := r.Uint64() % 1_000_000_000
			if err := logf("I %d %d add %s %d", cycle, n, id, ts); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 3
			}
			var o *AddOptions
			in := Input{ID: id, Text: []byte(crashText(ts))}
			if n%3 == 0 {
				o, in.Source = &AddOptions{Threshold: 0.8}, "crash"
			}
			if _, err := d.Add(ctx, in, o); err != nil {
				fmt.Fprintln(os.Stderr, "add:", err)
				return 4
			}
		}
		if err := logf("A %d %d", cycle, n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
	}
}

// crashOp is one logged operation.
type crashOp struct {
	n     int
	del   bool
	id    string
	ts    uint64
	acked bool
}

// readCrashLog parses the side log, truncating a torn last line, and
// returns the operations of cycle and whether the child reported ready.
func readCrashLog(t *testing.T, path string, cycle int) (ops []crashOp, ready bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i+1 != len(b) {
		b = b[:i+1]
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[1] != strconv.Itoa(cycle) {
			continue
		}
		switch f[0] {
		case "R":
			ready = true
		case "I":
			n, _ := strconv.Atoi(f[2])
			op := crashOp{n: n, del: f[3] == "del", id: f[4]}
			if !op.del {
				op.ts, _ = strconv.ParseUint(f[5], 10, 64)
			}
			ops = append(ops, op)
		case "A":
			n, _ := strconv.Atoi(f[2])
			if len(ops) == 0 || ops[len(ops)-1].n != n {
				t.Fatalf("log: ack of %d without its intent", n)
			}
			ops[len(ops)-1].acked = true
		}
	}
	return ops, ready
}

// verifier checks a database against a model (id → text seed of the stored
// version; absent ids are deleted or never added).
type verifier struct {
	fps map[uint64][]uint64 // fingerprint by text seed
}

func (v *verifier) fp(d *DB, ts uint64) ([]uint64, error) {
	if fp, ok := v.fps[ts]; ok {
		return fp, nil
	}
	res, _, err := d.build(strings.NewReader(crashText(ts)), nil, TextOptions{}, "")
	if err != nil {
		return nil, err
	}
	if v.fps == nil {
		v.fps = make(map[uint64][]uint64)
	}
	v.fps[ts] = res.FP
	return res.FP, nil
}

// state returns the text seed stored under id (found=false when absent),
// checking that the document is whole: its record, its fingerprint equal
// to that of a model text seed among candidates, a query of that text
// at threshold 1.0 returning it, and, when the database keeps texts, that
// text stored with it.
func (v *verifier) state(d *DB, id string, candidates ...uint64) (ts uint64, found bool, err error) {
	doc, err := d.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	for _, c := range candidates {
		fp, err := v.fp(d, c)
		if err != nil {
			return 0, false, err
		}
		if !slices.Equal(fp, doc.Fingerprint) {
			continue
		}
		q, err := d.Query(ctx, []byte(crashText(c)), QueryOptions{Threshold: 1})
		if err != nil {
			return 0, false, err
		}
		if !slices.ContainsFunc(q.Matches, func(m Match) bool { return m.ID == id && m.Exact }) {
			return 0, false, fmt.Errorf("%s: a query of its own text at threshold 1.0 does not return it: %+v", id, q.Matches)
		}
		if d.Params().KeepTexts {
			st, err := d.Text(ctx, id)
			if err != nil {
				return 0, false, fmt.Errorf("%s: its text: %w", id, err)
			}
			if string(st.Text) != crashText(c) {
				return 0, false, fmt.Errorf("%s: stored text is not text %d", id, c)
			}
		}
		return c, true, nil
	}
	return 0, true, fmt.Errorf("%s: stored fingerprint matches none of the texts %v", id, candidates)
}

// verify checks that d holds exactly model.
func (v *verifier) verify(d *DB, model map[string]uint64, ids []string) error {
	for _, id := range ids {
		want, present := model[id]
		var cands []uint64
		if present {
			cands = []uint64{want}
		}
		got, found, err := v.state(d, id, cands...)
		switch {
		case err != nil && present:
			return fmt.Errorf("acknowledged add of %s (text %d) not intact: %w", id, want, err)
		case err != nil:
			return fmt.Errorf("%s should be absent: %w", id, err)
		case present && !found:
			return fmt.Errorf("acknowledged add of %s (text %d) lost", id, want)
		case !present && found:
			return fmt.Errorf("deleted document %s is present", id)
		case present && got != want:
			return fmt.Errorf("%s holds text %d, want %d", id, got, want)
		}
	}
	if n := d.Stats().Docs; n != len(model) {
		return fmt.Errorf("%d documents stored, model has %d", n, len(model))
	}
	return nil
}

func crashIDList() []string {
	ids := make([]string, crashIDs)
	for i := range ids {
		ids[i] = fmt.Sprintf("doc%03d", i)
	}
	return ids
}

func testSeed(t *testing.T) uint64 {
	s := *crashSeed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -crash.seed=%d)", s, s)
	return s
}

// TestCrash runs a child process that adds, replaces and deletes documents
// with sync on, SIGKILLs it at random moments, reopens the database and
// verifies it against the acknowledged operations: every acknowledged add
// is present with its fingerprint and its stored text (the database keeps
// texts) and found by a query of its own text at threshold 1.0, every
// acknowledged delete is gone with its text, the one operation in flight
// is wholly applied or not at all, the audit log agrees with what is
// stored (verifyTrail: every document present has its entry, and no
// entry claims a document that is absent), and Check passes.
func TestCrash(t *testing.T) {
	cycles := *crashCycles
	if cycles == 0 {
		cycles = 30
		if testing.Short() {
			cycles = 10
		}
	}
	seed := testSeed(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dir, logPath := filepath.Join(tmp, "db"), filepath.Join(tmp, "ops.log")
	rng := rand.New(rand.NewPCG(seed, 0))
	model := map[string]uint64{}
	ids := crashIDList()
	var v verifier
	var acked, inDoubt, doubtApplied, earlyKills, tails int
	start := time.Now()
	for c := range cycles {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d|%d", crashChildEnv, dir, logPath, seed, c))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(5) == 0 {
			// Kill at a random moment from the start, maybe during Open.
			time.Sleep(time.Duration(rng.IntN(40_000)) * time.Microsecond)
		} else {
			// Kill a random time after the child opened the database.
			for deadline := time.Now().Add(60 * time.Second); ; {
				if _, ready := readCrashLog(t, logPath, c); ready {
					break
				}
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					t.Fatalf("cycle %d: child not ready after 60 s; stderr:\n%s", c, stderr.String())
				}
				time.Sleep(2 * time.Millisecond)
			}
			time.Sleep(time.Duration(rng.IntN(80_000)) * time.Microsecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("cycle %d: child ended by itself (%v); stderr:\n%s", c, err, stderr.String())
		}

		ops, ready := readCrashLog(t, logPath, c)
		if !ready {
			earlyKills++
		}
		var doubt *crashOp
		for i := range ops {
			op := &ops[i]
			if !op.acked {
				if i != len(ops)-1 {
					t.Fatalf("cycle %d: op %d unacknowledged but not the last", c, op.n)
				}
				doubt = op
				break
			}
			acked++
			if op.del {
				delete(model, op.id)
			} else {
				model[op.id] = op.ts
			}
		}

		// Every fourth cycle reopens in bulk-load mode: deferred postings the child
		// left is then served from memory, not written at Open.
		d, err := Open(dir, &Options{BulkLoad: c%4 == 3, KeepTexts: true, AuditLog: true}) // as the child creates it, should it have been killed before
		if err != nil {
			t.Fatalf("cycle %d: reopen after kill: %v", c, err)
		}
		if doubt != nil {
			// The operation in flight: all or nothing.
			inDoubt++
			old, had := model[doubt.id]
			cands := []uint64{doubt.ts}
			if doubt.del {
				cands = nil
			}
			if had {
				cands = append(cands, old)
			}
			got, found, err := v.state(d, doubt.id, cands...)
			if err != nil {
				t.Fatalf("cycle %d: in-flight %+v is half done: %v", c, *doubt, err)
			}
			applied := false
			switch {
			case doubt.del && !found:
				applied = had
				delete(model, doubt.id)
			case !doubt.del && found && got == doubt.ts:
				applied = !had || old != doubt.ts
				model[doubt.id] = doubt.ts
			}
			if applied {
				doubtApplied++
			}
		}
		if d.Stats().Deferred > 0 {
			tails++
		}
		if err := v.verify(d, model, ids); err != nil {
			t.Fatalf("cycle %d (seed %d): %v", c, seed, err)
		}
		if err := verifyTrail(d, ids); err != nil {
			t.Fatalf("cycle %d (seed %d): audit log: %v", c, seed, err)
		}
		if err := d.Check(ctx); err != nil {
			t.Fatalf("cycle %d (seed %d): Check after kill: %v", c, seed, err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	msg := fmt.Sprintf("crash: %d kill cycles (%d before the child opened the database), %d acknowledged operations verified, "+
		"%d operations in flight at the kill (%d applied whole, %d not at all), %d documents at the end, 0 lost, Check passed every cycle; "+
		"%d bulk-load reopens found deferred postings (%.1fs, seed %d)",
		cycles, earlyKills, acked, inDoubt, doubtApplied, inDoubt-doubtApplied, len(model), tails, time.Since(start).Seconds(), seed)
	t.Log(msg)
	if testing.Verbose() {
		fmt.Println(msg)
	}
}

// TestPowerLoss simulates power failures: a writer adds, replaces and
// deletes documents (with their texts) on an in-memory file system while clones of it are
// taken at random moments keeping only the synced data and a random part
// of the unsynced data. Each clone must open clean and hold exactly the
// state after some prefix of the operations that includes every operation
// acknowledged before the clone.
func TestPowerLoss(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	nops, nclones := 300, 25
	if testing.Short() {
		nops, nclones = 100, 8
	}
	type op struct {
		del bool
		id  string
		ts  uint64
	}
	ops := make([]op, nops)
	for i := range ops {
		ops[i] = op{del: rng.IntN(4) == 0, id: fmt.Sprintf("doc%03d", rng.IntN(crashIDs)), ts: rng.Uint64() % 1_000_000_000}
	}
	mem := vfs.NewCrashableMem()
	d, err := Open("db", &Options{fs: mem, KeepTexts: true, AuditLog: true})
	if err != nil {
		t.Fatal(err)
	}
	var started, acked atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	errc := make(chan error, 1)
	go func() {
		defer wg.Done()
		for _, o := range ops {
			started.Add(1)
			var err error
			if o.del {
				if err = d.Delete(ctx, o.id); errors.Is(err, ErrNotFound) {
					err = nil
				}
			} else {
				_, err = d.Add(ctx, Input{ID: o.id, Text: []byte(crashText(o.ts))}, nil)
			}
			if err != nil {
				errc <- err
				return
			}
			acked.Add(1)
		}
	}()
	type clone struct {
		fs     *vfs.MemFS
		lo, hi int // the state is after ops[:j] for some j in [lo, hi]
	}
	var clones []clone
	for range nclones {
		time.Sleep(time.Duration(rng.IntN(8000)) * time.Microsecond)
		lo := int(acked.Load())
		fs := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
		hi := int(started.Load())
		clones = append(clones, clone{fs, lo, hi})
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	closeChecked(t, d)

	models := make([]map[string]uint64, nops+1) // models[j]: after ops[:j]
	models[0] = map[string]uint64{}
	for j, o := range ops {
		m := make(map[string]uint64, len(models[j]))
		for k, v := range models[j] {
			m[k] = v
		}
		if o.del {
			delete(m, o.id)
		} else {
			m[o.id] = o.ts
		}
		models[j+1] = m
	}
	ids := crashIDList()
	var v verifier
	for i, c := range clones {
		d, err := Open("db", &Options{fs: c.fs})
		if err != nil {
			t.Fatalf("clone %d: open after power loss: %v", i, err)
		}
		var errs []error
		ok := false
		for j := c.hi; j >= c.lo && !ok; j-- {
			err := v.verify(d, models[j], ids)
			ok = err == nil
			errs = append(errs, fmt.Errorf("after %d ops: %w", j, err))
		}
		if !ok {
			t.Errorf("clone %d (seed %d): state is after no prefix of %d..%d ops: %v", i, seed, c.lo, c.hi, errors.Join(errs...))
		}
		if err := verifyTrail(d, ids); err != nil {
			t.Errorf("clone %d (seed %d): audit log: %v", i, seed, err)
		}
		closeChecked(t, d)
	}
	t.Logf("power loss: %d clones of %d ops verified, 0 acknowledged operations lost", len(clones), nops)
}

// lockChild opens the database in dir, prints "open" and waits to be
// killed; it returns only on an error.
func lockChild(dir string) int {
	d, err := Open(dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 3
	}
	fmt.Println("open")
	time.Sleep(time.Hour)
	_ = d.Close()
	return 0
}
