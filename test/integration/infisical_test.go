package integration

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/test/infisicalfake"
)

// The Infisical tests run against test/infisicalfake, a strict loopback
// fake of Infisical's REST API (Infisical cannot run here), reached by
// the operator's infisical provider through Infisical's Go SDK over TLS
// with the fake's CA as the store's caBundle. Each test starts a fake of
// its own.

func infisicalFake(t *testing.T, ns string) (*infisicalfake.Server, string) {
	t.Helper()
	fake := infisicalfake.Start()
	t.Cleanup(fake.Close)
	clientID := "identity-" + ns
	fake.AddIdentity(clientID, "secret-"+ns)
	fake.AddProject("shop", "prod")
	createSecret(t, ns, "infisical-identity", map[string]string{"clientId": clientID, "clientSecret": "secret-" + ns})
	return fake, clientID
}

func infisicalStore(t *testing.T, ns, name string, fake *infisicalfake.Server, change ...func(*v1alpha1.InfisicalProvider)) {
	t.Helper()
	spec := &v1alpha1.InfisicalProvider{
		HostAPI: fake.URL() + "/api", CABundle: fake.CAPEM(),
		Auth: v1alpha1.InfisicalAuth{UniversalAuthCredentials: &v1alpha1.InfisicalUniversalAuthCredentials{
			ClientID:     v1alpha1.SecretKeySelector{Name: "infisical-identity", Key: "clientId"},
			ClientSecret: v1alpha1.SecretKeySelector{Name: "infisical-identity", Key: "clientSecret"}}},
		SecretsScope: v1alpha1.InfisicalSecretsScope{ProjectSlug: "shop", EnvironmentSlug: "prod", SecretsPath: "/backend", Recursive: true}}
	for _, c := range change {
		c(spec)
	}
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Infisical: spec}}}))
}

// TestInfisicalSecretsSyncAndARefusedLoginKeepsTheTarget: an
// ExternalSecret reads a secret by name, one by its path below the
// store's folder, a property of a JSON value, and the secrets of a
// subfolder found by listing; a new version reaches the target and its
// status; a client secret revoked in Infisical gives a condition that
// names the Secret and no value, the target keeps what it held, and the
// new client secret in the Secret resumes the sync.
func TestInfisicalSecretsSyncAndARefusedLoginKeepsTheTarget(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fake, clientID := infisicalFake(t, ns)
	fake.Put("shop", "prod", "/backend", "DB_PASSWORD", sentinel)
	fake.Put("shop", "prod", "/backend", "SETTINGS", `{"mode":"blue"}`)
	fake.Put("shop", "prod", "/backend/cache", "REDIS_URL", "redis://cache")
	fake.Put("shop", "prod", "/backend/cache", "REDIS_USER", "app")
	fake.Put("shop", "prod", "/frontend", "OTHER", "not-listed")
	infisicalStore(t, ns, "infisical", fake)
	newES(t, ns, "es", "infisical", withData("password", "DB_PASSWORD", ""), withData("mode", "SETTINGS", "mode"),
		withFind(v1alpha1.ExternalSecretFind{Path: "cache/"}, rewriteRule("^cache/", "")))
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel, "mode": "blue", "REDIS_URL": "redis://cache", "REDIS_USER": "app"})
	es := waitReady(t, ns, "es")
	if v := versionOf(es, "DB_PASSWORD"); v != "1" {
		t.Errorf("status version of DB_PASSWORD %q, want 1", v)
	}

	fake.Put("shop", "prod", "/backend", "DB_PASSWORD", sentinel+"-2")
	forceSync(t, ns, "es")
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel + "-2", "mode": "blue", "REDIS_URL": "redis://cache", "REDIS_USER": "app"})
	eventually(t, wait, func() (bool, string) {
		v := versionOf(getES(t, ns, "es"), "DB_PASSWORD")
		return v == "2", "status version of DB_PASSWORD " + v
	})

	// The client secret is revoked in Infisical, and its tokens with it.
	fake.AddIdentity(clientID, "rotated-"+ns)
	fake.RevokeTokens()
	fake.Put("shop", "prod", "/backend", "DB_PASSWORD", "after-rotation")
	forceSync(t, ns, "es")
	es = waitCondition(t, ns, "es", "PermissionDenied", "HTTP 401", `Secret "`+ns+`/infisical-identity"`, "Universal Auth")
	if msg := readyCond(es).Message; strings.Contains(msg, "secret-"+ns) || strings.Contains(msg, sentinel) || strings.Contains(msg, clientID) {
		t.Error("the condition holds a credential or a value")
	}
	consistently(t, 2*wait/10, func() (bool, string) {
		s, err := getSecret(ns, "es")
		return err == nil && string(s.Data["password"]) == sentinel+"-2", "the target changed while the login was refused"
	})

	// The new client secret in the Secret: the sync resumes.
	updateSecret(t, ns, "infisical-identity", func(s *corev1.Secret) { s.Data["clientSecret"] = []byte("rotated-" + ns) })
	waitSecretData(t, ns, "es", map[string]string{"password": "after-rotation", "mode": "blue", "REDIS_URL": "redis://cache", "REDIS_USER": "app"})
}

// TestInfisicalStoreIsNotADestination: the store cannot write, and a
// PushSecret to it says so.
func TestInfisicalStoreIsNotADestination(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fake, _ := infisicalFake(t, ns)
	infisicalStore(t, ns, "infisical", fake)
	createSecret(t, ns, "src", map[string]string{"password": sentinel})
	newPush(t, ns, "p", "src", pushKey("password", "password"), pushTo("PUBLISHED", viaStore("SecretStore", "infisical")))
	waitPushCondition(t, ns, "p", "NotSupported", "write")
}

// TestInfisicalKubernetesAuthLogsInAsAServiceAccount: a store with
// Kubernetes Auth logs in with a token the API server issues for the
// named service account, and reads.
func TestInfisicalKubernetesAuthLogsInAsAServiceAccount(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fake, _ := infisicalFake(t, ns)
	must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "infisical-reader"}}))
	fake.AddKubernetesIdentity("k8s-identity", ns, "infisical-reader")
	fake.Put("shop", "prod", "/backend", "DB_PASSWORD", sentinel)
	infisicalStore(t, ns, "infisical", fake, func(s *v1alpha1.InfisicalProvider) {
		s.Auth = v1alpha1.InfisicalAuth{KubernetesAuth: &v1alpha1.InfisicalKubernetesAuth{IdentityID: "k8s-identity",
			ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "infisical-reader"}}}
	})
	newES(t, ns, "es", "infisical", withData("password", "DB_PASSWORD", ""))
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel})
}
