package db

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/keys"
)

// BackupResult describes a backup.
type BackupResult struct {
	// Docs is the number of documents in the copy, counted in the copy
	// itself: the documents stored when Backup was called, give or take
	// the writes that went on meanwhile and reached the copy (see Backup).
	// It is the number Len reports once the copy is opened.
	Docs int
}

// Backup writes a consistent copy of the database into dir while the
// database stays open: queries and writes go on meanwhile. The copy holds
// every write acknowledged before Backup was called (even with
// Options.NoSync: the WAL is synced first) and possibly some later ones,
// each write whole or absent, as after a crash. dir must not exist; its
// parents are created. The copy is an fpdb database that Open opens like
// any other (it has no lock held, and postings a bulk load deferred are
// written by its first writable Open, see Options.BulkLoad). The result
// counts the documents of the copy, which Backup reads once it is made
// (a pass over its id map, while writes go on in the database).
//
// Backup runs on Pebble's checkpoint: table files are hard-linked when dir
// is on the same file system as the database (the copy then costs little
// space at first, and more as compactions rewrite the originals) and
// copied otherwise; the WAL is copied. The copy is made inside a hidden
// directory beside dir (".incomplete-backup-NAME-…", which only the
// process's user may enter) and renamed to dir once complete, so that dir
// never holds a copy cut short: a crash midway leaves that hidden
// directory, which may be removed. A failure removes it. On the operating
// system's file system dir gets the permission bits of the database
// directory (a database only its owner may read gives a copy only its
// owner may read: the files inside are readable by all, as the database's
// own are, and the directory guards them): before that rename, with all
// of its owner's added (renaming a directory into another parent needs
// write permission on it), and exactly once renamed, so the copy is never
// in a directory others may enter when the database is not, and a mode
// its owner may not write in (0500) backs up as well. An
// empty dir, or one inside the database directory, is
// refused with an error wrapping ErrInvalidOptions. Backup is not
// cut short by ctx once the copy has begun, and Close waits for it. A
// read-only DB refuses it with ErrReadOnly.
func (d *DB) Backup(ctx context.Context, dir string) (BackupResult, error) {
	return d.backup(ctx, dir, true)
}

// destError is a destination Backup refuses (one inside the database
// directory): it wraps ErrInvalidOptions, and its message is msg alone,
// which names the destination and the database already.
type destError struct{ msg string }

func (e *destError) Error() string { return e.msg }
func (e *destError) Unwrap() error { return ErrInvalidOptions }

// Checkpoint makes the copy Backup makes, without counting its documents
// (Backup's pass over the copy's id map, which takes time in proportion
// to the number of documents): for callers that copy often and need no
// count, such as a replica's snapshots.
func (d *DB) Checkpoint(ctx context.Context, dir string) error {
	_, err := d.backup(ctx, dir, false)
	return err
}

// backup is Backup, counting the copy's documents if count.
func (d *DB) backup(ctx context.Context, dir string, count bool) (BackupResult, error) {
	if err := d.live(); err != nil {
		return BackupResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return BackupResult{}, err
	}
	if dir == "" {
		return BackupResult{}, fmt.Errorf("fpdb: backup: %w: empty destination directory", ErrInvalidOptions)
	}
	if d.opts.ReadOnly {
		// Pebble checkpoints only a writable store (it copies the OPTIONS
		// file a writable Open writes).
		return BackupResult{}, fmt.Errorf("fpdb: backup %s: %w (open it writable, or copy its directory: a read-only DB excludes every writer)", dir, ErrReadOnly)
	}
	if err := d.enter(ctx); err != nil {
		return BackupResult{}, err
	}
	defer d.leave()
	fsys := d.opts.fs
	// Inside the database first: the database directory itself, or a file
	// of it, exists too, and is refused as inside.
	if d.InsideDir(dir) {
		return BackupResult{}, &destError{fmt.Sprintf("fpdb: backup %s: the destination is inside the database directory %s", dir, d.dir)}
	}
	if _, err := fsys.Stat(dir); err == nil {
		return BackupResult{}, fmt.Errorf("fpdb: backup %s: %w (the destination must not exist)", dir, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return BackupResult{}, fmt.Errorf("fpdb: backup %s: %w", dir, err)
	}
	if vfs.Root(fsys) == vfs.Default {
		// A symbolic link to nothing: Stat finds no file, and the copy's
		// final rename would fail on it.
		if _, err := os.Lstat(dir); err == nil {
			return BackupResult{}, fmt.Errorf("fpdb: backup %s: %w (a symbolic link: the destination must not exist)", dir, fs.ErrExist)
		}
	}
	// The copy is made beside dir and renamed to dir once complete: a
	// crash midway (Pebble writes the MANIFEST before it copies the WAL)
	// must not leave at dir a store that opens without the writes of the
	// WAL it had not copied yet. at is dir where the operating system
	// takes it: Pebble joins names to the directory it copies into, which
	// would clean "link/.." away by the text.
	at := trimSeparators(dir)
	if vfs.Root(fsys) == vfs.Default {
		at = resolvePath(dir)
	}
	// Pebble makes the directory it copies into, and its files, readable
	// by all (0755, 0644): it copies into a directory inside the hidden
	// one, which this process makes first for its user alone, so that no
	// one else may reach the copy before it has the database directory's
	// permission bits.
	mode, err := dirPerm(fsys, d.dir)
	if err != nil {
		return BackupResult{}, fmt.Errorf("fpdb: backup %s: %w", dir, err)
	}
	tmp := incompleteBackupDir(at)
	copyDir := fsys.PathJoin(tmp, backupCopyName)
	err = mkdirSynced(fsys, tmp, 0o700)
	if err == nil {
		// WithFlushedWAL syncs the WAL first, so that writes acknowledged
		// with NoSync are in the copy. A storage failure there ends the
		// process like one in a commit (see storageFailure).
		err = d.checkpoint(copyDir, pebble.WithFlushedWAL())
	}
	if err == nil {
		// A read-only Open needs the lock file to exist (it opens it
		// without creating it); the checkpoint has none.
		err = createLockFile(fsys, copyDir)
	}
	var res BackupResult
	if err == nil && count {
		// Counted in the copy: the database's own count has moved on with
		// the writes since the checkpoint, which copied the WAL as it
		// found it. Not cut short by ctx either.
		res.Docs, err = d.countCopy(context.WithoutCancel(ctx), copyDir)
	}
	if err == nil {
		d.at("backup copied")
		// The database directory's bits, with all of its owner's until the
		// copy is in place (the hidden directory keeps others out
		// meanwhile): renaming a directory into another parent rewrites
		// its ".." entry, which needs write permission on it, so a mode
		// such as 0500 or 0570 would fail the rename (the copy is this
		// process's), and a copy its owner may not write in could not be
		// removed after a failure.
		err = chmodDir(fsys, copyDir, mode|0o700)
	}
	if err == nil {
		if err = fsys.Rename(copyDir, at); err == nil {
			_ = fsys.Remove(tmp) // empty now; left, a hidden empty directory beside dir
			// The exact bits once renamed, and the new name, synced.
			err = setDirMode(fsys, at, mode)
			if err == nil {
				err = syncParent(fsys, at)
			}
			if err != nil {
				// dir holds the copy of a backup that fails: removed, as
				// a failure before the rename would have.
				_ = chmodDir(fsys, at, 0o700)
				_ = fsys.RemoveAll(at)
			}
		}
	}
	if err != nil {
		_ = chmodDir(fsys, copyDir, 0o700) // removable, whatever its bits
		_ = fsys.RemoveAll(tmp)
		return BackupResult{}, fmt.Errorf("fpdb: backup %s: %w", dir, err)
	}
	return res, nil
}

// backupCopyName is the name of the directory, inside the hidden one
// (incompleteBackupDir), that a backup is copied into.
const backupCopyName = "copy"

// dirPerm returns the permission bits of the directory dir on the
// operating system's file system, and 0 on another (which has none to
// carry over: see chmodDir).
func dirPerm(fsys vfs.FS, dir string) (fs.FileMode, error) {
	if vfs.Root(fsys) != vfs.Default {
		return 0, nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, err
	}
	return fi.Mode().Perm(), nil
}

// chmodDir gives the directory dir the permission bits perm, on the
// operating system's file system (vfs.FS has no Chmod: elsewhere, as in
// tests on a memory file system, it does nothing).
func chmodDir(fsys vfs.FS, dir string, perm fs.FileMode) error {
	if vfs.Root(fsys) != vfs.Default {
		return nil
	}
	return os.Chmod(dir, perm)
}

// setDirMode gives the directory dir the permission bits perm and syncs
// it, so that they survive a crash, on the operating system's file system
// (elsewhere it does nothing, as chmodDir). dir is opened before its bits
// change: perm need not let its owner read it.
func setDirMode(fsys vfs.FS, dir string, perm fs.FileMode) error {
	if vfs.Root(fsys) != vfs.Default {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// mkdirSynced makes the directory dir with the permission bits perm (less
// the umask) and its missing parents with 0755, as Pebble's checkpoint
// made them, and syncs each directory that got a new entry (dir's parent,
// and the parent of each parent made), so that they survive a crash.
func mkdirSynced(fsys vfs.FS, dir string, perm fs.FileMode) error {
	parent := fsys.PathDir(dir)
	changed := []string{parent}
	for p := parent; fsys.PathDir(p) != p; p = fsys.PathDir(p) {
		if _, err := fsys.Stat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		changed = append(changed, fsys.PathDir(p))
	}
	if err := fsys.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	if err := fsys.MkdirAll(dir, perm); err != nil {
		return err
	}
	for _, p := range changed {
		if err := syncDir(fsys, p); err != nil {
			return err
		}
	}
	return nil
}

// incompleteBackupPrefix starts the name of the directory a backup is
// made in, beside its destination, until it is complete.
const incompleteBackupPrefix = ".incomplete-backup-"

// incompleteBackupDir returns where the backup into dir is made: a
// hidden sibling of dir (on the same file system, so that it can be
// renamed to dir), named after it, with a random suffix (two backups to
// one destination at once do not share it); a name too long for that
// (file names have at most 255 bytes) is left out.
func incompleteBackupDir(dir string) string {
	parent, base := splitParent(dir)
	var b [6]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	name := incompleteBackupPrefix + base + "-" + suffix
	if len(name) > 255 {
		name = incompleteBackupPrefix + suffix
	}
	return parent + name
}

// splitParent splits path, without its trailing separators, into its
// parent (with its separator; "" for none) and its last element, as the
// text goes: no cleaning (filepath.Dir, Join and Clean remove "link/.."
// by the text alone, where the operating system goes to the parent of the
// link's target, which is where the checks before the copy looked).
func splitParent(path string) (parent, base string) {
	path = trimSeparators(path)
	i := len(path) - 1
	for i >= 0 && !os.IsPathSeparator(path[i]) {
		i--
	}
	return path[:i+1], path[i+1:]
}

// trimSeparators returns path without its trailing separators ("/" stays).
// It is not filepath.Clean, which removes "link/.." by the text alone,
// where the operating system goes to the parent of the link's target
// (the checks before the copy saw that path).
func trimSeparators(path string) string {
	for len(path) > 1 && os.IsPathSeparator(path[len(path)-1]) {
		path = path[:len(path)-1]
	}
	return path
}

// syncParent syncs the parent of path, so that the name path survives a
// crash.
func syncParent(fsys vfs.FS, path string) error {
	parent, _ := splitParent(path)
	if parent == "" {
		parent = "."
	}
	return syncDir(fsys, parent)
}

// countCopy returns the number of documents of the copy in dir, the keys
// of its id map, opening its store read-only.
func (d *DB) countCopy(ctx context.Context, dir string) (int, error) {
	p, err := pebble.Open(dir, &pebble.Options{
		FormatMajorVersion: pebbleFormat,
		Merger:             index.Merger(),
		MemTableSize:       uint64(d.opts.MemTableSize),
		ReadOnly:           true,
		FS:                 noLockFS{d.opts.fs}, // no LOCK file left in the copy
		Logger:             slogLogger{d.opts.Logger},
	})
	if err != nil {
		return 0, fmt.Errorf("count the documents of the copy: %w", storageError(err))
	}
	n, err := countKeys(ctx, p, keys.PrefixExtID)
	if cerr := p.Close(); err == nil && cerr != nil {
		err = storageError(cerr)
	}
	if err != nil {
		return 0, fmt.Errorf("count the documents of the copy: %w", err)
	}
	return n, nil
}

// checkpoint runs Pebble's checkpoint into dir.
func (d *DB) checkpoint(dir string, opts ...pebble.CheckpointOption) error {
	defer exitOnStoragePanic(d.opts.Logger)
	return d.pdb.Checkpoint(dir, opts...)
}

// createLockFile creates fpdb's empty lock file in dir and syncs dir.
func createLockFile(fsys vfs.FS, dir string) error {
	f, err := fsys.Create(filepath.Join(dir, lockFileName), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(fsys, dir)
}

// syncDir syncs the directory dir, so that the names made in it survive
// a crash.
func syncDir(fsys vfs.FS, dir string) error {
	df, err := fsys.OpenDir(dir)
	if err != nil {
		return err
	}
	if err := df.Sync(); err != nil {
		_ = df.Close()
		return err
	}
	return df.Close()
}

// InsideDir reports whether path is the database directory or lies under
// it, following symbolic links in both (path need not exist): Backup
// refuses such a destination.
func (d *DB) InsideDir(path string) bool {
	return inside(d.opts.fs, d.dir, path)
}

// inside reports whether path is dir or lies under it. On the operating
// system's file system both are compared after resolving symbolic links
// (see resolvePath), so that a destination reached through a link into the
// database directory, or a database opened through a link, is seen inside;
// on another file system (tests) they are compared lexically, after making
// both absolute.
func inside(fsys vfs.FS, dir, path string) bool {
	a, err1 := filepath.Abs(dir)
	b, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return false
	}
	if vfs.Root(fsys) == vfs.Default {
		a, b = resolvePath(dir), resolvePath(path)
	}
	rel, err := filepath.Rel(a, b)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && !startsWithDotDot(rel)
}

func startsWithDotDot(rel string) bool {
	return len(rel) >= 3 && rel[:3] == ".."+string(filepath.Separator)
}

// resolvePath returns the absolute path the operating system reaches by
// path, which need not exist: the longest prefix of path that resolves
// (filepath.EvalSymlinks, which follows links and applies ".." to the
// directory a link leads to) is replaced by what it resolves to, and the
// rest, which names nothing yet and so holds no link, is joined to it
// lexically. It falls back to the lexical absolute path.
func resolvePath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if !filepath.IsAbs(path) {
		// Keep path's own components: Abs cleans "link/.." away before
		// the link is followed.
		if wd, err := os.Getwd(); err == nil {
			path = wd + string(filepath.Separator) + path
		} else {
			path = abs
		}
	}
	vol := len(filepath.VolumeName(path))
	prefix := path
	for {
		if r, err := filepath.EvalSymlinks(prefix); err == nil {
			return filepath.Join(r, path[len(prefix):])
		}
		i := strings.LastIndexFunc(prefix[vol:], func(c rune) bool { return os.IsPathSeparator(uint8(c)) })
		switch {
		case i < 0 || vol+i+1 == len(prefix) && i == 0:
			// Not even the root resolves.
			return abs
		case i == 0:
			prefix = prefix[:vol+1]
		default:
			prefix = prefix[:vol+i]
		}
	}
}

// Sync makes every acknowledged write durable: with Options.NoSync, writes
// return before they reach the disk, and a crash may lose the latest ones;
// after Sync returns, none before it is lost. Without NoSync it costs one
// WAL sync and changes nothing.
func (d *DB) Sync(ctx context.Context) error {
	if err := d.live(); err != nil {
		return err
	}
	if err := d.enter(ctx); err != nil {
		return err
	}
	defer d.leave()
	if d.opts.ReadOnly {
		return nil
	}
	defer exitOnStoragePanic(d.opts.Logger)
	if err := d.pdb.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("fpdb: sync %s: %w", d.dir, err)
	}
	return nil
}
