package main

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/pkg/conformance"
	"github.com/watchword-dev/watchword/pkg/plugin"
)

// serve runs the memory plugin on a socket of its own until the test
// ends, and returns its endpoint.
func serve(t *testing.T, m *memory) string {
	t.Helper()
	endpoint := "unix://" + filepath.Join(t.TempDir(), "memory.sock")
	lis, err := plugin.Listen(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- plugin.ServeListener(ctx, lis, m.store()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the plugin did not shut down cleanly: %v", err)
		}
	})
	return endpoint
}

// TestConformanceOverASocket runs the conformance suite against the plugin
// provider talking to the memory plugin over a real unix socket, as a
// plugin author runs it.
func TestConformanceOverASocket(t *testing.T) {
	m := newMemory()
	endpoint := serve(t, m)
	ops, err := conformance.DialPlugin(context.Background(), endpoint, map[string]string{"partition": "conformance"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ops.Closer.Close() })
	if got, want := ops.Capabilities(), engine.CanRead|engine.CanBatchRead|engine.CanCheckVersion|engine.CanList|engine.CanWrite|engine.CanDelete|engine.CanWatch; got != want {
		t.Fatalf("capabilities %s, want %s", got, want)
	}
	conformance.Run(t, conformance.Harness{
		Name: "memory plugin",
		Ops:  ops,
		Seed: func(_ context.Context, key string, fields map[string][]byte) error {
			m.seed("conformance", key, fields)
			return nil
		},
		KeepsVersions: true,
	})
}

func TestHandshakeRefusesABadConfig(t *testing.T) {
	endpoint := serve(t, newMemory())
	_, err := conformance.DialPlugin(context.Background(), endpoint, map[string]string{"region": "x"})
	if !errors.Is(err, engine.ErrInvalidConfig) {
		t.Fatalf("a config the plugin does not know: %v, want ErrInvalidConfig", err)
	}
}
