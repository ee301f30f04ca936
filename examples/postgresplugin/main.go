// Command postgresplugin is an example store plugin built with the SDK
// (pkg/plugin), backed by PostgreSQL: secrets are rows with versions and
// an ownership marker, reads may come in batches, writes check and set,
// and a watch follows the table through LISTEN/NOTIFY, so that a change
// made with psql reaches Watchword at once. README.md says how to run it.
//
//	postgresplugin -endpoint unix:///run/watchword/postgres.sock -dsn-file /etc/postgresplugin/dsn
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	endpoint := flag.String("endpoint", "unix:///run/watchword/postgres.sock", "the unix socket to serve on")
	dsnFile := flag.String("dsn-file", "", "a file holding the connection string of the stores whose config names no dsnFile")
	flag.Parse()
	if err := run(*endpoint, *dsnFile); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(endpoint, dsnFile string) error {
	var dsn string
	if dsnFile != "" {
		b, err := os.ReadFile(dsnFile)
		if err != nil {
			return fmt.Errorf("reading -dsn-file: %w", err)
		}
		dsn = strings.TrimSpace(string(b))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := newPostgres(dsn)
	defer p.close()
	return serve(ctx, endpoint, p)
}
