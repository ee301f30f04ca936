package integration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/operator"
	"github.com/watchword-dev/watchword/internal/webhook"
)

// admissionWebhook is an operator serving the admission webhook on a
// loopback port, with the shipped ValidatingWebhookConfiguration
// (config/webhook) registered by URL and limited to one namespace.
type admissionWebhook struct {
	ns, config, secret string
	port               int
	stop               func()
}

// startWebhook runs an operator of a class of its own (its controllers
// serve nothing of ns; the suite's operator does) with the webhook, its
// certificate issued by itself for 127.0.0.1 and kept in a Secret of ns.
// It stops when the test ends, or earlier by stop.
func startWebhook(t *testing.T, ns string, validity, check time.Duration) *admissionWebhook {
	t.Helper()
	return startWebhookWith(t, ns, validity, check, "", nil, "")
}

// startWebhookWith is startWebhook; with certDir, the operator serves the
// certificate found there instead, and the configuration's caBundle is
// set to caBundle by the test, as cert-manager's CA injector would. With
// clientCA, it lets in only callers with a client certificate that CA
// signed.
func startWebhookWith(t *testing.T, ns string, validity, check time.Duration, certDir string, caBundle []byte, clientCA string) *admissionWebhook {
	t.Helper()
	ctx := context.Background()
	addr, err := freeLoopbackAddr()
	must(t, err)
	_, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	w := &admissionWebhook{ns: ns, config: "watchword-" + ns, secret: "webhook-cert", port: port}

	// The shipped configuration, reached by URL on loopback instead of
	// through its Service, and for this test's namespace only.
	raw, err := os.ReadFile("../../config/webhook/webhook.yaml")
	must(t, err)
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	must(t, yaml.Unmarshal([]byte(strings.Split(string(raw), "\n---\n")[0]), &cfg))
	cfg.Name = w.config
	for i := range cfg.Webhooks {
		h := &cfg.Webhooks[i]
		if h.FailurePolicy == nil || *h.FailurePolicy != admissionregistrationv1.Ignore || h.TimeoutSeconds == nil || *h.TimeoutSeconds > 5 {
			t.Fatalf("shipped webhook %s: failurePolicy %v, timeout %v; want Ignore and at most 5s", h.Name, h.FailurePolicy, h.TimeoutSeconds)
		}
		h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + addr + *h.ClientConfig.Service.Path)}
		h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
		h.ClientConfig.CABundle = caBundle
	}
	must(t, k8s.Create(ctx, &cfg))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), &cfg) })

	opts := operator.DefaultOptions()
	opts.Registry = registry()
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	opts.ControllerClass = "webhook-" + ns
	opts.SkipNameValidation = true
	opts.Webhook = &webhook.Options{Host: "127.0.0.1", Port: port, Certs: webhook.CertOptions{
		Namespace: ns, SecretName: w.secret, ConfigName: w.config,
		DNSNames: []string{"watchword-webhook." + ns + ".svc"}, IPs: []net.IP{net.ParseIP("127.0.0.1")},
		Validity: validity, CheckPeriod: check,
	}, CertDir: certDir, ClientCAFile: clientCA}
	runCtx, cancel := context.WithCancel(context.Background())
	op, err := operator.New(runCtx, restCfg, opts)
	if err != nil {
		cancel()
		t.Fatalf("building the webhook's operator: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = op.Start(runCtx)
	}()
	stopped := false
	w.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		awaitStop(t, "the webhook's operator", done)
	}
	t.Cleanup(w.stop)
	if certDir != "" {
		return w
	}
	// Ready once the API server has the CA bundle the operator issued.
	eventually(t, wait, func() (bool, string) {
		s, err := getSecret(ns, w.secret)
		if err != nil {
			return false, "certificate Secret: " + err.Error()
		}
		if got := w.caBundles(t); len(got) == 0 || !bytes.Equal(got[0], s.Data["ca.crt"]) {
			return false, "caBundle not patched yet"
		}
		return true, ""
	})
	return w
}

// caBundles are the caBundle of each webhook of the configuration.
func (w *admissionWebhook) caBundles(t *testing.T) [][]byte {
	t.Helper()
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	must(t, k8s.Get(context.Background(), client.ObjectKey{Name: w.config}, &cfg))
	var out [][]byte
	for _, h := range cfg.Webhooks {
		out = append(out, h.ClientConfig.CABundle)
	}
	return out
}

// refusedWith waits until a dry run of creating obj is refused by the
// webhook (its cache has caught up with the holder), then creates obj for
// real and checks the refusal: a Conflict that says fragments.
func refusedWith(t *testing.T, obj client.Object, fragments ...string) {
	t.Helper()
	ctx := context.Background()
	eventually(t, wait, func() (bool, string) {
		err := k8s.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
		if err == nil {
			return false, "a dry-run create was admitted"
		}
		return strings.Contains(err.Error(), "denied the request"), err.Error()
	})
	err := k8s.Create(ctx, obj)
	if err == nil {
		t.Fatalf("%s %s was admitted", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName())
	}
	if !apierrors.IsConflict(err) {
		t.Errorf("refusal is not a Conflict (409): %v", err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("refusal %q lacks %q", err.Error(), f)
		}
	}
}

func esObject(ns, name, store string, opts ...esOpt) *v1alpha1.ExternalSecret {
	es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: store}}}
	for _, o := range opts {
		o(es)
	}
	return es
}

// TestWebhookRefusesSecondExternalSecretNamingHolder: a second
// ExternalSecret that names a target Secret another one writes is refused
// at create, with the holder named and what to do; the holder's own
// updates, and an ExternalSecret of another target, are admitted.
func TestWebhookRefusesSecondExternalSecretNamingHolder(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	startWebhook(t, ns, 0, 0)
	fakeStore(t, ns, "store", fakeEntry{key: "a", value: "from-first"}, fakeEntry{key: "b", value: "from-second"})
	newES(t, ns, "first", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("v", "a", ""))
	waitReady(t, ns, "first")

	refusedWith(t, esObject(ns, "second", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("v", "b", "")),
		`Secret "shared"`, "ExternalSecret "+ns+"/first", "got there first", "choose another spec.target.name")
	var gone v1alpha1.ExternalSecret
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "second"}, &gone); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused ExternalSecret exists: %v", err)
	}
	// A Merge into a Secret that an Owner ExternalSecret writes is refused too.
	refusedWith(t, esObject(ns, "merger", "store", withTarget("shared", v1alpha1.CreationPolicyMerge), withData("m", "b", "")),
		"ExternalSecret "+ns+"/first")

	// The holder's own update goes through and is synced.
	updateES(t, ns, "first", func(es *v1alpha1.ExternalSecret) { es.Spec.Data[0].SecretKey = "renamed" })
	waitSecretData(t, ns, "shared", map[string]string{"renamed": "from-first"})
	// Another target is free.
	newES(t, ns, "other", "store", withTarget("other", v1alpha1.CreationPolicyOwner), withData("v", "b", ""))
	waitReady(t, ns, "other")
	// (spec.target.name is immutable, so an ExternalSecret cannot move
	// onto a held target by an update.)
}

// TestWebhookTellsSecretAndConfigMapTargetsApart: a Secret and a
// ConfigMap of one name are two objects. Once the webhook knows an
// ExternalSecret that writes the Secret "shared", one that writes the
// ConfigMap "shared" is admitted and synced; a second writer of that
// ConfigMap is refused, the message naming the ConfigMap and its holder.
func TestWebhookTellsSecretAndConfigMapTargetsApart(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	startWebhook(t, ns, 0, 0)
	fakeStore(t, ns, "store", fakeEntry{key: "a", value: "va"}, fakeEntry{key: "b", value: "vb"})
	newES(t, ns, "secret", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("v", "a", ""))
	waitReady(t, ns, "secret")
	// The webhook's cache knows the Secret's writer: a second one is refused.
	refusedWith(t, esObject(ns, "secret2", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("v", "b", "")),
		`Secret "shared"`, "ExternalSecret "+ns+"/secret")

	toConfigMap := func(es *v1alpha1.ExternalSecret) {
		es.Spec.Target.Kind, es.Spec.Target.AllowSecretValues = v1alpha1.TargetConfigMap, true
	}
	newES(t, ns, "config", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("c", "b", ""), toConfigMap)
	waitReady(t, ns, "config")
	eventually(t, wait, func() (bool, string) {
		var cm corev1.ConfigMap
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shared"}, &cm); err != nil {
			return false, err.Error()
		}
		return cm.Data["c"] == "vb", fmt.Sprintf("ConfigMap data keys %v", slices.Sorted(maps.Keys(cm.Data)))
	})
	waitSecretData(t, ns, "shared", map[string]string{"v": "va"})

	refusedWith(t, esObject(ns, "config2", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("c", "a", ""), toConfigMap),
		`ConfigMap "shared"`, "ExternalSecret "+ns+"/config", "got there first")
}

// TestWebhookRefusesPushSecretDestinationHeldByAnother: a PushSecret
// publishing to a remote secret of a store that another PushSecret
// already publishes to is refused, naming it, and so is an ExternalSecret
// publishing there; the holder's update and a free destination are
// admitted.
func TestWebhookRefusesPushSecretDestinationHeldByAnother(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	startWebhook(t, ns, 0, 0)
	createSecret(t, ns, "source", map[string]string{"k": "v"})
	newPush(t, ns, "first", "source", pushTo("remote-db", viaStore(v1alpha1.SecretStoreKind, "remote")))

	second := &v1alpha1.PushSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}, Spec: v1alpha1.PushSecretSpec{SecretName: "source"}}
	pushTo("free-name", viaStore(v1alpha1.SecretStoreKind, "remote"))(second)
	pushTo("remote-db", viaStore(v1alpha1.SecretStoreKind, "remote"))(second)
	refusedWith(t, second, `remote secret "remote-db" of SecretStore "remote"`, "PushSecret "+ns+"/first", "got there first")

	// An ExternalSecret publishing there is refused too.
	refusedWith(t, esObject(ns, "publisher", "store", withData("k", "a", ""), func(es *v1alpha1.ExternalSecret) {
		es.Spec.PublishConnectionDetailsTo = &v1alpha1.ExternalSecretPublication{PushSecretDestination: v1alpha1.PushSecretDestination{
			Name: "remote-db", ConfigRef: &v1alpha1.StoreRef{Kind: v1alpha1.SecretStoreKind, Name: "remote"}}}
	}), "PushSecret "+ns+"/first")

	// The same name in another store is another remote secret.
	newPush(t, ns, "elsewhere", "source", pushTo("remote-db", viaStore(v1alpha1.SecretStoreKind, "other-store")))
	// The holder may change (here, add a destination).
	updatePush(t, ns, "first", func(ps *v1alpha1.PushSecret) {
		pushTo("remote-db-2", viaStore(v1alpha1.SecretStoreKind, "remote"))(ps)
	})
	// Another PushSecret adding a held destination by an update is refused.
	// (Retried while the controller's status writes make it stale.)
	var err error
	eventually(t, wait, func() (bool, string) {
		ps := getPush(t, ns, "elsewhere")
		pushTo("remote-db-2", viaStore(v1alpha1.SecretStoreKind, "remote"))(ps)
		err = k8s.Update(context.Background(), ps)
		return err == nil || strings.Contains(err.Error(), "denied the request"), fmt.Sprint(err)
	})
	if err == nil || !strings.Contains(err.Error(), "PushSecret "+ns+"/first") {
		t.Fatalf("adding a held destination by an update: %v", err)
	}
}

// TestWebhookFailsOpenToReconcileCheck: with the webhook stopped (its
// configuration still installed), a second writer is admitted, since the
// configuration fails open, and the controller's own check reports the
// conflict in its status, naming the holder.
func TestWebhookFailsOpenToReconcileCheck(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	w := startWebhook(t, ns, 0, 0)
	fakeStore(t, ns, "store", fakeEntry{key: "a", value: "from-first"}, fakeEntry{key: "b", value: "from-second"})
	newES(t, ns, "first", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("v", "a", ""))
	waitReady(t, ns, "first")
	refusedWith(t, esObject(ns, "probe", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("v", "b", "")), "ExternalSecret "+ns+"/first")

	w.stop()
	// Nothing answers on the webhook's port any more.
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(w.port)), time.Second); err == nil {
		_ = conn.Close()
		t.Fatal("the webhook still listens after its operator stopped")
	}
	newES(t, ns, "second", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("v", "b", ""))
	waitCondition(t, ns, "second", "TargetConflict", `ExternalSecret "first"`)
	waitSecretData(t, ns, "shared", map[string]string{"v": "from-first"})
}

// TestWebhookCertificateRenewedAndCABundleFollows: with a short validity
// the operator renews its certificate; the Secret holds the new one, the
// caBundle follows (the new CA first, the previous one kept beside it
// while valid), the server presents the new certificate, and the API
// server still reaches the webhook through it.
func TestWebhookCertificateRenewedAndCABundleFollows(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	// Renewed when less than a third (4s) of 12s is left.
	w := startWebhook(t, ns, 12*time.Second, 250*time.Millisecond)
	first, err := getSecret(ns, w.secret)
	must(t, err)
	if first.Type != corev1.SecretTypeTLS {
		t.Errorf("certificate Secret type %q, want %q", first.Type, corev1.SecretTypeTLS)
	}
	var renewed *corev1.Secret
	eventually(t, 30*time.Second, func() (bool, string) {
		s, err := getSecret(ns, w.secret)
		if err != nil {
			return false, err.Error()
		}
		if bytes.Equal(s.Data["tls.crt"], first.Data["tls.crt"]) {
			return false, "not renewed yet"
		}
		renewed = s
		return true, ""
	})
	cas := pemCerts(t, renewed.Data["ca.crt"])
	firstCA := pemCerts(t, first.Data["ca.crt"])[0]
	if len(cas) < 2 || !cas[1].Equal(firstCA) {
		t.Errorf("the renewed bundle has %d CAs; want the new one and then the previous one", len(cas))
	}
	eventually(t, wait, func() (bool, string) {
		for _, b := range w.caBundles(t) {
			if len(pemCerts(t, b)) == 0 || !pemCerts(t, b)[0].Equal(cas[0]) {
				return false, "caBundle does not start with the new CA yet"
			}
		}
		return true, ""
	})
	// The server presents a certificate that the new CA signed.
	eventually(t, wait, func() (bool, string) {
		pool := x509.NewCertPool()
		pool.AddCert(cas[0])
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(w.port)), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
		if err != nil {
			return false, "dialling with the new CA: " + err.Error()
		}
		_ = conn.Close()
		return true, ""
	})
	// And the API server still reaches the webhook.
	createSecret(t, ns, "source", map[string]string{"k": "v"})
	newPush(t, ns, "first", "source", pushTo("remote-db", viaStore(v1alpha1.SecretStoreKind, "remote")))
	refusedWith(t, &v1alpha1.PushSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"},
		Spec: v1alpha1.PushSecretSpec{SecretName: "source", Destinations: []v1alpha1.PushSecretDestination{
			{Name: "remote-db", ConfigRef: &v1alpha1.StoreRef{Kind: v1alpha1.SecretStoreKind, Name: "remote"}}}}},
		"PushSecret "+ns+"/first")
}

func pemCerts(t *testing.T, b []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return out
		}
		c, err := x509.ParseCertificate(block.Bytes)
		must(t, err)
		out = append(out, c)
	}
}

// assertShippedWebhook checks a rendering with the webhook on: the
// configuration fails open within 5s for both kinds and reaches, through
// a Service of the rendering, the container's webhook port, which the
// controller is told to serve and the NetworkPolicy lets in; then every
// object passes a server-side dry run. (Not applied for real: the
// configuration is cluster-wide and would reach every test's objects.)
func assertShippedWebhook(t *testing.T, r rendered) {
	t.Helper()
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(r.one(t, "ValidatingWebhookConfiguration").Object, &cfg))
	if cfg.Name != "watchword" {
		t.Errorf("configuration named %q; the controller's RBAC allows patching watchword only", cfg.Name)
	}
	d := r.deployment(t)
	var port int32
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == "webhook" {
				port = p.ContainerPort
			}
		}
	}
	if a := args(t, d); port == 0 || !slices.Contains(a, "--webhook-port="+strconv.Itoa(int(port))) {
		t.Errorf("container port webhook %d, args %v: want the controller to serve that port", port, a)
	}
	kinds := map[string]bool{}
	for _, h := range cfg.Webhooks {
		if h.FailurePolicy == nil || *h.FailurePolicy != admissionregistrationv1.Ignore || h.TimeoutSeconds == nil || *h.TimeoutSeconds > 5 {
			t.Errorf("webhook %s: failurePolicy %v, timeout %v; want Ignore and at most 5s", h.Name, h.FailurePolicy, h.TimeoutSeconds)
		}
		for _, rule := range h.Rules {
			kinds[strings.Join(rule.Resources, ",")] = true
		}
		svc := h.ClientConfig.Service
		found := false
		for _, s := range r.find("Service") {
			ports, _, _ := unstructured.NestedSlice(s.Object, "spec", "ports")
			if s.GetName() == svc.Name && len(ports) == 1 && ports[0].(map[string]any)["targetPort"] == "webhook" {
				found = true
			}
		}
		if !found {
			t.Errorf("webhook %s reaches Service %s, which the rendering lacks or which does not target the port webhook", h.Name, svc.Name)
		}
	}
	if !kinds["externalsecrets"] || !kinds["pushsecrets"] {
		t.Errorf("the configuration covers %v; want externalsecrets and pushsecrets", kinds)
	}
	ingress, _, _ := unstructured.NestedSlice(r.one(t, "NetworkPolicy").Object, "spec", "ingress")
	if !strings.Contains(fmt.Sprint(ingress), strconv.Itoa(int(port))) {
		t.Errorf("NetworkPolicy ingress %v does not let in the webhook port %d", ingress, port)
	}
	assertArgsParse(t, d)
	for _, u := range r.objs {
		if _, skip := notInstalled[u.GetKind()]; skip {
			continue
		}
		if err := ssa(context.Background(), u, true); err != nil {
			t.Errorf("server-side dry run refused %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// TestHelmChartWebhook renders the chart with webhook.enabled.
func TestHelmChartWebhook(t *testing.T) {
	parallel(t)
	helm := needHelm(t)
	ns := newNamespace(t, restrictedLabels)
	if len(helmTemplate(t, helm, "wwoff", ns).find("ValidatingWebhookConfiguration")) != 0 {
		t.Error("the webhook is rendered by default; it is off unless webhook.enabled")
	}
	values := filepath.Join(t.TempDir(), "values.yaml")
	must(t, os.WriteFile(values, []byte("webhook:\n  enabled: true\n"), 0o600))
	r := helmTemplate(t, helm, "wwhook", ns, values)
	assertShippedWebhook(t, r)
	if a := args(t, r.deployment(t)); !slices.Contains(a, "--webhook-namespace="+ns) || !slices.Contains(a, "--webhook-service=wwhook-watchword-webhook") {
		t.Errorf("args %v: want the release's namespace and webhook Service", a)
	}
}

// TestKustomizeWebhookComponent renders the webhook overlay: the base
// with the config/webhook component.
func TestKustomizeWebhookComponent(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, restrictedLabels)
	r, _ := kustomize(t, kustomizeDir+"/overlays/webhook", ns)
	assertShippedWebhook(t, r)
	if a := args(t, r.deployment(t)); !slices.Contains(a, "--webhook-service=watchword-webhook") {
		t.Errorf("args %v: want the component's Service", a)
	}
}

// TestWebhookServesMountedCertificatesWithoutTouchingCABundle: with
// --webhook-cert-dir (the cert-manager setup) the operator serves the
// mounted certificate, issues none and leaves caBundle as its injector
// set it; the API server reaches the webhook with that bundle.
func TestWebhookServesMountedCertificatesWithoutTouchingCABundle(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	dir := t.TempDir()
	caPEM, certPEM, keyPEM := issueForLoopback(t)
	must(t, os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600))
	w := startWebhookWith(t, ns, 0, 0, dir, caPEM, "")

	createSecret(t, ns, "source", map[string]string{"k": "v"})
	newPush(t, ns, "first", "source", pushTo("remote-db", viaStore(v1alpha1.SecretStoreKind, "remote")))
	refusedWith(t, &v1alpha1.PushSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"},
		Spec: v1alpha1.PushSecretSpec{SecretName: "source", Destinations: []v1alpha1.PushSecretDestination{
			{Name: "remote-db", ConfigRef: &v1alpha1.StoreRef{Kind: v1alpha1.SecretStoreKind, Name: "remote"}}}}},
		"PushSecret "+ns+"/first")
	for _, b := range w.caBundles(t) {
		if !bytes.Equal(b, caPEM) {
			t.Error("the operator changed the caBundle the injector set")
		}
	}
	if _, err := getSecret(ns, w.secret); !apierrors.IsNotFound(err) {
		t.Errorf("the operator issued a certificate Secret of its own: %v", err)
	}
}

// issueForLoopback makes a CA and a serving certificate for 127.0.0.1,
// standing in for cert-manager.
func issueForLoopback(t *testing.T) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-issuer"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	must(t, err)
	ca, err := x509.ParseCertificate(caDER)
	must(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	must(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	must(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
