package main

import (
	"github.com/spf13/pflag"

	"github.com/fpdb/fpdb/db"
)

// formatFlag is the --format flag of add and query: how input texts are
// read (auto, text or html). It validates its value when parsed.
type formatFlag struct{ f db.Format }

func (v *formatFlag) String() string { return v.f.String() }

// Set parses auto, text or html.
func (v *formatFlag) Set(s string) error {
	f, err := db.ParseFormat(s)
	if err != nil {
		return err
	}
	v.f = f
	return nil
}

// Type names the value in help texts.
func (v *formatFlag) Type() string { return "FORMAT" }

// encodingFlag is the --encoding flag of add and query: the character
// encoding of input texts. It validates its value when parsed.
type encodingFlag struct{ label string }

func (v *encodingFlag) String() string {
	if v.label == "" {
		return "auto"
	}
	return v.label
}

// Set checks that s names an encoding.
func (v *encodingFlag) Set(s string) error {
	if _, err := db.ParseEncoding(s); err != nil {
		return err
	}
	v.label = s
	return nil
}

// Type names the value in help texts.
func (v *encodingFlag) Type() string { return "ENCODING" }

// encodingChoices are the completions of --encoding: the common labels.
var encodingChoices = []string{
	"auto\tbyte-order mark, HTML/XML declaration, else UTF-8 with Latin-1/Windows-1252 bytes",
	"utf-8\tstrict UTF-8: other bytes make the input binary",
	"utf-16le", "utf-16be", "latin1\tISO-8859-1, read as Windows-1252 as browsers do",
	"windows-1252", "iso-8859-2", "iso-8859-15", "windows-1250", "windows-1251", "koi8-r",
	"shift_jis", "euc-jp", "iso-2022-jp", "euc-kr", "gbk", "gb18030", "big5",
}

// textFlags are the flags that say how input texts are read (add, query).
type textFlags struct {
	format   formatFlag
	encoding encodingFlag
}

// register adds the flags to f.
func (t *textFlags) register(f *pflag.FlagSet) {
	f.Var(&t.format, "format", "how to read inputs: auto (HTML/XML by extension .html .htm .xhtml .xml or by content, else plain text), text, or html")
	f.Var(&t.encoding, "encoding", "character encoding of inputs (a WHATWG label: utf-8, latin1, utf-16le, shift_jis, ...); auto reads a byte-order mark, an HTML/XML charset declaration, else UTF-8 with any other byte as Windows-1252")
}

// options returns the text options for the input at path ("-" or "" for
// standard input): with --format auto, a markup extension makes it HTML.
func (t *textFlags) options(path string) db.TextOptions {
	f := t.format.f
	if f == db.FormatAuto && path != "-" {
		f = db.FormatOfName(path)
	}
	return db.TextOptions{Format: f, Encoding: t.encoding.label}
}
