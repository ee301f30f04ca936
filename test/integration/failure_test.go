package integration

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// goodThenBad syncs an ExternalSecret, breaks something, and checks that
// the target keeps its data while the condition says what is wrong.
func goodThenBad(t *testing.T, breakIt func(ns string), reason string, phase v1alpha1.ExternalSecretPhase, fragments ...string) string {
	t.Helper()
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "db", value: `{"password":"` + sentinel + `"}`})
	newES(t, ns, "es", "store", withData("password", "db", "password"))
	waitReady(t, ns, "es")
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel})
	breakIt(ns)
	es := waitCondition(t, ns, "es", reason, fragments...)
	if es.Status.Phase != phase {
		t.Errorf("phase = %s, want %s", es.Status.Phase, phase)
	}
	consistently(t, 2*time.Second, func() (bool, string) {
		s, err := getSecret(ns, "es")
		return err == nil && string(s.Data["password"]) == sentinel && len(s.Data) == 1, "the target lost its last good data"
	})
	assertNoLeak(t, ns)
	return ns
}

func TestProviderErrorKeepsLastGoodData(t *testing.T) {
	parallel(t)
	ns := goodThenBad(t, func(ns string) {
		updateStore(t, ns, "store", func(s *v1alpha1.SecretStore) {
			s.Spec.Fake.Error = &v1alpha1.FakeProviderError{Reason: "Unavailable", Message: "backend is down for maintenance"}
		})
	}, "StoreUnavailable", v1alpha1.PhaseFailing, `SecretStore "`, `remote key "db"`, "backend is down for maintenance")
	// Recovery once the store answers again.
	updateStore(t, ns, "store", func(s *v1alpha1.SecretStore) { s.Spec.Fake.Error = nil })
	waitReady(t, ns, "es")
}

func TestBadTemplateKeepsLastGoodData(t *testing.T) {
	parallel(t)
	goodThenBad(t, func(ns string) {
		updateES(t, ns, "es", func(es *v1alpha1.ExternalSecret) {
			es.Spec.Target.Template = &v1alpha1.ExternalSecretTemplate{Data: map[string]string{"url": "postgres://{{ .data.password "}}
		})
	}, "TemplateError", v1alpha1.PhaseFailed, `template "url"`, "does not parse")
}

func TestTemplateFunctionErrorNamesKeyNotValue(t *testing.T) {
	parallel(t)
	goodThenBad(t, func(ns string) {
		updateES(t, ns, "es", func(es *v1alpha1.ExternalSecret) {
			es.Spec.Target.Template = &v1alpha1.ExternalSecretTemplate{Data: map[string]string{"decoded": "{{ .data.password | b64dec }}"}}
		})
	}, "TemplateError", v1alpha1.PhaseFailed, `template "decoded"`, "b64dec: input is not valid base64")
}

func TestMissingPropertyNamesKeyAndProperty(t *testing.T) {
	parallel(t)
	goodThenBad(t, func(ns string) {
		updateES(t, ns, "es", func(es *v1alpha1.ExternalSecret) { es.Spec.Data[0].RemoteRef.Property = "user.name" })
	}, "PropertyError", v1alpha1.PhaseFailing, `remote key "db"`, `property "user.name"`, `no field "user"`)
}

func TestMissingKeyIsNamed(t *testing.T) {
	parallel(t)
	goodThenBad(t, func(ns string) {
		updateES(t, ns, "es", func(es *v1alpha1.ExternalSecret) { es.Spec.Data[0].RemoteRef.Key = "db-typo" })
	}, "NotFound", v1alpha1.PhaseFailing, `"db-typo"`, "does not exist")
}

func TestMissingVersionIsNamed(t *testing.T) {
	parallel(t)
	goodThenBad(t, func(ns string) {
		updateES(t, ns, "es", func(es *v1alpha1.ExternalSecret) { es.Spec.Data[0].RemoteRef.Version = "9" })
	}, "NotFound", v1alpha1.PhaseFailing, `"db"`, `no version "9"`)
}

func TestMissingStoreKeepsLastGoodData(t *testing.T) {
	parallel(t)
	goodThenBad(t, func(ns string) {
		updateES(t, ns, "es", func(es *v1alpha1.ExternalSecret) { es.Spec.SecretStoreRef.Name = "nope" })
	}, "StoreNotFound", v1alpha1.PhasePending, `SecretStore "nope" not found`)
}

// TestSeedAWSStoreWaitsForItsCredentials: seed 004's own awssm store, now
// that the provider exists, waits for the credentials Secret it names.
// (A provider block of the API that a build lacks is reported as
// ProviderNotImplemented: internal/provider's Registry.Lookup tests.)
func TestSeedAWSStoreWaitsForItsCredentials(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	u := loadSeed(t, "testdata/seed-secretstore.yaml", ns)
	u.Object["metadata"] = map[string]any{"name": "aws", "namespace": ns}
	unstructuredSetController(u)
	must(t, k8s.Create(context.Background(), u))
	waitStoreWaiting(t, &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws"}}, "awssm-secret")
}

// assertNoLeak checks that no event or condition in ns holds the sentinel.
