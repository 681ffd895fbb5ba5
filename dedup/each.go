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
// the progress so far. An error of fn stops Each and is returned.
func Each(ctx context.Context, inputs []string, stdin io.Reader, o RecordOptions, fn func(doc db.Input, pos string, bad error, p Progress) error) error {
	ro, err := o.records()
	if err != nil {
		return err
	}
	start := time.Now()
	var n, doneBytes int64
	for _, path := range inputs {
		if err := func() (err error) {
			r, err := openInput(path, stdin, ro)
			if err != nil {
				return err
			}
			defer func() {
				if cerr := r.Close(); err == nil && cerr != nil {
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
					return fmt.Errorf("%w: %w", ErrBadInput, err)
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
	}
	return nil
}
