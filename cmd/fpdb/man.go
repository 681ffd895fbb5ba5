package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manDir is where "make man" writes the man pages, relative to the
// repository root.
const manDir = "docs/man"

func newManCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "man DIR",
		Short: "Write the man pages of fpdb into a directory",
		Long: `Man writes one man page (roff, section 1) per fpdb command into DIR, creating
DIR if needed: fpdb.1, fpdb-add.1, fpdb-query.1 and so on, each with the
command's description, flags, examples and the commands it belongs to.
Existing pages of the same names are overwritten. "make man" regenerates the
pages shipped in ` + manDir + `/. View one with "man ./DIR/fpdb-query.1".

Exit status: 0 on success; 2 on error.`,
		Example: `  fpdb man /usr/local/share/man/man1
  fpdb man /tmp/man && man /tmp/man/fpdb-add.1`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("man: want exactly one DIR, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := writeManPages(cmd.Root(), args[0]); err != nil {
				return failure(err)
			}
			return nil
		},
	}
}

// writeManPages writes the man pages of root and every command under it
// into dir, creating it if needed.
func writeManPages(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man: %w", err)
	}
	// No "Auto generated … on DATE" footer: the pages change only when
	// the commands do (the date of the header line aside).
	root.DisableAutoGenTag = true
	markdownLongs(root)
	header := &doc.GenManHeader{Section: "1", Source: "fpdb " + version, Manual: "fpdb manual"}
	if err := doc.GenManTree(root, header, dir); err != nil {
		return fmt.Errorf("man: %w", err)
	}
	return nil
}

// markdownLongs rewrites the Long text of cmd and of every command under it
// as the Markdown the man page generator reads: the indented blocks of the
// help (output formats, tables, examples) become code blocks, so that they
// keep their layout and their literal text ("A<TAB>B" is not HTML). The
// commands are changed in place: call it only on a tree that prints no
// help afterwards.
func markdownLongs(cmd *cobra.Command) {
	cmd.Long = manMarkdown(cmd.Long)
	for _, c := range cmd.Commands() {
		markdownLongs(c)
	}
}

// manMarkdown returns the help text s with each run of indented lines
// fenced as a Markdown code block.
func manMarkdown(s string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(s, "\n") {
		indented := strings.HasPrefix(line, " ")
		switch {
		case indented && !in:
			b.WriteString("\n```\n")
			in = true
		case !indented && in:
			b.WriteString("```\n")
			in = false
		}
		b.WriteString(line)
		b.WriteString("\n")
	}
	if in {
		b.WriteString("```\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
