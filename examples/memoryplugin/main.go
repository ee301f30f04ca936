// Command memoryplugin is an example store plugin built with the SDK
// (pkg/plugin): it keeps secrets in memory, with versions and ownership
// markers, and serves them on a unix socket until it is interrupted.
//
//	memoryplugin -endpoint unix:///run/watchword/memory.sock
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/watchword-dev/watchword/pkg/plugin"
)

func main() {
	endpoint := flag.String("endpoint", "unix:///run/watchword/memory.sock", "the unix socket to serve on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := plugin.Serve(ctx, *endpoint, newMemory().store()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
