package dedup

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/fpdb/fpdb/db"
)

// Each reads the records of the inputs in order and calls fn for each:
// with the document it makes (ID, Text and Source set as Load sets them),
// its position, and for a bad record the reason (doc is then empty), and
// the progress so far. An input that cannot be read, or not to its end
// (missing, of no known format, corrupt, truncated), is passed to fn as a
// bad one too, after the records read from it: with its path as position
// and an error wrapping ErrBadInput; Each then goes on with the next
// input. An error of fn stops Each and is returned (fn may return the
// error of a bad input to stop there).
func Each(ctx context.Context, inputs []string, stdin io.Reader, o RecordOptions, fn func(doc db.Input, pos string, bad error, p Progress) error) error {
	ro, err := o.records()
	if err != nil {
		return err
	}
	start := time.Now()
	var n, doneBytes int64
	for _, path := range inputs {
		// badInput is the input's own failure, reported to fn after
		// the records read from it.
		var badInput error
		if err := func() (err error) {
			r, err := openInput(path, stdin, ro)
			if err != nil {
				badInput = err
				return nil
			}
			defer func() {
				if cerr := r.Close(); err == nil && badInput == nil && cerr != nil {
					err = fmt.Errorf("%s: %w", path, cerr)
				}
			}()
			for {
				if err := ctx.Err(); err != nil {
					return err
				}
				rec, err := r.Next()
				if err == io.EOF {
					done, _ := r.Progress()
					doneBytes += done
					return nil
				}
				if err != nil {
					done, _ := r.Progress()
					doneBytes += done
					badInput = fmt.Errorf("%w: %w", ErrBadInput, err)
					return nil
				}
				n++
				done, _ := r.Progress()
				p := Progress{Phase: "add", Records: n, Bytes: doneBytes + done, TotalBytes: -1, Elapsed: time.Since(start)}
				if rec.Err != nil {
					if err := fn(db.Input{}, rec.Pos.String(), rec.Err, p); err != nil {
						return err
					}
					continue
				}
				if err := fn(recordDoc(rec, ro.IDField, nil), rec.Pos.String(), nil, p); err != nil {
					return err
				}
			}
		}(); err != nil {
			return err
		}
		if badInput != nil {
			p := Progress{Phase: "add", Records: n, Bytes: doneBytes, TotalBytes: -1, Elapsed: time.Since(start)}
			if err := fn(db.Input{}, path, badInput, p); err != nil {
				return err
			}
		}
	}
	return nil
}
