package integration

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// grantSecrets lets the service account sa of ns use verbs on the Secrets
// of ns, through a Role and a RoleBinding named role.
func grantSecrets(t *testing.T, ns, role, sa string, verbs ...string) {
	t.Helper()
	ctx := context.Background()
	must(t, k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: verbs}}}))
	must(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}))
}

// secretsAccount creates the service account sa in ns, allowed verbs on
// the Secrets of ns (Role "secret-<sa>"), and returns its name.
func secretsAccount(t *testing.T, ns, sa string, verbs ...string) string {
	t.Helper()
	must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}))
	grantSecrets(t, ns, "secret-"+sa, sa, verbs...)
	return sa
}

// accountToken requests an hour's token of the service account sa of ns.
func accountToken(t *testing.T, ns, sa string) string {
	t.Helper()
	exp := int64(3600)
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	must(t, err)
	return tr.Status.Token
}

// readerAccount creates a service account in ns allowed to get Secrets of
// ns, and returns its name.
func readerAccount(t *testing.T, ns string) string {
	t.Helper()
	return secretsAccount(t, ns, "reader", "get")
}

// readerToken returns a token of a service account that may read the
// Secrets of ns.
func readerToken(t *testing.T, ns string) string {
	t.Helper()
	return accountToken(t, ns, readerAccount(t, ns))
}

// kubeStore creates a SecretStore reading Secrets of remoteNS with the
// token kept in the Secret tokenSecret (key "token").
func kubeStore(t *testing.T, ns, name, remoteNS, tokenSecret string) {
	t.Helper()
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			RemoteNamespace: remoteNS,
			Auth: v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{
				BearerToken: v1alpha1.SecretKeySelector{Name: tokenSecret, Key: "token"}}},
		}}}}
	must(t, k8s.Create(context.Background(), s))
}

// unstructuredSetController drops spec.controller from a seed example, so
// that the default instance serves it.
func unstructuredSetController(u *unstructured.Unstructured) {
	unstructured.RemoveNestedField(u.Object, "spec", "controller")
}
