package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// outputFile is the file of -o, written whole or not at all where a file
// system allows it: over an existing regular file (found through
// symlinks), the output is written beside it and renamed over it by
// commit, with the file's permissions; a new file is created in place
// (with 0666 less the umask) and removed by abort; anything else (a FIFO,
// a device, a directory no temporary file can be made in) is written in
// place, as os.Create would.
type outputFile struct {
	*os.File
	final   string // the path the temporary file is renamed onto ("": written in place)
	created bool   // created here: removed by abort
	done    bool
}

// createOutput opens the output file path.
func createOutput(path string) (*outputFile, error) {
	target := path
	if t, err := filepath.EvalSymlinks(path); err == nil {
		target = t
	}
	fi, err := os.Stat(target)
	switch {
	case err == nil && fi.Mode().IsRegular():
		f, terr := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*.tmp")
		if terr != nil {
			break // a directory we cannot write to: the file itself may be writable
		}
		if cerr := f.Chmod(fi.Mode().Perm()); cerr != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, cerr
		}
		return &outputFile{File: f, final: target}, nil
	case errors.Is(err, fs.ErrNotExist):
		f, cerr := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if cerr == nil {
			return &outputFile{File: f, created: true}, nil
		}
		if !errors.Is(cerr, fs.ErrExist) { // not made meanwhile, nor a dangling symlink
			return nil, cerr
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &outputFile{File: f}, nil
}

// commit ends a written output: synced, and renamed over the file it
// replaces.
func (o *outputFile) commit() error {
	if o.done {
		return nil
	}
	o.done = true
	var err error
	if o.final != "" || o.created {
		err = o.Sync()
	}
	if cerr := o.Close(); err == nil {
		err = cerr
	}
	if o.final != "" {
		if err == nil {
			err = os.Rename(o.Name(), o.final)
		}
		if err != nil {
			os.Remove(o.Name())
		}
	}
	return err
}

// abort ends an output that failed: the file it would replace is left as
// it was, a file it created is removed. It does nothing after commit.
func (o *outputFile) abort() {
	if o.done {
		return
	}
	o.done = true
	o.Close()
	switch {
	case o.final != "":
		os.Remove(o.Name())
	case o.created:
		os.Remove(o.Name())
	}
}

// writeOutput writes a whole output file through write: whole or not at
// all (see outputFile), "-" to stdout unless stdout is nil (then "-" is a
// file name). Errors are prefixed with what ("--html", "--plot").
func writeOutput(stdout io.Writer, path, what string, write func(io.Writer) error) error {
	if path == "-" && stdout != nil {
		return write(stdout)
	}
	out, err := createOutput(path)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer out.abort()
	if err := write(out); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := out.commit(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
