package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/logging"
	"github.com/watchword-dev/watchword/internal/operator"
)

// TestHostileTenantWritesNoErrorLines: an operator of its own, logging as
// the binary does, serves a tenant trying door after door (a template
// asking for the environment, a templateFrom of another namespace, Merge
// into a token Secret and over a TLS Secret's key, adoption of a Secret
// another controller owns, JSON too deep, output keys that are no Secret
// keys, a target over the API server's size limit) beside a good
// ExternalSecret. Each try ends in its condition; the good one keeps
// syncing; the log holds no error-level line, no stack trace and no
// value: a tenant's input is not the operator's error.
func TestHostileTenantWritesNoErrorLines(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns, other := newNamespace(t, nil), newNamespace(t, nil)
	const class = "hostile-logs"
	deep := `{"user":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`
	store := fakeStore(t, ns, "store", fakeEntry{key: "k", value: sentinel}, fakeEntry{key: "deep", value: deep})
	updateStore(t, ns, store.Name, func(s *v1alpha1.SecretStore) { s.Spec.Controller = class })
	must(t, k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "tmpl"}, Data: map[string]string{"v": "x"}}))
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}))
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "app"}},
		Type: corev1.SecretTypeServiceAccountToken}))
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: []byte("cert"), corev1.TLSPrivateKeyKey: []byte("key")}}))
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "issued",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "cert-manager.io/v1", Kind: "Certificate", Name: "web", UID: "0b0c0d0e-0000-4000-8000-000000000002", Controller: ptrTo(true)}}},
		Data: map[string][]byte{"k": []byte("theirs")}}))

	tmpl := func(data map[string]string) esOpt {
		return withTemplate(&v1alpha1.ExternalSecretTemplate{Data: data})
	}
	tries := []struct {
		name, reason string
		opts         []esOpt
	}{
		{"env", "TemplateError", []esOpt{withData("k", "k", ""), tmpl(map[string]string{"v": `{{ env "HOME" }}`})}},
		{"template-from-other", "TemplateNotFound", []esOpt{withData("k", "k", ""), withTemplate(&v1alpha1.ExternalSecretTemplate{
			TemplateFrom: []v1alpha1.TemplateFrom{{ConfigMap: &v1alpha1.TemplateRef{Name: "../" + other + "/tmpl", Items: []v1alpha1.TemplateRefItem{{Key: "v"}}}}}})}},
		{"merge-token", "TargetConflict", []esOpt{withData("token", "k", ""), withTarget("app-token", v1alpha1.CreationPolicyMerge)}},
		{"merge-tls", "TargetConflict", []esOpt{withData(corev1.TLSPrivateKeyKey, "k", ""), withTarget("tls", v1alpha1.CreationPolicyMerge)}},
		{"adopt-issued", "TargetConflict", []esOpt{withData("k", "k", ""), withTarget("issued", v1alpha1.CreationPolicyOwner),
			func(es *v1alpha1.ExternalSecret) { es.Spec.Target.Adopt = true }}},
		{"deep", "PropertyError", []esOpt{withDataFrom("deep", "")}},
		{"bad-key", "TargetRejected", []esOpt{withData("k", "k", ""), tmpl(map[string]string{"../escape": "{{ .k }}"})}},
		{"too-large", "TargetRejected", []esOpt{withData("k", "k", ""),
			tmpl(map[string]string{"a": `{{ repeat 600000 "x" }}`, "b": `{{ repeat 600000 "y" }}`})}},
	}
	for _, try := range tries {
		newES(t, ns, try.name, "store", try.opts...)
	}
	newES(t, ns, "good", "store", withData("v", "k", ""), withRefresh(time.Second))

	var log syncBuffer
	opts := operator.DefaultOptions()
	opts.Registry = registry()
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	opts.ControllerClass = class
	opts.SkipNameValidation = true
	opts.Logger = logging.New(logging.Options{Level: zapcore.InfoLevel, Out: &log})
	opCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	op, err := operator.New(opCtx, restCfg, opts)
	must(t, err)
	stopped := make(chan error, 1)
	go func() { stopped <- op.Start(opCtx) }()

	for _, try := range tries {
		es := waitCondition(t, ns, try.name, try.reason)
		t.Logf("%s: %s: %.200s", try.name, try.reason, readyCond(es).Message)
	}
	waitSecretData(t, ns, "good", map[string]string{"v": sentinel})
	updateStore(t, ns, store.Name, func(s *v1alpha1.SecretStore) { s.Spec.Fake.Data[0].Value = "rotated" })
	waitSecretData(t, ns, "good", map[string]string{"v": "rotated"})
	for name, want := range map[string]string{"tls": "key", "issued": "theirs"} {
		s, gerr := getSecret(ns, name)
		must(t, gerr)
		for k, v := range s.Data {
			if (k == corev1.TLSPrivateKeyKey || k == "k") && string(v) != want {
				t.Errorf("Secret %s: key %s was written over", name, k)
			}
		}
	}
	cancel()
	select {
	case err = <-stopped:
		must(t, err)
	case <-time.After(wait):
		t.Fatal("the operator did not stop")
	}

	lines := 0
	for l := range strings.Lines(log.String()) {
		lines++
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a log line that is not JSON: %q", l)
		}
		if m["level"] == "error" {
			t.Errorf("an error-level line: %.400s", l)
		}
		if _, ok := m["stacktrace"]; ok {
			t.Errorf("a line with a stack trace: %.300s", l)
		}
		if strings.Contains(l, sentinel) || strings.Contains(l, "xxxxxxxxxx") {
			t.Errorf("a line repeats a value: %.300s", l)
		}
	}
	t.Logf("%d log lines, none at error level", lines)
	assertNoLeak(t, ns)
}
