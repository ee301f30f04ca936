package main

import (
	"context"

	"github.com/watchword-dev/watchword/pkg/plugin"
)

func serve(ctx context.Context, endpoint string, p *postgres) error {
	return plugin.Serve(ctx, endpoint, p.store())
}
