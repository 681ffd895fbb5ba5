package main

import (
	"fmt"
	"slices"

	"github.com/spf13/pflag"

	"github.com/fpdb/fpdb/db"
)

// formatFlag is the --format flag of add and query: how input texts are
// read (auto, text or html), or, for add, the record format of dataset
// files (jsonl, csv, tsv, parquet). It validates its value when parsed.
type formatFlag struct {
	f       db.Format
	records string // a record format, "" for none
	// allowRecords: the command reads record files (add).
	allowRecords bool
}

func (v *formatFlag) String() string {
	if v.records != "" {
		return v.records
	}
	return v.f.String()
}

// recordFormats are the --format values that read record files.
var recordFormats = []string{"jsonl", "csv", "tsv", "parquet"}

// Set parses auto, text or html (and, for add, jsonl, csv, tsv or
// parquet).
func (v *formatFlag) Set(s string) error {
	if v.allowRecords && slices.Contains(append(recordFormats, "ndjson"), s) {
		if s == "ndjson" {
			s = "jsonl"
		}
		v.records, v.f = s, db.FormatAuto
		return nil
	}
	f, err := db.ParseFormat(s)
	if err != nil {
		if v.allowRecords {
			return fmt.Errorf("%q is not a format (auto, text, html, or for datasets jsonl, csv, tsv, parquet)", s)
		}
		return err
	}
	v.f, v.records = f, ""
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
	usage := "how to read inputs: auto (HTML/XML by extension .html .htm .xhtml .shtml .xml .svg .rss .atom or by content, else plain text), text, or html"
	if t.format.allowRecords {
		usage += "; or datasets of one document per record: jsonl, csv, tsv, parquet (auto for files named *.jsonl, *.ndjson, *.csv, *.tsv, *.parquet, also .gz, .zst, .bz2)"
	}
	f.Var(&t.format, "format", usage)
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
