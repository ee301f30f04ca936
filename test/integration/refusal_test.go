package integration

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func TestKubernetesRefusalNamesServiceAccountAndRequest(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	ctx := context.Background()
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bare"}}))
	createSecret(t, ns, "upstream", map[string]string{"v": "granted-later"})
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sa"},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			Auth: v1alpha1.KubernetesAuth{ServiceAccount: &v1alpha1.ServiceAccountSelector{Name: "bare"}}}}}}
	must(t, k8s.Create(ctx, s))
	newES(t, ns, "es", "sa", withData("v", "upstream", "v"))
	waitCondition(t, ns, "es", "PermissionDenied",
		`service account "`+ns+`/bare"`, `get Secret "upstream" in namespace "`+ns+`"`, `resource "secrets"`)
	eventually(t, wait, func() (bool, string) {
		ready, msg := storeReady(t, s, func() []metav1.Condition { return s.Status.Conditions })
		return !ready && contains(msg, `service account "`+ns+`/bare"`, `get Secrets in namespace "`+ns+`"`), msg
	})

	// The Role and RoleBinding of docs/providers.md let it read.
	must(t, k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "watchword-store-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}}}}))
	must(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "watchword-store-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "watchword-store-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "bare", Namespace: ns}}}))
	forceSync(t, ns, "es")
	waitSecretData(t, ns, "es", map[string]string{"v": "granted-later"})
}

func TestKubernetesRefusalOfABearerTokenNamesItsUser(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	src := newNamespace(t, nil)
	// The token's service account may read its own namespace, not src.
	exp := int64(3600)
	must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "elsewhere"}}))
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), "elsewhere",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	must(t, err)
	createSecret(t, ns, "token", map[string]string{"token": tr.Status.Token})
	kubeStore(t, ns, "remote", src, "token")
	newES(t, ns, "es", "remote", withData("v", "upstream", "v"))
	es := waitCondition(t, ns, "es", "PermissionDenied",
		`user "system:serviceaccount:`+ns+`:elsewhere"`, "kubernetes.auth.token", `get Secret "upstream" in namespace "`+src+`"`)
	if c := readyCond(es); c != nil && strings.Contains(c.Message, tr.Status.Token) {
		t.Fatal("the condition leaks the token")
	}
}

func contains(s string, fragments ...string) bool {
	for _, f := range fragments {
		if !strings.Contains(s, f) {
			return false
		}
	}
	return true
}
