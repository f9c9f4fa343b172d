package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/docs/refgen"
)

// newGenDocsCmd builds `rebalancelab gen-docs DOCS_DIR` (hidden; `make docs-ref`): writes the reference
// pages derived from the code under DOCS_DIR (docs/refgen): the CLI reference from a fresh command tree
// (newRootCmd), the scenario catalogue and the figure definitions. With --check it writes nothing and
// fails when a page differs from what it would write.
func newGenDocsCmd() *cobra.Command {
	var check bool
	gen := &cobra.Command{
		Use:    "gen-docs DOCS_DIR [--check]",
		Short:  "Write the generated reference pages (CLI, scenario catalogue, figures) under DOCS_DIR (internal: make docs-ref)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if check {
				errs := append(refgen.StaleCLI(args[0], newRootCmd()), refgen.StaleBlocks(args[0])...)
				for _, err := range errs {
					fmt.Fprintln(cmd.ErrOrStderr(), err)
				}
				if len(errs) > 0 {
					return fmt.Errorf("%d reference pages are stale", len(errs))
				}
				return nil
			}
			return refgen.Write(args[0], newRootCmd())
		},
	}
	gen.Flags().BoolVar(&check, "check", false, "write nothing; fail when a page differs from what would be written")
	return gen
}
