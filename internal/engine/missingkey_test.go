package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
)

// canary is a fetched value that no error may repeat.
const canary = "CANARY-s3cr3t-VALUE"

func TestTemplateMissingKeys(t *testing.T) {
	fetched := map[string]string{
		"host":  canary,
		"empty": "",
		"doc":   `{"a":{"b":"deep"},"n":null}`,
	}
	cases := []struct {
		name string
		tmpl string
		want string
		// wantErr lists what the error must say; empty means no error.
		wantErr []string
	}{
		{name: "present key, default", tmpl: `{{ .data.host | default "x" }}`, want: canary},
		{name: "present empty key, default", tmpl: `{{ .data.empty | default "x" }}`, want: "x"},
		{name: "missing key, default piped", tmpl: `{{ .data.port | default "5432" }}`, want: "5432"},
		{name: "missing key, default as argument", tmpl: `{{ default "5432" .data.port }}`, want: "5432"},
		{name: "missing key, default parenthesized", tmpl: `{{ default "5432" (.data.port) }}`, want: "5432"},
		{name: "missing key, default then another function", tmpl: `{{ .data.port | default "5432" | quote }}`, want: `"5432"`},
		{name: "missing top-level shorthand, default", tmpl: `{{ .port | default "5432" }}`, want: "5432"},
		{name: "missing key from root variable", tmpl: `{{ range $i, $e := list 1 }}{{ $.data.port | default "5432" }}{{ end }}`, want: "5432"},
		{name: "missing key in with", tmpl: `{{ with .data }}{{ .port | default "5432" }}{{ end }}`, want: "5432"},
		{name: "missing key of a variable", tmpl: `{{ $d := .data }}{{ $d.port | default "5432" }}`, want: "5432"},
		{name: "missing key of parsed JSON", tmpl: `{{ (fromJson .data.doc).a.c | default "none" }}`, want: "none"},
		{name: "present key of parsed JSON", tmpl: `{{ (fromJson .data.doc).a.b | default "none" }}`, want: "deep"},
		{name: "JSON null, default", tmpl: `{{ (fromJson .data.doc).n | default "none" }}`, want: "none"},
		{name: "missing key in a defined template", tmpl: `{{ define "port" }}{{ .data.port | default "5432" }}{{ end }}{{ template "port" . }}`, want: "5432"},
		{name: "missing key in if with default", tmpl: `{{ if eq (.data.port | default "5432") "5432" }}default{{ end }}`, want: "default"},
		{name: "present key, required", tmpl: `{{ .data.host | required "host is needed" }}`, want: canary},
		{name: "missing key, required piped", tmpl: `{{ .data.port | required "port is needed" }}`,
			wantErr: []string{`key "port" is required and missing`, "port is needed"}},
		{name: "missing key, required as argument", tmpl: `{{ required "" .data.port }}`,
			wantErr: []string{`key "port" is required and missing`}},
		{name: "present empty key, required", tmpl: `{{ required "empty is needed" .data.empty }}`,
			wantErr: []string{"empty is needed"}},
		{name: "missing key, bare", tmpl: `{{ .data.port }}`,
			wantErr: []string{`map has no entry for key "port"`}},
		{name: "missing key piped into another function", tmpl: `{{ .data.port | upper }}`,
			wantErr: []string{`map has no entry for key "port"`}},
		{name: "missing key, default on a later stage", tmpl: `{{ .data.port | trim | default "5432" }}`,
			wantErr: []string{`map has no entry for key "port"`}},
		{name: "missing key as the default's fallback", tmpl: `{{ default .data.fallback .data.host }}`,
			wantErr: []string{`map has no entry for key "fallback"`}},
		{name: "missing key in if", tmpl: `{{ if .data.port }}yes{{ end }}`,
			wantErr: []string{`map has no entry for key "port"`}},
		{name: "missing key assigned", tmpl: `{{ $p := .data.port }}{{ $p | default "5432" }}`,
			wantErr: []string{`map has no entry for key "port"`}},
		{name: "missing step before the last", tmpl: `{{ .dta.port | default "5432" }}`,
			wantErr: []string{`map has no entry for key "dta"`}},
		{name: "key of a string value", tmpl: `{{ .data.host.port | default "5432" }}`,
			wantErr: []string{`cannot read key "port": not a map`}},
		{name: "missing key in a defined template, bare", tmpl: `{{ define "port" }}{{ .data.port }}{{ end }}{{ template "port" . }}`,
			wantErr: []string{`map has no entry for key "port"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := render(t, map[string]string{"out": tc.tmpl}, fetched)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if got := string(out["out"]); got != tc.want {
					t.Fatalf("out = %q, want %q", got, tc.want)
				}
				return
			}
			assertTemplateError(t, err, `template "out"`, tc.wantErr...)
		})
	}
}

// TestTemplateFromMissingKeys: templateFrom items take the same path as
// template data.
func TestTemplateFromMissingKeys(t *testing.T) {
	spec := &v1alpha1.ExternalSecretSpec{
		DataFrom: []v1alpha1.ExternalSecretDataFrom{{RemoteRef: &v1alpha1.RemoteReference{Key: "src"}}},
		Target: v1alpha1.ExternalSecretTarget{Template: &v1alpha1.ExternalSecretTemplate{
			TemplateFrom: []v1alpha1.TemplateFrom{{ConfigMap: &v1alpha1.TemplateRef{Name: "cm",
				Items: []v1alpha1.TemplateRefItem{{Key: "app.properties"}}}}},
		}},
	}
	objs := map[Ref]Object{{Key: "src"}: {Fields: map[string][]byte{"host": []byte(canary)}}}
	cases := []struct {
		name    string
		text    string
		want    string
		wantErr []string
	}{
		{name: "default", text: `port={{ .data.port | default "5432" }}`, want: "port=5432"},
		{name: "required", text: `port={{ .data.port | required "" }}`, wantErr: []string{`key "port" is required and missing`}},
		{name: "bare", text: `port={{ .data.port }}`, wantErr: []string{`map has no entry for key "port"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Render(spec, objs, map[string]map[string]string{"cm": {"app.properties": tc.text}}, time.Time{})
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if got := string(res.Data["app.properties"]); got != tc.want {
					t.Fatalf("app.properties = %q, want %q", got, tc.want)
				}
				return
			}
			assertTemplateError(t, err, `template "app.properties"`, tc.wantErr...)
		})
	}
}

// assertTemplateError checks that err is a terminal TemplateError that
// names the template (name), says every part of want and never repeats
// the canary.
func assertTemplateError(t *testing.T, err error, name string, want ...string) {
	t.Helper()
	var te *TemplateError
	if !errors.As(err, &te) {
		t.Fatalf("want a TemplateError, got %v", err)
	}
	for _, w := range append([]string{name}, want...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), canary) {
		t.Errorf("error %q repeats a fetched value", err)
	}
	if !failure.Terminal(err) {
		t.Error("a template error must not be retried")
	}
}
