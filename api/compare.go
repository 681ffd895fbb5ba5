package api

// MaxComparePassages is the most passages POST /v1/compare answers with:
// a pair of long texts made of one repeated phrase can share tens of
// thousands, and the answer, its texts and its page grow with them.
const MaxComparePassages = 1000

// CompareRequest asks how similar two texts are (POST /v1/compare).
type CompareRequest struct {
	A CompareText `json:"a"`
	B CompareText `json:"b"`
	// MinWords leaves out shared passages of fewer words (absent: 8, as
	// "fpdb compare"; 0: every passage).
	MinWords *int `json:"min_words,omitempty"`
	// Gap merges passages at most Gap words apart in both texts.
	Gap int `json:"gap,omitempty"`
	// Passages keeps the longest Passages passages (0: all, up to the
	// server's limit, MaxComparePassages; more is refused).
	Passages int `json:"passages,omitempty"`
	// Texts asks for the two compared texts in the answer (TextA, TextB),
	// as "fpdb --server URL compare" asks to show excerpts.
	Texts bool `json:"texts,omitempty"`
	// Page asks for the HTML page of the comparison in the answer (Page),
	// as ?html=true returns it alone: a client that shows the figures and
	// also offers the page gets both from one comparison.
	Page bool `json:"page,omitempty"`
}

// CompareText is one side of a comparison: the id of a stored document
// (compared through its stored text), a text, or a file's bytes (exactly
// one of them).
type CompareText struct {
	ID   string `json:"id,omitempty"`
	Text string `json:"text,omitempty"`
	// Bytes are a file's bytes as they are (base64 in JSON), read as an
	// upload to /v1/query or /v1/documents is: its character encoding is
	// found (a byte-order mark, a declared charset, else UTF-8 with
	// Windows-1252 for the bytes that are not) unless Encoding says it.
	// A text that is not UTF-8 compares as it queries only this way: Text
	// is a JSON string, UTF-8 already.
	Bytes []byte `json:"bytes,omitempty"`
	// Name names the text in the answer and in errors; its extension
	// (.html) chooses the format when Format is "auto".
	Name string `json:"name,omitempty"`
	TextInput
}

// Comparison is the answer to a comparison, as "fpdb compare --json"
// prints it.
type Comparison struct {
	A CompareSide `json:"a"`
	B CompareSide `json:"b"`
	// Estimated is the resemblance the fingerprints estimate (what add
	// and query use), from their Hamming distance of K bits.
	Estimated float64 `json:"estimated"`
	Hamming   int     `json:"hamming"`
	K         int     `json:"k"`
	// Jaccard is the exact resemblance of the shingle sets; ContainedA
	// the share of A's shingles found in B, ContainedB of B's in A;
	// Shared the number of shingles they share.
	Jaccard    float64 `json:"jaccard"`
	ContainedA float64 `json:"contained_a"`
	ContainedB float64 `json:"contained_b"`
	Shared     int     `json:"shared_shingles"`
	// Passages are the shared passages, longest first.
	Passages []Passage `json:"passages"`
	// MorePassages says that the texts share more passages than the
	// answer holds: the request asked for all of them, and the server
	// kept the longest MaxComparePassages.
	MorePassages bool `json:"more_passages,omitempty"`
	// TextA and TextB are the compared texts, decoded to UTF-8, which the
	// passages' offsets index: given when the request asked for Texts.
	TextA string `json:"text_a,omitempty"`
	TextB string `json:"text_b,omitempty"`
	// Page is the comparison's HTML page ("fpdb compare --html"): given
	// when the request asked for Page.
	Page string `json:"page,omitempty"`
}

// CompareSide describes one compared text.
type CompareSide struct {
	Name string `json:"name"`
	// Stored reports a stored document (Name is its id).
	Stored bool `json:"stored"`
	// Format is how the text was read: text or html.
	Format   string `json:"format"`
	Bytes    int    `json:"bytes"`
	Words    int    `json:"words"`
	Shingles int    `json:"shingles"`
}

// Passage is a passage shared by the two texts: where it lies in each.
type Passage struct {
	A Span `json:"a"`
	B Span `json:"b"`
}

// Span is where a passage lies in one text: byte offsets [Start, End) in
// the text decoded to UTF-8, the line and column of its first and last
// characters, its first word and its number of words.
type Span struct {
	Start   int64 `json:"start"`
	End     int64 `json:"end"`
	Line    int   `json:"line"`
	Col     int   `json:"col"`
	EndLine int   `json:"end_line"`
	EndCol  int   `json:"end_col"`
	Word    int   `json:"word"`
	Words   int   `json:"words"`
	// Readable is, for a text read as markup (Format html), the passage
	// as a reader sees it: tags left out, character references decoded,
	// as the comparison's page shows it; given when the request asked for
	// Texts (Start and End index the markup).
	Readable string `json:"readable,omitempty"`
}
