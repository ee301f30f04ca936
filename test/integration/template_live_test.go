package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/cli"
)

// TestTemplateLiveReadsTheStore: `watchword template --live` renders an
// ExternalSecret that is not in the cluster from the data its store holds
// now, read through the store's provider with the caller's identity, and
// a templateFrom ConfigMap read from the cluster. It prints keys and
// sizes, values only when asked; it writes nothing (no Secret, no
// ExternalSecret, the store unchanged); a missing remote key is named
// with its reason.
func TestTemplateLiveReadsTheStore(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	store := fakeStore(t, ns, "store", fakeEntry{key: "db", value: `{"user":"app","password":"` + sentinel + `"}`})
	must(t, k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tmpl"},
		Data: map[string]string{"dsn": "postgres://{{ .user }}:{{ .password }}@db/app"}}))
	manifest := fmt.Sprintf(`apiVersion: external-secrets.x-k8s.io/v1alpha1
kind: ExternalSecret
metadata: {name: app, namespace: %s}
spec:
  secretStoreRef: {name: store}
  target:
    template:
      templateFrom:
      - configMap: {name: tmpl, items: [{key: dsn}]}
  data:
  - {secretKey: user, remoteRef: {key: db, property: user}}
  - {secretKey: password, remoteRef: {key: db, property: password}}
`, ns)
	reader := cli.ClusterReader{Client: k8s, Kube: kube, Config: restCfg, Registry: registry()}
	before := readCount(ns + "/store")

	var out bytes.Buffer
	must(t, cli.TemplateLive(context.Background(), cli.LiveTemplateInput{ExternalSecret: []byte(manifest)}, reader, &out))
	got := out.String()
	// The template replaces the data (no mergePolicy Merge): dsn alone.
	for _, want := range []string{`read from SecretStore "` + ns + `/store" (fake)`, "dsn: (55 bytes)", "values hidden"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, sentinel) {
		t.Errorf("a value was printed without --show-values:\n%s", got)
	}
	if n := readCount(ns+"/store") - before; n < 1 {
		t.Errorf("%d reads of the store: the data did not come from it", n)
	}

	out.Reset()
	must(t, cli.TemplateLive(context.Background(), cli.LiveTemplateInput{ExternalSecret: []byte(manifest), ShowValues: true}, reader, &out))
	if !strings.Contains(out.String(), "postgres://app:"+sentinel+"@db/app") {
		t.Errorf("--show-values did not print the rendered dsn:\n%s", out.String())
	}

	// Nothing was written.
	if _, err := getSecret(ns, "app"); !apierrors.IsNotFound(err) {
		t.Errorf("a Secret app exists after template --live (%v)", err)
	}
	var es v1alpha1.ExternalSecret
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, &es); !apierrors.IsNotFound(err) {
		t.Errorf("an ExternalSecret app exists after template --live (%v)", err)
	}
	var now v1alpha1.SecretStore
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "store"}, &now))
	if now.Generation != store.Generation {
		t.Errorf("the store's spec changed: generation %d, was %d", now.Generation, store.Generation)
	}

	missing := strings.Replace(manifest, "{key: db, property: user}", "{key: no-such-key, property: user}", 1)
	err := cli.TemplateLive(context.Background(), cli.LiveTemplateInput{ExternalSecret: []byte(missing)}, reader, &out)
	if err == nil || !strings.Contains(err.Error(), `remote key "no-such-key"`) || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("a missing remote key: %v, want it named with NotFound", err)
	}
	if err != nil && strings.Contains(err.Error(), sentinel) {
		t.Error("the error holds a value")
	}

	// --name: an ExternalSecret of the cluster, as stored.
	newES(t, ns, "stored", "store", withData("user", "db", "user"))
	stored, err := cli.StoredExternalSecret(context.Background(), k8s, ns, "stored")
	must(t, err)
	out.Reset()
	must(t, cli.TemplateLive(context.Background(), cli.LiveTemplateInput{ExternalSecret: stored, ShowValues: true}, reader, &out))
	if !strings.Contains(out.String(), `Secret "stored"`) || !strings.Contains(out.String(), `user: "app"`) {
		t.Errorf("the stored ExternalSecret rendered as:\n%s", out.String())
	}
}
