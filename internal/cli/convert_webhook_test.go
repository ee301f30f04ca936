package cli

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestConvertWebhook converts ESO's webhook blocks: the fields carried,
// one entry of secrets per key the templates read, and a finding for
// what is not carried; what is written passes the CRD's schema and CEL.
func TestConvertWebhook(t *testing.T) {
	crds := loadCRDs(t)
	type finding struct {
		sev  Severity
		path string
	}
	const p = "spec.provider.webhook"
	for _, tc := range []struct {
		name     string
		kind     string
		provider string
		written  bool
		want     []finding
		has      []string
		hasNot   []string
	}{
		{
			name: "ESO's documented example",
			provider: `webhook: {url: "http://httpbin.org/get?parameter={{ .remoteRef.key }}", result: {jsonPath: "$.args.parameter"},
      headers: {Content-Type: application/json, Authorization: 'Basic {{ print .auth.username ":" .auth.password | b64enc }}'},
      secrets: [{name: auth, secretRef: {name: webhook-credentials}}]}`,
			written: true,
			has: []string{"jsonPath: $.args.parameter", "key: password", "key: username", "name: webhook-credentials",
				"url: http://httpbin.org/get?parameter={{ .remoteRef.key }}"},
		},
		{
			name: "POST with a body, index, timeout and a CA from a ConfigMap",
			kind: "ClusterSecretStore",
			provider: `webhook: {url: "https://api.example.com/lookup", method: POST, timeout: 5s,
      body: '{"key": "{{ .remoteRef.key }}", "token": "{{ index .creds "api-key" }}"}',
      caProvider: {type: ConfigMap, name: ca, key: ca.crt, namespace: infra},
      secrets: [{name: creds, secretRef: {name: api, namespace: infra}}]}`,
			written: true,
			has:     []string{"method: POST", "timeout: 5s", "key: api-key", "namespace: infra", "type: ConfigMap"},
		},
		{
			name:     "property in a template, NTLM and an unused secret",
			provider: `webhook: {url: "https://api.example.com/s/{{ .remoteRef.key }}/{{ .remoteRef.property }}", auth: {ntlm: {}}, secrets: [{name: unused, secretRef: {name: x}}]}`,
			written:  true,
			want:     []finding{{Dropped, p + ".url"}, {Dropped, p + ".auth"}, {Dropped, p + ".secrets[0]"}},
			hasNot:   []string{"secrets:"},
		},
		{
			name:     "a body on GET and a long timeout",
			provider: `webhook: {url: "https://api.example.com/s/{{ .remoteRef.key }}", body: "{}", timeout: 2m}`,
			written:  true,
			want:     []finding{{Dropped, p + ".body"}, {Dropped, p + ".timeout"}},
		},
		{
			name:     "a method Watchword does not read with",
			provider: `webhook: {url: "https://api.example.com/s", method: PUT}`,
			want:     []finding{{Dropped, p + ".method"}},
		},
		{
			name:     "no url",
			provider: `webhook: {method: GET}`,
			want:     []finding{{Dropped, p + ".url"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, ns := tc.kind, ""
			if kind == "" {
				kind, ns = "SecretStore", ", namespace: team-a"
			}
			doc := fmt.Sprintf("apiVersion: external-secrets.io/v1\nkind: %s\nmetadata: {name: s%s}\nspec:\n  provider:\n    %s\n", kind, ns, tc.provider)
			res, err := Convert([]ConvertInput{{Name: "case.yaml", Data: []byte(doc)}})
			if err != nil {
				t.Fatal(err)
			}
			var got []finding
			for _, f := range res.Findings {
				got = append(got, finding{f.Severity, f.Path})
			}
			sortFindings := func(fs []finding) []finding {
				fs = slices.Clone(fs)
				slices.SortFunc(fs, func(a, b finding) int { return strings.Compare(string(a.sev)+a.path, string(b.sev)+b.path) })
				return fs
			}
			if !slices.Equal(sortFindings(got), sortFindings(tc.want)) {
				t.Errorf("findings:\n%s\nwant (severity, path): %v", findingsText(res.Findings), tc.want)
			}
			if written := len(res.Output) > 0; written != tc.written {
				t.Fatalf("store written: %v, want %v\n%s", written, tc.written, res.Output)
			}
			if !tc.written {
				return
			}
			var obj map[string]any
			if err := yaml.Unmarshal(res.Output, &obj); err != nil {
				t.Fatal(err)
			}
			if errs := crds[kind].check(obj); len(errs) > 0 {
				t.Errorf("the CRD refuses the converted store: %v\n%s", errs.ToAggregate(), res.Output)
			}
			for _, s := range tc.has {
				if !strings.Contains(string(res.Output), s) {
					t.Errorf("the store does not hold %q:\n%s", s, res.Output)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(string(res.Output), s) {
					t.Errorf("the store holds %q:\n%s", s, res.Output)
				}
			}
		})
	}
}
