package integration

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// The fields External Secrets Operator's users reach for every day:
// decodingStrategy, refreshPolicy, target.immutable, templateFrom from a
// Secret or a literal, rewrite by template.

func b64(s string) string    { return base64.StdEncoding.EncodeToString([]byte(s)) }
func b64url(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }

// TestDecodingStrategyDecodesAndKeepsTheTargetOnBadInput: each strategy
// decodes as External Secrets Operator's does, on data[], a dataFrom
// remoteRef and a find; a value that stops being base64 fails the sync
// with PropertyError naming the key, never the value, and the target keeps
// its data.
func TestDecodingStrategyDecodesAndKeepsTheTargetOnBadInput(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	// "\xfb\xff?" encodes with '+' and '/' in base64, '-' and '_' in
	// URL-safe base64.
	const binary = "\xfb\xff?"
	fakeStore(t, ns, "store",
		fakeEntry{key: "cert", value: b64("PEM DATA")},
		fakeEntry{key: "urlsafe", value: b64url(binary)},
		fakeEntry{key: "mixed", value: `{"enc":"` + b64("decoded") + `","plain":"not base64!"}`},
		fakeEntry{key: "keys/one", value: b64url(binary)},
		fakeEntry{key: "keys/two", value: "plain value"})
	newES(t, ns, "decoded", "store", func(es *v1alpha1.ExternalSecret) {
		es.Spec.Data = []v1alpha1.ExternalSecretData{
			{SecretKey: "cert", RemoteRef: v1alpha1.RemoteReference{Key: "cert", DecodingStrategy: v1alpha1.DecodeBase64}},
			{SecretKey: "urlsafe", RemoteRef: v1alpha1.RemoteReference{Key: "urlsafe", DecodingStrategy: v1alpha1.DecodeBase64URL}},
			{SecretKey: "raw", RemoteRef: v1alpha1.RemoteReference{Key: "cert"}},
		}
		es.Spec.DataFrom = []v1alpha1.ExternalSecretDataFrom{
			{RemoteRef: &v1alpha1.RemoteReference{Key: "mixed", DecodingStrategy: v1alpha1.DecodeAuto}},
			{Find: &v1alpha1.ExternalSecretFind{Path: "keys/", DecodingStrategy: v1alpha1.DecodeAuto}},
		}
	})
	waitSecretData(t, ns, "decoded", map[string]string{
		"cert": "PEM DATA", "urlsafe": binary, "raw": b64("PEM DATA"),
		"enc": "decoded", "plain": "not base64!",
		"keys_one": binary, "keys_two": "plain value",
	})

	updateStore(t, ns, "store", setFake("cert", "LEAKED-IF-SHOWN not base64"))
	es := waitCondition(t, ns, "decoded", "PropertyError", `remote key "cert"`, "is not base64", "decodingStrategy Base64")
	if msg := readyCond(es).Message; strings.Contains(msg, "LEAKED-IF-SHOWN") {
		t.Errorf("Ready's message %q holds the value", msg)
	}
	s, err := getSecret(ns, "decoded")
	must(t, err)
	if string(s.Data["cert"]) != "PEM DATA" {
		t.Errorf("the target lost its data: cert = %q", s.Data["cert"])
	}
}

// TestDecodingStrategyUnknownIsRefused: the API server refuses a strategy
// it does not know.
func TestDecodingStrategyUnknownIsRefused(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	u := loadSeed(t, "testdata/seed-externalsecret.yaml", ns)
	data, _, _ := unstructured.NestedSlice(u.Object, "spec", "data")
	if len(data) == 0 {
		t.Fatal("the seed example has no data entry")
	}
	ref := data[0].(map[string]any)["remoteRef"].(map[string]any)
	ref["decodingStrategy"] = "Hex"
	must(t, unstructured.SetNestedSlice(u.Object, data, "spec", "data"))
	err := k8s.Create(context.Background(), u)
	if err == nil || !strings.Contains(err.Error(), `Unsupported value: "Hex"`) {
		t.Fatalf("err = %v, want the strategy refused", err)
	}
}

func withPolicy(p v1alpha1.RefreshPolicy) esOpt {
	return func(es *v1alpha1.ExternalSecret) { es.Spec.RefreshPolicy = p }
}

func setFake(key, value string) func(*v1alpha1.SecretStore) {
	return func(s *v1alpha1.SecretStore) {
		for i := range s.Spec.Fake.Data {
			if s.Spec.Fake.Data[i].Key == key {
				s.Spec.Fake.Data[i].Value = value
			}
		}
	}
}

// TestRefreshPolicyCreatedOnce: synced once, a CreatedOnce ExternalSecret
// reads no more, not even when its store or its spec changes, while a
// Periodic one beside it follows the store; a target that is deleted is
// made again from a new read.
func TestRefreshPolicyCreatedOnce(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "token", value: "first"})
	newES(t, ns, "once", "store", withPolicy(v1alpha1.RefreshCreatedOnce), withData("token", "token", ""))
	waitSecretData(t, ns, "once", map[string]string{"token": "first"})
	if es := waitReady(t, ns, "once"); es.Status.Phase != v1alpha1.PhaseCompleted {
		t.Errorf("phase = %s, want Completed", es.Status.Phase)
	}

	updateStore(t, ns, "store", setFake("token", "second"))
	updateES(t, ns, "once", func(es *v1alpha1.ExternalSecret) {
		es.Spec.Data = append(es.Spec.Data, v1alpha1.ExternalSecretData{SecretKey: "again", RemoteRef: v1alpha1.RemoteReference{Key: "token"}})
	})
	// An ExternalSecret created after both changes syncs from the new
	// store; by then the controller has seen both.
	newES(t, ns, "periodic", "store", withData("token", "token", ""))
	waitSecretData(t, ns, "periodic", map[string]string{"token": "second"})
	s, err := getSecret(ns, "once")
	must(t, err)
	if len(s.Data) != 1 || string(s.Data["token"]) != "first" {
		t.Errorf("CreatedOnce target changed after its first sync: keys %v", keysOf(s.Data))
	}

	must(t, k8s.Delete(context.Background(), s))
	waitSecretData(t, ns, "once", map[string]string{"token": "second", "again": "second"})
}

// TestRefreshPolicyOnChange: an OnChange ExternalSecret syncs again when
// its spec changes, and has no periodic refresh.
func TestRefreshPolicyOnChange(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "a", value: "A"}, fakeEntry{key: "b", value: "B"})
	newES(t, ns, "onchange", "store", withPolicy(v1alpha1.RefreshOnChange), withData("a", "a", ""))
	waitSecretData(t, ns, "onchange", map[string]string{"a": "A"})
	updateES(t, ns, "onchange", func(es *v1alpha1.ExternalSecret) {
		es.Spec.Data = append(es.Spec.Data, v1alpha1.ExternalSecretData{SecretKey: "b", RemoteRef: v1alpha1.RemoteReference{Key: "b"}})
	})
	waitSecretData(t, ns, "onchange", map[string]string{"a": "A", "b": "B"})
	if es := waitReady(t, ns, "onchange"); es.Status.Phase != v1alpha1.PhaseCompleted {
		t.Errorf("phase = %s, want Completed (no periodic refresh)", es.Status.Phase)
	}
}

// TestRefreshPolicyRefusesAnInterval: an interval beside OnChange or
// CreatedOnce, which would not be used, is refused at admission; the
// default one and 0 are not.
func TestRefreshPolicyRefusesAnInterval(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	for _, tc := range []struct {
		policy   v1alpha1.RefreshPolicy
		interval *metav1.Duration
		refused  bool
	}{
		{v1alpha1.RefreshOnChange, &metav1.Duration{Duration: 15 * time.Minute}, true},
		{v1alpha1.RefreshCreatedOnce, &metav1.Duration{Duration: time.Minute}, true},
		{v1alpha1.RefreshCreatedOnce, nil, false},
		{v1alpha1.RefreshOnChange, &metav1.Duration{}, false},
		{v1alpha1.RefreshPeriodic, &metav1.Duration{Duration: 15 * time.Minute}, false},
	} {
		es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "policy-"},
			Spec: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: "store"}, RefreshPolicy: tc.policy, RefreshInterval: tc.interval,
				Data: []v1alpha1.ExternalSecretData{{SecretKey: "k", RemoteRef: v1alpha1.RemoteReference{Key: "k"}}}}}
		err := k8s.Create(context.Background(), es, client.DryRunAll)
		switch {
		case tc.refused && (err == nil || !strings.Contains(err.Error(), "refreshInterval is not used with refreshPolicy OnChange or CreatedOnce")):
			t.Errorf("%s with %v: err = %v, want the interval refused", tc.policy, tc.interval, err)
		case !tc.refused && err != nil:
			t.Errorf("%s with %v: %v", tc.policy, tc.interval, err)
		}
	}
}

// TestImmutableTargetKeepsItsDataAndIsWrittenAgainWhenDeleted: the target
// is written immutable; when the store's value changes it keeps its data
// and the ExternalSecret reports TargetImmutable naming the key (not the
// value); deleting the Secret has it written again, immutable, with the
// new data.
func TestImmutableTargetKeepsItsDataAndIsWrittenAgainWhenDeleted(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "token", value: "first"}, fakeEntry{key: "user", value: "app"})
	newES(t, ns, "frozen", "store", withData("token", "token", ""), withData("user", "user", ""),
		func(es *v1alpha1.ExternalSecret) { es.Spec.Target.Immutable = true })
	s := waitSecretData(t, ns, "frozen", map[string]string{"token": "first", "user": "app"})
	if s.Immutable == nil || !*s.Immutable {
		t.Fatalf("the target is not immutable: %v", s.Immutable)
	}

	updateStore(t, ns, "store", setFake("token", "SECOND-VALUE"))
	es := waitCondition(t, ns, "frozen", "TargetImmutable", `Secret "frozen" is immutable`, "keys token:", "delete the Secret")
	if msg := readyCond(es).Message; strings.Contains(msg, "SECOND-VALUE") || strings.Contains(msg, "first") {
		t.Errorf("Ready's message %q holds a value", msg)
	}
	s, err := getSecret(ns, "frozen")
	must(t, err)
	if string(s.Data["token"]) != "first" {
		t.Errorf("the immutable target lost its data: token = %q", s.Data["token"])
	}

	must(t, k8s.Delete(context.Background(), s))
	s = waitSecretData(t, ns, "frozen", map[string]string{"token": "SECOND-VALUE", "user": "app"})
	if s.Immutable == nil || !*s.Immutable {
		t.Errorf("the target written again is not immutable")
	}
	waitReady(t, ns, "frozen")
}

// TestRewriteTransformRenamesKeys: a transform rule renames the keys of a
// dataFrom entry, in order with a regexp rule, as the docs' example says.
func TestRewriteTransformRenamesKeys(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "app/config", value: `{"db-user":"app","db-password":"pw"}`})
	newES(t, ns, "renamed", "store", func(es *v1alpha1.ExternalSecret) {
		es.Spec.DataFrom = []v1alpha1.ExternalSecretDataFrom{{RemoteRef: &v1alpha1.RemoteReference{Key: "app/config"},
			Rewrite: []v1alpha1.ExternalSecretRewrite{
				{Transform: &v1alpha1.RewriteTransform{Template: `{{ .value | replace "-" "_" | upper }}`}},
				rewriteRule("^", "APP_"),
			}}}
	})
	waitSecretData(t, ns, "renamed", map[string]string{"APP_DB_USER": "app", "APP_DB_PASSWORD": "pw"})
}

// TestTemplateFromSecretAndLiteral: templates kept in a Secret of the
// namespace (only the named items), and a literal whose output is a YAML
// map of keys, render the target and its annotations; a template Secret
// that does not exist yet is TemplateNotFound until it is created, and a
// change of it renders the target again.
func TestTemplateFromSecretAndLiteral(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "db", value: `{"user":"app","password":"pw"}`})
	owner := "example.com/owner: '{{ .user }}-team'"
	newES(t, ns, "rendered", "store", withDataFrom("db", ""), withTemplate(&v1alpha1.ExternalSecretTemplate{
		TemplateFrom: []v1alpha1.TemplateFrom{
			{Secret: &v1alpha1.TemplateRef{Name: "templates", Items: []v1alpha1.TemplateRefItem{
				{Key: "dsn"}, {Key: "pairs", TemplateAs: v1alpha1.TemplateScopeKeysAndValues}}}},
			{Literal: ptrTo("username: '{{ .user }}'\nport: 5432\n")},
			{Literal: &owner, Target: v1alpha1.TemplateTargetAnnotations},
		}}))
	waitCondition(t, ns, "rendered", "TemplateNotFound", `template Secret "templates" not found`)

	createSecret(t, ns, "templates", map[string]string{
		"dsn":    "postgres://{{ .user }}:{{ .password }}@db",
		"pairs":  "USER: '{{ .user | upper }}'",
		"unused": "{{ .nothing.at.all }}",
	})
	s := waitSecretData(t, ns, "rendered", map[string]string{"dsn": "postgres://app:pw@db", "USER": "APP", "username": "app", "port": "5432"})
	waitReady(t, ns, "rendered")
	if got := s.Annotations["example.com/owner"]; got != "app-team" {
		t.Errorf("annotation example.com/owner = %q, want app-team", got)
	}

	updateSecret(t, ns, "templates", func(s *corev1.Secret) { s.Data["dsn"] = []byte("mysql://{{ .user }}@db") })
	waitSecretData(t, ns, "rendered", map[string]string{"dsn": "mysql://app@db", "USER": "APP", "username": "app", "port": "5432"})
}

// TestTemplateFromItsOwnTargetIsRefused: a templateFrom Secret that is the
// ExternalSecret's own target would feed each write into the next render;
// it is refused with a condition that says so, and the target written
// before keeps its data.
func TestTemplateFromItsOwnTargetIsRefused(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "db", value: `{"user":"app"}`})
	newES(t, ns, "self", "store", withDataFrom("db", ""))
	waitSecretData(t, ns, "self", map[string]string{"user": "app"})
	updateES(t, ns, "self", func(es *v1alpha1.ExternalSecret) {
		es.Spec.Target.Template = &v1alpha1.ExternalSecretTemplate{TemplateFrom: []v1alpha1.TemplateFrom{
			{Secret: &v1alpha1.TemplateRef{Name: "self", Items: []v1alpha1.TemplateRefItem{{Key: "user"}}}}}}
	})
	waitCondition(t, ns, "self", "TemplateError", `templateFrom Secret "self" is this ExternalSecret's own target`)
	consistently(t, 2*time.Second, func() (bool, string) {
		s, err := getSecret(ns, "self")
		return err == nil && string(s.Data["user"]) == "app" && len(s.Data) == 1, "the target lost its data"
	})
}

func ptrTo[T any](v T) *T { return &v }

// The CEL rules of these fields, in TestCRDRules' list (kept here, beside
// their tests).
func init() {
	ruleCases = append(ruleCases,
		ruleCase{rule: "refreshInterval is not used with refreshPolicy OnChange or CreatedOnce", kinds: []string{kindES},
			valid: `{secretStoreRef: {name: s}, refreshPolicy: OnChange, refreshInterval: "0", data: [{secretKey: k, remoteRef: {key: k}}]}`,
			invalid: []string{`{secretStoreRef: {name: s}, refreshPolicy: OnChange, refreshInterval: 15m, data: [{secretKey: k, remoteRef: {key: k}}]}`,
				`{secretStoreRef: {name: s}, refreshPolicy: CreatedOnce, refreshInterval: 2h, data: [{secretKey: k, remoteRef: {key: k}}]}`}},
		ruleCase{rule: "immutable: true works only with creationPolicy Owner", kinds: []string{kindES},
			valid: `{secretStoreRef: {name: s}, target: {immutable: true}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
			invalid: []string{`{secretStoreRef: {name: s}, target: {creationPolicy: Merge, immutable: true}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
				`{secretStoreRef: {name: s}, target: {creationPolicy: None, immutable: true}, data: [{secretKey: k, remoteRef: {key: k}}]}`}},
		ruleCase{rule: "exactly one of the fields in [regexp transform] must be set", kinds: []string{kindES},
			valid: `{secretStoreRef: {name: s}, dataFrom: [{remoteRef: {key: k}, rewrite: [{transform: {template: "{{ .value | upper }}"}}, {regexp: {source: a, target: b}}]}]}`,
			invalid: []string{`{secretStoreRef: {name: s}, dataFrom: [{remoteRef: {key: k}, rewrite: [{}]}]}`,
				`{secretStoreRef: {name: s}, dataFrom: [{remoteRef: {key: k}, rewrite: [{transform: {template: x}, regexp: {source: a, target: b}}]}]}`}},
		ruleCase{rule: "exactly one of the fields in [configMap secret literal] must be set", kinds: []string{kindES},
			valid: `{secretStoreRef: {name: s}, target: {template: {templateFrom: [{literal: "a: b"}, {secret: {name: t, items: [{key: k}]}}, {configMap: {name: t, items: [{key: k}]}}]}}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
			invalid: []string{`{secretStoreRef: {name: s}, target: {template: {templateFrom: [{target: Labels}]}}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
				`{secretStoreRef: {name: s}, target: {template: {templateFrom: [{literal: "a: b", secret: {name: t, items: [{key: k}]}}]}}, data: [{secretKey: k, remoteRef: {key: k}}]}`}},
	)
}
