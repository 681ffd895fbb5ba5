package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the version of the fpdb command.
const version = "0.1.0"

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of fpdb",
		Long: `Version prints the fpdb version, the VCS revision it was built from (when
the build recorded one) and the Go version.`,
		Args: noArgs("version"),
		RunE: func(cmd *cobra.Command, args []string) error {
			printVersion(cmd.OutOrStdout())
			return nil
		},
	}
}

// versionString returns "fpdb VERSION", followed by the VCS revision when
// the build info has one.
func versionString() string {
	s := "fpdb " + version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return s
	}
	var rev, modified string
	for _, kv := range info.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.modified":
			modified = kv.Value
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " (revision " + rev
		if modified == "true" {
			s += ", modified"
		}
		s += ")"
	}
	return s
}

// versionText returns what "fpdb version" and "fpdb --version" print: the
// version line and the Go version line.
func versionText() string {
	return fmt.Sprintf("%s\n%s %s/%s\n", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// printVersion prints the version and the Go version on w.
func printVersion(w io.Writer) {
	io.WriteString(w, versionText())
}
