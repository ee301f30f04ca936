package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// Faults of a real Vault server: throttling (a proxy in front of it that
// answers 429 with Retry-After, as Vault's rate limit quotas do), a revoked
// token, and Vault down for a while.

// throttlingProxy forwards to Vault, counts the requests it gets, and
// answers 429 with Retry-After while throttle is set.
type throttlingProxy struct {
	*httptest.Server
	requests atomic.Int64
	throttle atomic.Bool
}

func newThrottlingProxy(t *testing.T, retryAfter string) *throttlingProxy {
	t.Helper()
	target, err := url.Parse(vaultSrv.Addr())
	must(t, err)
	p := &throttlingProxy{}
	forward := httputil.NewSingleHostReverseProxy(target)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		if p.throttle.Load() {
			w.Header().Set("Retry-After", retryAfter)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"errors":["request path \"secret/data/x\": rate limit quota exceeded"]}`))
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// vaultStoreAt makes a SecretStore of Vault at server (a proxy of the test
// Vault) with the token in the Secret vault-token.
func vaultStoreAt(t *testing.T, ns, name, server string) {
	t.Helper()
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
			Server: server, Path: "secret", Auth: tokenAuth("vault-token")}}}}))
}

func TestVaultThrottlingHonoursRetryAfter(t *testing.T) {
	parallel(t)
	// Outcome: while Vault answers 429 with Retry-After 5, the store gets
	// at most one request per 5 s, whatever its ExternalSecret refreshed
	// every second wants; the target keeps its data, the condition says
	// Throttled, and the sync recovers when the throttling ends.
	needVault(t)
	ns := newNamespace(t, nil)
	path := ns + "/db"
	vaultPut(t, path, map[string]any{"v": "kept"})
	proxy := newThrottlingProxy(t, "5")
	createSecret(t, ns, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	vaultStoreAt(t, ns, "vault", proxy.URL)
	newES(t, ns, "es", "vault", withRefresh(time.Second), withData("v", path, "v"))
	waitSecretData(t, ns, "es", map[string]string{"v": "kept"})

	proxy.throttle.Store(true)
	waitCondition(t, ns, "es", "Throttled", "HTTP 429")
	from, before := time.Now(), proxy.requests.Load()
	time.Sleep(15 * time.Second)
	window, requests := time.Since(from), proxy.requests.Load()-before
	bound := int64(window/(5*time.Second)) + 1
	t.Logf("Vault throttling with Retry-After 5: %d requests in %s (bound %d), %.1f a minute", requests, window.Round(100*time.Millisecond), bound, float64(requests)/window.Minutes())
	if requests > bound {
		t.Fatalf("%d requests reached a throttling Vault in %s; Retry-After 5 allows %d", requests, window, bound)
	}
	waitSecretData(t, ns, "es", map[string]string{"v": "kept"})
	proxy.throttle.Store(false)
	waitReady(t, ns, "es")
	assertNoLeak(t, ns)
}

func TestVaultRevokedTokenHoldsTheStoreUntilItChanges(t *testing.T) {
	parallel(t)
	// Outcome: a Vault token revoked under a store makes Vault refuse it;
	// Watchword asks Vault nothing more for the hold (a minute at first)
	// however often the ExternalSecret wants to refresh, says
	// PermissionDenied with until when, and keeps the target's data. A new
	// token in the credential Secret is used at once.
	needVault(t)
	ns := newNamespace(t, nil)
	path := ns + "/db"
	vaultPut(t, path, map[string]any{"v": "kept"})
	tok, err := vaultSrv.Token("root")
	must(t, err)
	createSecret(t, ns, "vault-token", map[string]string{"token": tok})
	// The proxy only counts what reaches Vault: reads, version checks,
	// lookups of the token.
	proxy := newThrottlingProxy(t, "0")
	vaultStoreAt(t, ns, "vault", proxy.URL)
	newES(t, ns, "es", "vault", withRefresh(time.Second), withData("v", path, "v"))
	waitSecretData(t, ns, "es", map[string]string{"v": "kept"})

	must(t, vaultSrv.Do(http.MethodPost, "auth/token/revoke", map[string]any{"token": tok}, nil))
	waitCondition(t, ns, "es", "PermissionDenied", "no call is sent to the store until")
	held := proxy.requests.Load()
	time.Sleep(10 * time.Second)
	more := proxy.requests.Load() - held
	t.Logf("revoked Vault token, ExternalSecret refreshed every second: %d requests reached Vault in the 10 s after the refusal", more)
	if more != 0 {
		t.Fatalf("%d requests reached Vault while the store was held after it refused the token", more)
	}
	waitSecretData(t, ns, "es", map[string]string{"v": "kept"})

	fresh, err := vaultSrv.Token("root")
	must(t, err)
	fixed := time.Now()
	updateSecret(t, ns, "vault-token", func(s *corev1.Secret) { s.Data["token"] = []byte(fresh) })
	eventually(t, 30*time.Second, func() (bool, string) {
		es := getES(t, ns, "es")
		c := readyCond(es)
		return c != nil && c.Status == metav1.ConditionTrue, describeES(es)
	})
	t.Logf("the new token was used %s after it was written (the hold had about 50 s left)", time.Since(fixed).Round(10*time.Millisecond))
	assertNoLeak(t, ns)
}

// TestVaultDownKeepsTargetsAndRecoversWithoutRestart: Vault stopped for a
// while; the targets keep their data and recover by their own backoff.
//
// Serial: stops the Vault server the suite shares.
func TestVaultDownKeepsTargetsAndRecoversWithoutRestart(t *testing.T) {
	// Outcome: Vault stopped for about 20 s: the targets of 5
	// ExternalSecrets keep their data the whole time, their conditions say
	// the store is unavailable, and all are Ready again after Vault is
	// back, by their own backoff, without a restart of Watchword.
	needVault(t)
	ns, path := tokenVaultStore(t, "down", map[string]any{"v": "kept"}, "v2")
	for i := range 5 {
		newES(t, ns, fmt.Sprintf("es%d", i), "vault", withRefresh(2*time.Second), withData("v", path, "v"))
	}
	for i := range 5 {
		waitSecretData(t, ns, fmt.Sprintf("es%d", i), map[string]string{"v": "kept"})
	}
	vaultSrv.Stop()
	restarted := false
	defer func() {
		if !restarted {
			must(t, vaultSrv.Restart())
			must(t, vaultSrv.Unseal())
		}
	}()
	down := time.Now()
	waitCondition(t, ns, "es0", "StoreUnavailable", "cannot reach Vault")
	consistently(t, 20*time.Second-time.Since(down), func() (bool, string) {
		for i := range 5 {
			s, err := getSecret(ns, fmt.Sprintf("es%d", i))
			if err != nil || string(s.Data["v"]) != "kept" {
				return false, fmt.Sprintf("es%d lost its data while Vault was down", i)
			}
		}
		return true, ""
	})
	must(t, vaultSrv.Restart())
	must(t, vaultSrv.Unseal())
	restarted = true
	back := time.Now()
	eventually(t, 2*time.Minute, func() (bool, string) {
		n := readyCount(t, ns)
		return n == 5, fmt.Sprintf("%d of 5 Ready", n)
	})
	t.Logf("Vault down for %s: targets kept; all 5 Ready %s after it was back", back.Sub(down).Round(100*time.Millisecond), time.Since(back).Round(100*time.Millisecond))
	assertNoLeak(t, ns)
}
