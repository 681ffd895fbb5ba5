package db

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// envInt returns the integer in environment variable name, or def.
func envInt(t testing.TB, name string, def int) int {
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%s=%q: %v", name, s, err)
		}
		return n
	}
	return def
}

// wordReader yields n bytes of pseudo-random words, never holding them.
type wordReader struct {
	r    *rand.Rand
	left int64
	buf  []byte
}

func (w *wordReader) Read(p []byte) (int, error) {
	if w.left <= 0 {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && w.left > 0 {
		if len(w.buf) == 0 {
			w.buf = fmt.Appendf(w.buf[:0], "w%d ", w.r.IntN(50000))
		}
		c := copy(p[n:], w.buf)
		c = int(min(int64(c), w.left))
		w.buf = w.buf[c:]
		n += c
		w.left -= int64(c)
	}
	return n, nil
}

// peakHeap samples the heap every few milliseconds until stop is called and
// returns the largest HeapAlloc seen.
func peakHeap() (stop func() uint64) {
	var mu sync.Mutex
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapAlloc)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// TestHugeDocument streams a large document (100 MB; 16 MB under -race or
// -short; FPDB_LIMITS_DOC_MB sets it) through AddReader and checks that the
// heap never grows by more than 64 MB: the text is never held whole.
func TestHugeDocument(t *testing.T) {
	mb := 100
	if raceEnabled || testing.Short() {
		mb = 16
	}
	mb = envInt(t, "FPDB_LIMITS_DOC_MB", mb)
	d := openTest(t, "", &Options{NoSync: true})
	// Collect often, so that garbage does not count as growth: with the
	// default GOGC the heap may double the live heap left by earlier tests
	// before a collection, whatever this test keeps.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	stop := peakHeap()
	start := time.Now()
	size := int64(mb) << 20
	res, err := d.Add(ctx, Input{ID: "huge", Reader: &wordReader{r: rand.New(rand.NewPCG(1, 2)), left: size}}, nil)
	peak := stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.Doc.Size != size || res.Doc.Words < int(size/8) {
		t.Fatalf("stored size %d words %d, want size %d", res.Doc.Size, res.Doc.Words, size)
	}
	grew := int64(peak) - int64(base)
	t.Logf("huge document: %d MB fingerprinted in %v; heap peak %.1f MB above the %.1f MB baseline",
		mb, time.Since(start).Round(time.Millisecond), float64(grew)/(1<<20), float64(base)/(1<<20))
	if grew > 64<<20 {
		t.Fatalf("heap grew by %d MB for a %d MB document: not streamed", grew>>20, mb)
	}
	q, err := d.QueryReader(ctx, &wordReader{r: rand.New(rand.NewPCG(1, 2)), left: size}, QueryOptions{Threshold: 1})
	if err != nil || len(q.Matches) != 1 || !q.Matches[0].Exact {
		t.Fatalf("query of the same stream: %+v %v", q, err)
	}
}

// TestManyTinyFiles adds a directory of tiny files (2 000; 500 with -short;
// FPDB_LIMITS_FILES sets it, e.g. 1000000) walked file by file, reopens
// the database and checks the count, a few answers and Check.
func TestManyTinyFiles(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 500
	}
	n = envInt(t, "FPDB_LIMITS_FILES", n)
	src := t.TempDir()
	for i := range n {
		sub := filepath.Join(src, fmt.Sprintf("%03d", i%1000))
		if i < 1000 {
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		body := fmt.Sprintf("tiny file %d says n%d and m%d", i, i, i*7)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d.txt", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	d := openTest(t, dir, &Options{NoSync: true})
	start := time.Now()
	added := 0
	err := filepath.WalkDir(src, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := d.Add(ctx, Input{ID: path, Reader: f}, nil); err != nil {
			return err
		}
		added++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	closeChecked(t, d)
	d = openTest(t, dir, nil)
	if got := d.Stats().Docs; got != n || added != n {
		t.Fatalf("%d documents stored, %d added, want %d", got, added, n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		body := fmt.Sprintf("tiny file %d says n%d and m%d", i, i, i*7)
		q, err := d.Query(ctx, []byte(body), QueryOptions{Threshold: 1})
		want := filepath.Join(src, fmt.Sprintf("%03d", i%1000), fmt.Sprintf("f%d.txt", i))
		if err != nil || len(q.Matches) == 0 || q.Matches[0].ID != want {
			t.Fatalf("query of file %d: %+v %v", i, q, err)
		}
	}
	t.Logf("many tiny files: %d files added in %v (%.0f/s), reopened, Check passed", n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds())
}

// readOnlyFS fails every operation that would change the file system with
// EROFS, as a read-only mount does. fpdb's lock file, which fpdb opens
// read-only in a read-only DB, can be locked; Pebble's LOCK, which Pebble
// opens read-write, cannot (EACCES, as under chmod).
func readOnlyFS(fs vfs.FS) vfs.FS {
	return errorfs.Wrap(fs, errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch {
		case op.Kind == errorfs.OpLock && filepath.Base(op.Path) == "LOCK":
			return &fsError{op: op, err: syscall.EACCES}
		case op.Kind == errorfs.OpLock || op.Kind == errorfs.OpFileClose:
			return nil
		case op.Kind.ReadOrWrite() == errorfs.OpIsWrite:
			return &fsError{op: op, err: syscall.EROFS}
		}
		return nil
	}))
}

// TestReadOnlyDirectory opens a database on a read-only file system: read
// only, everything reads; read-write, Open fails with an error (no panic,
// nothing changed). With chmod, where chmod stops writes (not as root).
func TestReadOnlyDirectory(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, nil)
	texts := []string{text(501, 80), text(502, 80)}
	for i, s := range texts {
		if _, err := d.Add(ctx, Input{ID: fmt.Sprint("doc", i), Text: []byte(s)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	closeChecked(t, d)
	before := dirListing(t, dir)

	check := func(t *testing.T, fs vfs.FS) {
		ro := openTest(t, dir, &Options{ReadOnly: true, fs: fs})
		for i, s := range texts {
			q, err := ro.Query(ctx, []byte(s), QueryOptions{Threshold: 1})
			if err != nil || len(q.Matches) != 1 || q.Matches[0].ID != fmt.Sprint("doc", i) {
				t.Fatalf("read-only query: %+v %v", q, err)
			}
		}
		if _, err := ro.Add(ctx, Input{ID: "x", Text: []byte("a few words")}, nil); !errors.Is(err, ErrReadOnly) {
			t.Fatalf("Add on a read-only DB: %v", err)
		}
		if err := ro.Check(ctx); err != nil {
			t.Fatal(err)
		}
		closeChecked(t, ro)
		if d, err := Open(dir, &Options{fs: fs}); err == nil {
			_ = d.Close()
			t.Fatal("read-write Open on a read-only file system succeeded")
		} else {
			t.Logf("read-write open: %v", err)
		}
		if after := dirListing(t, dir); after != before {
			t.Fatalf("the read-only directory changed:\n%s\nvs\n%s", before, after)
		}
	}
	t.Run("read-only FS", func(t *testing.T) { check(t, readOnlyFS(vfs.Default)) })
	t.Run("chmod", func(t *testing.T) {
		chmodAll(t, dir, 0o555, 0o444)
		t.Cleanup(func() { chmodAll(t, dir, 0o755, 0o644) })
		probe := filepath.Join(dir, "probe")
		if f, err := os.Create(probe); err == nil {
			_ = f.Close()
			_ = os.Remove(probe)
			t.Skip("chmod does not stop writes here (running as root); the read-only FS subtest covers this case")
		}
		check(t, vfs.Default)
	})
}

func chmodAll(t *testing.T, dir string, dirMode, fileMode os.FileMode) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Chmod(filepath.Join(dir, e.Name()), fileMode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		t.Fatal(err)
	}
}

func dirListing(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		mtime := fi.ModTime().UnixNano()
		if strings.HasSuffix(e.Name(), "LOCK") {
			mtime = 0 // locking may touch a lock file
		}
		fmt.Fprintf(&b, "%s %d %v\n", e.Name(), fi.Size(), mtime)
	}
	return b.String()
}

// TestTwoProcesses opens a database in a child process and checks that this
// process gets ErrLocked (read-write and read-only) until the child dies.
func TestTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, nil)
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte(text(601, 40))}, nil); err != nil {
		t.Fatal(err)
	}
	closeChecked(t, d)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "open\n" {
		t.Fatalf("child: %q %v", line, err)
	}
	for _, o := range []*Options{nil, {ReadOnly: true}} {
		if _, err := Open(dir, o); !errors.Is(err, ErrLocked) {
			t.Fatalf("Open %+v while another process has the DB: %v", o, err)
		}
	}
	if _, err := Repair(ctx, dir, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("Repair while another process has the DB: %v", err)
	}
	// A bounded wait: too short, it fails naming the wait; long enough, it
	// opens once the other process lets go.
	start := time.Now()
	if _, err := Open(dir, &Options{LockWait: 150 * time.Millisecond}); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "waited 150ms") || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("Open with a short LockWait: %v after %v", err, time.Since(start))
	}
	opened := make(chan error, 1)
	go func() {
		d, err := Open(dir, &Options{LockWait: time.Minute})
		if err == nil {
			err = d.Close()
		}
		opened <- err
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-opened:
		t.Fatalf("Open with LockWait returned while the other process held the DB: %v", err)
	default:
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err := <-opened; err != nil {
		t.Fatalf("Open with LockWait after the other process ended: %v", err)
	}
	d = openTest(t, dir, nil)
	if d.Stats().Docs != 1 {
		t.Fatalf("docs = %d", d.Stats().Docs)
	}
}

// TestOpenLayoutLimits opens new databases with creation parameters that
// break a limit of the index layout. Open must refuse them before it
// writes anything (an error wrapping ErrInvalidOptions and naming the
// limit; the directory stays without a database), and a later Open with
// valid options must create the database there.
func TestOpenLayoutLimits(t *testing.T) {
	wide := make([]int, 0, 256)
	for range 256 {
		wide = append(wide, 16)
	}
	cases := []struct {
		name string
		opts *Options
		want []string
	}{
		{"K=4096 with the default group width: 256 groups", &Options{K: 4096}, []string{"256 groups, at most 255"}},
		{"K=8192", &Options{K: 8192}, []string{"512 groups, at most 255"}},
		{"256 explicit groups", &Options{K: 4096, GroupWidths: wide}, []string{"256 groups, at most 255"}},
		{"K beyond the min-hash limit", &Options{K: 1 << 17, GroupWidths: []int{24}}, []string{"K = 131072"}},
		{"K and shingle width both wrong", &Options{K: 100, ShingleWidth: 65}, []string{"K = 100", "ShingleWidth = 65"}},
		{"group too wide", &Options{K: 64, GroupWidths: []int{32, 32}}, []string{"width 32"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.opts.Clone().EnsureDefaults().Validate(); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("Validate: %v, want ErrInvalidOptions", err)
			}
			parent := t.TempDir()
			dir := filepath.Join(parent, "db")
			_, err := Open(dir, c.opts)
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("Open: %v, want ErrInvalidOptions", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open: %v, want it to name %q", err, w)
				}
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Open with invalid options created %s: %v", dir, err)
			}
			// The same options on an existing empty directory write nothing.
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(dir, c.opts); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("second Open: %v, want ErrInvalidOptions", err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Fatalf("Open with invalid options wrote %v", ents)
			}
			d := openTest(t, dir, &Options{K: 2048})
			if _, err := d.Add(ctx, Input{ID: "a", Text: []byte(text(1, 50))}, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}
