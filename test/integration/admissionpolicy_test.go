package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/internal/operator"
)

// shippedPolicyUser is the service account the shipped admission policy
// (config/policy) names.
const shippedPolicyUser = "system:serviceaccount:watchword-system:watchword"

// installAdmissionPolicy installs the shipped admission policy for the
// service account sa of ns instead of the shipped one, under names of the
// test, and removes it when the test ends.
func installAdmissionPolicy(t *testing.T, ns, sa string) {
	t.Helper()
	raw, err := os.ReadFile("../../config/policy/admissionpolicy.yaml")
	must(t, err)
	if !bytes.Contains(raw, []byte(shippedPolicyUser)) {
		t.Fatalf("config/policy/admissionpolicy.yaml no longer names %s", shippedPolicyUser)
	}
	text := strings.ReplaceAll(string(raw), shippedPolicyUser, "system:serviceaccount:"+ns+":"+sa)
	text = strings.ReplaceAll(text, "watchword-secret-writes", ns+"-secret-writes")
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
	ctx := context.Background()
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		must(t, k8s.Create(ctx, &u))
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), &u) })
	}
}

// impersonating is a client that acts as the service account sa of ns.
func impersonating(t *testing.T, ns, sa string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(restCfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	must(t, err)
	return c
}

func labelled(name string, extra map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "watchword"}, Annotations: extra},
		Data: map[string][]byte{"k": []byte("v")}}
	return s
}

// TestAdmissionPolicyConstrainsWatchwordsOwnAccount: the shipped
// ValidatingAdmissionPolicy, installed on the real API server for a
// service account that RBAC lets do anything to the Secrets of its
// namespace, refuses every write outside what Watchword needs, with the
// policy's message; another user is not affected.
func TestAdmissionPolicyConstrainsWatchwordsOwnAccount(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	sa := secretsAccount(t, ns, "watchword", "get", "list", "create", "update", "patch", "delete")
	installAdmissionPolicy(t, ns, sa)
	as := impersonating(t, ns, sa)
	ctx := context.Background()

	// The policy takes effect once the API server has loaded it.
	eventually(t, 30*time.Second, func() (bool, string) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}}
		err := as.Create(ctx, s)
		if err == nil {
			_ = k8s.Delete(ctx, s)
		}
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), "the policy is not enforced yet"
	})

	for _, name := range []string{"foreign", "allowed", "merged", "managed"} {
		createSecret(t, ns, name, map[string]string{"k": "v"})
	}
	updateSecret(t, ns, "allowed", func(s *corev1.Secret) { s.Annotations = map[string]string{"watchword.io/allow-write": "true"} })
	updateSecret(t, ns, "merged", func(s *corev1.Secret) { s.Annotations = map[string]string{"watchword.io/merged-keys": `{"es":["k"]}`} })
	updateSecret(t, ns, "managed", func(s *corev1.Secret) { s.Labels = map[string]string{"app.kubernetes.io/managed-by": "watchword"} })

	refused := func(what, fragment string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: allowed, want refused by the policy", what)
			return
		}
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), fragment) {
			t.Errorf("%s: refused with %v, want the policy's message containing %q", what, err, fragment)
		}
	}
	allowed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: refused (%v), want allowed", what, err)
		}
	}
	update := func(name string) error {
		var s corev1.Secret
		if err := as.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
			return err
		}
		s.Data["k"] = []byte("forged")
		return as.Update(ctx, &s)
	}
	withNS := func(s *corev1.Secret) *corev1.Secret { s.Namespace = ns; return s }

	// Creations.
	refused("creating an unlabelled Secret", "may create only Secrets and ConfigMaps labelled", as.Create(ctx, withNS(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "forged"}})))
	allowed("creating a labelled Secret", as.Create(ctx, withNS(labelled("created", nil))))
	sat := withNS(labelled("sa-token", map[string]string{corev1.ServiceAccountNameKey: "default"}))
	sat.Type = corev1.SecretTypeServiceAccountToken
	refused("creating a labelled service-account-token Secret", "may not write a Secret of type", as.Create(ctx, sat))
	boot := withNS(labelled("bootstrap-token-abcdef", nil))
	boot.Type = corev1.SecretTypeBootstrapToken
	refused("creating a labelled bootstrap token Secret", "may not write a Secret of type", as.Create(ctx, boot))

	// Updates.
	refused("updating a Secret of someone else", "may update only Secrets and ConfigMaps it manages", update("foreign"))
	allowed("updating a Secret whose owner allows it", update("allowed"))
	allowed("updating a Secret it merges into", update("merged"))
	allowed("updating a Secret it manages", update("managed"))

	// Deletions.
	refused("deleting a Secret of someone else", "may delete only Secrets and ConfigMaps labelled", as.Delete(ctx, withNS(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}})))
	refused("deleting a Secret whose owner allows writes", "may delete only Secrets and ConfigMaps labelled", as.Delete(ctx, withNS(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "allowed"}})))
	allowed("deleting a Secret it manages", as.Delete(ctx, withNS(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "managed"}})))

	// The foreign Secret is as it was; another user is not affected.
	s, err := getSecret(ns, "foreign")
	must(t, err)
	if string(s.Data["k"]) != "v" {
		t.Error("the foreign Secret was changed")
	}
	allowed("another user creating an unlabelled Secret", k8s.Create(ctx, withNS(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "by-admin"}})))
}

// TestAdmissionPolicyConstrainsConfigMapWritesToo: ConfigMaps are targets
// as well (spec.target.kind), and the shipped policy holds Watchword's
// account to the same rules for them: create only labelled ones, update
// only those it manages or whose owner allows it, delete only those it
// manages; another user is not affected.
func TestAdmissionPolicyConstrainsConfigMapWritesToo(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	sa := secretsAccount(t, ns, "watchword", "get")
	ctx := context.Background()
	must(t, k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmaps"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update", "delete"}}}}))
	must(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmaps"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "configmaps"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}))
	installAdmissionPolicy(t, ns, sa)
	as := impersonating(t, ns, sa)
	managed := map[string]string{"app.kubernetes.io/managed-by": "watchword"}
	cm := func(name string, labels, annotations map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations},
			Data: map[string]string{"k": "v"}}
	}
	// The policy takes effect once the API server has loaded it.
	eventually(t, 30*time.Second, func() (bool, string) {
		err := as.Create(ctx, cm("probe", nil, nil))
		if err == nil {
			_ = k8s.Delete(ctx, cm("probe", nil, nil))
		}
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), "the policy is not enforced yet"
	})
	must(t, k8s.Create(ctx, cm("foreign", nil, nil)))
	must(t, k8s.Create(ctx, cm("allowed", nil, map[string]string{"watchword.io/allow-write": "true"})))
	must(t, k8s.Create(ctx, cm("managed", managed, nil)))
	update := func(name string) error {
		var c corev1.ConfigMap
		if err := as.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
			return err
		}
		c.Data["k"] = "forged"
		return as.Update(ctx, &c)
	}
	for _, tc := range []struct {
		what, refusal string
		err           error
	}{
		{"creating an unlabelled ConfigMap", "may create only Secrets and ConfigMaps labelled", as.Create(ctx, cm("forged", nil, nil))},
		{"creating a labelled ConfigMap", "", as.Create(ctx, cm("created", managed, nil))},
		{"updating a ConfigMap of someone else", "may update only Secrets and ConfigMaps it manages", update("foreign")},
		{"updating a ConfigMap whose owner allows it", "", update("allowed")},
		{"updating a ConfigMap it manages", "", update("managed")},
		{"deleting a ConfigMap of someone else", "may delete only Secrets and ConfigMaps labelled", as.Delete(ctx, cm("foreign", nil, nil))},
		{"deleting a ConfigMap whose owner allows writes", "may delete only Secrets and ConfigMaps labelled", as.Delete(ctx, cm("allowed", nil, nil))},
		{"deleting a ConfigMap it manages", "", as.Delete(ctx, cm("managed", nil, nil))},
	} {
		switch {
		case tc.refusal == "" && tc.err != nil:
			t.Errorf("%s: refused (%v), want allowed", tc.what, tc.err)
		case tc.refusal != "" && tc.err == nil:
			t.Errorf("%s: allowed, want refused by the policy", tc.what)
		case tc.refusal != "" && (!apierrors.IsForbidden(tc.err) && !apierrors.IsInvalid(tc.err) || !strings.Contains(tc.err.Error(), tc.refusal)):
			t.Errorf("%s: refused with %v, want the policy's message containing %q", tc.what, tc.err, tc.refusal)
		}
	}
	var foreign corev1.ConfigMap
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "foreign"}, &foreign))
	if foreign.Data["k"] != "v" {
		t.Error("the foreign ConfigMap was changed")
	}
	if err := k8s.Create(ctx, cm("by-admin", nil, nil)); err != nil {
		t.Errorf("another user creating an unlabelled ConfigMap: refused (%v), want allowed", err)
	}
}
