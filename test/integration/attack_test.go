package integration

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// Attacks a tenant could try, each refused with a specific condition, with
// nothing read that the tenant may not read and nothing already synced
// lost. docs/threat-model.md cites them. (Attacks covered elsewhere:
// TestSecretStoreMayNotReachOtherNamespaces, TestClusterSecretStoreNamespaceConditions,
// TestTenantsSharingAClusterStoreStayApart, TestOwnerRefusesSecretItDoesNotOwnUnlessAdopting,
// TestPushRefusesAForeignSecretUntilAdopted, TestCRDRules.)

func TestSecretStoreMayNotReachAnotherNamespacesCAOrServiceAccount(t *testing.T) {
	parallel(t)
	// Outcome: a SecretStore that names a CA Secret, a CA ConfigMap or a
	// service account of another namespace is refused with
	// InvalidStoreConfig, naming the object and the rule; nothing of the
	// other namespace is read.
	other := newNamespace(t, nil)
	createSecret(t, other, "ca", map[string]string{"ca.crt": "not read"})
	must(t, k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "ca"}, Data: map[string]string{"ca.crt": "not read"}}))
	for _, tc := range []struct {
		name, kind string
		provider   v1alpha1.SecretStoreProvider
	}{
		{"CA Secret of a kubernetes store", "Secret", v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			RemoteNamespace: "default",
			Server:          &v1alpha1.KubernetesServer{URL: restCfg.Host, CASecretRef: &v1alpha1.SecretKeySelector{Name: "ca", Key: "ca.crt", Namespace: other}},
			Auth:            v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{BearerToken: v1alpha1.SecretKeySelector{Name: "token", Key: "token"}}}}}},
		{"CA ConfigMap of a Vault store", "ConfigMap", v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
			Server: "https://vault.invalid:8200", Path: "secret",
			CAProvider: &v1alpha1.CAProvider{Type: "ConfigMap", Name: "ca", Key: "ca.crt", Namespace: other},
			Auth:       tokenAuth("token")}}},
		{"service account of a kubernetes store", "ServiceAccount", v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			RemoteNamespace: "default",
			Auth:            v1alpha1.KubernetesAuth{ServiceAccount: &v1alpha1.ServiceAccountSelector{Name: "default", Namespace: other}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t, nil)
			createSecret(t, ns, "token", map[string]string{"token": "x"})
			must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sneaky"},
				Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: tc.provider}}))
			newES(t, ns, "es", "sneaky", withData("v", "anything", ""))
			waitCondition(t, ns, "es", "InvalidStoreConfig", fmt.Sprintf("%q", other), "may only reference", "in its own namespace")
			if _, err := getSecret(ns, "es"); err == nil {
				t.Fatal("a target was written from a store that reaches another namespace")
			}
			assertNoLeak(t, ns)
		})
	}
}

func TestClusterStoreRelabelledOutStopsServingAndKeepsData(t *testing.T) {
	parallel(t)
	// Outcome: a namespace allowed by a ClusterSecretStore's
	// namespaceSelector, then relabelled out of it, gets
	// NamespaceNotAllowed; its target keeps the data it had, and a later
	// change of the store's data does not reach it.
	ns := newNamespace(t, map[string]string{"team": "payments"})
	name := "css-relabel-" + ns
	clusterFakeStore(t, name, nil, &metav1.LabelSelector{MatchLabels: map[string]string{"team": "payments"}})
	newES(t, ns, "es", name, withClusterStore(name), withRefresh(time.Second), withData("v", "shared", ""))
	waitSecretData(t, ns, "es", map[string]string{"v": "cluster-value"})

	var nsObj corev1.Namespace
	must(t, k8s.Get(context.Background(), client.ObjectKey{Name: ns}, &nsObj))
	nsObj.Labels["team"] = "other"
	must(t, k8s.Update(context.Background(), &nsObj))
	waitCondition(t, ns, "es", "NamespaceNotAllowed", `does not allow namespace "`+ns+`"`)

	var css v1alpha1.ClusterSecretStore
	must(t, k8s.Get(context.Background(), client.ObjectKey{Name: name}, &css))
	css.Spec.Fake.Data[0].Value = "new-value-for-allowed-namespaces"
	must(t, k8s.Update(context.Background(), &css))
	consistently(t, 3*time.Second, func() (bool, string) {
		s, err := getSecret(ns, "es")
		return err == nil && string(s.Data["v"]) == "cluster-value", "the target of a namespace relabelled out lost its data or got the store's new data"
	})
	assertNoLeak(t, ns)
}

func TestOversizedAndDeeplyNestedInputIsBounded(t *testing.T) {
	parallel(t)
	// Outcome: a remote value nested 50,000 levels deep, and templates that
	// ask for gigabytes of output or billions of loop turns, each end in a
	// condition that names the key or template (never the value), while
	// the target keeps its data and the controller goes on serving.
	ns := newNamespace(t, nil)
	deep := strings.Repeat("[", 50000) + strings.Repeat("]", 50000)
	deepObject := strings.Repeat(`{"a":`, 30000) + `"x"` + strings.Repeat("}", 30000)
	fakeStore(t, ns, "store", fakeEntry{key: "good", value: `{"password":"` + sentinel + `"}`},
		fakeEntry{key: "deep", value: deep}, fakeEntry{key: "deep-object", value: deepObject})

	for _, tc := range []struct {
		name, reason string
		opts         []esOpt
		fragments    []string
	}{
		{"dataFrom of a deeply nested array", "", []esOpt{withDataFrom("deep", "")}, []string{`"deep"`, "levels deep"}},
		{"a property of a deeply nested object", "", []esOpt{withData("v", "deep-object", "a.a.a.a.b")}, []string{`"deep-object"`, "levels deep"}},
		{"a template of gigabytes", "TemplateError", []esOpt{withData("p", "good", "password"),
			withTemplate(&v1alpha1.ExternalSecretTemplate{Data: map[string]string{"big": `{{ repeat 1000000000 "x" }}`}})}, []string{`template "big"`}},
		{"a template of billions of turns", "TemplateError", []esOpt{withData("p", "good", "password"),
			withTemplate(&v1alpha1.ExternalSecretTemplate{Data: map[string]string{"loop": `{{ range until 65536 }}{{ range until 65536 }}xxxxxxxx{{ end }}{{ end }}`}})}, []string{`template "loop"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ToLower(strings.ReplaceAll(tc.name, " ", "-"))
			newES(t, ns, name, "store", tc.opts...)
			var es *v1alpha1.ExternalSecret
			eventually(t, wait, func() (bool, string) {
				es = getES(t, ns, name)
				c := readyCond(es)
				// StoreNotFound is the controller not having seen the
				// store just created yet; the outcome is what follows.
				return c != nil && c.Status == metav1.ConditionFalse && c.Reason != "StoreNotFound" &&
					(tc.reason == "" || c.Reason == tc.reason), describeES(es)
			})
			c := readyCond(es)
			for _, f := range tc.fragments {
				if !strings.Contains(c.Message, f) {
					t.Errorf("condition %s: %q does not name %s", c.Reason, c.Message, f)
				}
			}
			if len(c.Message) > 4096 {
				t.Errorf("condition message of %d bytes: an input echoed back?", len(c.Message))
			}
			t.Logf("refused with %s: %.200s", c.Reason, c.Message)
		})
	}
	// The controller goes on serving.
	newES(t, ns, "after", "store", withData("p", "good", "password"))
	waitSecretData(t, ns, "after", map[string]string{"p": sentinel})
	assertNoLeak(t, ns)
}

func TestRemoteFieldNamesCannotEscapeAsKeys(t *testing.T) {
	parallel(t)
	// Outcome: a remote object whose field names try to be paths or
	// control characters ("../x", "a/b", a newline, an empty name), expanded
	// with dataFrom, writes no Secret key of those names: the sync is
	// refused with a condition that names the offending key, and the
	// target keeps what it had.
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "ok", value: `{"user":"app"}`})
	newES(t, ns, "es", "store", withDataFrom("ok", ""))
	waitSecretData(t, ns, "es", map[string]string{"user": "app"})
	for _, field := range []string{"../escape", "a/b", "line\nbreak", ""} {
		t.Run(fmt.Sprintf("%q", field), func(t *testing.T) {
			raw := fmt.Sprintf(`{"user":"app",%q:"payload"}`, field)
			updateStore(t, ns, "store", func(s *v1alpha1.SecretStore) {
				s.Spec.Fake.Data = []v1alpha1.FakeProviderData{{Key: "ok", Value: raw}}
			})
			forceSync(t, ns, "es")
			// The condition names the field that cannot be a key.
			c := readyCond(waitCondition(t, ns, "es", "PropertyError", fmt.Sprintf("field %q", field), "is not a valid Secret key"))
			if strings.Contains(c.Message, "payload") {
				t.Errorf("the condition repeats the value: %q", c.Message)
			}
			t.Logf("refused with %s: %.300s", c.Reason, c.Message)
			s, err := getSecret(ns, "es")
			must(t, err)
			if len(s.Data) != 1 || string(s.Data["user"]) != "app" {
				t.Fatalf("the target holds keys %v, want only its last good data", keysOf(s.Data))
			}
		})
	}
	assertNoLeak(t, ns)
}

func TestKubernetesStoreMayNotUseWatchwordsOwnIdentity(t *testing.T) {
	parallel(t)
	// Outcome: a SecretStore in Watchword's own namespace, and a
	// ClusterSecretStore, whose kubernetes provider targets this cluster
	// with serviceAccount auth naming the service account the controller
	// runs as are refused with InvalidStoreConfig, saying why and what to
	// do; no token is requested for that account and nothing of the
	// targeted namespace is read into a target.
	ctx := context.Background()
	opNs := newNamespace(t, nil)
	class := "self-" + opNs
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: opNs, Name: "watchword"}}))
	startOperatorAs(t, opNs, "watchword", class)
	victim := newNamespace(t, nil)
	createSecret(t, victim, "crown", map[string]string{"key": sentinel})
	self := v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
		RemoteNamespace: victim,
		Auth:            v1alpha1.KubernetesAuth{ServiceAccount: &v1alpha1.ServiceAccountSelector{Name: "watchword", Namespace: opNs}}}}
	fragments := []string{"InvalidStoreConfig", fmt.Sprintf("%q", opNs+"/watchword"), "Watchword itself runs as", "create a service account for the store"}

	t.Run("SecretStore in Watchword's namespace", func(t *testing.T) {
		must(t, k8s.Create(ctx, &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: opNs, Name: "borrowed"},
			Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: self}}))
		newES(t, opNs, "es", "borrowed", withData("v", "crown", "key"))
		es := waitCondition(t, opNs, "es", fragments[0], fragments[1:]...)
		t.Logf("refused: %s", readyCond(es).Message)
		if _, err := getSecret(opNs, "es"); err == nil {
			t.Fatal("a target was written from a store acting as Watchword")
		}
		assertNoLeak(t, opNs)
	})
	t.Run("ClusterSecretStore", func(t *testing.T) {
		tenant := newNamespace(t, nil)
		css := &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: "borrowed-" + opNs},
			Spec: v1alpha1.ClusterSecretStoreSpec{Controller: class, SecretStoreProvider: self}}
		must(t, k8s.Create(ctx, css))
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), css) })
		newES(t, tenant, "es", css.Name, withClusterStore(css.Name), withData("v", "crown", "key"))
		es := waitCondition(t, tenant, "es", fragments[0], fragments[1:]...)
		t.Logf("refused: %s", readyCond(es).Message)
		if _, err := getSecret(tenant, "es"); err == nil {
			t.Fatal("a target was written from a store acting as Watchword")
		}
		assertNoLeak(t, tenant)
	})
	t.Run("token Secret holding Watchword's own token", func(t *testing.T) {
		tenant := newNamespace(t, nil)
		createSecret(t, tenant, "stolen", map[string]string{"token": accountToken(t, opNs, "watchword")})
		must(t, k8s.Create(ctx, &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "borrowed"},
			Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
				RemoteNamespace: victim,
				Auth:            v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{BearerToken: v1alpha1.SecretKeySelector{Name: "stolen", Key: "token"}}}}}}}))
		newES(t, tenant, "es", "borrowed", withData("v", "crown", "key"))
		es := waitCondition(t, tenant, "es", "InvalidStoreConfig", fmt.Sprintf("%q", "system:serviceaccount:"+opNs+":watchword"), "the user Watchword itself runs as")
		t.Logf("refused: %s", readyCond(es).Message)
		if _, err := getSecret(tenant, "es"); err == nil {
			t.Fatal("a target was written from a store acting as Watchword")
		}
		assertNoLeak(t, tenant)
	})
	// The same token, with server.url set to this cluster's own address
	// and to aliases of it: Watchword's identity is recognised by what the
	// server says the credentials are, not by the address.
	hostURL, err := url.Parse(withScheme(restCfg.Host))
	must(t, err)
	port := hostURL.Port()
	for _, alias := range []struct{ name, server string }{
		{"own token at the exact address", "https://" + net.JoinHostPort(hostURL.Hostname(), port)},
		{"own token at localhost", "https://" + net.JoinHostPort("localhost", port)},
		{"own token at an IPv4-mapped IPv6 address", "https://" + net.JoinHostPort("::ffff:127.0.0.1", port)},
	} {
		server := alias.server
		t.Run(alias.name, func(t *testing.T) {
			tenant := newNamespace(t, nil)
			createSecret(t, tenant, "stolen", map[string]string{"token": accountToken(t, opNs, "watchword")})
			must(t, k8s.Create(ctx, &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "borrowed"},
				Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
					RemoteNamespace: victim,
					Server:          &v1alpha1.KubernetesServer{URL: server, CABundle: restCfg.CAData},
					Auth:            v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{BearerToken: v1alpha1.SecretKeySelector{Name: "stolen", Key: "token"}}}}}}}))
			newES(t, tenant, "es", "borrowed", withData("v", "crown", "key"))
			es := waitCondition(t, tenant, "es", "InvalidStoreConfig", fmt.Sprintf("%q", "system:serviceaccount:"+opNs+":watchword"), "the user Watchword itself runs as")
			t.Logf("refused: %s", readyCond(es).Message)
			if _, err := getSecret(tenant, "es"); err == nil {
				t.Fatal("a target was written from a store acting as Watchword")
			}
			var store v1alpha1.SecretStore
			must(t, k8s.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "borrowed"}, &store))
			for _, c := range store.Status.Conditions {
				if c.Type == v1alpha1.ConditionReady && strings.HasSuffix(c.Message, "configuration and credentials are valid") {
					t.Errorf("the refused store's Ready message ends as a valid one's: %q", c.Message)
				}
			}
			assertNoLeak(t, tenant)
		})
	}
	t.Run("an account of the same name in another cluster is not refused", func(t *testing.T) {
		kc := other(t)
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opNs}}, metav1.CreateOptions{})
		must(t, err)
		_, err = kc.CoreV1().ServiceAccounts(opNs).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "watchword"}}, metav1.CreateOptions{})
		must(t, err)
		exp := int64(3600)
		tr, err := kc.CoreV1().ServiceAccounts(opNs).CreateToken(ctx, "watchword",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		must(t, err)
		tenant := newNamespace(t, nil)
		createSecret(t, tenant, "namesake", map[string]string{"token": tr.Status.Token})
		must(t, k8s.Create(ctx, &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "namesake"},
			Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
				RemoteNamespace: "default",
				Server:          &v1alpha1.KubernetesServer{URL: withScheme(otherCluster.Config.Host), CABundle: otherCluster.Config.CAData},
				Auth:            v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{BearerToken: v1alpha1.SecretKeySelector{Name: "namesake", Key: "token"}}}}}}}))
		newES(t, tenant, "es", "namesake", withData("v", "crown", "key"))
		// The account may read nothing there: the store is used, and
		// the other cluster's API server refuses the read.
		es := waitCondition(t, tenant, "es", "PermissionDenied", "system:serviceaccount:"+opNs+":watchword")
		t.Logf("not refused as Watchword: %s", readyCond(es).Message)
	})
	t.Run("a token of another account is not refused", func(t *testing.T) {
		tenant := newNamespace(t, nil)
		createSecret(t, tenant, "own", map[string]string{"token": readerToken(t, victim)})
		must(t, k8s.Create(ctx, &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "own"},
			Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
				RemoteNamespace: victim,
				Auth:            v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{BearerToken: v1alpha1.SecretKeySelector{Name: "own", Key: "token"}}}}}}}))
		newES(t, tenant, "es", "own", withData("v", "crown", "key"))
		waitSecretData(t, tenant, "es", map[string]string{"v": sentinel})
	})
}

// withScheme is a client configuration's host as a URL.
func withScheme(host string) string {
	if strings.Contains(host, "://") {
		return host
	}
	return "https://" + host
}
