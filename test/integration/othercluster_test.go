package integration

import (
	"context"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/localcluster"
	kubeprovider "github.com/watchword-dev/watchword/internal/provider/kubernetes"
)

// A second control plane, started by the first test that needs it and
// stopped by TestMain: "another cluster" as a publishing destination.
var (
	otherOnce    sync.Once
	otherCluster *localcluster.Cluster
	otherKube    *kubernetes.Clientset
	otherErr     error
)

func other(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	otherOnce.Do(func() {
		otherCluster, otherErr = localcluster.Start(localcluster.Options{NoControllerManager: true})
		if otherErr == nil {
			otherKube, otherErr = kubernetes.NewForConfig(otherCluster.Config)
		}
	})
	if otherErr != nil {
		t.Fatalf("starting the second control plane: %v", otherErr)
	}
	return otherKube
}

// otherClusterStore creates, in namespace ns of this cluster, a SecretStore
// named name that reaches namespace remoteNS of the second cluster with
// the token of a service account there that may read and write its
// Secrets, the CA kept in the store and the token in a Secret.
func otherClusterStore(t *testing.T, ns, name, remoteNS string) {
	t.Helper()
	ctx := context.Background()
	kc := other(t)
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: remoteNS}}, metav1.CreateOptions{})
	must(t, err)
	_, err = kc.CoreV1().ServiceAccounts(remoteNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "publisher"}}, metav1.CreateOptions{})
	must(t, err)
	_, err = kc.RbacV1().Roles(remoteNS).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "publisher"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "update", "delete"}}}}, metav1.CreateOptions{})
	must(t, err)
	_, err = kc.RbacV1().RoleBindings(remoteNS).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "publisher"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "publisher"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "publisher", Namespace: remoteNS}}}, metav1.CreateOptions{})
	must(t, err)
	exp := int64(3600)
	tr, err := kc.CoreV1().ServiceAccounts(remoteNS).CreateToken(ctx, "publisher",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	must(t, err)
	createSecret(t, ns, name+"-token", map[string]string{"token": tr.Status.Token})
	url := otherCluster.Config.Host
	if !strings.Contains(url, "://") {
		url = "https://" + url
	}
	if len(otherCluster.Config.CAData) == 0 {
		t.Fatal("the second control plane's client configuration has no CA")
	}
	must(t, k8s.Create(ctx, &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			RemoteNamespace: remoteNS,
			Server:          &v1alpha1.KubernetesServer{URL: url, CABundle: otherCluster.Config.CAData},
			Auth: v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{
				BearerToken: v1alpha1.SecretKeySelector{Name: name + "-token", Key: "token"}}},
		}}}}))
}

// waitOtherSecret waits until the second cluster's Secret ns/name holds
// want under key, and returns it.
func waitOtherSecret(t *testing.T, ns, name, key, want string) *corev1.Secret {
	t.Helper()
	var got *corev1.Secret
	eventually(t, wait, func() (bool, string) {
		s, err := other(t).CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, "Secret " + ns + "/" + name + " of the second cluster: " + err.Error()
		}
		got = s
		return string(s.Data[key]) == want, "Secret " + ns + "/" + name + " of the second cluster does not hold the published value under " + key
	})
	return got
}

// TestPushToAnotherCluster: a PushSecret publishes to a second cluster
// through a kubernetes store with its server, CA and token; the remote
// Secret carries the marker, follows the source, and is deleted with the
// PushSecret (deletionPolicy Delete).
//
// Serial: may start the suite's second control plane, too heavy to start
// beside the parallel tests.
func TestPushToAnotherCluster(t *testing.T) {
	ns := newNamespace(t, nil)
	remote := "push-destination" // a namespace of the second cluster
	otherClusterStore(t, ns, "default", remote)
	value := sentinel + "-" + ns
	createSecret(t, ns, "db", map[string]string{"password": value})
	ps := newPush(t, ns, "db", "db", pushTo("app-db"))
	waitPushReady(t, ns, "db")
	got := waitOtherSecret(t, remote, "app-db", "password", value)
	if want := "PushSecret/" + ns + "/db/" + string(getPush(t, ns, "db").UID); got.Annotations[kubeprovider.PublisherAnnotation] != want {
		t.Errorf("marker %q, want %q", got.Annotations[kubeprovider.PublisherAnnotation], want)
	}
	updateSecret(t, ns, "db", func(s *corev1.Secret) { s.Data["password"] = []byte(value + "-2") })
	waitOtherSecret(t, remote, "app-db", "password", value+"-2")
	must(t, k8s.Delete(context.Background(), ps))
	eventually(t, wait, func() (bool, string) {
		_, err := other(t).CoreV1().Secrets(remote).Get(context.Background(), "app-db", metav1.GetOptions{})
		return apierrors.IsNotFound(err), "the published Secret is still in the second cluster"
	})
}

// TestPublishProviderToAnotherClusterWritesNothingHere: with
// creationPolicy None an ExternalSecret carries a value from a fake store
// to a second cluster, and no Secret of this cluster holds it.
//
// Serial: may start the suite's second control plane, too heavy to start
// beside the parallel tests.
func TestPublishProviderToAnotherClusterWritesNothingHere(t *testing.T) {
	ns := newNamespace(t, nil)
	remote := "publish-destination" // a namespace of the second cluster
	otherClusterStore(t, ns, "default", remote)
	value := sentinel + "-" + ns
	fakeStore(t, ns, "source", fakeEntry{key: "db", value: value})
	newES(t, ns, "db", "source", withData("password", "db", ""), withTarget("", v1alpha1.CreationPolicyNone), publishTo("app-db"))
	waitOtherSecret(t, remote, "app-db", "password", value)
	waitReady(t, ns, "db")
	if held := secretsHolding(t, value); len(held) > 0 {
		t.Errorf("Secrets of this cluster hold the value: %v", held)
	}
}

// TestPublishFromVaultToAnotherCluster: provider-to-provider sync from a
// real Vault to a second cluster, with nothing written in this one.
//
// Serial: may start the suite's second control plane, too heavy to start
// beside the parallel tests.
func TestPublishFromVaultToAnotherCluster(t *testing.T) {
	needVault(t)
	value := sentinel + "-vault-to-cluster"
	ns, path := tokenVaultStore(t, "db", map[string]any{"password": value}, "")
	otherClusterStore(t, ns, "default", "from-vault")
	newES(t, ns, "db", "vault", withData("password", path, "password"), withTarget("", v1alpha1.CreationPolicyNone), publishTo("db"))
	waitOtherSecret(t, "from-vault", "db", "password", value)
	waitReady(t, ns, "db")
	if held := secretsHolding(t, value); len(held) > 0 {
		t.Errorf("Secrets of this cluster hold the value: %v", held)
	}
}
