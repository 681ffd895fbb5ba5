package db

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
)

// importMarkVersion is the first byte of the import mark's value (the
// key keys.ImportMark): the version of what follows, the SHA-256 of the
// export's header (exportDigest).
const importMarkVersion = 1

// exportDigest is the value of the import mark of an export with header
// h: an import of an export whose header has the same digest resumes an
// unfinished one. The header holds the export's parameters, templates and
// counts, and its creation time.
func exportDigest(h ExportHeader) []byte {
	b, _ := json.Marshal(h) // cannot fail: plain fields
	sum := sha256.Sum256(b)
	return append([]byte{importMarkVersion}, sum[:]...)
}

// readImportMark returns the value of the import mark, or nil when there
// is none.
func readImportMark(r pebble.Reader) ([]byte, error) {
	v, closer, err := r.Get(keys.ImportMark())
	if err == pebble.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, storageError(err)
	}
	defer closer.Close()
	if len(v) != 1+sha256.Size || v[0] != importMarkVersion {
		return nil, fmt.Errorf("%w: import mark of %d bytes, version %d", ErrCorrupt, len(v), v[0:min(1, len(v))])
	}
	return bytes.Clone(v), nil
}

// setImportMark writes the import mark v (nil deletes it) in a batch of
// its own. writeMu is held.
func (d *DB) setImportMark(v []byte) error {
	b := d.pdb.NewBatch()
	defer b.Close()
	if v == nil {
		_ = b.Delete(keys.ImportMark(), nil)
	} else {
		_ = b.Set(keys.ImportMark(), v, nil)
	}
	if err := d.commit(b); err != nil {
		return storageError(err)
	}
	if v == nil {
		d.importMark.Store(nil)
	} else {
		d.importMark.Store(&v)
	}
	return nil
}

// unfinishedImport reports whether an import of this database did not
// finish (the import mark is present).
func (d *DB) unfinishedImport() bool { return d.importMark.Load() != nil }
