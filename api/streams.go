package api

// Pair is a pair of stored near duplicates: one line of GET /v1/pairs and
// of "fpdb pairs --json". A was stored before B.
type Pair struct {
	A string `json:"a"`
	B string `json:"b"`
	// Similarity is the estimated resemblance, 1 − 2·Hamming/K.
	Similarity float64 `json:"similarity"`
	Hamming    int     `json:"hamming"`
	// Exact reports equal content hashes (identical normalized text).
	Exact bool `json:"exact"`
}

// Cluster is a cluster of near duplicates: one line of GET /v1/clusters
// and of "fpdb clusters --json".
type Cluster struct {
	// Cluster numbers the clusters from 1, largest first.
	Cluster int `json:"cluster"`
	// Size is the number of members; Pairs the near-duplicate pairs
	// among them.
	Size  int `json:"size"`
	Pairs int `json:"pairs"`
	// IDs are the members, in the order they were stored.
	IDs []string `json:"ids"`
	// Keep is the member to keep (with a keep policy or centers) and Drop
	// the others.
	Keep string   `json:"keep,omitempty"`
	Drop []string `json:"drop,omitempty"`
	// Center and Cohesion: the least similarity of a member to the
	// center (the kept document, else the first stored).
	Center   string  `json:"center"`
	Cohesion float64 `json:"cohesion"`
}

// LogEntry is one decision of the audit log: one line of GET /v1/log and
// of "fpdb log --json" (and the log lines of an export).
type LogEntry struct {
	// Seq is the entry's sequence number (never reused).
	Seq uint64 `json:"seq"`
	// Time is when the decision was made, RFC 3339 with nanoseconds, UTC.
	Time string `json:"time"`
	ID   string `json:"id"`
	// Decision is stored, replaced, unchanged, rejected or deleted.
	Decision string `json:"decision"`
	// Op is the call that decided: add, batch, import or delete.
	Op string `json:"op"`
	// Threshold, Reject and ReplaceUnchanged are the add's parameters
	// (absent when not set).
	Threshold        float64 `json:"threshold,omitempty"`
	Reject           bool    `json:"reject,omitempty"`
	ReplaceUnchanged bool    `json:"replace_unchanged,omitempty"`
	// Matches are the near duplicates the add's check found, most similar
	// first; MoreMatches counts those not listed.
	Matches     []LogMatch `json:"matches,omitempty"`
	MoreMatches int        `json:"more_matches,omitempty"`
	// ContentHash is the document's content hash in hex.
	ContentHash string `json:"content_hash,omitempty"`
	Source      string `json:"source,omitempty"`
}

// LogMatch is a match an audit-log entry records; an empty ID is a
// document forgotten since.
type LogMatch struct {
	ID         string  `json:"id"`
	Similarity float64 `json:"similarity"`
	Hamming    int     `json:"hamming"`
	Exact      bool    `json:"exact,omitempty"`
}
