package zstdframe

// Encoder compresses a buffer into one zstd frame. It is not safe for
// concurrent use.
type Encoder interface {
	// Append appends the zstd frame of src to dst and returns the
	// extended slice.
	Append(dst, src []byte) ([]byte, error)
}

// Kind says what an Encoder compresses, which sets the level of the
// pure-Go encoder; libzstd builds use level 1, its fastest standard level,
// for both.
type Kind int

const (
	// Long buffers (a MiB of records): the pure-Go encoder's fastest level.
	Long Kind = iota
	// Short texts (a document of a few KB): the pure-Go encoder's default
	// level, as its fastest one leaves such texts about 40 % larger.
	Short
)

// New returns an Encoder for buffers of kind k.
func New(k Kind) (Encoder, error) { return newEncoder(k) }
