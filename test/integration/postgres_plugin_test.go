package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
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

// TestPostgresPluginThroughTheCRDs: an ExternalSecret reads from the
// PostgreSQL plugin's store, a PushSecret writes to it, and a row changed
// directly in PostgreSQL reaches the target Secret through Watch, with a
// refresh interval of an hour.
func TestPostgresPluginThroughTheCRDs(t *testing.T) {
	parallel(t)
	dsn, endpoint := startPostgresPlugin(t)
	ns := newNamespace(t, nil)
	pluginStore(t, ns, "pg", endpoint, nil)

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

	// Watchword watches the store, since an ExternalSecret reads from it
	// and the plugin can watch; a change made with SQL then reaches the
	// target through the watch, long before the hourly refresh.
	waitWatchState(t, ns, "pg", conditions.WatchActive)
	sqlExec(t, dsn, `UPDATE watchword_secrets SET fields = jsonb_build_object('password', encode($1::bytea, 'base64')) WHERE key = 'db'`, []byte("two"))
	waitSecretData(t, ns, "db", map[string]string{"password": "two", "token": "pushed-token"})
}
