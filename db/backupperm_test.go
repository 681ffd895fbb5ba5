package db

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupKeepsDirectoryPermissions: a backup's directory has the
// permission bits of the database directory (0700 gives 0700, 0750 gives
// 0750), not Pebble's 0755; while the copy is being made it lies inside
// the hidden work directory, which only the process's user may enter, and
// the destination does not exist yet; afterwards no hidden directory is
// left, and the copy opens with every document.
func TestBackupKeepsDirectoryPermissions(t *testing.T) {
	for _, perm := range []fs.FileMode{0o700, 0o750} {
		root := t.TempDir()
		dir := filepath.Join(root, "db")
		if err := os.Mkdir(dir, perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, perm); err != nil { // whatever the umask
			t.Fatal(err)
		}
		d := openTest(t, dir, nil)
		addBatch(t, d, fpBatch(rand.New(rand.NewPCG(11, uint64(perm))), "a", 20, DefaultK))
		dest := filepath.Join(root, "backups", "copy")
		var during []string
		d.hook = func(point string) {
			if point != "backup copied" {
				return
			}
			during = append(during, "called")
			names, err := os.ReadDir(filepath.Dir(dest))
			if err != nil {
				t.Errorf("during the backup: %v", err)
				return
			}
			for _, e := range names {
				if !strings.HasPrefix(e.Name(), incompleteBackupPrefix) {
					t.Errorf("during the backup: %s beside the hidden work directory", e.Name())
					continue
				}
				work := filepath.Join(filepath.Dir(dest), e.Name())
				fi, err := os.Stat(work)
				if err != nil {
					t.Error(err)
					continue
				}
				if p := fi.Mode().Perm(); p&0o077 != 0 {
					t.Errorf("during the backup: the work directory has mode %v: others may enter it", p)
				}
				if m, _ := filepath.Glob(filepath.Join(work, backupCopyName, "MANIFEST-*")); len(m) == 0 {
					t.Error("during the backup: no copy inside the work directory")
				}
			}
		}
		res, err := d.Backup(ctx, dest)
		if err != nil {
			t.Fatal(err)
		}
		if len(during) != 1 {
			t.Errorf("mode %v: the copy was not seen in the work directory (%d)", perm, len(during))
		}
		fi, err := os.Stat(dest)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != perm {
			t.Errorf("database directory %v: backup directory %v, want %v", perm, got, perm)
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), incompleteBackupPrefix+"*")); len(left) > 0 {
			t.Errorf("the backup left %q", left)
		}
		closeChecked(t, d)
		b := openTest(t, dest, &Options{ReadOnly: true})
		if res.Docs != 20 || b.Len() != 20 {
			t.Errorf("backup of 20 documents: answered %d, the copy holds %d", res.Docs, b.Len())
		}
		closeChecked(t, b)
	}
}

// TestBackupFailureLeavesNoWorkDirectory: a backup that fails after the
// copy (its destination appeared meanwhile, so the final rename fails)
// removes its hidden work directory, the copy in it included, and leaves
// what is at the destination alone.
func TestBackupFailureLeavesNoWorkDirectory(t *testing.T) {
	root := t.TempDir()
	d := openTest(t, filepath.Join(root, "db"), nil)
	addBatch(t, d, fpBatch(rand.New(rand.NewPCG(12, 13)), "a", 10, DefaultK))
	dest := filepath.Join(root, "copy")
	d.hook = func(point string) {
		if point == "backup copied" {
			if err := os.MkdirAll(filepath.Join(dest, "other"), 0o755); err != nil {
				t.Error(err)
			}
		}
	}
	if _, err := d.Backup(ctx, dest); err == nil {
		t.Fatal("Backup onto a destination made meanwhile succeeded")
	}
	if left, _ := filepath.Glob(filepath.Join(root, incompleteBackupPrefix+"*")); len(left) > 0 {
		t.Errorf("the failed backup left %q", left)
	}
	if _, err := os.Stat(filepath.Join(dest, "other")); err != nil {
		t.Errorf("the failed backup touched its destination: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dest, "MANIFEST-*")); len(m) > 0 {
		t.Errorf("the failed backup wrote into its destination: %q", m)
	}
	closeChecked(t, d)
}
