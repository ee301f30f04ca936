package cli

import (
	"bytes"
	"strings"
	"testing"
)

const manifest = `apiVersion: external-secrets.x-k8s.io/v1alpha1
kind: ExternalSecret
metadata: {name: app, namespace: demo}
spec:
  secretStoreRef: {name: store}
  target:
    template:
      type: kubernetes.io/basic-auth
      metadata:
        labels: {team: '{{ .data.team }}'}
      data:
        username: '{{ .data.user }}'
        password: '{{ .data.password }}'
        dsn: 'postgres://{{ .data.user }}:{{ .data.password }}@{{ .data.host }}'
  data:
  - secretKey: team
    remoteRef: {key: meta, property: team}
  - secretKey: host
    remoteRef: {key: db/conn, property: host}
  dataFrom:
  - remoteRef: {key: db/creds}
`

const samples = `
db/creds: {user: app, password: s3cret-sample}
db/conn: '{"host": "db.internal", "port": 5432}'
meta: {team: payments}
`

func TestTemplateRendersWithoutValuesUnlessAsked(t *testing.T) {
	var out bytes.Buffer
	if err := Template(TemplateInput{ExternalSecret: []byte(manifest), Data: []byte(samples)}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{`Secret "app" (type kubernetes.io/basic-auth)`, "team: (8 bytes)", "dsn: (", "password: (13 bytes)", "values hidden"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "s3cret-sample") {
		t.Errorf("a value was printed without --show-values:\n%s", got)
	}
	out.Reset()
	if err := Template(TemplateInput{ExternalSecret: []byte(manifest), Data: []byte(samples), ShowValues: true}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `dsn: "postgres://app:s3cret-sample@db.internal"`) || !strings.Contains(out.String(), `team: "payments"`) {
		t.Errorf("--show-values output:\n%s", out.String())
	}
}

func TestTemplateSaysWhatIsWrong(t *testing.T) {
	cases := []struct {
		name, manifest, samples, want string
	}{
		{"missing sample", manifest, `db/creds: {user: app}`, `the sample data has no remote key "meta"`},
		{"missing property", manifest, strings.Replace(samples, "team: payments", "owner: payments", 1), `property "team"`},
		{"template error", strings.Replace(manifest, "{{ .data.user }}'", "{{ .data.user | nosuchfunc }}'", 1), samples, "nosuchfunc"},
		{"unknown field", strings.Replace(manifest, "secretStoreRef", "secretStorRef", 1), samples, "secretStorRef"},
		{"not an ExternalSecret", strings.Replace(manifest, "kind: ExternalSecret", "kind: PushSecret", 1), samples, "not an ExternalSecret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Template(TemplateInput{ExternalSecret: []byte(tc.manifest), Data: []byte(tc.samples)}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret-sample") {
				t.Errorf("the error repeats a value: %v", err)
			}
		})
	}
}
