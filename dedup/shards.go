package dedup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/records"
)

// A directory of shards as an output (Options.Out and Removed ending with
// a path separator) gets one file per input, named as the input is within
// the deepest directory that holds every input: a Hugging Face–style
// directory of shards in, one of the same shards out.

// isShardDir reports whether the output path names a directory of shards.
func isShardDir(path string) bool {
	if path == "" || path == "-" {
		return false
	}
	return strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(os.PathSeparator))
}

// resolved returns path made absolute, with its symbolic links followed
// as far as they exist.
func resolved(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	if r, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(r, filepath.Base(abs))
	}
	return abs
}

// within reports whether path is dir or under it, by their absolute
// paths or with links followed.
func within(path, dir string) bool {
	under := func(p, d string) bool { return p == d || strings.HasPrefix(p, d+string(os.PathSeparator)) }
	ap, _ := filepath.Abs(path)
	ad, _ := filepath.Abs(dir)
	return under(ap, ad) || under(resolved(path), resolved(dir))
}

// checkShardDir refuses a directory of shards that is a file, whose
// parent directory does not exist, or that holds a file other than the
// shards the run writes (names): an earlier output of the same inputs is
// replaced whole, but other files would be mixed with the run's.
func checkShardDir(flag, path string, names map[string]bool) error {
	if wd, err := os.Getwd(); err == nil && within(wd, path) {
		return fmt.Errorf("%w: the %s directory %s holds the working directory: name a new directory for the shards (kept/)", db.ErrInvalidOptions, flag, path)
	}
	if fi, err := os.Lstat(filepath.Clean(path)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%w: the %s directory %s is a symbolic link (it would be replaced, not its target): give the directory's own path", db.ErrInvalidOptions, flag, path)
	}
	fi, err := os.Stat(path)
	switch {
	case os.IsNotExist(err):
		parent := filepath.Dir(filepath.Clean(path))
		if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
			return fmt.Errorf("%w: the %s directory %s: no directory %s", db.ErrInvalidOptions, flag, path, parent)
		}
		return nil
	case err != nil:
		return fmt.Errorf("%w: the %s directory %s: %w", db.ErrInvalidOptions, flag, path, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: the %s directory %s is a file", db.ErrInvalidOptions, flag, path)
	}
	return filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%w: the %s directory %s: %w", db.ErrInvalidOptions, flag, path, err)
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(path, p)
		if err != nil || !names[rel] {
			return fmt.Errorf("%w: the %s directory %s holds %s, which is not a shard of this run's inputs: remove it or name another directory (an earlier output of the same inputs is replaced when the run ends)", db.ErrInvalidOptions, flag, path, rel)
		}
		return nil
	})
}

// checkShardDirs checks the directories of shards among the outputs:
// Out and Removed both directories or both files, not the same
// directory, each empty or new, and the clusters file outside them.
func checkShardDirs(o *Options) error {
	if isShardDir(o.Clusters) {
		return fmt.Errorf("%w: the clusters file %s is a directory", db.ErrInvalidOptions, o.Clusters)
	}
	if !isShardDir(o.Out) && !isShardDir(o.Removed) {
		return nil
	}
	if o.Removed != "" && isShardDir(o.Out) != isShardDir(o.Removed) {
		return fmt.Errorf("%w: --out %s and --removed %s: give both a directory of shards (a path ending with %q), or both a file", db.ErrInvalidOptions, o.Out, o.Removed, string(os.PathSeparator))
	}
	rels, err := shardRels(o.Inputs)
	if err != nil {
		return err
	}
	to, err := records.ParseFormat(o.OutFormat)
	if err != nil {
		return fmt.Errorf("%w: %w", db.ErrInvalidOptions, err)
	}
	names := make(map[string]bool, len(rels))
	from := make(map[string]string, len(rels))
	for i, r := range rels {
		n := shardName(r, to)
		if other, ok := from[n]; ok {
			return fmt.Errorf("%w: the inputs %s and %s would both be written to the shard %s: give them different names, or write one output file", db.ErrInvalidOptions, other, o.Inputs[i], n)
		}
		from[n] = o.Inputs[i]
		names[n] = true
	}
	if o.Removed != "" && filepath.Clean(o.Out) != filepath.Clean(o.Removed) && (within(o.Out, o.Removed) || within(o.Removed, o.Out)) {
		return fmt.Errorf("%w: --out %s and --removed %s: one directory of shards is inside the other", db.ErrInvalidOptions, o.Out, o.Removed)
	}
	for _, in := range o.Inputs {
		for _, d := range []string{o.Out, o.Removed} {
			if d != "" && within(in, d) {
				return fmt.Errorf("%w: the input %s is inside the directory of shards %s, which the run replaces: write the shards elsewhere", db.ErrInvalidOptions, in, d)
			}
		}
	}
	var dirs []string
	for _, out := range []struct{ flag, path string }{{"out", o.Out}, {"removed", o.Removed}} {
		if out.path == "" {
			continue
		}
		if err := checkShardDir(out.flag, out.path, names); err != nil {
			return err
		}
		abs, err := filepath.Abs(out.path)
		if err != nil {
			return err
		}
		dirs = append(dirs, abs)
	}
	if len(dirs) == 2 && dirs[0] == dirs[1] {
		return fmt.Errorf("%w: --out and --removed are the same directory %s", db.ErrInvalidOptions, o.Out)
	}

	if o.Clusters != "" && o.Clusters != "-" {
		abs, err := filepath.Abs(o.Clusters)
		if err != nil {
			return err
		}
		for _, d := range dirs {
			if strings.HasPrefix(abs, d+string(os.PathSeparator)) {
				return fmt.Errorf("%w: the clusters file %s is inside the directory of shards %s: write it beside it", db.ErrInvalidOptions, o.Clusters, d)
			}
		}
	}
	return nil
}

// shardRels returns each input's path relative to the deepest directory
// that holds them all (a single input: its name).
func shardRels(inputs []string) ([]string, error) {
	abs := make([]string, len(inputs))
	for i, p := range inputs {
		a, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		abs[i] = a
	}
	root := ""
	for i, a := range abs {
		dir := filepath.Dir(a)
		if i == 0 {
			root = dir
			continue
		}
		for root != dir && !strings.HasPrefix(dir, root+string(os.PathSeparator)) && root != filepath.Dir(root) {
			root = filepath.Dir(root)
		}
	}
	rels := make([]string, len(abs))
	for i, a := range abs {
		r, err := filepath.Rel(root, a)
		if err != nil {
			return nil, err
		}
		rels[i] = r
	}
	return rels, nil
}

// formatExt is the file extension a format is written with.
var formatExt = map[records.Format]string{
	records.FormatJSONL: ".jsonl", records.FormatCSV: ".csv", records.FormatTSV: ".tsv", records.FormatParquet: ".parquet",
}

// shardName returns the name of the output shard of the input named rel,
// written in format to (FormatAuto: the input's own). The name is the
// input's, with the extension of format to when it converts, and the
// input's compression, if any, when to is a line format: bzip2, which Go
// cannot write, becomes gzip. A Parquet shard is never compressed as a
// whole (its pages are).
func shardName(rel string, to records.Format) string {
	dir, base := filepath.Split(rel)
	from, c, err := records.Detect(base)
	comp := ""
	if c != records.CompressionNone {
		comp = filepath.Ext(base)
		base = strings.TrimSuffix(base, comp)
		if c == records.CompressionBzip2 {
			comp = ".gz"
		}
	}
	if to != records.FormatAuto && to != from {
		if err == nil {
			base = strings.TrimSuffix(base, filepath.Ext(base))
		}
		base += formatExt[to]
	} else {
		to = from
	}
	if to != records.FormatParquet {
		base += comp
	}
	return dir + base
}

// shardPlan says where the shards of a run go.
type shardPlan struct {
	keptDir, removedDir string         // the temporary directories ("": no removed output)
	rels                []string       // each input's name in them (shardRels)
	to                  records.Format // Options.OutFormat; FormatAuto: each input's format
	in                  records.Format // the records' Options.Format; FormatAuto: by extension
}

// formatOf returns the format an input is read in.
func (s *shardPlan) formatOf(input string) records.Format {
	if s.in != records.FormatAuto {
		return s.in
	}
	f, _, _ := records.Detect(input) // Check refused inputs of no known format
	return f
}

// startShard closes the shards of the input before and opens those of
// input i.
func (w *outputs) startShard(i int, input string) error {
	s := w.shards
	if err := w.closePair(); err != nil {
		return err
	}
	name := shardName(s.rels[i], s.to)
	in := s.formatOf(input)
	f := s.to
	if f == records.FormatAuto {
		f = in
	}
	var cols []string
	if in == records.FormatJSONL {
		cols = w.cols // JSON Lines records in columns: the members of every record
	}
	kept, removed := filepath.Join(s.keptDir, name), ""
	if s.removedDir != "" {
		removed = filepath.Join(s.removedDir, name)
	}
	for _, p := range []string{kept, removed} {
		if p != "" {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
		}
	}
	return w.openPair(kept, removed, f, cols)
}
