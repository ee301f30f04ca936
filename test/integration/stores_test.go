package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func storeReady(t *testing.T, obj client.Object, conds func() []metav1.Condition) (bool, string) {
	t.Helper()
	must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	for _, c := range conds() {
		if c.Type == "Ready" {
			return c.Status == metav1.ConditionTrue, c.Reason + ": " + c.Message
		}
	}
	return false, "no Ready condition"
}

func TestSecretStoreReportsReady(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	s := fakeStore(t, ns, "store", fakeEntry{key: "k", value: "v"})
	eventually(t, wait, func() (bool, string) {
		return storeReady(t, s, func() []metav1.Condition { return s.Status.Conditions })
	})
	if s.Status.Phase != v1alpha1.StorePhaseRunning || s.Status.Provider != "fake" {
		t.Fatalf("phase %s, provider %q", s.Status.Phase, s.Status.Provider)
	}
}

func clusterFakeStore(t *testing.T, name string, namespaces []string, selector *metav1.LabelSelector) *v1alpha1.ClusterSecretStore {
	t.Helper()
	s := &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ClusterSecretStoreSpec{
			SecretStoreProvider: v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{Data: []v1alpha1.FakeProviderData{{Key: "shared", Value: "cluster-value"}}}},
			Namespaces:          namespaces, NamespaceSelector: selector,
		}}
	must(t, k8s.Create(context.Background(), s))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), s) })
	return s
}

func TestClusterSecretStoreNamespaceConditions(t *testing.T) {
	parallel(t)
	allowed := newNamespace(t, nil)
	// The teams and the store are named after the test's first namespace
	// ("tN-..."): the selector matches no other test's namespaces, and no
	// other test's selector these.
	seq, _, _ := strings.Cut(allowed, "-")
	team := "payments-" + seq
	labelled := newNamespace(t, map[string]string{"team": team})
	refused := newNamespace(t, map[string]string{"team": "other-" + seq})
	name := "css-" + allowed
	clusterFakeStore(t, name, []string{allowed}, &metav1.LabelSelector{MatchLabels: map[string]string{"team": team}})
	for _, ns := range []string{allowed, labelled} {
		newES(t, ns, "es", name, withClusterStore(name), withData("v", "shared", ""))
		waitSecretData(t, ns, "es", map[string]string{"v": "cluster-value"})
	}
	newES(t, refused, "es", name, withClusterStore(name), withData("v", "shared", ""))
	waitCondition(t, refused, "es", "NamespaceNotAllowed", `does not allow namespace "`+refused+`"`,
		"it allows namespaces ["+allowed+"] or those matching namespaceSelector team="+team)
	if _, err := getSecret(refused, "es"); err == nil {
		t.Fatal("a refused namespace got a Secret")
	}
	// Labelling the namespace lets it in, without touching the ExternalSecret.
	var nsObj corev1.Namespace
	must(t, k8s.Get(context.Background(), client.ObjectKey{Name: refused}, &nsObj))
	nsObj.Labels["team"] = team
	must(t, k8s.Update(context.Background(), &nsObj))
	waitSecretData(t, refused, "es", map[string]string{"v": "cluster-value"})
}

func TestControllerClassIgnoresOtherClasses(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "elsewhere"},
		Spec: v1alpha1.SecretStoreSpec{Controller: "other-shard", SecretStoreProvider: v1alpha1.SecretStoreProvider{
			Fake: &v1alpha1.FakeProvider{Data: []v1alpha1.FakeProviderData{{Key: "k", Value: "v"}}}}}}
	must(t, k8s.Create(context.Background(), s))
	newES(t, ns, "es", "elsewhere", withData("k", "k", ""))
	consistently(t, 3*time.Second, func() (bool, string) {
		es := getES(t, ns, "es")
		var st v1alpha1.SecretStore
		must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(s), &st))
		_, err := getSecret(ns, "es")
		return len(es.Status.Conditions) == 0 && len(st.Status.Conditions) == 0 && err != nil,
			"an instance of the default class touched objects of class other-shard"
	})
}

func TestCredentialRolloverWithoutRestart(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	src := newNamespace(t, nil)
	good := readerToken(t, src)
	createSecret(t, src, "upstream", map[string]string{"v": "hello"})
	createSecret(t, ns, "reader-token", map[string]string{"token": "not-a-valid-token"})
	kubeStore(t, ns, "remote", src, "reader-token")
	newES(t, ns, "es", "remote", withData("v", "upstream", "v"))
	waitCondition(t, ns, "es", "PermissionDenied", `SecretStore "`+ns+`/remote"`, "credentials were rejected")
	var store v1alpha1.SecretStore
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "remote"}, &store))

	updateSecret(t, ns, "reader-token", func(s *corev1.Secret) { s.Data["token"] = []byte(good) })
	waitReady(t, ns, "es")
	waitSecretData(t, ns, "es", map[string]string{"v": "hello"})
	eventually(t, wait, func() (bool, string) {
		return storeReady(t, &store, func() []metav1.Condition { return store.Status.Conditions })
	})
}

func TestServiceAccountAuthRequestsTokens(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	readerAccount(t, ns)
	createSecret(t, ns, "upstream", map[string]string{"v": "via-token-request"})
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sa"},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			Auth: v1alpha1.KubernetesAuth{ServiceAccount: &v1alpha1.ServiceAccountSelector{Name: "reader"}}}}}}
	must(t, k8s.Create(context.Background(), s))
	newES(t, ns, "es", "sa", withData("v", "upstream", "v"))
	waitSecretData(t, ns, "es", map[string]string{"v": "via-token-request"})
}

func TestSecretStoreMayNotReachOtherNamespaces(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	other := newNamespace(t, nil)
	createSecret(t, other, "token", map[string]string{"token": "x"})
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sneaky"},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			RemoteNamespace: other,
			Auth: v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{
				BearerToken: v1alpha1.SecretKeySelector{Name: "token", Key: "token", Namespace: other}}}}}}}
	must(t, k8s.Create(context.Background(), s))
	newES(t, ns, "es", "sneaky", withData("v", "anything", "v"))
	waitCondition(t, ns, "es", "InvalidStoreConfig", "may only reference Secrets in its own namespace")
}

func TestKubernetesProviderRemoteServerWithClientCertificate(t *testing.T) {
	parallel(t)
	// The store names the API server by URL and CA, as it would another
	// cluster, and authenticates with a client certificate kept in Secrets.
	ns := newNamespace(t, nil)
	src := newNamespace(t, nil)
	user, err := cluster.UserConfig("remote-reader-" + src)
	must(t, err)
	ctx := context.Background()
	must(t, k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "read"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}))
	must(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "read"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "remote-reader-" + src}}}))
	createSecret(t, src, "upstream", map[string]string{"v": "from-afar"})
	createSecret(t, ns, "client-cert", map[string]string{"tls.crt": string(user.CertData), "tls.key": string(user.KeyData)})
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "remote"},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			RemoteNamespace: src,
			Server:          &v1alpha1.KubernetesServer{URL: restCfg.Host, CABundle: restCfg.CAData},
			Auth: v1alpha1.KubernetesAuth{Cert: &v1alpha1.KubernetesCertAuth{
				ClientCert: v1alpha1.SecretKeySelector{Name: "client-cert", Key: "tls.crt"},
				ClientKey:  v1alpha1.SecretKeySelector{Name: "client-cert", Key: "tls.key"}}},
		}}}}
	must(t, k8s.Create(ctx, s))
	newES(t, ns, "es", "remote", withData("v", "upstream", "v"))
	waitSecretData(t, ns, "es", map[string]string{"v": "from-afar"})

	// Without the CA, the server's certificate is not trusted: a clear
	// error, not a crash.
	s2 := s.DeepCopy()
	s2.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "no-ca"}
	s2.Spec.Kubernetes.Server.CABundle = nil
	must(t, k8s.Create(ctx, s2))
	newES(t, ns, "es2", "no-ca", withData("v", "upstream", "v"))
	waitCondition(t, ns, "es2", "StoreUnavailable", "certificate")
}
