package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/operator"
)

// TestNamespacedInstall: the chart with namespaced.enabled renders Roles
// and no ClusterRole; an operator running as the chart's service account,
// bound by those Roles only, with the flag the chart passes (--namespace),
// syncs an ExternalSecret of its namespace, ignores one in another
// namespace and serves no ClusterSecretStore (not even to an ExternalSecret
// of its namespace), and its identity may not read Secrets anywhere else.
// (The condition that a default-class instance writes for an
// ExternalSecret naming a ClusterSecretStore is checked in
// internal/operator; here the test's own default-class operator would
// answer too.)
func TestNamespacedInstall(t *testing.T) {
	parallel(t)
	helm := needHelm(t)
	ctx := context.Background()
	ns := newNamespace(t, nil)
	other := newNamespace(t, nil)
	r := helmTemplate(t, helm, "wwns", ns, "testdata/helm-values-namespaced.yaml")
	if k := r.find("ClusterRole"); len(k) > 0 {
		t.Errorf("a namespaced install renders ClusterRole %s", k[0].GetName())
	}
	if k := r.find("ClusterRoleBinding"); len(k) > 0 {
		t.Errorf("a namespaced install renders ClusterRoleBinding %s", k[0].GetName())
	}
	d := r.deployment(t)
	if a := args(t, d); !slices.Contains(a, "--namespace="+ns) {
		t.Errorf("args %v lack --namespace=%s", a, ns)
	}
	assertArgsParse(t, d)
	// Only the release's namespaced objects are applied: the CRDs are
	// there already, and the other cluster-scoped objects are not RBAC.
	var sa string
	for _, u := range r.objs {
		switch u.GetKind() {
		case "ServiceAccount":
			sa = u.GetName()
		case "Role", "RoleBinding":
		default:
			continue
		}
		if u.GetNamespace() != ns {
			t.Fatalf("%s %s is rendered into namespace %q, want %s", u.GetKind(), u.GetName(), u.GetNamespace(), ns)
		}
		must(t, ssa(ctx, u, false))
	}
	if sa == "" {
		t.Fatal("the chart rendered no ServiceAccount")
	}

	// The identity is refused Secrets and ClusterSecretStores outside its
	// namespace, by the API server's own authorizer.
	user := "system:serviceaccount:" + ns + ":" + sa
	for _, ra := range []authorizationv1.ResourceAttributes{
		{Verb: "list", Resource: "secrets"},
		{Verb: "watch", Resource: "secrets"},
		{Verb: "get", Resource: "secrets", Namespace: other},
		{Verb: "list", Resource: "namespaces"},
		{Verb: "list", Group: "external-secrets.x-k8s.io", Resource: "clustersecretstores"},
		{Verb: "list", Group: "external-secrets.x-k8s.io", Resource: "externalsecrets"},
	} {
		if allowed(t, user, ra) {
			t.Errorf("%s may %s %s in namespace %q; a namespaced install must not", user, ra.Verb, ra.Resource, ra.Namespace)
		}
	}
	if !allowed(t, user, authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: ns}) {
		t.Errorf("%s may not list Secrets in its own namespace %s", user, ns)
	}
	var all corev1.SecretList
	if err := impersonating(t, ns, sa).List(ctx, &all); !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets of every namespace as %s: %v, want Forbidden", user, err)
	}

	class := "ns-" + ns
	op := startNamespacedOperator(t, ns, sa, class)
	classStore(t, ns, "store", class, "from-the-store")
	classStore(t, other, "store", class, "elsewhere")
	newES(t, ns, "mine", "store", withData("v", "k", ""))
	newES(t, other, "not-mine", "store", withData("v", "k", ""))
	// A ClusterSecretStore of the class, which the namespaced operator
	// does not serve (and the test's own operator, of another class,
	// leaves alone).
	css := &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: class},
		Spec: v1alpha1.ClusterSecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{
			Fake: &v1alpha1.FakeProvider{Data: []v1alpha1.FakeProviderData{{Key: "k", Value: "cluster-wide"}}}}}}
	must(t, k8s.Create(ctx, css))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), css) })
	newES(t, ns, "cluster", class, withClusterStore(class), withData("v", "k", ""))

	waitSecretData(t, ns, "mine", map[string]string{"v": "from-the-store"})
	// Every informer the controllers started has synced: none of their
	// lists or watches was refused under the Role.
	syncCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if !op.Manager.GetCache().WaitForCacheSync(syncCtx) {
		t.Errorf("the namespaced operator's cache did not sync within %s: a list or watch is refused under its Role", wait)
	}
	consistently(t, 3*time.Second, func() (bool, string) {
		if _, err := getSecret(other, "not-mine"); !apierrors.IsNotFound(err) {
			return false, "the target in another namespace: " + errString(err)
		}
		es := getES(t, other, "not-mine")
		if len(es.Status.Conditions) > 0 {
			return false, "the ExternalSecret of another namespace has conditions"
		}
		must(t, k8s.Get(ctx, client.ObjectKeyFromObject(css), css))
		return len(css.Status.Conditions) == 0, "the ClusterSecretStore has conditions"
	})
	if _, err := getSecret(ns, "cluster"); !apierrors.IsNotFound(err) {
		t.Errorf("the target of the ExternalSecret naming a ClusterSecretStore: %s, want none", errString(err))
	}
}

func errString(err error) string {
	if err == nil {
		return "exists"
	}
	return err.Error()
}

// allowed asks the API server whether user may do ra.
func allowed(t *testing.T, user string, ra authorizationv1.ResourceAttributes) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
		Groups: []string{"system:serviceaccounts", "system:authenticated"}, ResourceAttributes: &ra}}
	must(t, k8s.Create(context.Background(), sar))
	return sar.Status.Allowed
}

// startNamespacedOperator runs an operator of class serving only ns, as the
// service account sa of ns, with leader election in ns; it stops when the
// test ends.
func startNamespacedOperator(t *testing.T, ns, sa, class string) *operator.Operator {
	t.Helper()
	cfg := &rest.Config{Host: restCfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: restCfg.CAData}, BearerToken: accountToken(t, ns, sa)}
	opts := operator.DefaultOptions()
	opts.Registry = registry()
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	opts.ControllerClass = class
	opts.SkipNameValidation = true
	opts.Namespaces = []string{ns}
	opts.LeaderElection, opts.LeaderElectionNamespace = true, ns
	runCtx, cancel := context.WithCancel(context.Background())
	op, err := operator.New(runCtx, cfg, opts)
	if err != nil {
		cancel()
		t.Fatalf("building a namespaced operator as %s/%s: %v", ns, sa, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = op.Start(runCtx)
	}()
	t.Cleanup(func() {
		cancel()
		awaitStop(t, "the namespaced operator", done)
	})
	return op
}

// TestKustomizeNamespacedOverlay: the namespaced overlay turns the base's
// ClusterRole and binding into a Role and RoleBinding with the generated
// rules, passes --namespace, and is applied like the base.
//
// Serial: applies the Kustomize manifests' fixed cluster-scoped
// ValidatingAdmissionPolicy watchword-secret-writes, which the other
// Kustomize tests apply and delete too.
func TestKustomizeNamespacedOverlay(t *testing.T) {
	ns := newNamespace(t, restrictedLabels)
	r, _ := kustomize(t, kustomizeDir+"/overlays/namespaced", ns)
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding"} {
		if k := r.find(kind); len(k) > 0 {
			t.Errorf("the namespaced overlay renders %s %s", kind, k[0].GetName())
		}
	}
	role, binding := r.one(t, "Role"), r.one(t, "RoleBinding")
	assertRulesAreGenerated(t, role)
	if ref, _, _ := unstructured.NestedStringMap(binding.Object, "roleRef"); ref["kind"] != "Role" || ref["name"] != role.GetName() {
		t.Errorf("the RoleBinding's roleRef %v does not name the Role %s", ref, role.GetName())
	}
	d := r.deployment(t)
	if a := args(t, d); !slices.Contains(a, "--namespace=watchword-system") {
		t.Errorf("args %v lack --namespace=watchword-system", a)
	}
	assertRestrictedDefaults(t, d)
	assertArgsParse(t, d)
	applyAll(t, r)
	assertAdmittedUnderRestricted(t, ns, d.Name)
}
