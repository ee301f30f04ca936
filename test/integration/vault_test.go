package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/test/vaultserver"
)

// These tests run Watchword against a real Vault server (built from the
// github.com/hashicorp/vault module by `make tools-vault`) and the real API
// server. Each starts with needVault.

var (
	vaultOnce sync.Once
	// vaultSrv is the shared Vault server, nil until needVault started it.
	vaultSrv  *vaultserver.Server
	vaultSkip string
	vaultErr  error
)

// needVault starts the shared Vault server the first time a test asks for
// it. Without a vault binary the test is skipped with a message that names
// `make tools-vault`; with $WATCHWORD_REQUIRE_VAULT set (as `make test`
// does) it fails instead, so that the Vault tests cannot be skipped
// silently.
func needVault(t *testing.T) {
	t.Helper()
	vaultOnce.Do(func() {
		var bin string
		bin, vaultSkip, vaultErr = vaultserver.Lookup()
		if vaultErr == nil && bin != "" {
			vaultSrv, vaultErr = vaultserver.Start(bin)
		}
	})
	if vaultErr != nil {
		t.Fatalf("starting Vault: %v", vaultErr)
	}
	if vaultSrv == nil {
		t.Skip(vaultSkip)
	}
}

func vaultStore(t *testing.T, ns, name string, auth v1alpha1.VaultAuth, version v1alpha1.VaultKVVersion) {
	t.Helper()
	needVault(t)
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
			Server: vaultSrv.Addr(), Path: "secret", Version: version, Auth: auth}}}}
	must(t, k8s.Create(context.Background(), s))
}

func tokenAuth(secret string) v1alpha1.VaultAuth {
	return v1alpha1.VaultAuth{TokenSecretRef: &v1alpha1.SecretKeySelector{Name: secret, Key: "token"}}
}

// tokenVaultStore makes a namespace with a SecretStore "vault" that logs
// in with the root token, and writes data at NS/name; it returns the
// namespace and the path.
func tokenVaultStore(t *testing.T, name string, data map[string]any, version v1alpha1.VaultKVVersion) (string, string) {
	t.Helper()
	ns := newNamespace(t, nil)
	path := ns + "/" + name
	vaultPut(t, path, data)
	createSecret(t, ns, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	vaultStore(t, ns, "vault", tokenAuth("vault-token"), version)
	return ns, path
}

func vaultPut(t *testing.T, path string, data map[string]any) {
	t.Helper()
	needVault(t)
	must(t, vaultSrv.PutKV2("secret", path, data))
}

func TestVaultTokenAuthReadsAndFollowsRotation(t *testing.T) {
	parallel(t)
	needVault(t)
	ns, path := tokenVaultStore(t, "db", map[string]any{"user": "app", "password": "first", "conn": map[string]any{"host": "db.internal", "port": 5432}}, "")
	newES(t, ns, "db", "vault", withRefresh(2*time.Second),
		withData("password", path, "password"),
		withData("host", path, "conn.host"),
		withDataFrom(path, "conn"))
	waitSecretData(t, ns, "db", map[string]string{"password": "first", "host": "db.internal", "port": "5432"})
	es := waitReady(t, ns, "db")
	if len(es.Status.Versions) != 1 || es.Status.Versions[0].Version != "1" {
		t.Fatalf("versions = %v, want KV version 1", es.Status.Versions)
	}

	vaultPut(t, path, map[string]any{"user": "app", "password": "second", "conn": map[string]any{"host": "db.internal", "port": 5432}})
	waitSecretData(t, ns, "db", map[string]string{"password": "second", "host": "db.internal", "port": "5432"})
	eventually(t, wait, func() (bool, string) {
		es := getES(t, ns, "db")
		return len(es.Status.Versions) == 1 && es.Status.Versions[0].Version == "2", fmt.Sprint(es.Status.Versions)
	})
	// Pinning a version reads that version.
	updateES(t, ns, "db", func(es *v1alpha1.ExternalSecret) {
		es.Spec.Data = []v1alpha1.ExternalSecretData{{SecretKey: "password", RemoteRef: v1alpha1.RemoteReference{Key: path, Property: "password", Version: "1"}}}
		es.Spec.DataFrom = nil
	})
	waitSecretData(t, ns, "db", map[string]string{"password": "first"})
}

func TestVaultSharedReadsAndMetadataChecks(t *testing.T) {
	parallel(t)
	needVault(t)
	ns, path := tokenVaultStore(t, "shared", map[string]any{"v": "same"}, "v2")
	for i := 0; i < 5; i++ {
		newES(t, ns, fmt.Sprintf("es-%d", i), "vault", withData("v", path, "v"))
	}
	for i := 0; i < 5; i++ {
		waitSecretData(t, ns, fmt.Sprintf("es-%d", i), map[string]string{"v": "same"})
	}
	if n := readCount(ns + "/vault"); n != 1 {
		t.Fatalf("5 ExternalSecrets reading one path made %d data reads, want 1", n)
	}
}

func TestVaultDeletedVersionIsReported(t *testing.T) {
	parallel(t)
	needVault(t)
	ns, path := tokenVaultStore(t, "gone", map[string]any{"v": "1"}, "v2")
	newES(t, ns, "es", "vault", withData("v", path, "v"))
	waitSecretData(t, ns, "es", map[string]string{"v": "1"})
	must(t, vaultSrv.Do(http.MethodPost, "secret/delete/"+path, map[string]any{"versions": []int{1}}, nil))
	forceSync(t, ns, "es")
	waitCondition(t, ns, "es", "NotFound", "version 1 was deleted")
	waitSecretData(t, ns, "es", map[string]string{"v": "1"})
}

// TestVaultOutageKeepsTargetsAndRecovers: with Vault stopped, then
// sealed, the target keeps its data and the condition says why; it is
// Ready again once Vault is unsealed.
//
// Serial: stops and seals the Vault server the suite shares.
func TestVaultOutageKeepsTargetsAndRecovers(t *testing.T) {
	needVault(t)
	ns, path := tokenVaultStore(t, "outage", map[string]any{"v": "kept"}, "v2")
	newES(t, ns, "es", "vault", withData("v", path, "v"))
	waitSecretData(t, ns, "es", map[string]string{"v": "kept"})

	vaultSrv.Stop()
	restarted := false
	defer func() {
		if !restarted {
			must(t, vaultSrv.Restart())
			must(t, vaultSrv.Unseal())
		}
	}()
	forceSync(t, ns, "es")
	es := waitCondition(t, ns, "es", "StoreUnavailable", "cannot reach Vault", `SecretStore "`+ns+`/vault"`)
	if es.Status.Phase != v1alpha1.PhaseFailing {
		t.Errorf("phase = %s", es.Status.Phase)
	}
	waitSecretData(t, ns, "es", map[string]string{"v": "kept"})

	must(t, vaultSrv.Restart())
	must(t, vaultSrv.Seal())
	waitCondition(t, ns, "es", "StoreUnavailable", "Vault is sealed")
	must(t, vaultSrv.Unseal())
	restarted = true
	eventually(t, 60*time.Second, func() (bool, string) {
		es := getES(t, ns, "es")
		c := readyCond(es)
		return c != nil && c.Status == metav1.ConditionTrue, describeES(es)
	})
}

func TestVaultAppRoleCredentialRotation(t *testing.T) {
	parallel(t)
	needVault(t)
	ns := newNamespace(t, nil)
	path := ns + "/approle"
	vaultPut(t, path, map[string]any{"v": "via-approle"})
	_ = vaultSrv.Do(http.MethodPost, "sys/auth/approle", map[string]any{"type": "approle"}, nil)
	must(t, vaultSrv.Policy("it-read", `path "secret/data/*" { capabilities = ["read"] }
path "secret/metadata/*" { capabilities = ["read"] }`))
	must(t, vaultSrv.Do(http.MethodPost, "auth/approle/role/"+ns, map[string]any{"token_policies": []string{"it-read"}}, nil))
	var rid struct {
		Data struct {
			RoleID string `json:"role_id"`
		} `json:"data"`
	}
	must(t, vaultSrv.Do(http.MethodGet, "auth/approle/role/"+ns+"/role-id", nil, &rid))
	var sid struct {
		Data struct {
			SecretID string `json:"secret_id"`
		} `json:"data"`
	}
	must(t, vaultSrv.Do(http.MethodPost, "auth/approle/role/"+ns+"/secret-id", map[string]any{}, &sid))
	createSecret(t, ns, "approle", map[string]string{"secret-id": "stale-secret-id"})
	vaultStore(t, ns, "vault", v1alpha1.VaultAuth{AppRole: &v1alpha1.VaultAppRoleAuth{RoleID: rid.Data.RoleID,
		SecretRef: v1alpha1.SecretKeySelector{Name: "approle", Key: "secret-id"}}}, "v2")
	newES(t, ns, "es", "vault", withData("v", path, "v"))
	waitCondition(t, ns, "es", "PermissionDenied", "AppRole auth", "credentials were rejected")

	updateSecret(t, ns, "approle", func(s *corev1.Secret) { s.Data["secret-id"] = []byte(sid.Data.SecretID) })
	waitSecretData(t, ns, "es", map[string]string{"v": "via-approle"})
}

// TestVaultUserPassLoginFollowsThePasswordSecret: a rejected userpass
// login is a PermissionDenied condition naming the method and the user
// (never the password), and a corrected password Secret is picked up at
// once.
func TestVaultUserPassLoginFollowsThePasswordSecret(t *testing.T) {
	parallel(t)
	needVault(t)
	ns := newNamespace(t, nil)
	path := ns + "/userpass"
	vaultPut(t, path, map[string]any{"v": "via-userpass"})
	_ = vaultSrv.Do(http.MethodPost, "sys/auth/userpass", map[string]any{"type": "userpass"}, nil)
	must(t, vaultSrv.Policy("it-read", `path "secret/data/*" { capabilities = ["read"] }
path "secret/metadata/*" { capabilities = ["read"] }`))
	must(t, vaultSrv.Do(http.MethodPost, "auth/userpass/users/"+ns, map[string]any{"password": "the right one", "token_policies": []string{"it-read"}}, nil))
	createSecret(t, ns, "vault-user", map[string]string{"password": "stale-password"})
	vaultStore(t, ns, "vault", v1alpha1.VaultAuth{UserPass: &v1alpha1.VaultPasswordAuth{Username: ns,
		SecretRef: v1alpha1.SecretKeySelector{Name: "vault-user", Key: "password"}}}, "v2")
	newES(t, ns, "es", "vault", withData("v", path, "v"))
	es := waitCondition(t, ns, "es", "PermissionDenied", fmt.Sprintf("userpass auth at auth/userpass as user %q", ns), "credentials were rejected")
	if c := readyCond(es); strings.Contains(c.Message, "stale-password") {
		t.Fatalf("the condition leaks the password: %s", c.Message)
	}

	updateSecret(t, ns, "vault-user", func(s *corev1.Secret) { s.Data["password"] = []byte("the right one") })
	waitSecretData(t, ns, "es", map[string]string{"v": "via-userpass"})
}

// vaultReviewer gives Vault a token allowed to make TokenReviews.
func vaultReviewer(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := newNamespace(t, nil)
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vault-reviewer"}}))
	must(t, k8s.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-auth-delegator"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "vault-reviewer", Namespace: ns}}}))
	exp := int64(3600)
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "vault-reviewer",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	must(t, err)
	return tr.Status.Token
}

func TestVaultKubernetesAuthWithRealTokenReview(t *testing.T) {
	parallel(t)
	needVault(t)
	ns := newNamespace(t, nil)
	path := ns + "/k8s"
	vaultPut(t, path, map[string]any{"v": "via-kubernetes-auth"})
	mount := "k8s-" + fmt.Sprint(time.Now().UnixNano()%100000)
	must(t, vaultSrv.Do(http.MethodPost, "sys/auth/"+mount, map[string]any{"type": "kubernetes"}, nil))
	must(t, vaultSrv.Do(http.MethodPost, "auth/"+mount+"/config", map[string]any{
		"kubernetes_host":      restCfg.Host,
		"kubernetes_ca_cert":   string(restCfg.CAData),
		"token_reviewer_jwt":   vaultReviewer(t),
		"disable_local_ca_jwt": true,
	}, nil))
	must(t, vaultSrv.Policy("k8s-read", fmt.Sprintf(`path "secret/data/%s/*" { capabilities = ["read"] }`, ns)))
	must(t, vaultSrv.Do(http.MethodPost, "auth/"+mount+"/role/app", map[string]any{
		"bound_service_account_names": []string{"app"}, "bound_service_account_namespaces": []string{ns},
		"token_policies": []string{"k8s-read"}, "audience": "vault",
	}, nil))
	must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}))
	vaultStore(t, ns, "vault", v1alpha1.VaultAuth{Kubernetes: &v1alpha1.VaultKubernetesAuth{MountPath: mount, Role: "app",
		ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "app", Audiences: []string{"vault"}}}}, "v2")
	newES(t, ns, "es", "vault", withData("v", path, "v"))
	waitSecretData(t, ns, "es", map[string]string{"v": "via-kubernetes-auth"})

	// A service account the role does not bind is refused by Vault.
	must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder"}}))
	vaultStore(t, ns, "vault-intruder", v1alpha1.VaultAuth{Kubernetes: &v1alpha1.VaultKubernetesAuth{MountPath: mount, Role: "app",
		ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "intruder", Audiences: []string{"vault"}}}}, "v2")
	newES(t, ns, "es2", "vault-intruder", withData("v", path, "v"))
	waitCondition(t, ns, "es2", "PermissionDenied", "Kubernetes auth")
}

func TestVaultJWTAuthWithServiceAccountToken(t *testing.T) {
	parallel(t)
	needVault(t)
	ns := newNamespace(t, nil)
	path := ns + "/jwt"
	vaultPut(t, path, map[string]any{"v": "via-jwt"})
	pub, err := cluster.ServiceAccountPublicKey()
	must(t, err)
	mount := "jwt-" + fmt.Sprint(time.Now().UnixNano()%100000)
	must(t, vaultSrv.Do(http.MethodPost, "sys/auth/"+mount, map[string]any{"type": "jwt"}, nil))
	must(t, vaultSrv.Do(http.MethodPost, "auth/"+mount+"/config", map[string]any{
		"jwt_validation_pubkeys": []string{string(pub)}, "bound_issuer": cluster.ServiceAccountIssuer(),
	}, nil))
	must(t, vaultSrv.Policy("jwt-read", fmt.Sprintf(`path "secret/data/%s/*" { capabilities = ["read"] }`, ns)))
	must(t, vaultSrv.Do(http.MethodPost, "auth/"+mount+"/role/app", map[string]any{
		"role_type": "jwt", "user_claim": "sub", "bound_audiences": []string{"vault"},
		"bound_subject": "system:serviceaccount:" + ns + ":app", "token_policies": []string{"jwt-read"},
	}, nil))
	must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}))
	vaultStore(t, ns, "vault", v1alpha1.VaultAuth{JWT: &v1alpha1.VaultJWTAuth{Path: mount, Role: "app",
		ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "app", Audiences: []string{"vault"}}}}, "v2")
	newES(t, ns, "es", "vault", withData("v", path, "v"))
	waitSecretData(t, ns, "es", map[string]string{"v": "via-jwt"})
}

func forceSync(t *testing.T, ns, name string) {
	t.Helper()
	updateES(t, ns, name, func(es *v1alpha1.ExternalSecret) {
		if es.Annotations == nil {
			es.Annotations = map[string]string{}
		}
		es.Annotations[conditions.ForceSyncAnnotation] = time.Now().Format(time.RFC3339Nano)
	})
}
