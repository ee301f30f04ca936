package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/pkg/conformance"
	"github.com/watchword-dev/watchword/pkg/plugin"
	"github.com/watchword-dev/watchword/test/pgserver"
)

// database starts a real PostgreSQL server for the test (test/pgserver)
// and returns its connection string.
func database(t *testing.T) string {
	t.Helper()
	root, skip, err := pgserver.Lookup()
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	s, err := pgserver.Start(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s.DSN
}

// serveOn runs the plugin on a socket of its own until the test ends,
// with dsn as its default database, and returns its endpoint.
func serveOn(t *testing.T, dsn string) string {
	t.Helper()
	endpoint := "unix://" + filepath.Join(t.TempDir(), "postgres.sock")
	lis, err := plugin.Listen(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := newPostgres(dsn)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- plugin.ServeListener(ctx, lis, p.store()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the plugin did not shut down cleanly: %v", err)
		}
		p.close()
	})
	return endpoint
}

// seedSQL writes a secret as someone with psql would: no ownership marker.
func seedSQL(dsn, table string) func(ctx context.Context, key string, fields map[string][]byte) error {
	return func(ctx context.Context, key string, fields map[string][]byte) error {
		raw, err := encode(fields)
		if err != nil {
			return err
		}
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close(ctx) }()
		_, err = conn.Exec(ctx, `INSERT INTO `+table+` (key, fields) VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET fields = EXCLUDED.fields, owner = NULL`, key, raw)
		return err
	}
}

// TestConformanceAgainstPostgreSQL runs the conformance suite against the
// plugin provider talking to the plugin over a real unix socket, and the
// plugin to a real PostgreSQL server.
func TestConformanceAgainstPostgreSQL(t *testing.T) {
	dsn := database(t)
	endpoint := serveOn(t, dsn)
	ops, err := conformance.DialPlugin(context.Background(), endpoint, map[string]string{"table": "conformance"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ops.Closer.Close() })
	want := engine.CanRead | engine.CanBatchRead | engine.CanCheckVersion | engine.CanWrite | engine.CanDelete | engine.CanWatch
	if got := ops.Capabilities(); got != want {
		t.Fatalf("capabilities %s, want %s", got, want)
	}
	// The plugin creates its tables on a store's first call.
	if _, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "none"}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("reading a key of an empty table: %v", err)
	}
	conformance.Run(t, conformance.Harness{
		Name:          "postgres plugin",
		Ops:           ops,
		Seed:          seedSQL(dsn, "conformance"),
		KeepsVersions: true,
	})
}

// TestAChangeInTheDatabaseIsAnnounced: a row changed with SQL, not through
// the plugin, reaches the watch through the trigger's NOTIFY.
func TestAChangeInTheDatabaseIsAnnounced(t *testing.T) {
	dsn := database(t)
	ops, err := conformance.DialPlugin(context.Background(), serveOn(t, dsn), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ops.Closer.Close() })
	ctx := context.Background()
	// The first read creates the tables.
	if _, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "db"}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("reading a key of an empty table: %v", err)
	}
	seed := seedSQL(dsn, defaultTable)
	if err := seed(ctx, "db", map[string][]byte{"password": []byte("one")}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		done <- ops.Watcher.Watch(wctx, func(keys []string) {
			for _, k := range keys {
				got <- k
			}
		})
	}()
	// Change the row with SQL until the watch announces it (the watch
	// gives no sign of being in place).
	for i := 0; ; i++ {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, `UPDATE watchword_secrets SET fields = jsonb_build_object('password', encode($1::bytea, 'base64')) WHERE key = 'db'`, []byte("changed"))
		_ = conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case k := <-got:
			if k != "db" {
				t.Fatalf("the watch announced %q, want db", k)
			}
			obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "db"})
			if err != nil || string(obj.Fields["password"]) != "changed" {
				t.Fatalf("reading the changed key: %v (version %q)", err, obj.Version)
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("the watch ended with %v, want its context's error", err)
			}
			return
		case <-time.After(time.Second):
			if i == 10 {
				t.Fatal("a change made with SQL was not announced within 10 tries")
			}
		}
	}
}

func TestConfigIsChecked(t *testing.T) {
	for _, cfg := range []plugin.Config{{"table": "Robert'); DROP TABLE x;--"}, {"password": "x"}} {
		if err := validateConfig(cfg); !errors.Is(err, plugin.ErrInvalidConfig) {
			t.Errorf("config %v: %v, want ErrInvalidConfig", cfg, err)
		}
	}
	p := newPostgres("")
	if _, _, err := p.conn(context.Background(), plugin.Config{"dsnFile": filepath.Join(t.TempDir(), "none")}); !errors.Is(err, plugin.ErrInvalidConfig) {
		t.Errorf("a dsnFile that does not exist: %v, want ErrInvalidConfig", err)
	}
	if _, _, err := p.conn(context.Background(), nil); !errors.Is(err, plugin.ErrInvalidConfig) {
		t.Errorf("no connection string at all: %v, want ErrInvalidConfig", err)
	}
	f := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(f, []byte("postgres://user:s3cr3t@127.0.0.1:1/x?connect_timeout=abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := p.conn(context.Background(), plugin.Config{"dsnFile": f})
	if !errors.Is(err, plugin.ErrInvalidConfig) || err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("a connection string PostgreSQL refuses: %v, want ErrInvalidConfig without the password", err)
	}
}
