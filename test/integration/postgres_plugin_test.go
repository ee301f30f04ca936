package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	pluginprovider "github.com/watchword-dev/watchword/internal/provider/plugin"
	"github.com/watchword-dev/watchword/internal/refreshhook"
	"github.com/watchword-dev/watchword/test/pgserver"
)

// startPostgresPlugin starts a real PostgreSQL server and the example
// PostgreSQL plugin (examples/postgresplugin, built and run as its README
// says) against it, until the test ends; it returns the server's
// connection string and the plugin's endpoint.
func startPostgresPlugin(t *testing.T) (dsn, endpoint string) {
	t.Helper()
	root, skip, err := pgserver.Lookup()
	must(t, err)
	if skip != "" {
		t.Skip(skip)
	}
	db, err := pgserver.Start(context.Background(), root)
	must(t, err)
	t.Cleanup(db.Stop)

	dir, err := os.MkdirTemp("", "wwpg") // short: a socket path has at most 107 bytes
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	bin := filepath.Join(dir, "postgresplugin")
	if out, berr := exec.Command("go", "build", "-o", bin, "github.com/watchword-dev/watchword/examples/postgresplugin").CombinedOutput(); berr != nil {
		t.Fatalf("building the plugin: %v: %s", berr, out)
	}
	dsnFile := filepath.Join(dir, "dsn")
	must(t, os.WriteFile(dsnFile, []byte(db.DSN), 0o600))
	endpoint = "unix://" + filepath.Join(dir, "p.sock")
	cmd := exec.Command(bin, "-endpoint", endpoint, "-dsn-file", dsnFile)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	eventually(t, wait, func() (bool, string) {
		_, serr := os.Stat(filepath.Join(dir, "p.sock"))
		return serr == nil, "the plugin's socket does not exist"
	})
	return db.DSN, endpoint
}

// sqlExec runs one statement against the database, as psql would.
func sqlExec(t *testing.T, dsn, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, sql, args...)
	must(t, err)
}

// forwardWatch stands in for the per-store watch loop that is not on this
// branch: it watches the store's plugin through the plugin provider (the
// engine.Watcher Watchword uses) and hands each announced key to the
// ExternalSecret controller's Notify, here through the refresh endpoint,
// which calls Notify with the store and the keys. It watches again after a
// broken watch, until the test ends.
func forwardWatch(t *testing.T, endpoint, ns, store, hookSecret string) {
	t.Helper()
	ops, err := pluginprovider.Dial(context.Background(), endpoint, nil)
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		_ = ops.Closer.Close()
	})
	notify := func(keys []string) {
		if keys == nil {
			return // anything may have changed: the loop would refresh every ExternalSecret of the store
		}
		body, _ := json.Marshal(map[string]any{"store": map[string]string{"kind": v1alpha1.SecretStoreKind, "namespace": ns, "name": store}, "keys": keys})
		if code, answer := postHook(t, string(body), refreshhook.Sign(body, []byte(hookSecret))); code != http.StatusOK && code != http.StatusAccepted {
			t.Logf("notifying %v: %d %s", keys, code, answer)
		}
	}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if werr := ops.Watcher.Watch(ctx, notify); ctx.Err() == nil {
				t.Logf("the watch broke, watching again: %v", werr)
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
}

// TestPostgresPluginThroughTheCRDs: an ExternalSecret reads from the
// PostgreSQL plugin's store, a PushSecret writes to it, and a row changed
// directly in PostgreSQL reaches the target Secret through Watch, with a
// refresh interval of an hour.
func TestPostgresPluginThroughTheCRDs(t *testing.T) {
	dsn, endpoint := startPostgresPlugin(t)
	ns := newNamespace(t, nil)
	const hookSecret = "hook-secret-of-the-postgres-test"
	createSecret(t, ns, "refresh-hook", map[string]string{"secret": hookSecret})
	pluginStore(t, ns, "pg", endpoint, nil)
	updateStore(t, ns, "pg", func(s *v1alpha1.SecretStore) {
		s.Spec.RefreshHook = &v1alpha1.RefreshHook{SecretRef: v1alpha1.SecretKeySelector{Name: "refresh-hook", Key: "secret"}}
	})

	// A PushSecret writes to the store: a row with its marker.
	createSecret(t, ns, "app-creds", map[string]string{"token": "pushed-token"})
	newPush(t, ns, "push", "app-creds", pushTo("app-token", viaStore(v1alpha1.SecretStoreKind, "pg")), pushKey("token", "token"))
	waitPushReady(t, ns, "push")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	must(t, err)
	var owner string
	must(t, conn.QueryRow(ctx, `SELECT owner FROM watchword_secrets WHERE key = 'app-token'`).Scan(&owner))
	_ = conn.Close(ctx)
	if owner == "" {
		t.Fatal("the pushed row carries no ownership marker")
	}

	// A secret created with SQL is read by an ExternalSecret.
	sqlExec(t, dsn, `INSERT INTO watchword_secrets (key, fields) VALUES ('db', jsonb_build_object('password', encode($1::bytea, 'base64')))`, []byte("one"))
	newES(t, ns, "db", "pg", withRefresh(time.Hour), withData("password", "db", "password"), withData("token", "app-token", "token"))
	waitSecretData(t, ns, "db", map[string]string{"password": "one", "token": "pushed-token"})

	// A change made with SQL reaches the target through the watch.
	forwardWatch(t, endpoint, ns, "pg", hookSecret)
	eventually(t, wait, func() (bool, string) {
		sqlExec(t, dsn, `UPDATE watchword_secrets SET fields = jsonb_build_object('password', encode($1::bytea, 'base64')) WHERE key = 'db'`, []byte("two"))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		for ctx.Err() == nil {
			if s, serr := getSecret(ns, "db"); serr == nil && string(s.Data["password"]) == "two" {
				return true, ""
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false, "the target still holds the old password " + fmt.Sprint(time.Now().Format(time.RFC3339))
	})
}
