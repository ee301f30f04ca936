package plugin_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/watchword-dev/watchword/pkg/plugin"
)

// envStore is a read-only store: each key is an environment variable of
// the plugin, under the prefix that the store's config gives.
type envStore struct{}

func (envStore) Get(_ context.Context, cfg plugin.Config, ref plugin.Ref) (plugin.Secret, error) {
	if ref.Version != "" {
		return plugin.Secret{}, fmt.Errorf("environment variables have no versions: %w", plugin.ErrNotFound)
	}
	v, ok := os.LookupEnv(cfg["prefix"] + ref.Key)
	if !ok {
		// Watchword's message names the plugin and the key already.
		return plugin.Secret{}, fmt.Errorf("the environment variable is not set: %w", plugin.ErrNotFound)
	}
	return plugin.Secret{Value: []byte(v)}, nil
}

// A plugin implements the capabilities its store has (here only Reader)
// and serves them until it is told to stop. This one serves on a socket
// of its own, asks its own health service whether it serves, as a probe
// would, and stops as it would on SIGTERM.
func Example() {
	dir, err := os.MkdirTemp("", "plugin-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()
	endpoint := "unix://" + filepath.Join(dir, "env.sock")

	store := plugin.Store{
		Name:    "env",
		Version: "v1.0.0",
		Reader:  envStore{},
		ValidateConfig: func(cfg plugin.Config) error {
			if cfg["prefix"] == "" {
				return fmt.Errorf("config.prefix is required: %w", plugin.ErrInvalidConfig)
			}
			return nil
		},
	}
	// In a plugin's main: ctx, stop := signal.NotifyContext(ctx,
	// os.Interrupt, syscall.SIGTERM), then plugin.Serve (or plugin.Main,
	// which does all of it).
	lis, err := plugin.Listen(endpoint) // the socket exists once Listen returns
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() {
		done <- plugin.ServeListener(ctx, lis, store, plugin.WithLogger(slog.New(slog.DiscardHandler)))
	}()

	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = conn.Close() }()
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("health:", resp.GetStatus())

	stop() // what SIGTERM does: calls under way finish, the socket goes
	fmt.Println("stopped:", <-done)
	_, err = os.Stat(filepath.Join(dir, "env.sock"))
	fmt.Println("socket removed:", os.IsNotExist(err))
	// Output:
	// health: SERVING
	// stopped: <nil>
	// socket removed: true
}

// Main is the whole main function of a plugin: flags (-endpoint, -tls-ca,
// -tls-cert, -tls-key, -log-level), SIGTERM, graceful shutdown.
func ExampleMain() {
	plugin.Main(plugin.Store{Name: "env", Version: "v1.0.0", Reader: envStore{}}, "unix:///run/watchword/env.sock")
}
