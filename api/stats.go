package api

// StorageStats are the database's statistics with its storage statistics
// (GET /v1/stats?storage=true; "fpdb stats --json" prints the same
// object).
type StorageStats struct {
	Docs             int    `json:"docs"`
	K                int    `json:"k"`
	M                int    `json:"m"`
	GroupWidths      []int  `json:"group_widths"`
	ShingleWidth     int    `json:"shingle_width"`
	Seed             uint64 `json:"seed"`
	FormatVersion    int    `json:"format_version"`
	HashVersion      int    `json:"hash_version"`
	NormalizeVersion int    `json:"normalize_version"`
	Merger           string `json:"merger"`
	Created          string `json:"created"`
	DiskBytes        int64  `json:"disk_bytes"`
	// Deferred counts documents whose postings a bulk load left unwritten
	// (a crash before its Close; the next writable open writes them).
	Deferred int `json:"deferred_postings_docs"`
	// ImportIncomplete is set when an import into the database did not
	// finish: it refuses other writes until the same export is imported
	// again (which resumes).
	ImportIncomplete bool `json:"import_incomplete,omitempty"`
	// KeepTexts reports that the database keeps the documents' texts;
	// Texts counts them, TextBytes is their stored (compressed) size and
	// TextRawBytes their size as UTF-8.
	KeepTexts    bool  `json:"keep_texts"`
	Texts        int   `json:"texts"`
	TextBytes    int64 `json:"text_bytes"`
	TextRawBytes int64 `json:"text_raw_bytes"`
	// AuditLog reports that the database keeps an audit log; LogEntries
	// counts its entries and LogBytes their stored size (keys, values and
	// id index, before compression).
	AuditLog   bool  `json:"audit_log"`
	LogEntries int   `json:"log_entries"`
	LogBytes   int64 `json:"log_bytes"`

	DeletedNotCompacted int          `json:"deleted_not_compacted"`
	BytesPerDoc         float64      `json:"bytes_per_doc"`
	CompactionDebt      uint64       `json:"compaction_debt_bytes"`
	PostingKeys         int          `json:"posting_keys"`
	PostingIDs          int64        `json:"posting_ids"`
	MaxPosting          int          `json:"max_posting"`
	PostingLengths      []LengthBand `json:"posting_lengths"`
}

// LengthBand counts the posting lists with a length in [min, max].
type LengthBand struct {
	Min  int `json:"min"`
	Max  int `json:"max"`
	Keys int `json:"keys"`
}
