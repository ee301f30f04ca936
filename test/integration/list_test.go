package integration

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	kubeprovider "github.com/watchword-dev/watchword/internal/provider/kubernetes"
)

// kubeOps builds the kubernetes provider's operations for namespace ns,
// acting with token.
func kubeOps(t *testing.T, ns, token string) engine.Ops {
	t.Helper()
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: ns, Name: "kube",
		Spec: &v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			Auth: v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{BearerToken: credRef}}}}}
	ops, err := kubeprovider.Factory{}.New(context.Background(), store, tokenDeps{token: token})
	must(t, err)
	return ops
}

// TestKubernetesListsByPrefixAndLabelsAsItsIdentityMay: the kubernetes
// store lists the Secrets of its namespace by name prefix and labels, with
// their resourceVersions, across pages; an identity that may get but not
// list Secrets is told it cannot list, by identity and verb.
func TestKubernetesListsByPrefixAndLabelsAsItsIdentityMay(t *testing.T) {
	ns := newNamespace(t, nil)
	ctx := context.Background()
	secrets := kube.CoreV1().Secrets(ns)
	versions := map[string]string{}
	for name, team := range map[string]string{"app-db": "a", "app-web": "b", "app-cache": "a", "other": "a"} {
		s, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": team}},
			Data: map[string][]byte{"password": []byte("pw-" + name)}}, metav1.CreateOptions{})
		must(t, err)
		versions[name] = s.ResourceVersion
	}

	lister := kubeOps(t, ns, accountToken(t, ns, secretsAccount(t, ns, "lister", "get", "list"))).Lister
	items, err := engine.ListAll(ctx, lister, engine.ListRequest{Prefix: "app-", Tags: map[string]string{"team": "a"}, Limit: 1}, nil, 0)
	must(t, err)
	var got []string
	for _, it := range items {
		got = append(got, it.Key)
		if it.Version != versions[it.Key] {
			t.Errorf("Secret %s listed at version %q, its resourceVersion is %q", it.Key, it.Version, versions[it.Key])
		}
		if it.Tags["team"] != "a" {
			t.Errorf("Secret %s listed with labels %v, want team=a", it.Key, it.Tags)
		}
	}
	slices.Sort(got)
	if want := []string{"app-cache", "app-db"}; !slices.Equal(got, want) {
		t.Fatalf("listing prefix app- with team=a one at a time = %v, want %v", got, want)
	}

	getter := kubeOps(t, ns, accountToken(t, ns, secretsAccount(t, ns, "getter", "get"))).Lister
	_, err = getter.List(ctx, engine.ListRequest{})
	if !errors.Is(err, engine.ErrPermissionDenied) {
		t.Fatalf("listing as an identity that may only get: %v, want ErrPermissionDenied", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "serviceaccount:"+ns+":getter") || !strings.Contains(msg, `verb "list"`) {
		t.Errorf("the refusal %q does not name the identity and the verb", msg)
	}
}
