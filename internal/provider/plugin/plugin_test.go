package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/providertest"
	sdk "github.com/watchword-dev/watchword/pkg/plugin"
)

func TestRefsNameEveryCredentialField(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "plugin")
}

func store(endpoint string) provider.Store {
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "p",
		Spec: &v1alpha1.SecretStoreProvider{Plugin: &v1alpha1.PluginProvider{Endpoint: endpoint}}}
}

func TestValidateWantsAUnixSocket(t *testing.T) {
	if err := (Factory{}).Validate(store("tcp://127.0.0.1:7000")); !errors.Is(err, engine.ErrInvalidConfig) || !strings.Contains(err.Error(), "plugin.endpoint") {
		t.Fatalf("tcp endpoint: %v", err)
	}
	if err := (Factory{}).Validate(store("unix:///run/p.sock")); err != nil {
		t.Fatal(err)
	}
}

// serve runs a plugin built with the SDK on a socket of its own until the
// test ends.
func serve(t *testing.T, s sdk.Store) string {
	t.Helper()
	endpoint := "unix://" + filepath.Join(t.TempDir(), "p.sock")
	lis, err := sdk.Listen(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sdk.ServeListener(ctx, lis, s) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return endpoint
}

// readerFunc is a read-only plugin store.
type readerFunc func(ctx context.Context, cfg sdk.Config, ref sdk.Ref) (sdk.Secret, error)

func (f readerFunc) Get(ctx context.Context, cfg sdk.Config, ref sdk.Ref) (sdk.Secret, error) {
	return f(ctx, cfg, ref)
}

func TestReadOnlyPluginGivesAReadOnlyClient(t *testing.T) {
	var seen sdk.Config
	endpoint := serve(t, sdk.Store{Name: "ro", Reader: readerFunc(func(_ context.Context, cfg sdk.Config, ref sdk.Ref) (sdk.Secret, error) {
		seen = cfg
		if ref.Key != "db" {
			return sdk.Secret{}, fmt.Errorf("key %q does not exist: %w", ref.Key, sdk.ErrNotFound)
		}
		return sdk.Secret{Version: "7", Fields: map[string][]byte{"user": []byte("app")}}, nil
	})})
	s := store(endpoint)
	s.Spec.Plugin.Config = map[string]string{"base": "team-a"}
	ops, err := Factory{}.New(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ops.Closer.Close() }()
	if got := ops.Capabilities(); got != engine.CanRead {
		t.Fatalf("capabilities %s, want read", got)
	}
	obj, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	if err != nil || obj.Version != "7" || string(obj.Fields["user"]) != "app" {
		t.Fatalf("read: %+v, %v", obj, err)
	}
	if seen["base"] != "team-a" {
		t.Fatalf("the plugin got config %v, want the store's", seen)
	}
	_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "other"})
	if !errors.Is(err, engine.ErrNotFound) || !strings.Contains(err.Error(), `plugin ro at unix://`) {
		t.Fatalf("missing key: %v", err)
	}
	if err = ops.Checker.Check(context.Background()); err != nil {
		t.Fatalf("check: %v", err)
	}
}

// envStore is the store of docs/plugins.md's example: each key is an
// environment variable under the config's prefix.
func envStore(_ context.Context, cfg sdk.Config, ref sdk.Ref) (sdk.Secret, error) {
	v, ok := os.LookupEnv(cfg["prefix"] + ref.Key)
	if !ok {
		return sdk.Secret{}, fmt.Errorf("the environment variable is not set: %w", sdk.ErrNotFound)
	}
	return sdk.Secret{Value: []byte(v)}, nil
}

// TestTheDocsNotFoundSaysEachThingOnce: the error of a missing key, as
// docs/plugins.md's example returns it, names the plugin, the key and the
// class once each (the ExternalSecret's message adds the key it was
// reading once more, as for every provider).
func TestTheDocsNotFoundSaysEachThingOnce(t *testing.T) {
	s := store(serve(t, sdk.Store{Name: "env", Reader: readerFunc(envStore)}))
	s.Spec.Plugin.Config = map[string]string{"prefix": "WATCHWORD_TEST_UNSET_"}
	ops, err := Factory{}.New(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ops.Closer.Close() }()
	_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	if !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("a missing key: %v, want ErrNotFound", err)
	}
	for what, want := range map[string]int{`"db"`: 1, "not found": 1, "plugin env at unix://": 1, "the environment variable is not set": 1} {
		if n := strings.Count(err.Error(), what); n != want {
			t.Errorf("%q says %s %d times, want %d", err, what, n, want)
		}
	}
}

func TestUnreachablePluginIsUnavailable(t *testing.T) {
	endpoint := "unix://" + filepath.Join(t.TempDir(), "nobody.sock")
	_, err := Factory{}.New(context.Background(), store(endpoint), nil)
	if !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("no plugin listening: %v, want ErrUnavailable", err)
	}
}

func TestCallsHonourTheCallersDeadline(t *testing.T) {
	endpoint := serve(t, sdk.Store{Name: "slow", Reader: readerFunc(func(ctx context.Context, _ sdk.Config, _ sdk.Ref) (sdk.Secret, error) {
		<-ctx.Done() // the plugin sees the deadline too
		return sdk.Secret{}, fmt.Errorf("gave up: %w", sdk.ErrUnavailable)
	})})
	ops, err := Factory{}.New(context.Background(), store(endpoint), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ops.Closer.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "db"}); !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("a call past its deadline: %v, want ErrUnavailable", err)
	}
}

func TestMessagesAreBounded(t *testing.T) {
	endpoint := serve(t, sdk.Store{Name: "big", Reader: readerFunc(func(context.Context, sdk.Config, sdk.Ref) (sdk.Secret, error) {
		return sdk.Secret{Value: make([]byte, 5<<20)}, nil
	})})
	ops, err := Factory{}.New(context.Background(), store(endpoint), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ops.Closer.Close() }()
	_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	if err == nil || errors.Is(err, engine.ErrThrottled) || !strings.Contains(err.Error(), "4 MiB") {
		t.Fatalf("a 5 MiB secret: %v; want an error that names the limit, not a throttling", err)
	}
}
