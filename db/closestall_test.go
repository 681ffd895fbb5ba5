package db

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// closeStallEnv makes TestCloseStalledByFailingFlush's binary its child.
const closeStallEnv = "FPDB_TEST_CLOSE_STALL_CHILD"

// TestCloseStalledByFailingFlush: a memtable flush under way when Close
// begins, failing only once Close waits inside Pebble (its own flush
// stalled behind the first), cannot hold Close forever: after
// closeFailureLimit (lowered to 2 s in the child) the process ends with
// status 74, naming the cause. Pebble otherwise retried the flush without
// end (hundreds of thousands of times in 20 s), deaf to Ctrl-C.
func TestCloseStalledByFailingFlush(t *testing.T) {
	if os.Getenv(closeStallEnv) != "" {
		closeStallChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCloseStalledByFailingFlush$", "-test.count=1")
	cmd.Env = append(os.Environ(), closeStallEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the child still ran after 2 minutes: Close hung\n%s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != exitStorageFailure || !strings.Contains(stderr.String(), "since Close began") {
		t.Fatalf("child exit status %d, want %d with the cause named; stderr:\n%s", code, exitStorageFailure, stderr.String())
	}
}

// closeStallChild sets up the stall and closes; it returns only if Close
// does (the test then fails in the parent, by the exit status).
func closeStallChild(t *testing.T) {
	closeFailureLimit = 2 * time.Second
	mem := vfs.NewCrashableMem()
	var dp atomic.Pointer[DB]
	blocked := make(chan struct{})
	var once, failing atomic.Bool
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		d := dp.Load()
		if !tableWrite(op) || d == nil {
			return nil
		}
		if failing.Load() {
			return errorfs.ErrInjected
		}
		if !once.CompareAndSwap(false, true) {
			return nil
		}
		// The first table write of a flush waits until Close has begun
		// and waits inside Pebble, then fails, and so does every retry.
		close(blocked)
		for !d.watch.isClosing() {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
		failing.Store(true)
		return errorfs.ErrInjected
	}))
	d, err := Open("db", &Options{fs: fs, Logger: discardLogger(), MemTableSize: 64 << 10, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	dp.Store(d)
	for i := 0; d.pdb.Metrics().MemTable.Count < 2; i++ {
		if _, err := d.Add(ctx, Input{ID: fmt.Sprintf("doc%05d", i), Text: []byte(crashText(uint64(i)))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-blocked:
	case <-time.After(time.Minute):
		t.Fatal("no flush began")
	}
	err = d.Close()
	t.Fatalf("Close returned (%v): the test needs it to wait inside Pebble", err)
}
