package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fpdb/fpdb/db"
)

// completionWait is the longest a shell completion waits for a database
// another process holds: a Tab key must not hang for --wait.
const completionWait = 200 * time.Millisecond

// completionTimeout bounds the whole of an id completion.
const completionTimeout = 5 * time.Second

// registerCompletions sets the shell completions of flag values and
// arguments: the names of --plan, --keep, --format and --encoding, directories for --db, and the
// stored ids for the arguments of get, compare and delete and for --prefix
// and log --id.
func registerCompletions(root *cobra.Command, g *globalOptions) {
	_ = root.RegisterFlagCompletionFunc("db", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
	ids := func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return g.completeIDs(cmd.Context(), toComplete, nil)
	}
	for _, cmd := range root.Commands() {
		if cmd.Flags().Lookup("encoding") != nil {
			_ = cmd.RegisterFlagCompletionFunc("encoding", fixedCompletions(encodingChoices))
			_ = cmd.RegisterFlagCompletionFunc("format", fixedCompletions([]string{
				"auto\tHTML/XML by extension or content, else plain text",
				"text\tplain text: < and & are punctuation",
				"html\tHTML or XML: tags, comments, scripts and styles dropped",
			}))
		}
		switch cmd.Name() {
		case "query", "dedup":
			_ = cmd.RegisterFlagCompletionFunc("plan", fixedCompletions(planCompletions))
		case "clusters", "report":
			_ = cmd.RegisterFlagCompletionFunc("keep", fixedCompletions([]string{
				"oldest\tkeep the document added first",
				"newest\tkeep the document added last",
				"first\tkeep the document whose id sorts first",
				"longest\tkeep the document with the most words",
				"shortest\tkeep the document with the fewest words",
			}))
		case "get":
			cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return g.completeIDs(cmd.Context(), toComplete, nil)
			}
		case "compare":
			// Stored ids and files both.
			cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				if len(args) >= 2 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				ids, _ := g.completeIDs(cmd.Context(), toComplete, nil)
				return ids, cobra.ShellCompDirectiveDefault
			}
		case "delete":
			cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				if slices.Contains(args, "-") || cmd.Flags().Changed("prefix") || cmd.Flags().Changed("older-than") {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return g.completeIDs(cmd.Context(), toComplete, args)
			}
			_ = cmd.RegisterFlagCompletionFunc("prefix", ids)
		case "list":
			_ = cmd.RegisterFlagCompletionFunc("prefix", ids)
		case "log":
			_ = cmd.RegisterFlagCompletionFunc("id", ids)
		}
	}
}

// completeIDs returns the stored ids that start with prefix, sorted,
// leaving out those in skip and those a shell cannot complete (holding a
// tab or a newline). It opens the database read-only and waits at most
// completionWait for it; on any error it offers nothing. Files are never
// offered.
func (g *globalOptions) completeIDs(ctx context.Context, prefix string, skip []string) ([]string, cobra.ShellCompDirective) {
	const none = cobra.ShellCompDirectiveNoFileComp
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	quick := *g
	quick.wait = min(g.wait, completionWait)
	d, err := quick.openDB(openReadOnly)
	if err != nil {
		return nil, none
	}
	defer d.Close()
	var ids []string
	err = d.Docs(ctx, func(doc db.Doc) error {
		if strings.HasPrefix(doc.ID, prefix) && !strings.ContainsAny(doc.ID, "\t\n\r") && !slices.Contains(skip, doc.ID) {
			ids = append(ids, doc.ID)
		}
		return nil
	})
	if err != nil {
		return nil, none
	}
	slices.Sort(ids)
	return ids, none
}

// fixedCompletions completes a flag value from choices ("value\tdescription"),
// keeping those that start with what was typed; never files.
func fixedCompletions(choices []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, c := range choices {
			if strings.HasPrefix(c, toComplete) {
				out = append(out, c)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
