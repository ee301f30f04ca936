package integration

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/operator"
)

// startOperatorAs runs an operator of class as the service account sa of
// ns, with the shipped ClusterRole (config/rbac) bound to it; it stops
// when the test ends.
func startOperatorAs(t *testing.T, ns, sa, class string) {
	t.Helper()
	startOperatorAsWith(t, ns, sa, class, nil)
}

// startOperatorAsWith is startOperatorAs with options changed by set
// (when not nil) before the operator is built.
func startOperatorAsWith(t *testing.T, ns, sa, class string, set func(*operator.Options)) {
	t.Helper()
	ctx := context.Background()
	raw, err := os.ReadFile("../../config/rbac/role.yaml")
	must(t, err)
	var role rbacv1.ClusterRole
	must(t, yaml.Unmarshal(raw, &role))
	role.ObjectMeta = metav1.ObjectMeta{Name: ns + "-watchword"}
	must(t, k8s.Create(ctx, &role))
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-watchword"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}
	must(t, k8s.Create(ctx, binding))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), binding); _ = k8s.Delete(context.Background(), &role) })

	cfg := &rest.Config{Host: restCfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: restCfg.CAData}, BearerToken: accountToken(t, ns, sa)}
	opts := operator.DefaultOptions()
	opts.Registry = registry()
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	opts.ControllerClass = class
	opts.SkipNameValidation = true
	if set != nil {
		set(&opts)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	op, err := operator.New(runCtx, cfg, opts)
	if err != nil {
		cancel()
		t.Fatalf("building an operator as %s/%s: %v", ns, sa, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = op.Start(runCtx)
	}()
	t.Cleanup(func() {
		cancel()
		awaitStop(t, "the operator running as "+ns+"/"+sa, done)
	})
}

// TestOperatorWorksUnderItsAdmissionPolicy: an operator running as a
// service account with the shipped RBAC and the shipped admission policy
// creates and updates the targets it owns; a first Merge into a Secret of
// someone else is refused by the API server (the Secret is left as it
// was) until its owner allows it with watchword.io/allow-write, and then
// goes through.
func TestOperatorWorksUnderItsAdmissionPolicy(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	class := "policy-" + ns
	must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "watchword"}}))
	installAdmissionPolicy(t, ns, "watchword")
	startOperatorAs(t, ns, "watchword", class)
	// The API server loads a new policy in the background: wait until it
	// refuses a forged write by the account, so that what follows tests
	// the policy and not the time it takes to load.
	forger := impersonating(t, ns, "watchword")
	eventually(t, wait, func() (bool, string) {
		probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "policy-probe"}, Data: map[string][]byte{"k": []byte("v")}}
		err := forger.Create(context.Background(), probe)
		if err == nil {
			_ = k8s.Delete(context.Background(), probe)
			return false, "the admission policy is not in effect yet: an unlabelled Secret was created by the account"
		}
		return strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), "probe refused, but not by the admission policy: " + err.Error()
	})
	classStore(t, ns, "store", class, "from-the-store")

	newES(t, ns, "owned", "store", withData("v", "k", ""))
	waitSecretData(t, ns, "owned", map[string]string{"v": "from-the-store"})
	s, err := getSecret(ns, "owned")
	must(t, err)
	if s.Labels["app.kubernetes.io/managed-by"] != "watchword" {
		t.Fatalf("the target's labels are %v", s.Labels)
	}
	updateStore(t, ns, "store", func(st *v1alpha1.SecretStore) { st.Spec.Fake.Data[0].Value = "rotated" })
	waitSecretData(t, ns, "owned", map[string]string{"v": "rotated"})

	createSecret(t, ns, "app-config", map[string]string{"own": "kept"})
	newES(t, ns, "merger", "store", withData("v", "k", ""), withTarget("app-config", v1alpha1.CreationPolicyMerge))
	es := waitCondition(t, ns, "merger", "TargetRejected", "watchword.io/allow-write")
	t.Logf("a first Merge without the owner's consent: %s: %s", readyCond(es).Reason, readyCond(es).Message)
	consistently(t, 2*time.Second, func() (bool, string) {
		s, err := getSecret(ns, "app-config")
		return err == nil && len(s.Data) == 1 && string(s.Data["own"]) == "kept", "the Secret of someone else was changed"
	})
	updateSecret(t, ns, "app-config", func(s *corev1.Secret) {
		s.Annotations = map[string]string{"watchword.io/allow-write": "true"}
	})
	forceSync(t, ns, "merger")
	waitSecretData(t, ns, "app-config", map[string]string{"own": "kept", "v": "rotated"})

	// An adoption needs the owner's consent too, and its refusal names
	// the annotation that gives it.
	adopt := func(es *v1alpha1.ExternalSecret) { es.Spec.Target.Adopt = true }
	createSecret(t, ns, "legacy", map[string]string{"old": "value"})
	newES(t, ns, "adopter", "store", withData("v", "k", ""), withTarget("legacy", v1alpha1.CreationPolicyOwner), adopt)
	es = waitCondition(t, ns, "adopter", "TargetRejected", "adopting Secret \"legacy\"", "watchword.io/allow-write")
	t.Logf("an adoption without the owner's consent: %s: %s", readyCond(es).Reason, readyCond(es).Message)
	consistently(t, 2*time.Second, func() (bool, string) {
		s, err := getSecret(ns, "legacy")
		return err == nil && len(s.Data) == 1 && string(s.Data["old"]) == "value" && len(s.OwnerReferences) == 0, "the Secret of someone else was changed"
	})
	updateSecret(t, ns, "legacy", func(s *corev1.Secret) {
		s.Annotations = map[string]string{"watchword.io/allow-write": "true"}
	})
	forceSync(t, ns, "adopter")
	waitSecretData(t, ns, "legacy", map[string]string{"v": "rotated"})

	// A Secret of another type (a Helm release's) is not adopted by
	// deleting it, which the policy would refuse again and again: the
	// refusal is Watchword's own, once, and says what to change.
	release := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1.app.v1", Labels: map[string]string{"owner": "helm"}},
		Type: "helm.sh/release.v1", Data: map[string][]byte{"release": []byte("chart")}}
	must(t, k8s.Create(context.Background(), release))
	newES(t, ns, "release-taker", "store", withData("v", "k", ""), withTarget(release.Name, v1alpha1.CreationPolicyOwner), adopt)
	es = waitCondition(t, ns, "release-taker", "TargetConflict", "helm.sh/release.v1", "never deletes", "spec.target.template.type")
	if conditions := es.Status.Conditions; !slices.ContainsFunc(conditions, func(c v1alpha1.ExternalSecretCondition) bool {
		return c.Type == v1alpha1.ConditionStalled && c.Status == metav1.ConditionTrue
	}) {
		t.Errorf("the refusal is retried: conditions %+v", conditions)
	}
	consistently(t, 2*time.Second, func() (bool, string) {
		s, err := getSecret(ns, release.Name)
		return err == nil && s.UID == release.UID && string(s.Data["release"]) == "chart" && len(s.OwnerReferences) == 0, "the Helm release's Secret was changed or replaced"
	})
}
