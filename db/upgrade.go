package db

import (
	"fmt"

	"github.com/fpdb/fpdb/internal/keys"
)

// upgrade brings a format-1 database to format 2 in one batch: the
// content-hash index is deleted and the meta record rewritten.
func (d *DB) upgrade() error {
	if d.params.FormatVersion >= formatV2 {
		return nil
	}
	p := d.params
	p.FormatVersion = formatV2
	b := d.pdb.NewBatch()
	defer b.Close()
	lo, hi := keys.Range(keys.PrefixHash)
	_ = b.DeleteRange(lo, hi, nil)
	_ = b.Set(keys.Meta(), encodeMeta(p), nil)
	if err := d.commit(b); err != nil {
		return fmt.Errorf("upgrade to format %d: %w", formatV2, storageError(err))
	}
	d.params = p
	return nil
}
