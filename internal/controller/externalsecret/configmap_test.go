package externalsecret

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

func TestSplitConfigMapDataPutsNonUTF8InBinaryData(t *testing.T) {
	data, binary := splitConfigMapData(map[string][]byte{
		"text": []byte("héllo"), "empty": {}, "bytes": {0x00, 0xff}, "half": {'a', 0xc3},
	})
	if want := map[string]string{"text": "héllo", "empty": ""}; !maps.Equal(data, want) {
		t.Errorf("data = %v, want %v", data, want)
	}
	if len(binary) != 2 || string(binary["bytes"]) != "\x00\xff" || string(binary["half"]) != "a\xc3" {
		t.Errorf("binaryData keys %v, want bytes and half as they are", keysOf(binary))
	}
	if d, b := splitConfigMapData(map[string][]byte{"a": []byte("b")}); b != nil || len(d) != 1 {
		t.Errorf("text only: binaryData %v, want nil", b)
	}
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSecretValuesRefused(t *testing.T) {
	es := func(allow bool, templateSecrets ...string) *v1alpha1.ExternalSecret {
		e := &v1alpha1.ExternalSecret{}
		e.Name = "cfg"
		e.Spec.Target.Kind, e.Spec.Target.AllowSecretValues = v1alpha1.TargetConfigMap, allow
		if len(templateSecrets) > 0 {
			e.Spec.Target.Template = &v1alpha1.ExternalSecretTemplate{}
			for _, n := range templateSecrets {
				e.Spec.Target.Template.TemplateFrom = append(e.Spec.Target.Template.TemplateFrom,
					v1alpha1.TemplateFrom{Secret: &v1alpha1.TemplateRef{Name: n}})
			}
		}
		return e
	}
	many := make([]string, 12)
	for i := range many {
		many[i] = string(rune('a' + i))
	}
	cases := []struct {
		name string
		es   *v1alpha1.ExternalSecret
		keys []string
		want []string // fragments of the refusal; nil: allowed
	}{
		{name: "every value marked not secret", es: es(false)},
		{name: "secret values without the opt-in", es: es(false), keys: []string{"/app/token"}, want: []string{`ConfigMap "cfg"`, `remote key "/app/token"`, "allowSecretValues: true"}},
		{name: "secret values with the opt-in", es: es(true), keys: []string{"/app/token"}},
		{name: "a template Secret", es: es(false, "tmpl"), want: []string{`template Secret "tmpl"`}},
		{name: "a template Secret with the opt-in", es: es(true, "tmpl")},
		{name: "many keys are counted", es: es(false), keys: many, want: []string{`remote key "j"`, "and 2 more"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := secretValuesRefused(tc.es, &engine.Result{SecretKeys: tc.keys})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var fe *failure.Error
			if !errors.As(err, &fe) || fe.Reason != failure.SecretValuesNotAllowed || !fe.Terminal {
				t.Fatalf("got %v, want a terminal SecretValuesNotAllowed", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q lacks %q", err, w)
				}
			}
		})
	}
}

// The cluster's CA bundle ConfigMap is never a target, whether named by
// target.name (which admission refuses too) or by the ExternalSecret's own
// name, and even with adopt: the refusal is terminal, before any request.
func TestClusterCABundleIsNeverATarget(t *testing.T) {
	for _, tc := range []struct{ name, target string }{{"kube-root-ca.crt", ""}, {"app", "kube-root-ca.crt"}} {
		es := &v1alpha1.ExternalSecret{}
		es.Namespace, es.Name = "ns", tc.name
		es.Spec.Target.Kind, es.Spec.Target.Name, es.Spec.Target.Adopt = v1alpha1.TargetConfigMap, tc.target, true
		_, err := (&Reconciler{}).writeOwnerConfigMap(t.Context(), es, &engine.Result{Data: map[string][]byte{"ca.crt": []byte("x")}})
		var fe *failure.Error
		if !errors.As(err, &fe) || fe.Reason != failure.TargetConflict || !fe.Terminal {
			t.Fatalf("ExternalSecret %q, target.name %q: got %v, want a terminal TargetConflict", tc.name, tc.target, err)
		}
		if !strings.Contains(err.Error(), `ConfigMap "kube-root-ca.crt"`) || !strings.Contains(err.Error(), "spec.target.name") {
			t.Errorf("the refusal %q does not name the ConfigMap and what to change", err)
		}
	}
}
