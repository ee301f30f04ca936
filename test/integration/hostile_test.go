package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// A hostile tenant's tries that attack_test.go and tenant_test.go do not
// cover: each is refused with a condition that says what to fix and holds
// no value, what was synced or published before stays, and an
// ExternalSecret of another namespace goes on syncing. docs/threat-model.md
// lists every try with the test that shows it refused.

// bystander starts an ExternalSecret in a namespace of its own, synced
// from a fake store, and returns a check that it still syncs a change of
// its store: the controller goes on serving others while a tenant
// attacks.
func bystander(t *testing.T) func() {
	t.Helper()
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "k", value: "before"})
	newES(t, ns, "es", "store", withData("v", "k", ""))
	waitSecretData(t, ns, "es", map[string]string{"v": "before"})
	return func() {
		t.Helper()
		updateStore(t, ns, "store", func(s *v1alpha1.SecretStore) { s.Spec.Fake.Data[0].Value = "after" })
		forceSync(t, ns, "es")
		waitSecretData(t, ns, "es", map[string]string{"v": "after"})
	}
}

// TestTemplatesReachNothingOutsideTheirData: a template that asks for the
// controller's environment, a file or the network (sprig's env,
// expandenv, getHostByName; readFile, which no library offers) is refused
// at parse time with TemplateError naming the function, whether it is
// written inline or in a templateFrom ConfigMap; the target keeps what it
// had.
func TestTemplatesReachNothingOutsideTheirData(t *testing.T) {
	parallel(t)
	check := bystander(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "db", value: sentinel})
	newES(t, ns, "es", "store", withData("password", "db", ""),
		withTemplate(&v1alpha1.ExternalSecretTemplate{Data: map[string]string{"conn": "pw={{ .password }}"}}))
	waitSecretData(t, ns, "es", map[string]string{"conn": "pw=" + sentinel})
	for _, fn := range []struct{ name, text string }{
		{"env", `{{ env "HOME" }}`},
		{"expandenv", `{{ expandenv "$KUBERNETES_SERVICE_HOST" }}`},
		{"getHostByName", `{{ getHostByName "kubernetes.default" }}`},
		{"readFile", `{{ readFile "/var/run/secrets/kubernetes.io/serviceaccount/token" }}`},
	} {
		t.Run(fn.name, func(t *testing.T) {
			updateES(t, ns, "es", func(es *v1alpha1.ExternalSecret) {
				es.Spec.Target.Template.Data = map[string]string{"conn": fn.text + "{{ .password }}"}
			})
			c := readyCond(waitCondition(t, ns, "es", "TemplateError", `template "conn"`, fmt.Sprintf("function %q not defined", fn.name)))
			t.Logf("refused: %s", c.Message)
			waitSecretData(t, ns, "es", map[string]string{"conn": "pw=" + sentinel})
		})
	}
	t.Run("in a templateFrom ConfigMap", func(t *testing.T) {
		must(t, k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tmpl"},
			Data: map[string]string{"conn": `{{ env "HOME" }}`}}))
		updateES(t, ns, "es", func(es *v1alpha1.ExternalSecret) {
			es.Spec.Target.Template.Data = nil
			es.Spec.Target.Template.TemplateFrom = []v1alpha1.TemplateFrom{{ConfigMap: &v1alpha1.TemplateRef{Name: "tmpl",
				Items: []v1alpha1.TemplateRefItem{{Key: "conn"}}}}}
		})
		c := readyCond(waitCondition(t, ns, "es", "TemplateError", `function "env" not defined`))
		t.Logf("refused: %s", c.Message)
		waitSecretData(t, ns, "es", map[string]string{"conn": "pw=" + sentinel})
	})
	check()
	assertNoLeak(t, ns)
}

// TestTemplateFromReadsOnlyItsOwnNamespace: a templateFrom ConfigMap is
// looked up in the ExternalSecret's namespace only. A namespace field
// added to the reference is no part of the API (the API server drops it),
// and names that try to be paths to another namespace's ConfigMap find
// nothing: TemplateNotFound names the tenant's own namespace, the other
// namespace's template is never rendered, and the target keeps its data.
func TestTemplateFromReadsOnlyItsOwnNamespace(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	check := bystander(t)
	ns, other := newNamespace(t, nil), newNamespace(t, nil)
	must(t, k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "tmpl"},
		Data: map[string]string{"conn": "other-namespace-template"}}))
	fakeStore(t, ns, "store", fakeEntry{key: "db", value: sentinel})
	newES(t, ns, "es", "store", withData("password", "db", ""))
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel})

	t.Run("a namespace field", func(t *testing.T) {
		// The controller writes the object's status meanwhile: a conflict
		// is tried again on a fresh copy.
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("ExternalSecret"))
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "es"}, u); err != nil {
				return err
			}
			if err := unstructured.SetNestedSlice(u.Object, []any{map[string]any{"configMap": map[string]any{
				"name": "tmpl", "namespace": other, "items": []any{map[string]any{"key": "conn"}}}}}, "spec", "target", "template", "templateFrom"); err != nil {
				return err
			}
			return k8s.Update(ctx, u)
		}))
		es := getES(t, ns, "es")
		if tf := es.Spec.Target.Template.TemplateFrom; len(tf) != 1 || tf[0].ConfigMap.Name != "tmpl" {
			t.Fatalf("templateFrom as stored: %+v", tf)
		}
		c := readyCond(waitCondition(t, ns, "es", "TemplateNotFound", `template ConfigMap "tmpl" not found in namespace "`+ns+`"`))
		t.Logf("refused: %s", c.Message)
		waitSecretData(t, ns, "es", map[string]string{"password": sentinel})
	})
	for _, name := range []string{other + "/tmpl", "../" + other + "/tmpl", "..", "%2e%2e/" + other + "/tmpl"} {
		t.Run(fmt.Sprintf("name %q", name), func(t *testing.T) {
			updateES(t, ns, "es", func(es *v1alpha1.ExternalSecret) {
				es.Spec.Target.Template = &v1alpha1.ExternalSecretTemplate{TemplateFrom: []v1alpha1.TemplateFrom{{ConfigMap: &v1alpha1.TemplateRef{
					Name: name, Items: []v1alpha1.TemplateRefItem{{Key: "conn"}}}}}}
			})
			es := waitCondition(t, ns, "es", "TemplateNotFound", fmt.Sprintf("template ConfigMap %q", name), `in namespace "`+ns+`"`)
			t.Logf("refused: %s", readyCond(es).Message)
			if es.Status.Phase != v1alpha1.PhaseFailed && es.Status.Phase != v1alpha1.PhasePending {
				t.Errorf("phase %s", es.Status.Phase)
			}
			s := waitSecretData(t, ns, "es", map[string]string{"password": sentinel})
			if _, rendered := s.Data["conn"]; rendered {
				t.Fatal("another namespace's template was rendered")
			}
		})
	}
	check()
	assertNoLeak(t, ns)
}

// TestSharedKubernetesStorePublishersStayInTheirNamespace: through a
// ClusterSecretStore of the kubernetes provider shared by two tenants,
// tenant b aims destinations at tenant a's published Secret by paths
// ("a/creds", "../a/creds", "/creds"), by a case change ("Creds") and by
// names that only a normalisation would make equal ("creds.", "creds "):
// each destination fails with RemoteNameInvalid, saying to choose another
// name; a's Secret keeps its data and marker, and b's valid destination
// is published in b's own namespace.
func TestSharedKubernetesStorePublishersStayInTheirNamespace(t *testing.T) {
	parallel(t)
	ops := newNamespace(t, nil)
	a, b := newNamespace(t, nil), newNamespace(t, nil)
	store := "shared-hostile-" + ops
	sharedPublishStore(t, ops, store)
	createSecret(t, a, "src", map[string]string{"password": sentinel + "-a"})
	createSecret(t, b, "src", map[string]string{"password": "b-value"})
	via := viaStore("ClusterSecretStore", store)
	newPush(t, a, "p", "src", pushTo("creds", via))
	waitPushReady(t, a, "p")
	before := waitSecretData(t, a, "creds", map[string]string{"password": sentinel + "-a"})

	bad := []string{a + "/creds", "../" + a + "/creds", "/creds", "Creds", "creds.", "creds ", ".."}
	opts := []pushOpt{pushTo("own", via)}
	for _, name := range bad {
		opts = append(opts, pushTo(name, via, func(d *v1alpha1.PushSecretDestination) { d.Adopt = true }))
	}
	newPush(t, b, "p", "src", opts...)
	waitSecretData(t, b, "own", map[string]string{"password": "b-value"})
	eventually(t, wait, func() (bool, string) {
		st := getPush(t, b, "p").Status.Destinations
		refused := 0
		for _, d := range st {
			if d.Name == "own" {
				continue
			}
			if d.State != v1alpha1.PushFailed || d.Reason != "RemoteNameInvalid" {
				return false, fmt.Sprintf("destination %q: %s %s %q", d.Name, d.State, d.Reason, d.Message)
			}
			if strings.Contains(d.Message, "b-value") {
				t.Errorf("destination %q: the message repeats the value: %q", d.Name, d.Message)
			}
			refused++
		}
		return refused == len(bad), fmt.Sprintf("%d of %d refused: %+v", refused, len(bad), st)
	})
	for _, d := range getPush(t, b, "p").Status.Destinations {
		t.Logf("%q: %s: %s", d.Name, d.Reason, d.Message)
	}
	after, err := getSecret(a, "creds")
	must(t, err)
	if after.ResourceVersion != before.ResourceVersion || string(after.Data["password"]) != sentinel+"-a" {
		t.Error("tenant a's published Secret was written by tenant b")
	}
	for _, ns := range []string{ops, a} {
		var list corev1.SecretList
		must(t, k8s.List(context.Background(), &list, client.InNamespace(ns)))
		for _, s := range list.Items {
			if string(s.Data["password"]) == "b-value" {
				t.Errorf("tenant b's value landed in %s/%s", ns, s.Name)
			}
		}
	}
	assertNoLeak(t, b)
}

// TestSharedVaultStorePublishersStayUnderTheirPath: through a Vault
// ClusterSecretStore shared by two tenants, tenant b aims destinations
// at tenant a's secret (<mount>/a/creds) by an absolute path, "..", ".",
// empty segments and a trailing slash: each fails with RemoteNameInvalid
// before Vault is called. Encoded dots ("%2e%2e") and a case change are
// not paths: they land under b's own parent path, as names of their own.
// a's secret keeps its data and version.
func TestSharedVaultStorePublishersStayUnderTheirPath(t *testing.T) {
	parallel(t)
	needVault(t)
	ops := newNamespace(t, nil)
	a, b := newNamespace(t, nil), newNamespace(t, nil)
	createSecret(t, ops, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	store := &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: "vault-hostile-" + ops},
		Spec: v1alpha1.ClusterSecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
			Server: vaultSrv.Addr(), Path: "secret", Version: "v2",
			Auth: v1alpha1.VaultAuth{TokenSecretRef: &v1alpha1.SecretKeySelector{Name: "vault-token", Key: "token", Namespace: ops}}}}}}
	must(t, k8s.Create(context.Background(), store))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), store) })
	via := viaStore("ClusterSecretStore", store.Name)
	createSecret(t, a, "src", map[string]string{"password": sentinel + "-a"})
	createSecret(t, b, "src", map[string]string{"password": "b-value"})
	newPush(t, a, "p", "src", pushTo("creds", via))
	waitPushReady(t, a, "p")
	eventually(t, wait, func() (bool, string) {
		data, _, found := vaultData(t, a+"/creds")
		return found && data["password"] == sentinel+"-a", "a's secret not published yet"
	})
	_, version, _ := vaultData(t, a+"/creds")

	refused := []string{"/" + a + "/creds", "../" + a + "/creds", "x/../../" + a + "/creds", "./creds", "x/./creds",
		"x//creds", "creds/", "/"}
	// Not paths: names of b's own, under b's parent path.
	own := []string{"%2e%2e/" + a + "/creds", "..%2f" + a + "%2fcreds", "CREDS", "creds?version=1", "creds#x"}
	opts := []pushOpt{}
	for _, name := range append(slices.Clone(refused), own...) {
		opts = append(opts, pushTo(name, via, func(d *v1alpha1.PushSecretDestination) { d.Adopt = true }))
	}
	newPush(t, b, "p", "src", opts...)
	eventually(t, wait, func() (bool, string) {
		st := getPush(t, b, "p").Status.Destinations
		if len(st) != len(refused)+len(own) {
			return false, fmt.Sprintf("%d destinations in status", len(st))
		}
		for _, d := range st {
			want, reason := v1alpha1.PushPublished, "Published"
			if slices.Contains(refused, d.Name) {
				want, reason = v1alpha1.PushFailed, "RemoteNameInvalid"
			}
			if d.State != want || d.Reason != reason {
				return false, fmt.Sprintf("destination %q: %s %s %q", d.Name, d.State, d.Reason, d.Message)
			}
		}
		return true, ""
	})
	for _, d := range getPush(t, b, "p").Status.Destinations {
		t.Logf("%q: %s: %s", d.Name, d.Reason, d.Message)
		if d.State == v1alpha1.PushFailed && !strings.Contains(d.Message, "choose another destination name") {
			t.Errorf("destination %q: the message does not say what to do: %q", d.Name, d.Message)
		}
	}
	for _, name := range own {
		if data, _, found := vaultData(t, b+"/"+escapeVaultPath(name)); !found || data["password"] != "b-value" {
			t.Errorf("%q did not land under b's parent path (found %v)", name, found)
		}
	}
	if data, v, _ := vaultData(t, a+"/creds"); data["password"] != sentinel+"-a" || v != version {
		t.Errorf("tenant a's secret was written by tenant b: version %d, was %d", v, version)
	}
	if _, _, found := vaultData(t, "creds"); found {
		t.Error("a secret was written at the mount's root")
	}
}

// escapeVaultPath is name as a path of Vault's HTTP API: the characters
// a URL gives a meaning to are escaped, as the provider's client does.
func escapeVaultPath(name string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23")
	return r.Replace(name)
}

// TestMergeNeverWritesOverAnotherOwnersSecret: creationPolicy Merge aimed
// at Secrets that other owners keep (a service-account token, a Helm
// release, a TLS Secret), with the keys those owners use, is refused with
// TargetConflict saying what to change; each Secret keeps its data. A
// token Secret is never written at all; the Helm release's key is written
// once its owner allows it (watchword.io/allow-write), and a Merge of new
// keys into the TLS Secret is still a merge.
func TestMergeNeverWritesOverAnotherOwnersSecret(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	check := bystander(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "k", value: sentinel})
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}))
	for _, tc := range []struct {
		name, key string
		secret    *corev1.Secret
		fragments []string
	}{
		{"token", "token", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "app"}},
			Type: corev1.SecretTypeServiceAccountToken}, []string{string(corev1.SecretTypeServiceAccountToken), "never writes"}},
		{"token-new-key", "extra", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-token-2", Annotations: map[string]string{corev1.ServiceAccountNameKey: "app"}},
			Type: corev1.SecretTypeServiceAccountToken}, []string{string(corev1.SecretTypeServiceAccountToken), "never writes"}},
		{"helm-release", "release", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1.app.v1", Labels: map[string]string{"owner": "helm"}},
			Type: "helm.sh/release.v1", Data: map[string][]byte{"release": []byte("chart")}}, []string{`key "release"`, "watchword.io/allow-write"}},
		{"tls", corev1.TLSPrivateKeyKey, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tls"},
			Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: []byte("cert"), corev1.TLSPrivateKeyKey: []byte("key")}},
			[]string{`key "tls.key"`, "watchword.io/allow-write"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			must(t, k8s.Create(ctx, tc.secret))
			var before corev1.Secret
			must(t, k8s.Get(ctx, client.ObjectKeyFromObject(tc.secret), &before))
			newES(t, ns, tc.name, "store", withData(tc.key, "k", ""), withTarget(tc.secret.Name, v1alpha1.CreationPolicyMerge))
			es := waitCondition(t, ns, tc.name, "TargetConflict", append([]string{fmt.Sprintf("Secret %q", tc.secret.Name)}, tc.fragments...)...)
			t.Logf("refused: %s", readyCond(es).Message)
			consistently(t, 2*time.Second, func() (bool, string) {
				s, err := getSecret(ns, tc.secret.Name)
				return err == nil && s.ResourceVersion == before.ResourceVersion, "the Secret was written"
			})
		})
	}
	t.Run("the owner's consent", func(t *testing.T) {
		updateSecret(t, ns, "sh.helm.release.v1.app.v1", func(s *corev1.Secret) {
			s.Annotations = map[string]string{"watchword.io/allow-write": "true"}
		})
		forceSync(t, ns, "helm-release")
		waitReady(t, ns, "helm-release")
		waitSecretData(t, ns, "sh.helm.release.v1.app.v1", map[string]string{"release": sentinel})
	})
	t.Run("new keys into the TLS Secret", func(t *testing.T) {
		newES(t, ns, "tls-extra", "store", withData("ca.crt", "k", ""), withTarget("tls", v1alpha1.CreationPolicyMerge))
		waitReady(t, ns, "tls-extra")
		waitSecretData(t, ns, "tls", map[string]string{corev1.TLSCertKey: "cert", corev1.TLSPrivateKeyKey: "key", "ca.crt": sentinel})
	})
	check()
	assertNoLeak(t, ns)
}

// TestHostileValuesAreRefusedAndEarlierDataKept: a remote value of 2 MiB
// (more than a Secret can hold), JSON nested one level deeper than
// Watchword reads, and JSON whose field names are invalid UTF-8 each end
// in a condition that names the key and never the value, while the
// target keeps the data of its last good sync. Values that are bytes of
// invalid UTF-8 are data, not names: they are copied as they are.
func TestHostileValuesAreRefusedAndEarlierDataKept(t *testing.T) {
	parallel(t)
	check := bystander(t)
	t.Run("a value of 2 MiB", func(t *testing.T) {
		needVault(t)
		ns, path := tokenVaultStore(t, "big", map[string]any{"password": "small"}, "v2")
		newES(t, ns, "es", "vault", withDataFrom(path, ""))
		waitSecretData(t, ns, "es", map[string]string{"password": "small"})
		// Vault takes no JSON string over 1 MiB: three fields of 700 KiB
		// make a value of 2 MiB.
		vaultPut(t, path, map[string]any{"password": sentinel + strings.Repeat("x", 700<<10),
			"b": strings.Repeat("x", 700<<10), "c": strings.Repeat("x", 700<<10)})
		forceSync(t, ns, "es")
		var es *v1alpha1.ExternalSecret
		eventually(t, wait, func() (bool, string) {
			es = getES(t, ns, "es")
			c := readyCond(es)
			return c != nil && c.Status == metav1.ConditionFalse, describeES(es)
		})
		c := readyCond(es)
		t.Logf("refused with %s: %.300s", c.Reason, c.Message)
		if len(c.Message) > 4096 || strings.Contains(c.Message, "xxxxxxxx") {
			t.Errorf("the condition repeats the value (%d bytes)", len(c.Message))
		}
		if c.Reason != "TargetRejected" || !strings.Contains(c.Message, `Secret "es"`) || !strings.Contains(c.Message, "a Secret holds at most 1 MiB") {
			t.Errorf("the condition does not say what to change: %s %q", c.Reason, c.Message)
		}
		waitSecretData(t, ns, "es", map[string]string{"password": "small"})
		assertNoLeak(t, ns)
	})
	t.Run("JSON one level deeper than Watchword reads", func(t *testing.T) {
		ns := newNamespace(t, nil)
		fakeStore(t, ns, "store", fakeEntry{key: "v", value: `{"user":"app"}`})
		newES(t, ns, "es", "store", withDataFrom("v", ""))
		waitSecretData(t, ns, "es", map[string]string{"user": "app"})
		deep := `{"user":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`
		updateStore(t, ns, "store", func(s *v1alpha1.SecretStore) { s.Spec.Fake.Data[0].Value = deep })
		forceSync(t, ns, "es")
		c := readyCond(waitCondition(t, ns, "es", "PropertyError", `"v"`, "levels deep"))
		t.Logf("refused: %.300s", c.Message)
		waitSecretData(t, ns, "es", map[string]string{"user": "app"})
	})
	t.Run("invalid UTF-8", func(t *testing.T) {
		ns, remote := newNamespace(t, nil), newNamespace(t, nil)
		createSecret(t, ns, "token", map[string]string{"token": readerToken(t, remote)})
		kubeStore(t, ns, "kube", remote, "token")
		binary := "\xff\xfe" + sentinel + "\xc3\x28"
		must(t, k8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "src"},
			Data: map[string][]byte{"json": []byte(`{"user":"app"}`), "binary": []byte(binary)}}))
		newES(t, ns, "es", "kube", withDataFrom("src", "json"))
		newES(t, ns, "bin", "kube", withData("v", "src", "binary"))
		waitSecretData(t, ns, "es", map[string]string{"user": "app"})
		waitSecretData(t, ns, "bin", map[string]string{"v": binary})
		updateSecret(t, remote, "src", func(s *corev1.Secret) { s.Data["json"] = []byte("{\"user\":\"app\",\"\xff\xfe\":\"payload\"}") })
		forceSync(t, ns, "es")
		c := readyCond(waitCondition(t, ns, "es", "PropertyError", "is not a valid Secret key"))
		t.Logf("refused: %.300s", c.Message)
		if strings.Contains(c.Message, "payload") {
			t.Errorf("the condition repeats the value: %q", c.Message)
		}
		waitSecretData(t, ns, "es", map[string]string{"user": "app"})
		assertNoLeak(t, ns)
	})
	check()
}

// TestTemplateKeysThatCannotBeSecretKeysAreRefused: a template whose
// output key is no Secret key ("../escape", "a/b", one of invalid UTF-8)
// writes nothing: the API server refuses the write, the condition
// (TargetRejected) names the key by its field path, and the target keeps
// its data.
func TestTemplateKeysThatCannotBeSecretKeysAreRefused(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "db", value: sentinel})
	newES(t, ns, "es", "store", withData("password", "db", ""))
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel})
	for _, key := range []string{"../escape", "a/b", "bad\xffkey"} {
		t.Run(fmt.Sprintf("%q", key), func(t *testing.T) {
			updateES(t, ns, "es", func(es *v1alpha1.ExternalSecret) {
				es.Spec.Target.Template = &v1alpha1.ExternalSecretTemplate{Data: map[string]string{key: "{{ .password }}"}}
			})
			var es *v1alpha1.ExternalSecret
			eventually(t, wait, func() (bool, string) {
				es = getES(t, ns, "es")
				c := readyCond(es)
				return c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == es.Generation, describeES(es)
			})
			c := readyCond(es)
			t.Logf("refused with %s: %.300s", c.Reason, c.Message)
			// The API server refuses the key; its answer is reduced to the
			// field path, which names the key.
			if c.Reason != "TargetRejected" || !strings.Contains(c.Message, "data[") || !strings.Contains(c.Message, "FieldValueInvalid") ||
				!strings.Contains(c.Message, "rename the key") {
				t.Errorf("condition %s %q does not name the refused key", c.Reason, c.Message)
			}
			waitSecretData(t, ns, "es", map[string]string{"password": sentinel})
		})
	}
	assertNoLeak(t, ns)
}

// TestAdoptionNeverTakesASecretAnotherControllerOwns: adopt: true aimed at
// a TLS Secret that another controller owns (a certificate issuer's), even
// with the Secret's own type, is refused with TargetConflict naming the
// owner; the Secret keeps its data and owner. (The API server of these
// tests runs no garbage collector, so the owner need not exist.)
func TestAdoptionNeverTakesASecretAnotherControllerOwns(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "k", value: sentinel})
	tls := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-tls",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "cert-manager.io/v1", Kind: "Certificate", Name: "web", UID: "0b0c0d0e-0000-4000-8000-000000000001", Controller: ptrTo(true)}}},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: []byte("cert"), corev1.TLSPrivateKeyKey: []byte("key")}}
	must(t, k8s.Create(ctx, tls))
	newES(t, ns, "grab", "store", withData(corev1.TLSPrivateKeyKey, "k", ""), withData(corev1.TLSCertKey, "k", ""),
		withTarget("web-tls", v1alpha1.CreationPolicyOwner), withTemplate(&v1alpha1.ExternalSecretTemplate{Type: string(corev1.SecretTypeTLS)}),
		func(es *v1alpha1.ExternalSecret) { es.Spec.Target.Adopt = true })
	es := waitCondition(t, ns, "grab", "TargetConflict", `Secret "web-tls" is owned by Certificate "web"`, "choose another spec.target.name")
	t.Logf("refused: %s", readyCond(es).Message)
	consistently(t, 2*time.Second, func() (bool, string) {
		s, err := getSecret(ns, "web-tls")
		return err == nil && s.ResourceVersion == tls.ResourceVersion && string(s.Data[corev1.TLSPrivateKeyKey]) == "key", "the Secret was written"
	})
	assertNoLeak(t, ns)
}

// TestSharedStorePublisherNeverWritesOverATokenOrAnotherType: through a
// shared kubernetes ClusterSecretStore, whose credentials may write
// Secrets where the tenant itself may not, a PushSecret with adopt: true
// aimed at the tenant namespace's service-account token Secret or Helm
// release Secret is refused (NotSupported, saying to choose another
// name or type); both keep their data.
func TestSharedStorePublisherNeverWritesOverATokenOrAnotherType(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ops, b := newNamespace(t, nil), newNamespace(t, nil)
	store := "shared-types-" + ops
	sharedPublishStore(t, ops, store)
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: "app"}}))
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: "app-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "app"}},
		Type: corev1.SecretTypeServiceAccountToken}))
	release := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: "sh.helm.release.v1.app.v1"},
		Type: "helm.sh/release.v1", Data: map[string][]byte{"release": []byte("chart")}}
	must(t, k8s.Create(ctx, release))
	createSecret(t, b, "src", map[string]string{"release": "b-value", "token": "b-value"})
	via := viaStore("ClusterSecretStore", store)
	adopt := func(d *v1alpha1.PushSecretDestination) { d.Adopt = true }
	newPush(t, b, "p", "src", pushTo("app-token", via, adopt), pushTo(release.Name, via, adopt))
	eventually(t, wait, func() (bool, string) {
		st := getPush(t, b, "p").Status.Destinations
		if len(st) != 2 {
			return false, fmt.Sprintf("%+v", st)
		}
		for _, d := range st {
			if d.State != v1alpha1.PushFailed || d.Reason != "NotSupported" {
				return false, fmt.Sprintf("destination %q: %s %s %q", d.Name, d.State, d.Reason, d.Message)
			}
		}
		return true, ""
	})
	for _, d := range getPush(t, b, "p").Status.Destinations {
		t.Logf("%q: %s: %s", d.Name, d.Reason, d.Message)
	}
	s, err := getSecret(b, release.Name)
	must(t, err)
	if s.ResourceVersion != release.ResourceVersion || string(s.Data["release"]) != "chart" {
		t.Error("the Helm release's Secret was written")
	}
	tok, err := getSecret(b, "app-token")
	must(t, err)
	if string(tok.Data["token"]) == "b-value" {
		t.Error("the token Secret was written")
	}
}
