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

// textFlags are the flags that say how input texts are read (add, query).
type textFlags struct {
	format formatFlag
}

// register adds the flags to f.
func (t *textFlags) register(f *pflag.FlagSet) {
	f.Var(&t.format, "format", "how to read inputs: auto (HTML/XML by extension .html .htm .xhtml .xml or by content, else plain text), text, or html")
}

// options returns the text options for the input at path ("-" or "" for
// standard input): with --format auto, a markup extension makes it HTML.
func (t *textFlags) options(path string) db.TextOptions {
	f := t.format.f
	if f == db.FormatAuto && path != "-" {
		f = db.FormatOfName(path)
	}
	return db.TextOptions{Format: f}
}
