package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// storeWait is how long a store may take to notice that what it waits for
// appeared: its retries back off up to about two minutes.
const storeWait = 4 * time.Minute

// storeStatus reads a store of either kind and returns its status.
func storeStatus(t *testing.T, obj client.Object) *v1alpha1.SecretStoreStatus {
	t.Helper()
	must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	switch s := obj.(type) {
	case *v1alpha1.SecretStore:
		return &s.Status
	case *v1alpha1.ClusterSecretStore:
		return &s.Status
	}
	t.Fatalf("not a store: %T", obj)
	return nil
}

// waitStoreWaiting waits until the store is Pending, Ready False with reason
// DependencyMissing and a message holding every fragment.
func waitStoreWaiting(t *testing.T, obj client.Object, fragments ...string) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		st := storeStatus(t, obj)
		c := readyOf(st)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "DependencyMissing" || st.Phase != v1alpha1.StorePhasePending {
			return false, fmt.Sprintf("phase %s, Ready %+v", st.Phase, c)
		}
		for _, f := range fragments {
			if !strings.Contains(c.Message, f) {
				return false, fmt.Sprintf("message %q lacks %q", c.Message, f)
			}
		}
		return true, ""
	})
}

// waitStoreRecovers waits until the store is Running and Ready, and checks
// that nobody edited it on the way.
func waitStoreRecovers(t *testing.T, obj client.Object) {
	t.Helper()
	generation := obj.GetGeneration()
	eventually(t, storeWait, func() (bool, string) {
		st := storeStatus(t, obj)
		c := readyOf(st)
		return c != nil && c.Status == metav1.ConditionTrue && st.Phase == v1alpha1.StorePhaseRunning,
			fmt.Sprintf("phase %s, Ready %+v", st.Phase, c)
	})
	if obj.GetGeneration() != generation {
		t.Fatalf("the store was edited: generation %d, was %d", obj.GetGeneration(), generation)
	}
}

func readyOf(st *v1alpha1.SecretStoreStatus) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == "Ready" {
			return &st.Conditions[i]
		}
	}
	return nil
}

func TestStoreWaitsForServiceAccount(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sa"},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			Auth: v1alpha1.KubernetesAuth{ServiceAccount: &v1alpha1.ServiceAccountSelector{Name: "reader"}}}}}}
	must(t, k8s.Create(context.Background(), s))
	waitStoreWaiting(t, s, `SecretStore "`+ns+`/sa"`, `waiting for ServiceAccount "`+ns+`/reader" to exist`, "retrying")

	// The service account and its permission to read Secrets: the store
	// turns Ready by itself.
	readerAccount(t, ns)
	waitStoreRecovers(t, s)
}

func TestClusterStoreWaitsForNamespaceAndServiceAccount(t *testing.T) {
	parallel(t)
	later := fmt.Sprintf("t%d-later", nsSeq.Add(1))
	s := &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: "css-" + later},
		Spec: v1alpha1.ClusterSecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			RemoteNamespace: later,
			Auth:            v1alpha1.KubernetesAuth{ServiceAccount: &v1alpha1.ServiceAccountSelector{Name: "reader", Namespace: later}}}}}}
	must(t, k8s.Create(context.Background(), s))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), s) })
	waitStoreWaiting(t, s, `waiting for namespace "`+later+`" to exist`)

	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: later}}
	must(t, k8s.Create(context.Background(), nsObj))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), nsObj) })
	waitStoreWaiting(t, s, `waiting for ServiceAccount "`+later+`/reader" to exist`)
	readerAccount(t, later)
	waitStoreRecovers(t, s)
}

func TestStoreWaitsForCredentialSecret(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	src := newNamespace(t, nil)
	good := readerToken(t, src)
	kubeStore(t, ns, "remote", src, "reader-token")
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "remote"}}
	waitStoreWaiting(t, s, `waiting for Secret "`+ns+`/reader-token" to exist`)

	createSecret(t, ns, "reader-token", map[string]string{"token": good})
	waitStoreRecovers(t, s)
}

func TestStoreWaitsForCAConfigMap(t *testing.T) {
	parallel(t)
	// The shared Vault server speaks plain HTTP, so any valid PEM serves
	// as the CA: what is tested is that the store waits for the ConfigMap.
	needVault(t)
	ns := newNamespace(t, nil)
	createSecret(t, ns, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vault"},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
			Server: vaultSrv.Addr(), Path: "secret", Version: v1alpha1.VaultKVv2, Auth: tokenAuth("vault-token"),
			CAProvider: &v1alpha1.CAProvider{Type: "ConfigMap", Name: "vault-ca", Key: "ca.crt"}}}}}
	must(t, k8s.Create(context.Background(), s))
	waitStoreWaiting(t, s, `waiting for ConfigMap "`+ns+`/vault-ca" to exist`)

	must(t, k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vault-ca"},
		Data: map[string]string{"ca.crt": string(restCfg.CAData)}}))
	waitStoreRecovers(t, s)
}
