package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/test/pgserver"
)

// These tests run dataFrom vaultDynamic against the real Vault with its
// database secrets engine, over the real PostgreSQL with password
// authentication: the credentials Vault issues are PostgreSQL roles.

// vaultDatabase starts PostgreSQL, mounts Vault's database engine at
// db-NS (once per test), connects it to the server and makes the role
// "app" with the given TTLs; it returns the server's DSN and the mount.
func vaultDatabase(t *testing.T, ns string, ttl, maxTTL time.Duration) (dsn, mount string) {
	t.Helper()
	needVault(t)
	root, skip, err := pgserver.Lookup()
	must(t, err)
	if skip != "" {
		t.Skip(skip)
	}
	db, err := pgserver.StartWithPassword(context.Background(), root, "superuser-pw")
	must(t, err)
	t.Cleanup(db.Stop)
	u, err := url.Parse(db.DSN)
	must(t, err)
	mount = "db-" + ns
	must(t, vaultSrv.Do(http.MethodPost, "sys/mounts/"+mount, map[string]any{"type": "database"}, nil))
	t.Cleanup(func() { _ = vaultSrv.Do(http.MethodDelete, "sys/mounts/"+mount, nil, nil) })
	must(t, vaultSrv.Do(http.MethodPost, mount+"/config/pg", map[string]any{
		"plugin_name":    "postgresql-database-plugin",
		"connection_url": "postgresql://{{username}}:{{password}}@" + u.Host + "/postgres?sslmode=disable",
		"username":       "postgres", "password": "superuser-pw", "allowed_roles": "*",
	}, nil))
	must(t, vaultSrv.Do(http.MethodPost, mount+"/roles/app", map[string]any{
		"db_name":             "pg",
		"creation_statements": []string{`CREATE ROLE "{{name}}" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}';`},
		"default_ttl":         int(ttl / time.Second), "max_ttl": int(maxTTL / time.Second),
	}, nil))
	return db.DSN, mount
}

// pgLogin tries to log in to the server of dsn as user with password.
func pgLogin(dsn, user, password string) error {
	u, err := url.Parse(dsn)
	if err != nil {
		return err
	}
	u.User = url.UserPassword(user, password)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// vaultLeases counts the leases Vault holds under prefix, as an operator
// would count them with a root token: LIST sys/leases/lookup/PREFIX.
func vaultLeases(t *testing.T, prefix string) int {
	t.Helper()
	var out struct {
		Data struct {
			Keys []string `json:"keys"`
		} `json:"data"`
	}
	err := vaultSrv.Do("LIST", "sys/leases/lookup/"+prefix, nil, &out)
	if err != nil && strings.Contains(err.Error(), "404") {
		return 0
	}
	must(t, err)
	return len(out.Data.Keys)
}

func vaultDynamicES(t *testing.T, ns, name, store, path string, percent int32, opts ...esOpt) {
	t.Helper()
	es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: store},
			DataFrom: []v1alpha1.ExternalSecretDataFrom{{VaultDynamic: &v1alpha1.VaultDynamicSecret{Path: path, RenewPercent: percent}}}}}
	for _, o := range opts {
		o(es)
	}
	must(t, k8s.Create(context.Background(), es))
}

func secretCreds(t *testing.T, ns, name string) (user, password string) {
	t.Helper()
	s, err := getSecret(ns, name)
	must(t, err)
	return string(s.Data["username"]), string(s.Data["password"])
}

// TestVaultDynamicDatabaseCredentials: the credentials log in to
// PostgreSQL; the lease is renewed at the share of its TTL asked for; new
// credentials replace them before the maximum TTL (a rotation); deleting
// the ExternalSecret revokes the lease, after which they no longer log in.
//
// Serial: its 6 s lease must be renewed in the 3 s after it falls due, a
// bound that the load of other tests could break.
func TestVaultDynamicDatabaseCredentials(t *testing.T) {
	needVault(t)
	ns := newNamespace(t, nil)
	dsn, mount := vaultDatabase(t, ns, 6*time.Second, 16*time.Second)
	createSecret(t, ns, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	vaultStore(t, ns, "vault", tokenAuth("vault-token"), "v2")
	vaultDynamicES(t, ns, "db", "vault", mount+"/creds/app", 50)

	eventually(t, wait, func() (bool, string) {
		s, err := getSecret(ns, "db")
		return err == nil && len(s.Data["password"]) > 0, "no credentials in the target yet"
	})
	user, pw := secretCreds(t, ns, "db")
	must(t, pgLogin(dsn, user, pw))
	first := waitReady(t, ns, "db").Status.Lease
	if first == nil || !strings.HasPrefix(first.ID, mount+"/creds/app/") || first.TTL.Duration != 6*time.Second {
		t.Fatalf("status.lease = %+v, want the lease of %s/creds/app with a TTL of 6s", first, mount)
	}

	// Renewed at half its TTL, with the same credentials.
	eventually(t, wait, func() (bool, string) {
		l := getES(t, ns, "db").Status.Lease
		return l != nil && l.ID == first.ID && l.RenewTime != nil, fmt.Sprintf("lease %+v not renewed", l)
	})
	if u, p := secretCreds(t, ns, "db"); u != user || p != pw {
		t.Fatal("a renewal changed the credentials")
	}

	// Before the maximum TTL (16s), new credentials: a rotation.
	eventually(t, 30*time.Second, func() (bool, string) {
		u, _ := secretCreds(t, ns, "db")
		return u != user, "the credentials were not rotated before the maximum TTL"
	})
	// The status is written after the target: wait for it to catch up.
	var es *v1alpha1.ExternalSecret
	eventually(t, wait, func() (bool, string) {
		es = getES(t, ns, "db")
		return es.Status.Lease != nil && es.Status.Lease.ID != first.ID && es.Status.LastRotationTime != nil,
			fmt.Sprintf("after the rotation: lease %+v (first %q), lastRotationTime %v", es.Status.Lease, first.ID, es.Status.LastRotationTime)
	})
	user2, pw2 := secretCreds(t, ns, "db")
	must(t, pgLogin(dsn, user2, pw2))
	waitEvent(t, ns, "db", "Rotated", "")
	var evs corev1.EventList
	must(t, k8s.List(context.Background(), &evs, client.InNamespace(ns)))
	for _, e := range evs.Items {
		if strings.Contains(e.Message, pw) || strings.Contains(e.Message, pw2) {
			t.Fatalf("event %s tells a password: %s", e.Reason, e.Message)
		}
	}

	// Deleting the ExternalSecret revokes the lease: Vault drops the role.
	must(t, k8s.Delete(context.Background(), es))
	waitGone(t, es)
	eventually(t, wait, func() (bool, string) {
		err := pgLogin(dsn, user2, pw2)
		return err != nil, "the credentials still log in after the ExternalSecret was deleted"
	})
	// The first lease was replaced, not revoked: it ends at its maximum
	// TTL; then none is left.
	eventually(t, 30*time.Second, func() (bool, string) {
		n := vaultLeases(t, mount+"/creds/app/")
		return n == 0, fmt.Sprintf("%d leases left", n)
	})
}

// TestVaultDynamicLeaseSurvivesControllerKill: a controller killed with
// SIGKILL in the middle of a lease is replaced by one that renews the same
// lease, from the status: Vault holds one lease throughout.
func TestVaultDynamicLeaseSurvivesControllerKill(t *testing.T) {
	parallel(t)
	needVault(t)
	ns := newNamespace(t, nil)
	dsn, mount := vaultDatabase(t, ns, 20*time.Second, time.Hour)
	class := "lease-" + ns
	createSecret(t, ns, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vault"},
		Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
			Server: vaultSrv.Addr(), Path: "secret", Version: "v2", Auth: tokenAuth("vault-token")}}}}
	must(t, k8s.Create(context.Background(), s))
	p := startController(t, class)
	vaultDynamicES(t, ns, "db", "vault", mount+"/creds/app", 50)

	var lease *v1alpha1.VaultLeaseStatus
	eventually(t, 2*wait, func() (bool, string) {
		lease = getES(t, ns, "db").Status.Lease
		return lease != nil && lease.RenewTime != nil, fmt.Sprintf("lease %+v not renewed", lease)
	})
	user, pw := secretCreds(t, ns, "db")
	p.kill(t)
	killedAt := time.Now()
	p2 := startController(t, class)

	eventually(t, 2*wait, func() (bool, string) {
		l := getES(t, ns, "db").Status.Lease
		return l != nil && l.RenewTime != nil && l.RenewTime.After(killedAt), fmt.Sprintf("lease %+v not renewed since the restart", l)
	})
	l := getES(t, ns, "db").Status.Lease
	if l.ID != lease.ID {
		t.Fatalf("the restarted controller holds lease %q, want the same lease %q", l.ID, lease.ID)
	}
	if n := vaultLeases(t, mount+"/creds/app/"); n != 1 {
		t.Fatalf("Vault holds %d leases of the role, want 1", n)
	}
	if u, p := secretCreds(t, ns, "db"); u != user || p != pw {
		t.Fatal("the restart changed the credentials")
	}
	// The restarted controller tells the lease and its expiry by store.
	eventually(t, wait, func() (bool, string) {
		m, ok := p2.scrape("watchword_store_leases", "watchword_store_lease_next_expiry_timestamp_seconds")
		want := getES(t, ns, "db").Status.Lease.ExpiryTime.Unix()
		return ok && m["watchword_store_leases"] == 1 && m["watchword_store_lease_next_expiry_timestamp_seconds"] == float64(want),
			fmt.Sprintf("lease metrics %v, want 1 lease expiring at %d", m, want)
	})
	// The lease outlives its first TTL (20s) through the restart: the
	// credentials still log in.
	if left := time.Until(l.IssueTime.Add(22 * time.Second)); left > 0 {
		time.Sleep(left)
	}
	must(t, pgLogin(dsn, user, pw))
	if now := getES(t, ns, "db").Status.Lease; now.ID != lease.ID {
		t.Fatalf("lease %q replaced by %q", lease.ID, now.ID)
	}

	// Deleting the target: new credentials for a new one, and the lease
	// of the old ones revoked, well before it would have expired.
	l = getES(t, ns, "db").Status.Lease
	must(t, k8s.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}}))
	revokedBefore(t, dsn, user, pw, l.ExpiryTime.Time)
	eventually(t, wait, func() (bool, string) {
		s, err := getSecret(ns, "db")
		st := getES(t, ns, "db").Status
		return err == nil && string(s.Data["username"]) != user && st.Lease.ID != l.ID && st.TargetResourceVersion == s.ResourceVersion,
			"no new credentials in a new target, recorded in the status"
	})
	user, pw = secretCreds(t, ns, "db")
	must(t, pgLogin(dsn, user, pw))
	if n := vaultLeases(t, mount+"/creds/app/"); n != 1 {
		t.Fatalf("Vault holds %d leases of the role after the target was replaced, want 1", n)
	}

	// Deleting the ExternalSecret revokes its lease.
	es := getES(t, ns, "db")
	must(t, k8s.Delete(context.Background(), es))
	revokedBefore(t, dsn, user, pw, es.Status.Lease.ExpiryTime.Time)
	waitGone(t, es)
	if n := vaultLeases(t, mount+"/creds/app/"); n != 0 {
		t.Fatalf("Vault holds %d leases of the role after the deletion, want 0", n)
	}
}

// revokedBefore waits until the credentials no longer log in, and checks
// that this came before expiry, when their lease would have ended anyway:
// the lease was revoked.
func revokedBefore(t *testing.T, dsn, user, password string, expiry time.Time) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		return pgLogin(dsn, user, password) != nil, "the credentials still log in"
	})
	if now := time.Now(); !now.Before(expiry) {
		t.Fatalf("the credentials stopped at %s, not before their lease's expiry %s: nothing shows it was revoked", now, expiry)
	}
}

// TestVaultStaticRoleReadLikeKV: a static role's credentials carry no
// lease: they are read at every refresh like a KV secret, their last
// rotation time as their version, and a rotation in Vault reaches the
// target.
func TestVaultStaticRoleReadLikeKV(t *testing.T) {
	parallel(t)
	needVault(t)
	ns := newNamespace(t, nil)
	dsn, mount := vaultDatabase(t, ns, time.Hour, time.Hour)
	sqlExec(t, dsn, `CREATE ROLE static_app WITH LOGIN PASSWORD 'initial-pw'`)
	must(t, vaultSrv.Do(http.MethodPost, mount+"/static-roles/fixed", map[string]any{"db_name": "pg", "username": "static_app", "rotation_period": "1h"}, nil))
	createSecret(t, ns, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	vaultStore(t, ns, "vault", tokenAuth("vault-token"), "v2")
	path := mount + "/static-creds/fixed"
	vaultDynamicES(t, ns, "static", "vault", path, 0, withRefresh(time.Second))

	eventually(t, wait, func() (bool, string) {
		s, err := getSecret(ns, "static")
		return err == nil && len(s.Data["password"]) > 0, "no credentials in the target yet"
	})
	s, err := getSecret(ns, "static")
	must(t, err)
	if _, ok := s.Data["ttl"]; ok || string(s.Data["username"]) != "static_app" {
		t.Fatalf("target keys %v, username %q: want static_app and no ttl", keysOf(s.Data), s.Data["username"])
	}
	pw := string(s.Data["password"])
	must(t, pgLogin(dsn, "static_app", pw))
	es := waitReady(t, ns, "static")
	if es.Status.Lease != nil || len(es.Status.Versions) != 1 || es.Status.Versions[0].Key != path || es.Status.Versions[0].Version != string(s.Data["last_vault_rotation"]) {
		t.Fatalf("lease %+v, versions %v: want no lease and the last rotation time as the version", es.Status.Lease, es.Status.Versions)
	}
	first := es.Status.Versions[0].Version

	must(t, vaultSrv.Do(http.MethodPost, mount+"/rotate-role/fixed", nil, nil))
	eventually(t, wait, func() (bool, string) {
		s, err := getSecret(ns, "static")
		return err == nil && string(s.Data["password"]) != pw, "the rotation did not reach the target"
	})
	eventually(t, wait, func() (bool, string) {
		v := getES(t, ns, "static").Status.Versions
		return len(v) == 1 && v[0].Version != first, fmt.Sprint(v)
	})
	_, pw2 := secretCreds(t, ns, "static")
	must(t, pgLogin(dsn, "static_app", pw2))
	if err := pgLogin(dsn, "static_app", pw); err == nil {
		t.Fatal("the password from before the rotation still logs in")
	}
}

// TestVaultSealedKeepsTheLeaseAndRenewsItWhenBack: a Vault sealed when a
// lease falls due keeps the target's credentials (the condition says the
// store is unavailable); once Vault is unsealed, before the lease ends,
// the same lease is renewed, not replaced, and Vault holds one lease.
//
// Serial: seals the Vault server the suite shares.
func TestVaultSealedKeepsTheLeaseAndRenewsItWhenBack(t *testing.T) {
	needVault(t)
	ns := newNamespace(t, nil)
	dsn, mount := vaultDatabase(t, ns, time.Minute, time.Hour)
	createSecret(t, ns, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	vaultStore(t, ns, "vault", tokenAuth("vault-token"), "v2")
	vaultDynamicES(t, ns, "db", "vault", mount+"/creds/app", 50)
	first := waitReady(t, ns, "db").Status.Lease
	if first == nil {
		t.Fatal("no lease in the status of a Ready vaultDynamic ExternalSecret")
	}
	user, pw := secretCreds(t, ns, "db")

	must(t, vaultSrv.Seal())
	unsealed := false
	defer func() {
		if !unsealed {
			must(t, vaultSrv.Unseal())
		}
	}()
	// The renewal falls due (at about half of the minute) while Vault is
	// sealed: the sync fails, and says why, and the target keeps its
	// credentials, which still log in.
	eventually(t, time.Minute, func() (bool, string) {
		c := readyCond(getES(t, ns, "db"))
		return c != nil && c.Reason == "StoreUnavailable" && strings.Contains(c.Message, "sealed"), fmt.Sprintf("Ready condition %+v, want StoreUnavailable (sealed) once the renewal falls due", c)
	})
	consistently(t, 5*time.Second, func() (bool, string) {
		u, p := secretCreds(t, ns, "db")
		return u == user && p == pw, "the target's credentials changed while Vault was sealed"
	})
	must(t, pgLogin(dsn, user, pw))
	if time.Until(first.ExpiryTime.Time) < 10*time.Second {
		t.Fatalf("the lease ends in %s: too soon to show a renewal after the unseal (the machine is too slow for this test's timing)", time.Until(first.ExpiryTime.Time))
	}

	must(t, vaultSrv.Unseal())
	unsealed = true
	back := time.Now()
	var l *v1alpha1.VaultLeaseStatus
	eventually(t, wait, func() (bool, string) {
		l = getES(t, ns, "db").Status.Lease
		return l != nil && l.RenewTime != nil && l.RenewTime.After(back), fmt.Sprintf("lease %+v not renewed since the unseal", l)
	})
	if l.ID != first.ID || !l.ExpiryTime.After(first.ExpiryTime.Time) {
		t.Fatalf("after the unseal the lease is %q expiring %s, want the same lease %q renewed past %s", l.ID, l.ExpiryTime, first.ID, first.ExpiryTime)
	}
	if u, p := secretCreds(t, ns, "db"); u != user || p != pw {
		t.Fatal("the renewal after the unseal changed the credentials")
	}
	must(t, pgLogin(dsn, user, pw))
	if n := vaultLeases(t, mount+"/creds/app/"); n != 1 {
		t.Fatalf("Vault holds %d leases of the role, want 1", n)
	}
	waitReady(t, ns, "db")
	t.Logf("renewed %s after the unseal, %s before the lease would have ended", l.RenewTime.Sub(back).Round(100*time.Millisecond), first.ExpiryTime.Sub(l.RenewTime.Time).Round(100*time.Millisecond))
}
