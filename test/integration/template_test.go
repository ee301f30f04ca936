package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func TestDockerConfigJSONSecret(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "registry", value: `{"host":"registry.example.com","user":"robot","token":"t0k3n"}`})
	newES(t, ns, "pull", "store", withDataFrom("registry", ""), withTemplate(&v1alpha1.ExternalSecretTemplate{
		Type: string(corev1.SecretTypeDockerConfigJson),
		Data: map[string]string{".dockerconfigjson": `{{ dockerConfigJson .data.host .data.user .data.token }}`},
		Metadata: v1alpha1.ExternalSecretTemplateMetadata{
			Labels:      map[string]string{"team": "platform"},
			Annotations: map[string]string{"registry": "{{ .data.host }}"},
		},
	}))
	waitReady(t, ns, "pull")
	s, err := getSecret(ns, "pull")
	must(t, err)
	if s.Type != corev1.SecretTypeDockerConfigJson || s.Labels["team"] != "platform" || s.Annotations["registry"] != "registry.example.com" {
		t.Fatalf("type %s, labels %v, annotations %v", s.Type, s.Labels, s.Annotations)
	}
	var doc map[string]map[string]map[string]string
	must(t, json.Unmarshal(s.Data[".dockerconfigjson"], &doc))
	if doc["auths"]["registry.example.com"]["password"] != "t0k3n" {
		t.Fatal("dockerconfigjson lacks the registry's credentials")
	}
}

func TestTemplateFromConfigMapRerendersOnChange(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	other := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "db", value: `{"user":"app","password":"pw","host":"db.internal"}`})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "templates"},
		Data: map[string]string{"application.properties": "jdbc.url=jdbc:postgresql://{{ .data.host }}/app\njdbc.user={{ .data.user }}\n"}}
	must(t, k8s.Create(context.Background(), cm))
	// A ConfigMap of the same name elsewhere must never be used.
	must(t, k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "elsewhere"},
		Data: map[string]string{"x": "{{ .data.password }}"}}))
	newES(t, ns, "cfg", "store", withDataFrom("db", ""), withTemplate(&v1alpha1.ExternalSecretTemplate{
		TemplateFrom: []v1alpha1.TemplateFrom{{ConfigMap: &v1alpha1.TemplateRef{Name: "templates", Items: []v1alpha1.TemplateRefItem{{Key: "application.properties"}}}}},
	}))
	waitSecretData(t, ns, "cfg", map[string]string{"application.properties": "jdbc.url=jdbc:postgresql://db.internal/app\njdbc.user=app\n"})

	cm.Data["application.properties"] = "jdbc.url=jdbc:postgresql://{{ .data.host }}:5432/app\n"
	must(t, k8s.Update(context.Background(), cm))
	waitSecretData(t, ns, "cfg", map[string]string{"application.properties": "jdbc.url=jdbc:postgresql://db.internal:5432/app\n"})

	newES(t, ns, "cross", "store", withDataFrom("db", ""), withTemplate(&v1alpha1.ExternalSecretTemplate{
		TemplateFrom: []v1alpha1.TemplateFrom{{ConfigMap: &v1alpha1.TemplateRef{Name: "elsewhere", Items: []v1alpha1.TemplateRefItem{{Key: "x"}}}}},
	}))
	waitCondition(t, ns, "cross", "TemplateNotFound", `template ConfigMap "elsewhere" not found in namespace "`+ns+`"`)
}

// TestInvalidRenderedLabelNamesKeyNotValue: a label rendered from a
// secret value that is no valid label value fails in the engine, before
// the API server could repeat the value, and the target keeps its data.
func TestInvalidRenderedLabelNamesKeyNotValue(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	// The space makes the value an invalid label value.
	value := sentinel + " with spaces"
	fakeStore(t, ns, "store", fakeEntry{key: "db", value: `{"password":"` + value + `","team":"payments"}`})
	newES(t, ns, "es", "store", withDataFrom("db", ""), withTemplate(&v1alpha1.ExternalSecretTemplate{
		Data:     map[string]string{"password": "{{ .data.password }}"},
		Metadata: v1alpha1.ExternalSecretTemplateMetadata{Labels: map[string]string{"team": "{{ .data.team }}"}},
	}))
	waitReady(t, ns, "es")
	waitSecretData(t, ns, "es", map[string]string{"password": value})

	updateES(t, ns, "es", func(es *v1alpha1.ExternalSecret) {
		es.Spec.Target.Template.Metadata.Labels["owner"] = "{{ .data.password }}"
	})
	es := waitCondition(t, ns, "es", "TemplateError", `template label "owner"`, "rendered value is not a valid label value")
	if es.Status.Phase != v1alpha1.PhaseFailed {
		t.Errorf("phase = %s, want %s", es.Status.Phase, v1alpha1.PhaseFailed)
	}
	consistently(t, 2*time.Second, func() (bool, string) {
		s, err := getSecret(ns, "es")
		if err != nil {
			return false, err.Error()
		}
		_, hasOwner := s.Labels["owner"]
		return string(s.Data["password"]) == value && len(s.Data) == 1 && s.Labels["team"] == "payments" && !hasOwner,
			"the target lost its last good data or labels"
	})
	assertNoLeak(t, ns)
}
