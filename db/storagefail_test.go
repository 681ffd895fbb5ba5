package db

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// faultChildEnv holds "dir|path|fault": run faultChild (see TestMain).
const faultChildEnv = "FPDB_TEST_FAULT_CHILD"

// storageFaults are the storage failures injected by the child: each
// returns the error of op once the fault is switched on, or nil.
var storageFaults = map[string]func(op errorfs.Op) error{
	"WAL write": func(op errorfs.Op) error {
		if (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt) && isWAL(op) {
			return errorfs.ErrInjected
		}
		return nil
	},
	"WAL sync": func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			if isWAL(op) {
				return errorfs.ErrInjected
			}
		}
		return nil
	},
	"WAL create": func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpCreate, errorfs.OpReuseForWrite, errorfs.OpOpen: // a recycled WAL is opened
		default:
			return nil
		}
		if isWAL(op) {
			return errorfs.ErrInjected
		}
		return nil
	},
	"disk full": func(op errorfs.Op) error { return diskFull(op, 0) },
	// The disk has room for the WAL (its space reserved ahead, say) and
	// for fpdb's own small files, none for the tables Pebble writes its
	// memtables and compactions to.
	"tables full": func(op errorfs.Op) error {
		if tableWrite(op) {
			return &fsError{op: op, err: syscall.ENOSPC}
		}
		return nil
	},
	// Every table write fails, but not for want of space (the child
	// lowers flushFailureLimit to 2 s for it).
	"tables fail": func(op errorfs.Op) error {
		if tableWrite(op) {
			return errorfs.ErrInjected
		}
		return nil
	},
	// A WAL's space reservation fails (a disk nearly full: Pebble asks
	// for about 1.1 memtables ahead), every write and sync succeeds.
	"WAL preallocate": func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFilePreallocate && isWAL(op) {
			return &fsError{op: op, err: syscall.ENOSPC}
		}
		return nil
	},
}

// storagePaths are the write paths the child drives into the fault.
var storagePaths = []string{"add", "batch", "rotate", "bulk flush", "delete batch", "compact"}

// faultFP is the fingerprint the child stores for seed.
func faultFP(seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 99))
	fp := make([]uint64, DefaultK/64)
	for i := range fp {
		fp[i] = r.Uint64()
	}
	return fp
}

// tableWrite reports whether op writes one of Pebble's own tables (not a
// WAL, not fpdb's posting files, not the MANIFEST).
func tableWrite(op errorfs.Op) bool {
	switch op.Kind {
	case errorfs.OpCreate, errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync, errorfs.OpFileSyncData,
		errorfs.OpFileSyncTo, errorfs.OpFilePreallocate:
	default:
		return false
	}
	name := filepath.Base(op.Path)
	num, ext, ok := strings.Cut(name, ".")
	if !ok || (ext != "sst" && ext != "blob") {
		return false
	}
	_, err := strconv.ParseUint(num, 10, 64)
	return err == nil
}

// faultChild opens the database in dir, stores 600 documents, switches
// the fault on and then writes along path until the process ends. It
// prints "try" before each call and "ack" after each call that returned
// nil, as "try|ack add ID SEED" and "try|ack del ID"; a batch is one try
// line and one ack line per document. A call that returns an error prints
// "err" and the child goes on. It returns 0 when the writes ran out
// without the process being ended. Path "reopen" only opens the database
// (not for a bulk load, so Open writes any deferred postings) with the
// fault on from the start, prints "opened" and closes it.
func faultChild(spec string) int {
	parts := strings.Split(spec, "|")
	if len(parts) != 3 {
		fmt.Fprintf(os.Stderr, "bad %s: %q\n", faultChildEnv, spec)
		return 3
	}
	dir, path, fault := parts[0], parts[1], storageFaults[parts[2]]
	if parts[2] == "tables fail" {
		flushFailureLimit = 2 * time.Second
	}
	var on atomic.Bool
	fs := noReuseFS{errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if on.Load() {
			return fault(op)
		}
		return nil
	}))}
	// 4 MiB memtables: the large batches rotate the WAL, as "WAL create"
	// needs; "rotate" rotates it every 256 KiB.
	o := &Options{fs: fs, Logger: discardLogger(), BulkLoad: path == "bulk flush", MemTableSize: 4 << 20}
	if path == "rotate" {
		o.MemTableSize = 256 << 10
	}
	on.Store(path == "reopen")
	d, err := Open(dir, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 3
	}
	if path == "reopen" {
		fmt.Println("opened")
		if err := d.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
			return 3
		}
		return 0
	}
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		_ = out.Flush()
	}
	batch := func(from, n int) {
		docs := make([]Input, n)
		for i := range docs {
			seed := uint64(from + i)
			docs[i] = Input{ID: fmt.Sprintf("d%05d", seed), Fingerprint: faultFP(seed)}
			say("try add %s %d", docs[i].ID, seed)
		}
		if _, err := d.AddBatch(ctx, docs); err != nil {
			say("err %v", err)
			return
		}
		for i := range docs {
			say("ack add %s %d", docs[i].ID, from+i)
		}
	}
	add := func(seed int) {
		id := fmt.Sprintf("d%05d", seed%900) // some replace a stored one
		say("try add %s %d", id, seed)
		if _, err := d.Add(ctx, Input{ID: id, Fingerprint: faultFP(uint64(seed))}, nil); err != nil {
			say("err %v", err)
			return
		}
		say("ack add %s %d", id, seed)
	}
	batch(0, 600)
	if path == "bulk flush" {
		if err := d.Flush(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "flush:", err)
			return 3
		}
		batch(600, 50) // deferred until the Flush below
	}
	on.Store(true)
	for round := range 50 {
		next := 10_000 + 1_000*round
		switch path {
		case "add", "rotate":
			for i := range 200 {
				add(next + i)
				if i%7 == 0 {
					id := fmt.Sprintf("d%05d", (next+i)%600)
					say("try del %s", id)
					if err := d.Delete(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
						say("err %v", err)
					} else {
						say("ack del %s", id)
					}
				}
			}
		case "batch":
			batch(next, 10_000) // a batch larger than half the memtable
		case "bulk flush":
			if err := d.Flush(ctx); err != nil {
				say("err %v", err)
			}
			batch(next, 50)
		case "delete batch":
			ids := make([]string, 100)
			for i := range ids {
				ids[i] = fmt.Sprintf("d%05d", 100*round+i)
				say("try del %s", ids[i])
			}
			if _, err := d.DeleteMany(ctx, ids); err != nil {
				say("err %v", err)
				continue
			}
			for _, id := range ids {
				say("ack del %s", id)
			}
		case "compact":
			for i := range 20 {
				add(next + i)
			}
			if _, err := d.Compact(ctx); err != nil {
				say("err %v", err)
			}
		}
	}
	say("done")
	_ = d.Close()
	return 0
}

// noReuseFS makes a recycled WAL file go through the wrapped file system's
// OpenReadWrite: errorfs returns recycled files unwrapped, which would let
// the writes of a recycled WAL (after memtable rotations) escape the fault.
type noReuseFS struct{ vfs.FS }

func (fs noReuseFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.Rename(oldname, newname); err != nil {
		return nil, err
	}
	return fs.OpenReadWrite(newname, c)
}

// faultModel replays the child's output: the acknowledged state, and the
// documents of the last call, which had not returned (pending; nil when
// every call returned).
type faultModel struct {
	docs    map[string]uint64 // id → seed of the stored version
	pending []faultOp
}

type faultOp struct {
	del  bool
	id   string
	seed uint64
}

func parseFaultOutput(t *testing.T, out []byte) faultModel {
	t.Helper()
	m := faultModel{docs: map[string]uint64{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		var op faultOp
		if len(f) >= 3 {
			op = faultOp{del: f[1] == "del", id: f[2]}
			if !op.del && len(f) == 4 {
				op.seed, _ = strconv.ParseUint(f[3], 10, 64)
			}
		}
		switch f[0] {
		case "try":
			m.pending = append(m.pending, op)
		case "ack":
			if op.del {
				delete(m.docs, op.id)
			} else {
				m.docs[op.id] = op.seed
			}
			m.pending = m.pending[:0]
		case "err":
			m.pending = m.pending[:0] // returned an error: checked as pending below
		}
	}
	return m
}

// TestStorageFailureExits drives every write path (a single add, a large
// AddBatch, memtable rotations, the bulk-load postings flush, a DeleteMany
// batch, a compaction) into WAL write, sync and creation failures and a
// full disk, in a child process. fpdb's failure model: the process ends
// with status 74 after logging the cause (never a Go runtime fatal error,
// never a call that returns and leaves Pebble broken); on reopen every
// acknowledged write is present, the call in flight is wholly present or
// wholly absent, and Check passes.
func TestStorageFailureExits(t *testing.T) {
	faults := []string{"WAL write", "WAL sync", "WAL create", "disk full"}
	if testing.Short() {
		faults = faults[:1]
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exits, acked := 0, 0
	for _, path := range storagePaths {
		for _, fault := range faults {
			t.Run(path+"/"+fault, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "db")
				cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(cctx, exe, "-test.run=^$")
				cmd.Env = append(os.Environ(), faultChildEnv+"="+dir+"|"+path+"|"+fault)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != exitStorageFailure {
					t.Fatalf("child: %v, want exit status %d\nstderr: %s\nstdout tail: %s", err, exitStorageFailure, tail(stderr.String()), tail(stdout.String()))
				}
				if !strings.Contains(stderr.String(), "fpdb: fatal storage error") {
					t.Fatalf("stderr does not name the failure: %s", tail(stderr.String()))
				}
				if fault != "disk full" && !strings.Contains(stderr.String(), errorfs.ErrInjected.Error()) {
					t.Errorf("stderr does not give the cause: %s", tail(stderr.String()))
				}
				m := parseFaultOutput(t, stdout.Bytes())
				d := openTest(t, dir, &Options{Logger: discardLogger()})
				verifyFaultModel(t, d, m)
				closeChecked(t, d)
				exits++
				acked += len(m.docs)
			})
		}
	}
	t.Logf("%d children ended by storage failures (status %d), %d acknowledged documents verified after reopen, 0 lost",
		exits, exitStorageFailure, acked)
}

// verifyFaultModel checks that d holds the acknowledged state of m, with
// the pending call wholly applied or wholly not.
func verifyFaultModel(t *testing.T, d *DB, m faultModel) {
	t.Helper()
	applied := map[string]uint64{}
	for k, v := range m.docs {
		applied[k] = v
	}
	for _, op := range m.pending {
		if op.del {
			delete(applied, op.id)
		} else {
			applied[op.id] = op.seed
		}
	}
	var ids []string
	for id := range applied {
		ids = append(ids, id)
	}
	for id := range m.docs {
		if _, ok := applied[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	matches := func(model map[string]uint64) error {
		if n := d.Stats().Docs; n != len(model) {
			return fmt.Errorf("%d documents stored, want %d", n, len(model))
		}
		for _, id := range ids {
			seed, want := model[id]
			doc, err := d.Get(ctx, id)
			switch {
			case errors.Is(err, ErrNotFound) && !want:
			case err != nil:
				return fmt.Errorf("get %s: %w", id, err)
			case !want:
				return fmt.Errorf("%s is stored, want it absent", id)
			case !slices.Equal(doc.Fingerprint, faultFP(seed)):
				return fmt.Errorf("%s holds another version than seed %d", id, seed)
			}
		}
		return nil
	}
	errAcked := matches(m.docs)
	if errAcked == nil {
		return
	}
	if len(m.pending) > 0 {
		if err := matches(applied); err == nil {
			return
		}
	}
	t.Fatalf("reopened database holds neither the acknowledged state nor it with the pending call applied whole: %v", errAcked)
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}

// TestWALPreallocateIsNotAFailure: a WAL whose space reservation fails
// (a hint, which Pebble ignores when it fails) is not a storage failure:
// on a nearly full disk the writes that fit go on, through memtable
// rotations (new WALs, each reservation failing), and every acknowledged
// document is there after reopen. fpdb ended the process with status 74
// at the first WAL, so no write could be made with less than about 70 MiB
// free.
func TestWALPreallocateIsNotAFailure(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "db")
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), faultChildEnv+"="+dir+"|rotate|WAL preallocate")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v, want status 0 (its writes ran out)\nstderr: %s\nstdout tail: %s", err, tail(stderr.String()), tail(stdout.String()))
	}
	m := parseFaultOutput(t, stdout.Bytes())
	acks := bytes.Count(stdout.Bytes(), []byte("\nack add "))
	if len(m.pending) != 0 || bytes.Contains(stdout.Bytes(), []byte("\nerr ")) || acks < 10_000 {
		t.Fatalf("%d adds acknowledged (want all 10 600), %d calls unfinished, or some failed:\n%s", acks, len(m.pending), tail(stdout.String()))
	}
	d := openTest(t, dir, &Options{Logger: discardLogger()})
	verifyFaultModel(t, d, m)
	closeChecked(t, d)
}
