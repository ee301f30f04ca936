package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func literal(s string, target v1alpha1.TemplateTarget) v1alpha1.TemplateFrom {
	return v1alpha1.TemplateFrom{Literal: &s, Target: target}
}

// TestTemplateFrom: literals, Secret sources, KeysAndValues items and the
// Labels and Annotations targets render as External Secrets Operator's
// do; template.data wins over templateFrom.
func TestTemplateFrom(t *testing.T) {
	fetched := map[string][]byte{"user": []byte("app"), "password": []byte("SECRET-PW"), "team": []byte("payments")}
	sources := map[string]map[string]string{
		SecretSourceKey("tpl"): {"dsn": "postgres://{{ .user }}:{{ .password }}@db", "pairs": "A: '{{ .user }}'\nB: 5432\nC: true\n"},
		"cm":                   {"dsn": "from the ConfigMap"},
	}
	cases := []struct {
		name      string
		tmpl      v1alpha1.ExternalSecretTemplate
		want      map[string]string
		wantLabel map[string]string
		wantAnn   map[string]string
		wantErr   string
	}{
		{name: "literal into data", tmpl: v1alpha1.ExternalSecretTemplate{TemplateFrom: []v1alpha1.TemplateFrom{
			literal("username: {{ .user }}\nconfig.yaml: |\n  password: {{ .password }}\n", "")}},
			want: map[string]string{"username": "app", "config.yaml": "password: SECRET-PW\n"}},
		{name: "Secret source, Values and KeysAndValues", tmpl: v1alpha1.ExternalSecretTemplate{TemplateFrom: []v1alpha1.TemplateFrom{
			{Secret: &v1alpha1.TemplateRef{Name: "tpl", Items: []v1alpha1.TemplateRefItem{{Key: "dsn"}, {Key: "pairs", TemplateAs: v1alpha1.TemplateScopeKeysAndValues}}}}}},
			want: map[string]string{"dsn": "postgres://app:SECRET-PW@db", "A": "app", "B": "5432", "C": "true"}},
		{name: "a later entry wins, data wins over all", tmpl: v1alpha1.ExternalSecretTemplate{
			TemplateFrom: []v1alpha1.TemplateFrom{
				{Secret: &v1alpha1.TemplateRef{Name: "tpl", Items: []v1alpha1.TemplateRefItem{{Key: "dsn"}}}},
				{ConfigMap: &v1alpha1.TemplateRef{Name: "cm", Items: []v1alpha1.TemplateRefItem{{Key: "dsn"}}}},
				literal("extra: one\nfinal: literal", "")},
			Data: map[string]string{"final": "from data"}},
			want: map[string]string{"dsn": "from the ConfigMap", "extra": "one", "final": "from data"}},
		{name: "labels and annotations", tmpl: v1alpha1.ExternalSecretTemplate{
			TemplateFrom: []v1alpha1.TemplateFrom{
				literal("team: '{{ .team }}'\ntier: gold", v1alpha1.TemplateTargetLabels),
				literal("example.com/owner: '{{ .team }}'", v1alpha1.TemplateTargetAnnotations)},
			Metadata:    v1alpha1.ExternalSecretTemplateMetadata{Labels: map[string]string{"tier": "silver"}},
			MergePolicy: v1alpha1.TemplateMergeMerge},
			// Only metadata is templated; Merge keeps the fetched data.
			want:      map[string]string{"user": "app", "password": "SECRET-PW", "team": "payments"},
			wantLabel: map[string]string{"team": "payments", "tier": "silver"}, wantAnn: map[string]string{"example.com/owner": "payments"}},
		{name: "labels only, Replace: no data, as in ESO", tmpl: v1alpha1.ExternalSecretTemplate{TemplateFrom: []v1alpha1.TemplateFrom{
			literal("tier: gold", v1alpha1.TemplateTargetLabels)}},
			want: map[string]string{}, wantLabel: map[string]string{"tier": "gold"}},
		{name: "a label value that is not one", tmpl: v1alpha1.ExternalSecretTemplate{TemplateFrom: []v1alpha1.TemplateFrom{
			literal("team: '{{ .password }} x'", v1alpha1.TemplateTargetLabels)}},
			wantErr: `template "templateFrom[0].literal": in the rendered output, a label value is not a valid label value`},
		{name: "output that is not a map", tmpl: v1alpha1.ExternalSecretTemplate{TemplateFrom: []v1alpha1.TemplateFrom{
			literal("- {{ .password }}", "")}},
			wantErr: `template "templateFrom[0].literal": rendered output is not a YAML map of keys to values`},
		{name: "output that is not YAML", tmpl: v1alpha1.ExternalSecretTemplate{TemplateFrom: []v1alpha1.TemplateFrom{
			literal("a: [{{ .password }}", "")}},
			wantErr: `template "templateFrom[0].literal": rendered output is not YAML`},
		{name: "a nested value", tmpl: v1alpha1.ExternalSecretTemplate{TemplateFrom: []v1alpha1.TemplateFrom{
			literal("a:\n  b: {{ .password }}", "")}},
			wantErr: `a rendered value is a list or a map`},
		{name: "a key that is not a Secret key", tmpl: v1alpha1.ExternalSecretTemplate{TemplateFrom: []v1alpha1.TemplateFrom{
			literal("'a b': x", "")}},
			wantErr: `template "templateFrom[0].literal": in the rendered output, a key is not a valid Secret key`},
		{name: "a missing Secret", tmpl: v1alpha1.ExternalSecretTemplate{TemplateFrom: []v1alpha1.TemplateFrom{
			{Secret: &v1alpha1.TemplateRef{Name: "gone", Items: []v1alpha1.TemplateRefItem{{Key: "x"}}}}}},
			wantErr: `template "gone": Secret not found`},
		{name: "a missing item", tmpl: v1alpha1.ExternalSecretTemplate{TemplateFrom: []v1alpha1.TemplateFrom{
			{Secret: &v1alpha1.TemplateRef{Name: "tpl", Items: []v1alpha1.TemplateRefItem{{Key: "nope"}}}}}},
			wantErr: `Secret "tpl" has no key "nope"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &v1alpha1.ExternalSecretSpec{DataFrom: []v1alpha1.ExternalSecretDataFrom{{RemoteRef: &v1alpha1.RemoteReference{Key: "src"}}},
				Target: v1alpha1.ExternalSecretTarget{Template: &tc.tmpl}}
			res, err := Render(spec, map[Ref]Object{{Key: "src"}: {Fields: fetched}}, sources, time.Time{})
			if tc.wantErr != "" {
				var te *TemplateError
				if !errors.As(err, &te) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a TemplateError with %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "SECRET-PW") {
					t.Errorf("the error %q holds a value", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Data) != len(tc.want) {
				t.Errorf("keys = %v, want %v", keysOf(res.Data), tc.want)
			}
			for k, v := range tc.want {
				if string(res.Data[k]) != v {
					t.Errorf("%s = %q, want %q", k, res.Data[k], v)
				}
			}
			for k, v := range tc.wantLabel {
				if res.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, res.Labels[k], v)
				}
			}
			for k, v := range tc.wantAnn {
				if res.Annotations[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, res.Annotations[k], v)
				}
			}
		})
	}
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// FuzzTemplateFromLiteral feeds literal templates and fetched values to
// templateFrom. Properties: no panic; an error is a TemplateError; a
// fetched value never reaches an error message; every data key written is
// a valid Secret key.
func FuzzTemplateFromLiteral(f *testing.F) {
	const canary = "CANARY-9c1e"
	for _, s := range []string{
		"a: '{{ .v }}'", "a: {{ .v }}\nb: 2", "- {{ .v }}", "a: [{{ .v }}", "{{ .v }}: x", "a:\n  b: {{ .v }}", "", "null", "'': x",
	} {
		f.Add(s, canary)
		f.Add(s, canary+": x\n- y")
		f.Add(s, canary+" x")
	}
	f.Fuzz(func(t *testing.T, lit, value string) {
		if !strings.Contains(value, canary) {
			return
		}
		spec := &v1alpha1.ExternalSecretSpec{DataFrom: []v1alpha1.ExternalSecretDataFrom{{RemoteRef: &v1alpha1.RemoteReference{Key: "src"}}},
			Target: v1alpha1.ExternalSecretTarget{Template: &v1alpha1.ExternalSecretTemplate{TemplateFrom: []v1alpha1.TemplateFrom{literal(lit, "")}}}}
		res, err := Render(spec, map[Ref]Object{{Key: "src"}: {Fields: map[string][]byte{"v": []byte(value)}}}, nil, time.Time{})
		if err != nil {
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("err = %v (%T), want a TemplateError", err, err)
			}
			if strings.Contains(err.Error(), "CANARY") && !strings.Contains(lit, "CANARY") {
				t.Fatalf("the error %q holds the fetched value", err)
			}
			return
		}
		for k := range res.Data {
			if !validSecretKey(k) {
				t.Fatalf("key %q is not a Secret key", k)
			}
		}
	})
}
