package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// renderMetadataOf renders a template that has only labels and
// annotations, over fetched.
func renderMetadataOf(t *testing.T, labels, annotations, fetched map[string]string) (*Result, error) {
	t.Helper()
	fields := map[string][]byte{}
	for k, v := range fetched {
		fields[k] = []byte(v)
	}
	spec := &v1alpha1.ExternalSecretSpec{
		DataFrom: []v1alpha1.ExternalSecretDataFrom{{RemoteRef: &v1alpha1.RemoteReference{Key: "src"}}},
		Target: v1alpha1.ExternalSecretTarget{Template: &v1alpha1.ExternalSecretTemplate{
			Metadata: v1alpha1.ExternalSecretTemplateMetadata{Labels: labels, Annotations: annotations},
		}},
	}
	return Render(spec, map[Ref]Object{{Key: "src"}: {Fields: fields}}, nil, time.Time{})
}

func TestTemplateMetadataIsValidated(t *testing.T) {
	fetched := map[string]string{
		"team":    "payments",
		"spaced":  "not a label " + canary,
		"long":    strings.Repeat("a", 60) + "-" + strings.ToLower(canary[:6]),
		"dashEnd": "payments-",
		"big":     canary + strings.Repeat("x", 256<<10),
	}
	const labelValueProblem = "rendered value is not a valid label value (at most 63 characters: letters, digits, '-', '_', '.'; must start and end with a letter or digit)"
	cases := []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		wantLabels  map[string]string
		wantAnn     map[string]string
		// wantErr is the whole error; empty means none.
		wantErr string
		// wantErrPrefix is used instead of wantErr where the end of the
		// message is text/template's or apimachinery's.
		wantErrPrefix string
	}{
		{name: "valid label from data", labels: map[string]string{"team": "{{ .data.team }}", "example.com/tier": "gold"},
			wantLabels: map[string]string{"team": "payments", "example.com/tier": "gold"}},
		{name: "empty label value", labels: map[string]string{"team": `{{ .data.none | default "" }}`},
			wantLabels: map[string]string{"team": ""}},
		{name: "label value with spaces", labels: map[string]string{"team": "{{ .data.spaced }}"},
			wantErr: `template label "team": ` + labelValueProblem},
		{name: "label value too long", labels: map[string]string{"team": "{{ .data.long }}"},
			wantErr: `template label "team": ` + labelValueProblem},
		{name: "label value ending in a dash", labels: map[string]string{"team": "{{ .data.dashEnd }}"},
			wantErr: `template label "team": ` + labelValueProblem},
		{name: "label key invalid", labels: map[string]string{"bad key": "x"},
			wantErrPrefix: `template label "bad key": is not a valid label key: name part must consist of`},
		{name: "label template fails", labels: map[string]string{"team": "{{ .data.spaced | b64dec }}"},
			wantErrPrefix: `template label "team": failed: `},
		{name: "label template does not parse", labels: map[string]string{"team": "{{ .data.team "},
			wantErrPrefix: `template label "team": does not parse: `},
		{name: "annotation value is free text", annotations: map[string]string{"example.com/note": "{{ .data.spaced }}"},
			wantAnn: map[string]string{"example.com/note": fetched["spaced"]}},
		{name: "annotation key in upper case", annotations: map[string]string{"Example.com/Note": "x"},
			wantAnn: map[string]string{"Example.com/Note": "x"}},
		{name: "annotation key invalid", annotations: map[string]string{"a/b/c": "{{ .data.team }}"},
			wantErrPrefix: `template annotation "a/b/c": is not a valid annotation key: `},
		{name: "annotation template fails", annotations: map[string]string{"note": "{{ .data.missing }}"},
			wantErrPrefix: `template annotation "note": failed: `},
		{name: "annotations too large", annotations: map[string]string{"note": "{{ .data.big }}"},
			wantErr: `template "metadata.annotations": rendered annotations are larger than 262144 bytes in total (keys and values)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := renderMetadataOf(t, tc.labels, tc.annotations, fetched)
			if tc.wantErr == "" && tc.wantErrPrefix == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if !equalMaps(res.Labels, tc.wantLabels) || !equalMaps(res.Annotations, tc.wantAnn) {
					t.Fatalf("labels %v, annotations %v", res.Labels, res.Annotations)
				}
				return
			}
			assertTemplateError(t, err, "")
			if tc.wantErr != "" && err.Error() != tc.wantErr {
				t.Errorf("error = %q\nwant    %q", err, tc.wantErr)
			}
			if tc.wantErrPrefix != "" && !strings.HasPrefix(err.Error(), tc.wantErrPrefix) {
				t.Errorf("error = %q\nwant it to start with %q", err, tc.wantErrPrefix)
			}
			for _, v := range fetched {
				if v != "payments" && strings.Contains(err.Error(), v) {
					t.Errorf("error %q repeats a fetched value", err)
				}
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
