package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/fpdb/fpdb/db"
)

// creationFlags are the flags that set the creation parameters of a new
// database (add --k, --group-bits, --shingle-width, --seed,
// --normalize-version, --no-texts, --no-log). On an existing database they
// must equal the stored parameters. A database the CLI creates keeps the
// documents' texts unless --no-texts is given, and an audit log unless
// --no-log is given.
type creationFlags struct {
	k, groupBits, shingleWidth int
	seed                       uint64
	normalizeVersion           int
	noTexts                    bool
	noLog                      bool
	flags                      *pflag.FlagSet // to tell a given flag from its default
}

// register adds the flags to f.
func (c *creationFlags) register(f *pflag.FlagSet) {
	c.flags = f
	f.IntVar(&c.k, "k", db.DefaultK, fmt.Sprintf("new database: fingerprint length in bits `K` (a multiple of 64, in at most %d groups of --group-bits: up to %d with %d-bit groups, %d with %d)",
		db.MaxGroups, maxGroupedK(db.DefaultGroupWidth), db.DefaultGroupWidth, maxGroupedK(db.MaxGroupWidth), db.MaxGroupWidth))
	f.IntVar(&c.groupBits, "group-bits", db.DefaultGroupWidth, "new database: width in bits `W` of the index groups (K/W groups; 18 for collections of millions of documents: see db.SuggestedGroupWidth)")
	f.IntVar(&c.shingleWidth, "shingle-width", db.DefaultShingleWidth, "new database: words per shingle `N`")
	f.Uint64Var(&c.seed, "seed", db.DefaultSeed, "new database: `SEED` of the hash functions (decimal or 0x hex)")
	f.IntVar(&c.normalizeVersion, "normalize-version", db.NormalizeVersion,
		fmt.Sprintf("new database: text normalization rules `V` (%d to %d; 1 strips anything like a tag and does not normalize Unicode, 2 lets every HTML tag separate words)", db.MinNormalizeVersion, db.NormalizeVersion))
	f.BoolVar(&c.noLog, "no-log", false, "new database: keep no audit log of what each add and delete decided (kept by default: fpdb log)")
	f.BoolVar(&c.noTexts, "no-texts", false, "new database: do not keep each document's text (kept by default, compressed, for comparing documents later; a text over 64 MiB is then refused)")
}

// given reports whether the flag name was given.
func (c *creationFlags) given(name string) bool {
	return c.flags != nil && c.flags.Changed(name)
}

// validate checks the values given; the db package checks the rest (K a
// multiple of 64, the group layout).
func (c *creationFlags) validate() error {
	bad := func(name string, v int, reason string) error {
		return usageError(&flagValueError{flag: name, value: strconv.Itoa(v), reason: reason})
	}
	switch {
	case c.given("k") && (c.k <= 0 || c.k%64 != 0 || c.k > db.MaxK):
		return bad("k", c.k, fmt.Sprintf("must be a multiple of 64 in [64, %d]", db.MaxK))
	case c.given("group-bits") && (c.groupBits < 1 || c.groupBits > db.MaxGroupWidth):
		return bad("group-bits", c.groupBits, fmt.Sprintf("must be in [1, %d]", db.MaxGroupWidth))
	case c.given("shingle-width") && (c.shingleWidth < 1 || c.shingleWidth > db.MaxShingleWidth):
		return bad("shingle-width", c.shingleWidth, fmt.Sprintf("must be in [1, %d]", db.MaxShingleWidth))
	case c.given("seed") && c.seed == 0:
		return usageError(&flagValueError{flag: "seed", value: "0", reason: "must not be 0"})
	case c.given("normalize-version") && (c.normalizeVersion < db.MinNormalizeVersion || c.normalizeVersion > db.NormalizeVersion):
		return bad("normalize-version", c.normalizeVersion, fmt.Sprintf("must be in [%d, %d]", db.MinNormalizeVersion, db.NormalizeVersion))
	case c.given("k"):
		// --k makes the groups, of --group-bits or the default width,
		// whether the database is new or not. --group-bits alone splits
		// the stored K, or the default for a new database (open).
		return c.checkGroups(c.k)
	}
	return nil
}

// maxGroupedK is the largest K (a multiple of 64) that db.MaxGroups groups
// of width bits hold.
func maxGroupedK(width int) int { return db.MaxGroups * width / 64 * 64 }

// checkGroups checks that k bits split into groups of --group-bits (its
// default unless given) make at most db.MaxGroups groups, as the index
// needs, and else says, in the terms of the flags, which --group-bits or
// --k would. (Groups at most db.MaxGroupWidth bits wide and at most
// db.MaxGroups of them keep the merged key space within 2^32, which the
// index also needs.)
func (c *creationFlags) checkGroups(k int) error {
	w := c.groupBits
	n := len(db.EqualWidths(k, w))
	if n <= db.MaxGroups {
		return nil
	}
	kText, wText := fmt.Sprintf("--k %d", k), fmt.Sprintf("--group-bits %d", w)
	if !c.given("k") {
		kText += " (the default)"
	}
	if !c.given("group-bits") {
		wText = fmt.Sprintf("%d-bit groups (the default --group-bits)", w)
	}
	var fixes []string
	if minW := (k + db.MaxGroups - 1) / db.MaxGroups; minW <= db.MaxGroupWidth {
		fixes = append(fixes, fmt.Sprintf("--group-bits %d or more", minW))
	}
	fixes = append(fixes, fmt.Sprintf("--k %d or less", maxGroupedK(w)))
	if len(fixes) == 1 && w < db.MaxGroupWidth {
		fixes = append(fixes, fmt.Sprintf("--k %d or less with --group-bits %d", maxGroupedK(db.MaxGroupWidth), db.MaxGroupWidth))
	}
	return usageErrorf("%s with %s makes %d groups, at most %d: give %s", kText, wText, n, db.MaxGroups, strings.Join(fixes, ", or "))
}

// apply sets the creation parameters given in o. The group widths need K:
// when --group-bits is given without --k, k is the K to split (the
// default for a new database, the stored one for an existing database).
func (c *creationFlags) apply(o *db.Options, k int) {
	if c.given("k") {
		o.K = c.k
		k = c.k
	}
	if c.given("group-bits") {
		o.GroupWidths = db.EqualWidths(k, c.groupBits)
	}
	if c.given("shingle-width") {
		o.ShingleWidth = c.shingleWidth
	}
	if c.given("seed") {
		o.Seed = c.seed
	}
	if c.given("normalize-version") {
		o.NormalizeVersion = c.normalizeVersion
	}
}

// open opens the database with opts and the creation parameters given.
// It opens an existing database first, without creating it: --group-bits
// without --k needs its stored K, and --no-texts is compared with whether
// it keeps texts. Only when there is none is the database created, with
// the default K and keeping texts unless --no-texts.
func (c *creationFlags) open(dir string, opts *db.Options) (*db.DB, error) {
	if c == nil {
		return db.Open(dir, opts)
	}
	widthsLater := c.given("group-bits") && !c.given("k")
	o := opts.Clone()
	c.apply(o, db.DefaultK)
	if widthsLater {
		o.GroupWidths = nil
	}
	o.ErrorIfNotExist = true
	d, err := db.Open(dir, o)
	if errors.Is(err, db.ErrNotExist) && !opts.ErrorIfNotExist {
		if widthsLater {
			// --group-bits alone splits the default K.
			if err := c.checkGroups(db.DefaultK); err != nil {
				return nil, err
			}
		}
		o := opts.Clone()
		c.apply(o, db.DefaultK)
		o.KeepTexts = !c.noTexts
		o.AuditLog = !c.noLog
		return c.open1(dir, o)
	}
	if err != nil {
		return nil, c.paramsError(err)
	}
	p := d.Params()
	var perr *db.ParamsError
	if want := db.EqualWidths(p.K, c.groupBits); widthsLater && !slices.Equal(want, p.GroupWidths) {
		perr = &db.ParamsError{Param: "GroupWidths", Stored: fmt.Sprint(p.GroupWidths), Given: fmt.Sprint(want)}
	} else if c.noTexts && p.KeepTexts {
		perr = &db.ParamsError{Param: "KeepTexts", Stored: "true", Given: "false"}
	} else if c.noLog && p.AuditLog {
		perr = &db.ParamsError{Param: "AuditLog", Stored: "true", Given: "false"}
	}
	if perr != nil {
		err := c.paramsError(fmt.Errorf("fpdb: open %s: %w", dir, perr))
		if cerr := d.Close(); cerr != nil {
			return nil, errors.Join(err, cerr)
		}
		return nil, err
	}
	return d, nil
}

// open1 opens the database with o, the creation parameters set.
func (c *creationFlags) open1(dir string, o *db.Options) (*db.DB, error) {
	d, err := db.Open(dir, o)
	if err != nil {
		return nil, c.paramsError(err)
	}
	return d, nil
}

// paramsError rewrites a *db.ParamsError in the terms of the flags:
// "the database was created with --k 512, but --k 256 was given". Other
// errors are returned as they are.
func (c *creationFlags) paramsError(err error) error {
	var pe *db.ParamsError
	if !errors.As(err, &pe) || pe.Build || pe.Export || pe.Into {
		return err
	}
	var stored, given string
	switch pe.Param {
	case "K":
		stored, given = "--k "+pe.Stored, "--k "+pe.Given
	case "GroupWidths":
		stored, given = "--group-bits "+widthsText(pe.Stored), "--group-bits "+strconv.Itoa(c.groupBits)
	case "ShingleWidth":
		stored, given = "--shingle-width "+pe.Stored, "--shingle-width "+pe.Given
	case "Seed":
		// In hex, as fpdb stats prints it (--seed takes either).
		stored, given = "--seed "+hexSeed(pe.Stored), "--seed "+hexSeed(pe.Given)
	case "NormalizeVersion":
		stored, given = "--normalize-version "+pe.Stored, "--normalize-version "+pe.Given
	case "KeepTexts":
		if pe.Stored != "true" {
			return err
		}
		return &creationError{text: "the database keeps texts (it was created without --no-texts), but --no-texts was given (omit the flag: a database keeps what it was created with)", err: err}
	case "AuditLog":
		if pe.Stored != "true" {
			return err
		}
		return &creationError{text: "the database keeps an audit log (it was created without --no-log), but --no-log was given (omit the flag: a database keeps what it was created with)", err: err}
	default:
		return err
	}
	return &creationError{text: fmt.Sprintf("the database was created with %s, but %s was given (omit the flag, or give the stored value)", stored, given), err: err}
}

// widthsText describes stored group widths, printed by fmt as "[16 16 …]",
// as a --group-bits value: the widest group (EqualWidths makes the first
// groups the widest), with the number of groups.
func widthsText(s string) string {
	var ws []int
	for _, f := range splitFields(s) {
		if n, err := strconv.Atoi(f); err == nil {
			ws = append(ws, n)
		}
	}
	if len(ws) == 0 {
		return s
	}
	return fmt.Sprintf("%d (%d groups)", slices.Max(ws), len(ws))
}

// splitFields splits "[1 2 3]" into "1", "2", "3".
func splitFields(s string) []string {
	var out []string
	cur := ""
	for _, r := range s {
		if r >= '0' && r <= '9' {
			cur += string(r)
			continue
		}
		if cur != "" {
			out = append(out, cur)
			cur = ""
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// creationError is a creation parameter mismatch worded with the flags. It
// wraps the *db.ParamsError.
type creationError struct {
	text string
	err  error
}

func (e *creationError) Error() string { return e.text }

func (e *creationError) Unwrap() error { return e.err }

// hexSeed returns the decimal seed s in hex, as fpdb stats prints it.
func hexSeed(s string) string {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return s
	}
	return "0x" + strconv.FormatUint(n, 16)
}
