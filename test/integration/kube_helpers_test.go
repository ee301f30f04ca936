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

// readerAccount creates a service account in ns allowed to get Secrets of
// ns, and returns its name.
func readerAccount(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}}))
	must(t, k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secret-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}))
	must(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secret-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "secret-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: ns}}}))
	return "reader"
}

// readerToken returns a token of a service account that may read the
// Secrets of ns.
func readerToken(t *testing.T, ns string) string {
	t.Helper()
	sa := readerAccount(t, ns)
	exp := int64(3600)
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	must(t, err)
	return tr.Status.Token
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
