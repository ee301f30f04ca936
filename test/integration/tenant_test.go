package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/metrics"
	kubeprovider "github.com/watchword-dev/watchword/internal/provider/kubernetes"
)

// sharedPublishStore creates a ClusterSecretStore of the kubernetes
// provider whose service account (in namespace ops) may write Secrets in
// every namespace: the kind of store a platform team shares between
// teams.
func sharedPublishStore(t *testing.T, ops, name string) {
	t.Helper()
	ctx := context.Background()
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ops, Name: "publisher"}}))
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "update", "delete"}}}}
	must(t, k8s.Create(ctx, role))
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "publisher", Namespace: ops}}}
	must(t, k8s.Create(ctx, binding))
	exp := int64(3600)
	tr, err := kube.CoreV1().ServiceAccounts(ops).CreateToken(ctx, "publisher",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	must(t, err)
	createSecret(t, ops, "publisher-token", map[string]string{"token": tr.Status.Token})
	store := &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ClusterSecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			RemoteNamespace: ops,
			Auth: v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{
				BearerToken: v1alpha1.SecretKeySelector{Name: "publisher-token", Key: "token", Namespace: ops}}},
		}}}}
	must(t, k8s.Create(ctx, store))
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), store)
		_ = k8s.Delete(context.Background(), binding)
		_ = k8s.Delete(context.Background(), role)
	})
}

// TestTenantsSharingAClusterStoreStayApart: two namespaces publish under
// the same remote name through one ClusterSecretStore. Each lands in its
// own scope (for a kubernetes store, its own namespace), neither overwrites
// nor deletes the other's, and the store's own namespace gets nothing.
func TestTenantsSharingAClusterStoreStayApart(t *testing.T) {
	parallel(t)
	ops := newNamespace(t, nil)
	a, b := newNamespace(t, nil), newNamespace(t, nil)
	store := "shared-" + ops
	sharedPublishStore(t, ops, store)
	createSecret(t, a, "src", map[string]string{"password": sentinel + "-a"})
	createSecret(t, b, "src", map[string]string{"password": sentinel + "-b"})
	newPush(t, a, "p", "src", pushTo("creds", viaStore("ClusterSecretStore", store)))
	// b asks to adopt whatever it finds: it still cannot reach a's.
	pb := newPush(t, b, "p", "src", pushTo("creds", viaStore("ClusterSecretStore", store), func(d *v1alpha1.PushSecretDestination) { d.Adopt = true }))
	waitPushReady(t, a, "p")
	waitPushReady(t, b, "p")
	ga := waitSecretData(t, a, "creds", map[string]string{"password": sentinel + "-a"})
	gb := waitSecretData(t, b, "creds", map[string]string{"password": sentinel + "-b"})
	if !strings.HasPrefix(ga.Annotations[kubeprovider.PublisherAnnotation], "PushSecret/"+a+"/p/") ||
		!strings.HasPrefix(gb.Annotations[kubeprovider.PublisherAnnotation], "PushSecret/"+b+"/p/") {
		t.Errorf("markers %q and %q, want each namespace's own publisher", ga.Annotations[kubeprovider.PublisherAnnotation], gb.Annotations[kubeprovider.PublisherAnnotation])
	}
	if _, err := getSecret(ops, "creds"); !apierrors.IsNotFound(err) {
		t.Errorf("the store's own namespace got a published Secret: %v", err)
	}
	waitEvent(t, a, "p", "Published", `ClusterSecretStore "`+store+`" (scope "`+a+`")`)
	if d := getPush(t, a, "p").Status.Destinations; len(d) != 1 || d[0].Capabilities != "read,write,delete" {
		t.Errorf("destination status %+v, want the store's capabilities read,write,delete", d)
	}
	if n := testutil.ToFloat64(metrics.Publications.WithLabelValues("PushSecret", v1alpha1.ClusterSecretStoreKind, store, "Published")); n != 2 {
		t.Errorf("watchword_publications_total for the shared store = %v, want 2 (one per namespace)", n)
	}

	// b goes (deletionPolicy Delete): its copy goes, a's stays.
	must(t, k8s.Delete(context.Background(), pb))
	waitGone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: "creds"}})
	consistently(t, wait/10, func() (bool, string) {
		s, err := getSecret(a, "creds")
		return err == nil && string(s.Data["password"]) == sentinel+"-a", "a's published Secret changed when b's publisher went"
	})
}

// TestSecretStoreDefaultScope: a SecretStore's defaultScope confines its
// publishers: a kubernetes store then writes in the namespace it names,
// not in its remoteNamespace.
func TestSecretStoreDefaultScope(t *testing.T) {
	parallel(t)
	ns, scope := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "scoped", scope) // may write in scope
	updateStore(t, ns, "scoped", func(s *v1alpha1.SecretStore) {
		s.Spec.Kubernetes.RemoteNamespace = ns
		s.Spec.DefaultScope = scope
	})
	createSecret(t, ns, "src", map[string]string{"password": sentinel})
	newPush(t, ns, "p", "src", pushTo("creds", viaStore("SecretStore", "scoped")))
	waitPushReady(t, ns, "p")
	waitSecretData(t, scope, "creds", map[string]string{"password": sentinel})
	if _, err := getSecret(ns, "creds"); !apierrors.IsNotFound(err) {
		t.Errorf("the store's remoteNamespace got the published Secret: %v", err)
	}
}

// TestOneTenantsInvalidKeysHoldNoOtherTenant: a dozen ExternalSecrets of
// one namespace whose remote keys cannot name a Secret (a '/', which the
// kubernetes provider's client refuses before sending anything) fail with
// their own RemoteNameInvalid, not as an outage of the shared
// ClusterSecretStore: the store is never held, and another namespace's
// valid read of the same store syncs.
func TestOneTenantsInvalidKeysHoldNoOtherTenant(t *testing.T) {
	parallel(t)
	ops := newNamespace(t, nil)
	a, b := newNamespace(t, nil), newNamespace(t, nil)
	store := "shared-read-" + ops
	sharedPublishStore(t, ops, store)
	createSecret(t, ops, "creds", map[string]string{"password": sentinel})
	const bad = 12
	for i := range bad {
		newES(t, a, fmt.Sprintf("bad-%d", i), store, withClusterStore(store), withData("v", fmt.Sprintf("team/bad-%d", i), ""))
	}
	for i := range bad {
		c := readyCond(waitCondition(t, a, fmt.Sprintf("bad-%d", i), "RemoteNameInvalid", fmt.Sprintf(`remote key "team/bad-%d"`, i), "change the remote key"))
		if i == 0 {
			t.Logf("refused: %s", c.Message)
		}
	}
	newES(t, b, "good", store, withClusterStore(store), withData("password", "creds", "password"))
	waitSecretData(t, b, "good", map[string]string{"password": sentinel})
	if n := testutil.ToFloat64(metrics.StoreCallsRefused.WithLabelValues(v1alpha1.ClusterSecretStoreKind, store, engine.RefusedUnreachable)); n != 0 {
		t.Errorf("the shared store's gate refused %v calls as unreachable after one tenant's invalid keys", n)
	}
	if held := getES(t, b, "good"); readyCond(held).Reason != "SecretSynced" {
		t.Errorf("the other tenant's ExternalSecret: %s", describeES(held))
	}
}

// TestDefaultScopeChangeMovesThePublishedCopy: when a SecretStore's
// defaultScope changes, its publishers write in the new scope, and the
// copy in the old one is deleted once the new one is written, only
// because it carries the publisher's marker. A move into a scope where a
// foreign secret of the name stands is refused (NotOwned), and the copy
// in the scope before is kept, so nothing published is lost.
func TestDefaultScopeChangeMovesThePublishedCopy(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	a, b, c := newNamespace(t, nil), newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "scoped", a)
	allowPublisher(t, ns, "publisher-scoped", b, c)
	updateStore(t, ns, "scoped", func(s *v1alpha1.SecretStore) {
		s.Spec.Kubernetes.RemoteNamespace = ns
		s.Spec.DefaultScope = a
	})
	createSecret(t, ns, "src", map[string]string{"password": sentinel})
	newPush(t, ns, "p", "src", pushTo("creds", viaStore("SecretStore", "scoped")))
	waitPushReady(t, ns, "p")
	waitSecretData(t, a, "creds", map[string]string{"password": sentinel})

	updateStore(t, ns, "scoped", func(s *v1alpha1.SecretStore) { s.Spec.DefaultScope = b })
	waitSecretData(t, b, "creds", map[string]string{"password": sentinel})
	eventually(t, wait, func() (bool, string) {
		_, err := getSecret(a, "creds")
		return apierrors.IsNotFound(err), fmt.Sprintf("the copy in the former scope %s: %v", a, err)
	})
	eventually(t, wait, func() (bool, string) {
		st := getPush(t, ns, "p").Status.Destinations
		if len(st) != 1 || st[0].Scope == nil || *st[0].Scope != b || len(st[0].FormerScopes) != 0 {
			return false, fmt.Sprintf("destinations %+v", st)
		}
		return true, ""
	})

	createSecret(t, c, "creds", map[string]string{"password": "theirs"})
	updateStore(t, ns, "scoped", func(s *v1alpha1.SecretStore) { s.Spec.DefaultScope = c })
	eventually(t, wait, func() (bool, string) {
		st := getPush(t, ns, "p").Status.Destinations
		return len(st) == 1 && st[0].State == v1alpha1.PushNotOwned, fmt.Sprintf("destinations %+v", st)
	})
	waitSecretData(t, c, "creds", map[string]string{"password": "theirs"})
	waitSecretData(t, b, "creds", map[string]string{"password": sentinel})
}

// allowPublisher lets the service account sa of ns write Secrets in the
// namespaces scopes too.
func allowPublisher(t *testing.T, ns, sa string, scopes ...string) {
	t.Helper()
	ctx := context.Background()
	for _, scope := range scopes {
		must(t, k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: scope, Name: sa},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "update", "delete"}}}}))
		must(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: scope, Name: sa},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}))
	}
}
