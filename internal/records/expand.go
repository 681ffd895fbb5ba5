package records

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Expand turns command-line arguments into the files to read:
//
//   - "-" stays "-" (standard input);
//   - an existing file stays as it is, whatever its extension;
//   - a directory becomes the files under it, recursively and sorted, whose
//     extension Detect knows, skipping hidden files and directories (names
//     starting with ".");
//   - an argument that does not exist and holds *, ? or [ is a glob
//     (filepath.Glob syntax): its matches in sorted order, directories among
//     them expanded as above; a glob that matches nothing is an error naming
//     the pattern. A "**" path element matches any number of directories,
//     as in bash's globstar, Python's glob(recursive=True) and Hugging Face's
//     data_files: "data/**/*.jsonl" is every .jsonl file under data, at any
//     depth (files and directories whose names start with "." below data
//     left out, as in a directory's walk); one "**" per pattern, and never
//     inside a name ("a**b" is refused, where filepath.Glob would read it
//     as one "*").
//
// Duplicates (the same cleaned path) are removed, keeping the first.
func Expand(args []string) ([]string, error) {
	files, _, err := expand(args, false)
	return files, err
}

// ExpandKeepMissing is Expand, except that an argument that does not exist
// and is no pattern stays among the files (whose reading then fails,
// naming it), its error (an *fs.PathError) in missing: a caller that reads
// the other files all the same reports it with them.
func ExpandKeepMissing(args []string) (files []string, missing []error, err error) {
	return expand(args, true)
}

// expand is Expand, and ExpandKeepMissing with keepMissing.
func expand(args []string, keepMissing bool) (out []string, missing []error, err error) {
	seen := map[string]bool{}
	add := func(p string) bool {
		key := p
		if p != "-" {
			key = filepath.Clean(p)
		}
		if seen[key] {
			return false
		}
		seen[key] = true
		out = append(out, p)
		return true
	}
	for _, arg := range args {
		if arg == "-" {
			add(arg)
			continue
		}
		st, err := os.Stat(arg)
		if err == nil {
			if !st.IsDir() {
				add(arg)
				continue
			}
			files, err := walkDir(arg)
			if err != nil {
				return nil, nil, err
			}
			for _, f := range files {
				add(f)
			}
			continue
		}
		if !strings.ContainsAny(arg, "*?[") {
			if keepMissing && errors.Is(err, fs.ErrNotExist) {
				if add(arg) {
					missing = append(missing, err)
				}
				continue
			}
			return nil, nil, err // *PathError names the argument
		}
		matches, gerr := glob(arg)
		if gerr != nil {
			return nil, nil, fmt.Errorf("bad pattern %q: %w", arg, gerr)
		}
		if len(matches) == 0 {
			return nil, nil, fmt.Errorf("no file matches the pattern %q", arg)
		}
		sort.Strings(matches)
		for _, m := range matches {
			st, err := os.Stat(m)
			if err != nil {
				return nil, nil, err
			}
			if !st.IsDir() {
				add(m)
				continue
			}
			files, err := walkDir(m)
			if err != nil {
				return nil, nil, err
			}
			for _, f := range files {
				add(f)
			}
		}
	}
	return out, missing, nil
}

// walkRoot returns dir as filepath.WalkDir must be given it to walk the
// directory a symbolic link names (with a final separator: WalkDir does
// not follow a link at its root).
func walkRoot(dir string) string {
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 && !strings.HasSuffix(dir, string(filepath.Separator)) {
		return dir + string(filepath.Separator)
	}
	return dir
}

// walkVisible calls fn with every file and directory below dir (or below
// the directory a symbolic link dir names), in lexical order, leaving out
// the names that start with "." (a hidden directory is not entered); fn
// may return filepath.SkipDir for a directory.
func walkVisible(dir string, fn func(p, root string, d fs.DirEntry) error) error {
	root := walkRoot(dir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case p == root:
			return nil
		case strings.HasPrefix(d.Name(), "."):
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		return fn(p, root, d)
	})
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	return nil
}

// regularFile reports whether the entry d at p is a regular file, or a
// symbolic link to one.
func regularFile(p string, d fs.DirEntry) bool {
	if d.Type()&fs.ModeSymlink != 0 {
		st, err := os.Stat(p)
		return err == nil && st.Mode().IsRegular()
	}
	return d.Type().IsRegular()
}

// walkDir returns the record files under dir (or under the directory a
// symbolic link dir names), sorted.
func walkDir(dir string) ([]string, error) {
	var files []string
	err := walkVisible(dir, func(p, _ string, d fs.DirEntry) error {
		if _, _, err := Detect(p); err == nil && regularFile(p, d) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	return files, nil
}

// glob is filepath.Glob with a "**" path element: below each directory
// the pattern before it matches, the files at any depth whose path below
// it ends with a match of the pattern after it, kept whatever their
// extension as with filepath.Glob; with nothing after it, those
// directories themselves. Names starting with "." are left out, and the
// directories that symbolic links name are neither entered nor matched
// (a link to a file is a file). A pattern whose last element is a plain
// name ("data/**/train") also matches directories of that name, each
// read as a directory argument is.
func glob(pattern string) ([]string, error) {
	if !strings.Contains(pattern, "**") {
		return filepath.Glob(pattern)
	}
	elems := strings.Split(filepath.ToSlash(pattern), "/")
	at := -1
	for i, e := range elems {
		switch {
		case e == "**" && at >= 0:
			return nil, errors.New(`more than one "**"`)
		case e == "**":
			at = i
		case strings.Contains(e, "**"):
			return nil, fmt.Errorf(`"**" inside the name %q: it must be a path element of its own ("data/**/*.jsonl")`, e)
		}
	}
	base := filepath.FromSlash(strings.Join(elems[:at], "/"))
	if at == 0 {
		base = "."
	} else if base == "" {
		base = string(filepath.Separator) // "/**/x"
	}
	rest := strings.TrimSuffix(strings.Join(elems[at+1:], "/"), "/")
	if _, err := filepath.Match(rest, ""); err != nil {
		return nil, err
	}
	dirsToo := !strings.ContainsAny(rest[strings.LastIndexByte(rest, '/')+1:], "*?[")
	dirs, err := filepath.Glob(base)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		if rest == "" {
			out = append(out, dir)
			continue
		}
		err := walkVisible(dir, func(p, root string, d fs.DirEntry) error {
			rel, err := filepath.Rel(root, p)
			if err != nil || !suffixMatch(rest, filepath.ToSlash(rel)) {
				return nil
			}
			switch {
			case d.IsDir(): // a real directory: links to one are never matched
				if dirsToo {
					out = append(out, p)
					return filepath.SkipDir // read whole as a directory argument
				}
			case regularFile(p, d):
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

// suffixMatch reports whether pattern (slash-separated) matches rel, or a
// part of rel that starts after one of its slashes.
func suffixMatch(pattern, rel string) bool {
	for {
		if ok, _ := filepath.Match(pattern, rel); ok {
			return true
		}
		i := strings.IndexByte(rel, '/')
		if i < 0 {
			return false
		}
		rel = rel[i+1:]
	}
}
