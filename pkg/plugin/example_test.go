package plugin_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/watchword-dev/watchword/pkg/plugin"
)

// envStore is a read-only store: each key is an environment variable of
// the plugin, under the prefix that the store's config gives.
type envStore struct{}

func (envStore) Get(_ context.Context, cfg plugin.Config, ref plugin.Ref) (plugin.Secret, error) {
	if ref.Version != "" {
		return plugin.Secret{}, fmt.Errorf("key %q: environment variables have no versions: %w", ref.Key, plugin.ErrNotFound)
	}
	v, ok := os.LookupEnv(cfg["prefix"] + ref.Key)
	if !ok {
		return plugin.Secret{}, fmt.Errorf("key %q does not exist: %w", ref.Key, plugin.ErrNotFound)
	}
	return plugin.Secret{Value: []byte(v)}, nil
}

// A plugin implements the capabilities its store has (here only Reader)
// and serves them until it is told to stop.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := plugin.Serve(ctx, "unix:///run/watchword/env.sock", plugin.Store{
		Name:    "env",
		Version: "v1.0.0",
		Reader:  envStore{},
		ValidateConfig: func(cfg plugin.Config) error {
			if cfg["prefix"] == "" {
				return fmt.Errorf("config.prefix is required: %w", plugin.ErrInvalidConfig)
			}
			return nil
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
