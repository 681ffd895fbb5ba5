package db

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// backupModeChildEnv, set, makes TestBackupNonOwnerWritableDirectory the
// child run as another user than root (see runBackupModeChild).
const backupModeChildEnv = "FPDB_TEST_BACKUP_MODE_CHILD"

// TestBackupNonOwnerWritableDirectory: a database directory whose owner
// may not write in it (0500, 0570: a database whose directory was made
// read-only while it is open, or one a group may write in and its owner
// not) gives a backup of those bits. The copy, this process's own, is
// renamed into place while its owner may write in it (renaming a
// directory into another parent rewrites its ".." entry): the backup
// succeeds, its directory gets the exact bits, and no hidden directory is
// left. Root passes permission checks, so as root the test runs again as
// another user (nobody, 65534), in a child process.
func TestBackupNonOwnerWritableDirectory(t *testing.T) {
	for _, perm := range []fs.FileMode{0o500, 0o570} {
		backupWithDirMode(t, perm)
		backupWithDirModeFails(t, perm)
	}
	if os.Geteuid() != 0 || os.Getenv(backupModeChildEnv) != "" {
		return
	}
	runBackupModeChild(t)
}

// backupWithDirMode backs up a database whose directory has the bits perm
// (set once it is open) and checks the copy's.
func backupWithDirMode(t *testing.T, perm fs.FileMode) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "db")
	dest := filepath.Join(root, "backups", "copy")
	// Made writable again before the temporary directory is removed
	// (cleanups run last first), whatever the test left.
	t.Cleanup(func() {
		_ = os.Chmod(dir, 0o700)
		_ = os.Chmod(dest, 0o700)
	})
	d, err := Open(dir, &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	addBatch(t, d, fpBatch(rand.New(rand.NewPCG(21, uint64(perm))), "a", 20, DefaultK))
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	_, berr := d.Backup(ctx, dest)
	if err := os.Chmod(dir, 0o700); err != nil { // for Close
		t.Fatal(err)
	}
	closeChecked(t, d)
	if berr != nil {
		t.Errorf("database directory %v (uid %d): %v", perm, os.Geteuid(), berr)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), incompleteBackupPrefix+"*")); len(left) > 0 {
		t.Errorf("database directory %v: the backup left %q", perm, left)
	}
	if berr != nil {
		return
	}
	fi, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != perm {
		t.Errorf("database directory %v: backup directory %v, want %v", perm, got, perm)
	}
	b, err := Open(dest, &Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open the copy of mode %v: %v", perm, err)
	}
	if b.Len() != 20 {
		t.Errorf("the copy holds %d documents, want 20", b.Len())
	}
	closeChecked(t, b)
}

// backupWithDirModeFails backs up a database whose directory has the bits
// perm into a destination made while the copy is made (the rename fails):
// the backup fails, leaves no hidden directory, and leaves the
// destination alone.
func backupWithDirModeFails(t *testing.T, perm fs.FileMode) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "db")
	dest := filepath.Join(root, "copy")
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	d, err := Open(dir, &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	addBatch(t, d, fpBatch(rand.New(rand.NewPCG(22, uint64(perm))), "a", 10, DefaultK))
	d.hook = func(point string) {
		if point == "backup copied" {
			if err := os.MkdirAll(filepath.Join(dest, "other"), 0o755); err != nil {
				t.Error(err)
			}
		}
	}
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	_, berr := d.Backup(ctx, dest)
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	closeChecked(t, d)
	if berr == nil {
		t.Errorf("database directory %v: a backup onto a destination made meanwhile succeeded", perm)
	}
	if left, _ := filepath.Glob(filepath.Join(root, incompleteBackupPrefix+"*")); len(left) > 0 {
		t.Errorf("database directory %v: the failed backup left %q", perm, left)
	}
	if names, err := os.ReadDir(dest); err != nil || len(names) != 1 || names[0].Name() != "other" {
		t.Errorf("database directory %v: the failed backup touched its destination: %v %v", perm, names, err)
	}
}

// runBackupModeChild runs TestBackupNonOwnerWritableDirectory again as
// the user nobody (65534), from a copy of the test binary that user may
// run; it skips, saying why, where that cannot be done.
func runBackupModeChild(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("as another user than root: %v", err)
	}
	// Not in t.TempDir(), whose parent only root may enter.
	var bin, tmp string
	for _, d := range []*string{&bin, &tmp} {
		if *d, err = os.MkdirTemp("", "fpdb-backup-mode-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(*d) })
		if err := os.Chmod(*d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	child := filepath.Join(bin, "db.test")
	dst, err := os.OpenFile(child, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(child, "-test.run=^TestBackupNonOwnerWritableDirectory$", "-test.count=1", "-test.v")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), backupModeChildEnv+"=1", "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		if !bytes.Contains(out.Bytes(), []byte("--- PASS: TestBackupNonOwnerWritableDirectory")) {
			t.Fatalf("as the user nobody: the test did not run:\n%s", out.Bytes())
		}
	case bytes.Contains(out.Bytes(), []byte("--- FAIL")):
		t.Fatalf("as the user nobody:\n%s", out.Bytes())
	case errors.As(err, &ee):
		t.Fatalf("as the user nobody: %v:\n%s", err, out.Bytes())
	default:
		t.Skipf("as another user than root (the non-root case is not exercised): %v", err)
	}
}
