package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/internal/refreshhook"
)

// The installation's tests: the Helm chart (deploy/charts/watchword) and
// the Kustomize manifests (deploy/kustomize) are rendered with Helm (built
// from its Go module by `make tools-helm`) and kubectl, applied to the test
// API server with a server-side dry run, then for real into a namespace
// that enforces the restricted Pod Security Standard, where a Pod made
// from the controller's Deployment must be admitted.

const (
	chartDir       = "../../deploy/charts/watchword"
	kustomizeDir   = "../../deploy/kustomize"
	installManager = "watchword-install-test"
	// requireHelmEnv makes a missing helm binary a failure instead of a
	// reason to skip, as WATCHWORD_REQUIRE_VAULT does for Vault; `make
	// test` sets both.
	requireHelmEnv = "WATCHWORD_REQUIRE_HELM"
)

// restrictedLabels make a namespace enforce the restricted Pod Security
// Standard.
var restrictedLabels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}

// toolPath finds a tool binary like the control plane's: in
// $WATCHWORD_ASSETS when it is set, else in .cache/tools/bin above the
// working directory.
func toolPath(name string) (string, error) {
	if d := os.Getenv("WATCHWORD_ASSETS"); d != "" {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("no %s in $WATCHWORD_ASSETS (%s)", name, d)
		}
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".cache", "tools", "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no %s in .cache/tools/bin", name)
		}
	}
}

// needHelm returns the helm binary. Without one the test is skipped with a
// message that names `make tools-helm`, or fails when $WATCHWORD_REQUIRE_HELM
// is set.
func needHelm(t *testing.T) string {
	t.Helper()
	p, err := toolPath("helm")
	if err == nil {
		return p
	}
	if os.Getenv(requireHelmEnv) != "" {
		t.Fatalf("%v: run `make tools-helm`; %s is set, so the chart's tests may not be skipped", err, requireHelmEnv)
	}
	t.Skipf("needs Helm: %v: run `make tools-helm` (or set %s=1 to make this a failure)", err, requireHelmEnv)
	return ""
}

// run runs a tool and returns its standard output; a failure carries the
// standard error.
func run(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = toolEnv(t)
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(bin), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// toolEnv is the environment of the tools: Helm keeps its caches and
// configuration in a folder of the test, not in $HOME.
func toolEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	return append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
}

// rendered is the output of helm template or kubectl kustomize.
type rendered struct {
	objs []*unstructured.Unstructured
}

func parseRendered(t *testing.T, out []byte) rendered {
	t.Helper()
	objs, err := docObjects(string(out))
	if err != nil {
		t.Fatalf("the rendered manifests do not decode: %v", err)
	}
	if len(objs) == 0 {
		t.Fatal("nothing was rendered")
	}
	return rendered{objs: objs}
}

// find returns the rendered objects of a kind.
func (r rendered) find(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range r.objs {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

// one returns the only rendered object of a kind.
func (r rendered) one(t *testing.T, kind string) *unstructured.Unstructured {
	t.Helper()
	found := r.find(kind)
	if len(found) != 1 {
		t.Fatalf("rendered %d objects of kind %s, want 1", len(found), kind)
	}
	return found[0]
}

func (r rendered) kinds() []string {
	var out []string
	for _, u := range r.objs {
		out = append(out, u.GetKind())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// deployment is the rendered Deployment, typed.
func (r rendered) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(r.one(t, "Deployment").Object, d))
	return d
}

// ssa applies an object with server-side apply, as
// `kubectl apply --server-side` does: fields the schema does not know are
// refused.
func ssa(ctx context.Context, u *unstructured.Unstructured, dryRun bool) error {
	opts := []client.ApplyOption{client.FieldOwner(installManager), client.ForceOwnership}
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	return k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), opts...)
}

// notInstalled lists the kinds whose CRDs the test API server does not have:
// the ServiceMonitor and the PrometheusRule are the Prometheus Operator's.
// Their content is checked by the tests instead (the ServiceMonitor selects
// the metrics Service's port; promtool checks and unit-tests the rules,
// TestHelmChartPrometheusRule).
var notInstalled = map[string]string{
	"ServiceMonitor": "the Prometheus Operator's CRD is not installed in the test API server",
	"PrometheusRule": "the Prometheus Operator's CRD is not installed in the test API server",
}

// applyAll applies every object but the CRDs (installed already from the
// same generated files, which TestDeployFilesMatchGenerated compares) and
// the kinds in notInstalled, first with a server-side dry run of everything,
// CRDs included, then for real. Cluster-scoped objects it created are
// deleted when the test ends.
func applyAll(t *testing.T, r rendered) {
	t.Helper()
	ctx := context.Background()
	for _, u := range r.objs {
		if why, skip := notInstalled[u.GetKind()]; skip {
			t.Logf("%s %s not applied: %s", u.GetKind(), u.GetName(), why)
			continue
		}
		if err := ssa(ctx, u, true); err != nil {
			t.Errorf("server-side dry run refused %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, u := range r.objs {
		if _, skip := notInstalled[u.GetKind()]; skip || u.GetKind() == "CustomResourceDefinition" {
			continue
		}
		if u.GetNamespace() == "" {
			c := u.DeepCopy()
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), c) })
		}
		if err := ssa(ctx, u, false); err != nil {
			t.Errorf("applying %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// assertAdmittedUnderRestricted reads the applied Deployment back from the
// API server and creates a Pod from its template (server-side dry run) in
// its namespace, which enforces the restricted Pod Security Standard: the
// pods its ReplicaSet would create are admitted. As a control, the same
// Pod without its security contexts must be refused there, so the
// namespace really enforces the standard.
func assertAdmittedUnderRestricted(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	d := &appsv1.Deployment{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: name + "-", Labels: d.Spec.Template.Labels},
		Spec:       *d.Spec.Template.Spec.DeepCopy(),
	}
	if err := k8s.Create(ctx, pod, client.DryRunAll); err != nil {
		t.Fatalf("a Pod from the Deployment's template is not admitted under restricted Pod Security: %v", err)
	}
	loose := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: name + "-loose-"}, Spec: *d.Spec.Template.Spec.DeepCopy()}
	loose.Spec.SecurityContext = nil
	for i := range loose.Spec.Containers {
		loose.Spec.Containers[i].SecurityContext = nil
	}
	err := k8s.Create(ctx, loose, client.DryRunAll)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Fatalf("namespace %s does not enforce restricted Pod Security: a Pod without security contexts got %v", ns, err)
	}
}

// args returns the controller container's arguments.
func args(t *testing.T, d *appsv1.Deployment) []string {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "watchword" {
			return c.Args
		}
	}
	t.Fatal("the Deployment has no watchword container")
	return nil
}

var (
	watchwordBinOnce sync.Once
	watchwordBin     string
	watchwordBinErr  error
)

// assertArgsParse runs the watchword binary with a Deployment's arguments
// followed by -h: Go's flag package reads them in order, so an unknown
// flag or a value of the wrong type stops it with an error before -h
// prints the usage. So every flag the manifests pass exists in the binary
// (its checks of values, such as bounds, run after parsing and are not
// reached).
func assertArgsParse(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	bin := watchwordBinary(t)
	a := args(t, d)
	out, err := exec.Command(bin, append(slices.Clone(a), "-h")...).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "Usage: watchword controller") {
		t.Errorf("watchword %s: the binary refuses these arguments (%v):\n%s", strings.Join(a, " "), err, out)
	}
}

// assertRestrictedDefaults checks the security settings the chart and the
// Kustomize base promise, field by field (the admission check above proves
// they satisfy restricted; these are the ones beyond it).
func assertRestrictedDefaults(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ps := d.Spec.Template.Spec.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v: want runAsNonRoot and seccomp RuntimeDefault", ps)
	}
	if ps != nil && (ps.RunAsUser == nil || *ps.RunAsUser == 0) {
		t.Errorf("pod security context: want a numeric non-root runAsUser, got %v", ps.RunAsUser)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("container %s security context %+v: want a read-only root file system, no privilege escalation, all capabilities dropped", c.Name, sc)
		}
	}
}

// helmTemplate renders the chart as release name into namespace ns.
func helmTemplate(t *testing.T, helm, name, ns string, valueFiles ...string) rendered {
	t.Helper()
	a := []string{"template", name, chartDir, "--namespace", ns, "--include-crds"}
	for _, f := range valueFiles {
		a = append(a, "--values", f)
	}
	return parseRendered(t, run(t, helm, a...))
}

// TestHelmChartLints lints the chart with its defaults and with every
// value set, and checks that values.schema.json refuses a misspelt value
// and a value of the wrong type instead of ignoring them.
func TestHelmChartLints(t *testing.T) {
	parallel(t)
	helm := needHelm(t)
	run(t, helm, "lint", "--strict", chartDir)
	run(t, helm, "lint", "--strict", chartDir, "--values", "testdata/helm-values-all.yaml")
	run(t, helm, "lint", "--strict", chartDir, "--values", "testdata/helm-values-namespaced.yaml")
	for _, set := range []string{"replica=2", "logLevel=verbose", "metrics.port=0"} {
		cmd := exec.Command(helm, "template", "ww", chartDir, "--set", set)
		cmd.Env = toolEnv(t)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "values don't meet the specifications of the schema") {
			t.Errorf("helm template --set %s: want a refusal by values.schema.json, got %v:\n%s", set, err, out)
		}
	}
}

// TestHelmChartDefaults installs the chart with its default values.
func TestHelmChartDefaults(t *testing.T) {
	parallel(t)
	helm := needHelm(t)
	ns := newNamespace(t, restrictedLabels)
	r := helmTemplate(t, helm, "wwdef", ns)
	for _, kind := range []string{"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "NetworkPolicy",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if len(r.find(kind)) == 0 {
			t.Errorf("no %s rendered by default (rendered %v)", kind, r.kinds())
		}
	}
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap", "PodDisruptionBudget"} {
		if len(r.find(kind)) != 0 {
			t.Errorf("%s rendered by default; it is opt-in", kind)
		}
	}
	if n := len(r.find("Service")); n != 1 {
		t.Errorf("%d Services by default, want 1 (metrics; the refresh hook's is opt-in)", n)
	}
	assertCRDsAreGenerated(t, r)
	assertRulesAreGenerated(t, r.one(t, "ClusterRole"))
	assertPolicyNamesTheRelease(t, r, "system:serviceaccount:"+ns+":"+r.one(t, "ServiceAccount").GetName())
	d := r.deployment(t)
	if *d.Spec.Replicas != 1 || slices.Contains(args(t, d), "--leader-elect") {
		t.Errorf("defaults: replicas %d, args %v: want one replica without leader election", *d.Spec.Replicas, args(t, d))
	}
	assertRestrictedDefaults(t, d)
	assertArgsParse(t, d)
	np := r.one(t, "NetworkPolicy")
	types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes")
	if !slices.Equal(types, []string{"Ingress"}) {
		t.Errorf("NetworkPolicy policyTypes %v: by default only ingress is restricted (stores are anywhere)", types)
	}
	applyAll(t, r)
	assertAdmittedUnderRestricted(t, ns, d.Name)
}

// TestHelmChartEveryOption installs the chart with
// testdata/helm-values-all.yaml, which sets every value.
func TestHelmChartEveryOption(t *testing.T) {
	parallel(t)
	helm := needHelm(t)
	ns := newNamespace(t, restrictedLabels)
	r := helmTemplate(t, helm, "wwall", ns, "testdata/helm-values-all.yaml")
	d := r.deployment(t)
	a := args(t, d)
	for _, want := range []string{
		"--leader-elect", "--leader-election-namespace=" + ns, "--leader-election-id=watchword-team-a",
		"--leader-election-lease-duration=30s", "--leader-election-renew-deadline=20s", "--leader-election-retry-period=4s",
		"--controller-class=team-a", "--workers=8", "--log-level=debug",
		"--metrics-bind-address=:9090", "--health-probe-bind-address=:9091", "--refresh-hook-bind-address=:9443",
		"--refresh-hook-timestamp-window=2m", "--refresh-hook-allow-legacy-signatures",
		"--refresh-hook-bearer-token-file=/etc/watchword/refresh-hook-token/token",
		"--refresh-hook-store-notifications-per-second=0.5", "--refresh-hook-notifications-per-second=20",
		"--kube-api-qps=100",
		"--notify-secret=watchword-receivers", "--notify-secret-namespace=" + ns, "--notify-events=RestartHeld",
		"--notify-cluster-name=prod eu", "--notify-queue-size=100", "--notify-workers=3", "--notify-timeout=5s", "--notify-attempts=4",
	} {
		if !slices.Contains(a, want) {
			t.Errorf("args %v lack %s", a, want)
		}
	}
	if *d.Spec.Replicas != 3 {
		t.Errorf("replicas %d, want 3", *d.Spec.Replicas)
	}
	// The bearer token's Secret key is mounted where the flag says, next
	// to the extra volume.
	spec := d.Spec.Template.Spec
	mounts := map[string]string{}
	for _, m := range spec.Containers[0].VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	var token *corev1.SecretVolumeSource
	for _, v := range spec.Volumes {
		if v.Name == "refresh-hook-token" {
			token = v.Secret
		}
	}
	if mounts["refresh-hook-token"] != "/etc/watchword/refresh-hook-token" || mounts["store-ca"] == "" || token == nil ||
		token.SecretName != "refresh-hook-token" || len(token.Items) != 1 || token.Items[0].Key != "bearer" || token.Items[0].Path != "token" {
		t.Errorf("volume mounts %v, token volume %+v: want the Secret's key bearer at /etc/watchword/refresh-hook-token/token, and the extra volume", mounts, token)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example.com/watchword@sha256:"+strings.Repeat("ab", 32) {
		t.Errorf("image %s: the digest must win over the tag", img)
	}
	if len(r.find("PodDisruptionBudget")) != 1 {
		t.Error("no PodDisruptionBudget")
	}
	// The ServiceMonitor selects the metrics Service, and its port by name.
	sm := r.one(t, "ServiceMonitor")
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	var metricsSvc *unstructured.Unstructured
	for _, s := range r.find("Service") {
		if matches(sel, s.GetLabels()) {
			if metricsSvc != nil {
				t.Errorf("the ServiceMonitor selects more than one Service: %s and %s", metricsSvc.GetName(), s.GetName())
			}
			metricsSvc = s
		}
	}
	if metricsSvc == nil || !strings.HasSuffix(metricsSvc.GetName(), "-metrics") {
		t.Fatalf("the ServiceMonitor's selector %v does not pick the metrics Service", sel)
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	ports, _, _ := unstructured.NestedSlice(metricsSvc.Object, "spec", "ports")
	if len(eps) != 1 || len(ports) != 1 || eps[0].(map[string]any)["port"] != ports[0].(map[string]any)["name"] {
		t.Errorf("ServiceMonitor endpoints %v do not name the metrics Service's port %v", eps, ports)
	}
	// The NetworkPolicy opens the three ports and carries the egress rules.
	np := r.one(t, "NetworkPolicy")
	types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes")
	if !slices.Equal(types, []string{"Ingress", "Egress"}) {
		t.Errorf("NetworkPolicy policyTypes %v, want Ingress and Egress", types)
	}
	ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	if got := fmt.Sprint(ingress); !strings.Contains(got, "9090") || !strings.Contains(got, "9091") || !strings.Contains(got, "9443") || !strings.Contains(got, "namespaceSelector") {
		t.Errorf("NetworkPolicy ingress %s: want ports 9090, 9091 and 9443 from the peers given", got)
	}
	assertRestrictedDefaults(t, d)
	assertArgsParse(t, d)
	leaderPodRole := assertHookServiceSelectsTheLeader(t, r, d)
	if leaderPodRole == nil || leaderPodRole.GetNamespace() != ns {
		t.Errorf("no Role in the release's namespace %s lets the leader label its pod", ns)
	}
	applyAll(t, r)
	assertAdmittedUnderRestricted(t, ns, d.Name)
	// The leader may label its own pod, and no pod elsewhere.
	user := "system:serviceaccount:" + ns + ":watchword-team-a"
	if !allowed(t, user, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Resource: "pods", Name: "ww-0"}) {
		t.Errorf("%s may not patch the pods of its namespace: the leader cannot label its pod", user)
	}
	if allowed(t, user, authorizationv1.ResourceAttributes{Namespace: "default", Verb: "patch", Resource: "pods", Name: "ww-0"}) {
		t.Errorf("%s may patch pods of another namespace", user)
	}
}

// TestHelmChartRefreshHookOneReplica: with one replica and no leader
// election, the refresh endpoint's Service selects the pod without the
// leader label, and the chart asks for no permission on pods.
func TestHelmChartRefreshHookOneReplica(t *testing.T) {
	parallel(t)
	helm := needHelm(t)
	f := filepath.Join(t.TempDir(), "values.yaml")
	must(t, os.WriteFile(f, []byte("refreshHook:\n  enabled: true\n"), 0o600))
	r := helmTemplate(t, helm, "wwone", "watchword", f)
	svc := hookService(t, r)
	if sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector"); sel[refreshhook.LeaderLabel] != "" {
		t.Errorf("the refresh endpoint's Service selects %v: with one replica, no label is kept", sel)
	}
	d := r.deployment(t)
	if a := args(t, d); slices.ContainsFunc(a, func(s string) bool { return strings.HasPrefix(s, "--refresh-hook-leader-pod") }) {
		t.Errorf("args %v name the pod to label without leader election", a)
	}
	for _, role := range r.find("Role") {
		t.Errorf("Role %s rendered with one replica", role.GetName())
	}
}

// hookService is the refresh endpoint's Service.
func hookService(t *testing.T, r rendered) *unstructured.Unstructured {
	t.Helper()
	for _, s := range r.find("Service") {
		if strings.HasSuffix(s.GetName(), "-refresh-hook") {
			return s
		}
	}
	t.Fatalf("no refresh endpoint Service among %v", r.kinds())
	return nil
}

// assertHookServiceSelectsTheLeader checks that the refresh endpoint's
// Service selects the Deployment's pods that carry the leader label, that
// the controller is told its pod (by the downward API), and returns the
// Role that grants patch on pods (nil when none does).
func assertHookServiceSelectsTheLeader(t *testing.T, r rendered, d *appsv1.Deployment) *unstructured.Unstructured {
	t.Helper()
	sel, _, _ := unstructured.NestedStringMap(hookService(t, r).Object, "spec", "selector")
	podLabels := maps.Clone(d.Spec.Template.Labels)
	if matches(sel, podLabels) {
		t.Errorf("the refresh endpoint's Service selector %v selects every replica, standbys too", sel)
	}
	podLabels[refreshhook.LeaderLabel] = "true"
	if !matches(sel, podLabels) {
		t.Errorf("the refresh endpoint's Service selector %v does not select the leader's pod %v", sel, podLabels)
	}
	if a := args(t, d); !slices.Contains(a, "--refresh-hook-leader-pod=$(POD_NAMESPACE)/$(POD_NAME)") {
		t.Errorf("args %v do not name the pod the leader labels", a)
	}
	env := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env["POD_NAME"] != "metadata.name" || env["POD_NAMESPACE"] != "metadata.namespace" {
		t.Errorf("the container's environment %v lacks POD_NAME and POD_NAMESPACE from the downward API", env)
	}
	for _, role := range r.find("Role") {
		rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		for _, rule := range rules {
			if fmt.Sprint(rule) == fmt.Sprint(map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"patch"}}) {
				return role
			}
		}
	}
	return nil
}

// TestHelmValuesInDocs renders the chart with every ```yaml helm-values
// block of the docs and applies the result with a server-side dry run.
func TestHelmValuesInDocs(t *testing.T) {
	parallel(t)
	helm := needHelm(t)
	ns := newNamespace(t, restrictedLabels)
	n := 0
	for _, file := range docFiles(t) {
		blocks, err := docBlocks(file)
		must(t, err)
		for _, b := range blocks {
			if b.info != infoHelmValues {
				continue
			}
			n++
			t.Run(strings.TrimPrefix(b.String(), "../../"), func(t *testing.T) {
				f := filepath.Join(t.TempDir(), "values.yaml")
				must(t, os.WriteFile(f, []byte(b.body), 0o600))
				r := helmTemplate(t, helm, "wwdoc", ns, f)
				for _, u := range r.objs {
					if _, skip := notInstalled[u.GetKind()]; skip {
						continue
					}
					if err := ssa(context.Background(), u, true); err != nil {
						t.Errorf("server-side dry run refused %s %s: %v", u.GetKind(), u.GetName(), err)
					}
				}
			})
		}
	}
	t.Logf("%d values files from the docs rendered and applied", n)
}

func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// assertCRDsAreGenerated checks that the chart ships exactly the CRDs of
// config/crd/bases.
func assertCRDsAreGenerated(t *testing.T, r rendered) {
	t.Helper()
	want, err := filepath.Glob("../../config/crd/bases/*.yaml")
	must(t, err)
	var got []string
	for _, u := range r.find("CustomResourceDefinition") {
		got = append(got, u.GetName())
	}
	if len(got) != len(want) {
		t.Errorf("the chart renders CRDs %v; config/crd/bases has %d files", got, len(want))
	}
}

// assertRulesAreGenerated checks that the chart's ClusterRole has the rules
// of config/rbac/role.yaml.
func assertRulesAreGenerated(t *testing.T, role *unstructured.Unstructured) {
	t.Helper()
	b, err := os.ReadFile("../../config/rbac/role.yaml")
	must(t, err)
	objs, err := docObjects(string(b))
	must(t, err)
	want, _, _ := unstructured.NestedSlice(objs[0].Object, "rules")
	got, _, _ := unstructured.NestedSlice(role.Object, "rules")
	if len(want) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the chart's ClusterRole rules differ from config/rbac/role.yaml:\n got %v\nwant %v", got, want)
	}
}

// TestDeployFilesMatchGenerated fails when the chart's copies of the
// generated CRDs, ClusterRole and admission policy, or of the Grafana
// dashboard, or the Kustomize list of CRDs, drift from config/ and
// deploy/grafana: run `make deploy-files` (make generate runs it).
func TestDeployFilesMatchGenerated(t *testing.T) {
	parallel(t)
	src, err := filepath.Glob("../../config/crd/bases/*.yaml")
	must(t, err)
	dst, err := filepath.Glob(chartDir + "/crds/*.yaml")
	must(t, err)
	base := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	if !slices.Equal(base(src), base(dst)) {
		t.Errorf("the chart's CRDs %v are not those of config/crd/bases %v: run make deploy-files", base(dst), base(src))
	}
	same := func(a, b string) {
		x, errA := os.ReadFile(a)
		y, errB := os.ReadFile(b)
		if readErr := errors.Join(errA, errB); readErr != nil {
			t.Error(readErr)
			return
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs from %s: run make deploy-files", b, a)
		}
	}
	for _, f := range src {
		if slices.Contains(base(dst), filepath.Base(f)) {
			same(f, filepath.Join(chartDir, "crds", filepath.Base(f)))
		}
	}
	same("../../config/rbac/role.yaml", chartDir+"/files/role.yaml")
	same("../../config/policy/admissionpolicy.yaml", chartDir+"/files/admissionpolicy.yaml")
	same(dashboardFile, chartDir+"/files/grafana/watchword.json")
	k, err := os.ReadFile("../../config/crd/kustomization.yaml")
	must(t, err)
	for _, f := range base(src) {
		if !bytes.Contains(k, []byte("- bases/"+f+"\n")) {
			t.Errorf("config/crd/kustomization.yaml does not list %s: run make deploy-files", f)
		}
	}
}

// kustomize renders a Kustomize directory with kubectl and moves what it
// puts in watchword-system into ns: the namespaced objects, and the
// ClusterRoleBinding's subject. The Namespace object itself is returned
// apart.
func kustomize(t *testing.T, dir, ns string) (rendered, *unstructured.Unstructured) {
	t.Helper()
	kubectl, err := toolPath("kubectl")
	must(t, err)
	r := parseRendered(t, run(t, kubectl, "kustomize", dir))
	var out rendered
	var namespace *unstructured.Unstructured
	for _, u := range r.objs {
		namespaced, err := k8s.IsObjectNamespaced(u)
		must(t, err)
		switch {
		case u.GetKind() == "Namespace":
			namespace = u
			continue
		case namespaced && u.GetNamespace() != "watchword-system":
			t.Errorf("%s renders %s %s in namespace %q, want watchword-system", dir, u.GetKind(), u.GetName(), u.GetNamespace())
		case namespaced:
			u.SetNamespace(ns)
		case u.GetKind() == "ClusterRoleBinding":
			subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
			for _, s := range subjects {
				s.(map[string]any)["namespace"] = ns
			}
			must(t, unstructured.SetNestedSlice(u.Object, subjects, "subjects"))
		}
		out.objs = append(out.objs, u)
	}
	if namespace == nil {
		t.Fatalf("%s renders no Namespace", dir)
	}
	return out, namespace
}

// Serial: applies the Kustomize manifests' fixed cluster-scoped names
// (ClusterRole and ClusterRoleBinding watchword, ValidatingAdmissionPolicy
// watchword-secret-writes), which the other Kustomize tests apply and delete
// too.
func TestKustomizeBase(t *testing.T) {
	ns := newNamespace(t, restrictedLabels)
	r, namespace := kustomize(t, kustomizeDir+"/base", ns)
	if got := namespace.GetLabels()["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("the base's Namespace enforces %q Pod Security, want restricted", got)
	}
	if err := ssa(context.Background(), namespace, true); err != nil {
		t.Errorf("server-side dry run refused the Namespace: %v", err)
	}
	assertCRDsAreGenerated(t, r)
	assertRulesAreGenerated(t, r.one(t, "ClusterRole"))
	d := r.deployment(t)
	assertRestrictedDefaults(t, d)
	assertArgsParse(t, d)
	if len(r.find("NetworkPolicy")) != 1 {
		t.Error("the base has no NetworkPolicy")
	}
	assertPolicyNamesTheRelease(t, r, shippedPolicyUser)
	applyAll(t, r)
	assertAdmittedUnderRestricted(t, ns, d.Name)
}

// Serial: applies the Kustomize manifests' fixed cluster-scoped names
// (ClusterRole and ClusterRoleBinding watchword, ValidatingAdmissionPolicy
// watchword-secret-writes), which the other Kustomize tests apply and delete
// too.
func TestKustomizeExampleOverlay(t *testing.T) {
	ns := newNamespace(t, restrictedLabels)
	r, _ := kustomize(t, kustomizeDir+"/overlays/example", ns)
	d := r.deployment(t)
	if a := args(t, d); *d.Spec.Replicas != 2 || !slices.Contains(a, "--leader-elect") || !slices.Contains(a, "--controller-class=team-a") {
		t.Errorf("the example overlay: replicas %d, args %v: want 2 replicas with leader election and class team-a", *d.Spec.Replicas, a)
	}
	if assertHookServiceSelectsTheLeader(t, r, d) == nil {
		t.Error("the example overlay has no Role that lets the leader label its pod")
	}
	assertRestrictedDefaults(t, d)
	assertArgsParse(t, d)
	applyAll(t, r)
	assertAdmittedUnderRestricted(t, ns, d.Name)
}

// assertPolicyNamesTheRelease checks that the chart's admission policy
// applies to the release's service account (user), with the rules of
// config/policy, and that its binding names it.
func assertPolicyNamesTheRelease(t *testing.T, r rendered, user string) {
	t.Helper()
	p, b := r.one(t, "ValidatingAdmissionPolicy"), r.one(t, "ValidatingAdmissionPolicyBinding")
	conds, _, _ := unstructured.NestedSlice(p.Object, "spec", "matchConditions")
	if len(conds) != 1 || !strings.Contains(fmt.Sprint(conds[0]), `"`+user+`"`) {
		t.Errorf("the admission policy's matchConditions %v do not name the release's service account %s", conds, user)
	}
	rules, _, _ := unstructured.NestedSlice(p.Object, "spec", "validations")
	if len(rules) != 4 {
		t.Errorf("the admission policy has %d validations, config/policy has 4", len(rules))
	}
	if name, _, _ := unstructured.NestedString(b.Object, "spec", "policyName"); name != p.GetName() {
		t.Errorf("the binding names policy %q, the policy is %q", name, p.GetName())
	}
}
