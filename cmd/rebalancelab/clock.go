package main

import (
	"fmt"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/lab"
)

// newClockCmd builds `rebalancelab clock`: the host side of the runner's clock-offset measurement
// (lab.MeasureClock). Hidden: the runner starts it inside each test host; on another machine it would
// serve --listen. Its one flag, --listen, is a variable of the constructor.
func newClockCmd() *cobra.Command {
	var listen string
	clock := &cobra.Command{
		Use:    "clock [--listen HOST:PORT]",
		Short:  "Answer clock probes: one line in, this host's Unix time in ns out (internal: scenario run --hosts)",
		Hidden: true,
		Long: `Answers every line it reads with this host's time (Unix nanoseconds, one line): on stdin and stdout, or
with --listen on each TCP connection accepted there (for a runner on another machine). The runner takes
the sample with the shortest round trip and reports the host's clock offset, known to ± half that round trip.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if listen == "" {
				return lab.ServeClock(os.Stdin, os.Stdout)
			}
			l, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			fmt.Fprintln(os.Stderr, "clock: serving on", l.Addr())
			for {
				c, err := l.Accept()
				if err != nil {
					return err
				}
				go func() {
					defer c.Close()
					_ = lab.ServeClock(c, c)
				}()
			}
		},
	}
	clock.Flags().StringVar(&listen, "listen", "", "serve TCP connections on HOST:PORT instead of stdin/stdout")
	return clock
}
