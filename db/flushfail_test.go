package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// runFaultChild runs faultChild on dir along path with fault, and returns
// its exit status (-1 when it did not exit by itself: killed after the
// timeout) and outputs. The timeout is generous: a child ends within
// seconds, also on a slow, busy machine.
func runFaultChild(t *testing.T, dir, path, fault string) (code int, stdout, stderr []byte) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), faultChildEnv+"="+dir+"|"+path+"|"+fault)
	var out, serr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &serr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		code = 0
	case cctx.Err() != nil:
		code = -1
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("child: %v", err)
	}
	return code, out.Bytes(), serr.Bytes()
}

// TestTableFailuresEndTheProcess: a disk with room for the WAL but none
// for Pebble's tables (the state a bulk load that fills the disk leaves:
// its records fit, the memtable flush does not), or tables that keep
// failing to be written, no longer leave the process waiting without end
// at full CPU — for a memtable flush that Pebble retries forever, in an
// ingestion of deferred postings, a write stalled behind full memtables,
// Compact, or the Open that writes the deferred postings — deaf to Ctrl-C
// and silent. The process ends with status 74 naming the cause, as for a
// failed WAL write; every acknowledged write is kept, the call in flight
// is whole or absent, and the next Open with room writes the deferred
// postings. A reopen on the still full disk ends the same way.
func TestTableFailuresEndTheProcess(t *testing.T) {
	cases := []struct{ path, fault, want string }{
		{"bulk flush", "tables full", "the disk is full"},
		{"rotate", "tables full", "the disk is full"},
		{"compact", "tables full", "the disk is full"},
		{"bulk flush", "tables fail", "memtable flushes have failed for"},
	}
	exits, acked, slowest := 0, 0, time.Duration(0)
	for _, c := range cases {
		t.Run(c.path+"/"+c.fault, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			start := time.Now()
			code, stdout, stderr := runFaultChild(t, dir, c.path, c.fault)
			slowest = max(slowest, time.Since(start))
			if code != exitStorageFailure {
				t.Fatalf("child exited with status %d after %s (-1: still running, killed), want %d\nstderr: %s\nstdout tail: %s",
					code, time.Since(start).Round(time.Second), exitStorageFailure, tail(string(stderr)), tail(string(stdout)))
			}
			msg := string(stderr)
			if !strings.Contains(msg, "fpdb: fatal storage error: "+c.want) {
				t.Errorf("stderr does not name the failure (%q): %s", c.want, tail(msg))
			}
			cause := syscall.ENOSPC.Error()
			if c.fault == "tables fail" {
				cause = errorfs.ErrInjected.Error()
			}
			if !strings.Contains(msg, cause) {
				t.Errorf("stderr does not give the cause (%q): %s", cause, tail(msg))
			}
			m := parseFaultOutput(t, stdout)
			if c.path == "bulk flush" && c.fault == "tables full" {
				// The same disk, still full: the Open of a plain add
				// replays the WAL and writes the deferred postings.
				start := time.Now()
				code, out, serr := runFaultChild(t, dir, "reopen", c.fault)
				slowest = max(slowest, time.Since(start))
				if code != exitStorageFailure || !strings.Contains(string(serr), "fpdb: fatal storage error: the disk is full") {
					t.Fatalf("reopen on the full disk: status %d (-1: still running, killed), want %d naming the full disk\nstderr: %s\nstdout: %s",
						code, exitStorageFailure, tail(string(serr)), tail(string(out)))
				}
				exits++
			}
			d := openTest(t, dir, &Options{Logger: discardLogger()})
			if w := d.ix.DeferredFrom(); w != noDeferred {
				t.Errorf("deferred mark %d after a writable Open with room, want none", w)
			}
			verifyFaultModel(t, d, m)
			closeChecked(t, d)
			exits++
			acked += len(m.docs)
		})
	}
	t.Logf("%d children ended by table failures (status %d), the slowest after %s; %d acknowledged documents verified after reopen, 0 lost",
		exits, exitStorageFailure, slowest.Round(time.Millisecond), acked)
}

// tableFaultFS wraps fs so that writing one of Pebble's tables (tableWrite)
// fails with an injected error while on is set; fpdb's own posting files
// and the WAL are written.
func tableFaultFS(fs vfs.FS, on *atomic.Bool) vfs.FS {
	return errorfs.Wrap(fs, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if on.Load() && tableWrite(op) {
			return errorfs.ErrInjected
		}
		return nil
	}))
}

// TestFlushWaitHonoursContext: while the memtable cannot be written to a
// table (a fault Pebble retries, shorter than flushFailureLimit), Flush
// of deferred postings waits for it only as long as its context lasts,
// and changes nothing; once the fault clears, Flush writes them, Close
// and the next Open find everything. Compact waits the same way. Before,
// the ingestion waited inside Pebble for the flush, deaf to the context.
func TestFlushWaitHonoursContext(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var on atomic.Bool
	d := openTest(t, "db", &Options{fs: tableFaultFS(mem, &on), Logger: discardLogger(), BulkLoad: true})
	model := map[string]uint64{}
	for i := range 30 {
		id := fmt.Sprintf("doc%03d", i)
		if _, err := d.Add(ctx, Input{ID: id, Text: []byte(crashText(uint64(i)))}, nil); err != nil {
			t.Fatal(err)
		}
		model[id] = uint64(i)
	}
	if d.ix.DeferredFrom() == noDeferred {
		t.Fatal("nothing deferred")
	}
	on.Store(true)
	for _, call := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"Flush", d.Flush},
		{"Compact", func(ctx context.Context) error { _, err := d.Compact(ctx); return err }},
	} {
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- call.run(cctx) }()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s while the memtable cannot be written: %v, want its context's error", call.name, err)
			}
		case <-time.After(30 * time.Second):
			on.Store(false) // let it end
			t.Fatalf("%s still waits 30 s after its context ended", call.name)
		}
		cancel()
	}
	if d.ix.DeferredFrom() == noDeferred {
		t.Error("the postings were written while the memtable could not be")
	}
	on.Store(false)
	if err := d.Flush(ctx); err != nil { // Pebble's retry succeeds now
		t.Fatalf("Flush once the fault cleared: %v", err)
	}
	if w := d.ix.DeferredFrom(); w != noDeferred {
		t.Errorf("deferred mark %d after Flush", w)
	}
	closeChecked(t, d)
	d = openTest(t, "db", &Options{fs: mem})
	verifyDocs(t, d, model, 30)
}
