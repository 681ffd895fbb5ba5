package db

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestBackupInsideThroughSymlink: a destination that reaches the database
// directory through a symbolic link is refused like one named directly, and
// so is a destination named directly under a database opened through a
// link; nothing is written into the database directory. A link to a
// directory outside the database is a valid way to name the destination.
func TestBackupInsideThroughSymlink(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "db")
	d := openTest(t, real, nil)
	r := rand.New(rand.NewPCG(7, 8))
	addBatch(t, d, fpBatch(r, "a", 20, DefaultK))
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, dest := range []string{
		filepath.Join(link, "inner"),
		filepath.Join(link, "new", "deeper"),
		link + string(filepath.Separator) + "x" + string(filepath.Separator) + ".." + string(filepath.Separator) + "inner",
	} {
		if _, err := d.Backup(ctx, dest); err == nil {
			t.Errorf("Backup to %s (a link into the database directory) succeeded", dest)
		}
	}
	for _, name := range []string{"inner", "new", "x"} {
		if _, err := os.Lstat(filepath.Join(real, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("refused Backup left %s in the database directory: %v", name, err)
		}
	}
	// A link to a directory outside the database is followed.
	outside := filepath.Join(root, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	outLink := filepath.Join(root, "out")
	if err := os.Symlink(outside, outLink); err != nil {
		t.Fatal(err)
	}
	res, err := d.Backup(ctx, filepath.Join(outLink, "backup"))
	if err != nil {
		t.Fatalf("Backup through a link to an outside directory: %v", err)
	}
	if res.Docs != 20 {
		t.Errorf("Backup counted %d documents, want 20", res.Docs)
	}
	closeChecked(t, d)
	b := openTest(t, filepath.Join(outside, "backup"), &Options{ReadOnly: true})
	if b.Len() != 20 {
		t.Errorf("backup holds %d documents, want 20", b.Len())
	}
	closeChecked(t, b)

	// The database opened through the link: the real path is refused.
	d = openTest(t, link, nil)
	if _, err := d.Backup(ctx, filepath.Join(real, "direct")); err == nil {
		t.Error("Backup into the real directory of a database opened through a link succeeded")
	}
	if _, err := os.Lstat(filepath.Join(real, "direct")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("refused Backup left direct in the database directory: %v", err)
	}
}

// TestBackupLeavesNoLock: counting the copy's documents opens it without
// taking Pebble's lock, so the backup holds no LOCK file of that open;
// and the copy opens with its documents.
func TestBackupLeavesNoLock(t *testing.T) {
	root := t.TempDir()
	d := openTest(t, filepath.Join(root, "db"), nil)
	addBatch(t, d, fpBatch(rand.New(rand.NewPCG(9, 9)), "a", 20, DefaultK))
	dest := filepath.Join(root, "copy")
	res, err := d.Backup(ctx, dest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dest, "LOCK")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the backup holds a LOCK file: %v", err)
	}
	c := openTest(t, dest, nil)
	if res.Docs != 20 || c.Len() != 20 {
		t.Errorf("backup of 20 documents: answered %d, the copy holds %d", res.Docs, c.Len())
	}
}

// TestCheckpoint: Checkpoint makes the copy Backup makes (without the
// count): it opens with every document.
func TestCheckpoint(t *testing.T) {
	root := t.TempDir()
	d := openTest(t, filepath.Join(root, "db"), nil)
	addBatch(t, d, fpBatch(rand.New(rand.NewPCG(9, 10)), "a", 30, DefaultK))
	dest := filepath.Join(root, "copy")
	if err := d.Checkpoint(ctx, dest); err != nil {
		t.Fatal(err)
	}
	if err := d.Checkpoint(ctx, dest); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Checkpoint over an existing directory: %v", err)
	}
	if c := openTest(t, dest, nil); c.Len() != 30 {
		t.Errorf("the copy holds %d documents, want 30", c.Len())
	}
}
