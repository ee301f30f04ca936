package agent

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const goodConfig = `
kind: AgentConfig
refreshInterval: 30s
stores:
  - name: vault
    vault:
      server: http://127.0.0.1:8200
      auth:
        tokenSecretRef: {name: vault-token, key: token}
credentials:
  - secret: vault-token
    key: token
    file: /etc/watchword/vault-token
deliveries:
  - directory: /run/app/secrets
    store: vault
    files:
      - name: password
        remoteRef: {key: app/db, property: password}
    onChange:
      signal: HUP
      pidFile: /run/app.pid
`

func TestParseConfigAcceptsAndDefaults(t *testing.T) {
	cfg, err := ParseConfig("good.yaml", []byte(goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Deliveries[0]
	if d.Mode != DefaultMode {
		t.Errorf("mode = %q, want the default %q", d.Mode, DefaultMode)
	}
	if cfg.RefreshInterval.Duration != 30*time.Second {
		t.Errorf("refreshInterval = %v", cfg.RefreshInterval.Duration)
	}
	if cfg.Stores[0].Vault == nil || cfg.Stores[0].Vault.Auth.TokenSecretRef.Name != "vault-token" {
		t.Errorf("the vault block was not decoded as SecretStore.spec's: %+v", cfg.Stores[0])
	}
	if cfg.ServiceAccountTokenFile != DefaultTokenFile {
		t.Errorf("serviceAccountTokenFile = %q", cfg.ServiceAccountTokenFile)
	}
}

func TestParseConfigListsEveryProblemWithItsPath(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "unknown fields at several depths and a repeated key",
			yaml: `
kind: AgentConfig
refreshIntervall: 1m
stores:
  - name: v
    vault: {server: http://x, servr: y, auth: {tokenSecretRef: {name: a, key: b}}}
deliveries:
  - directory: /d
    store: v
    store: v
    files: [{name: f, remoteRef: {key: k, propery: p}}]
`,
			want: []string{
				`unknown field "refreshIntervall"`,
				`unknown field "stores[0].vault.servr"`,
				`unknown field "deliveries[0].files[0].remoteRef.propery"`,
				`deliveries[0].store: repeated key (line 10, first at line 9)`,
			},
		},
		{
			name: "semantic problems",
			yaml: `
kind: Agent
stores:
  - name: v
  - name: v
    fake: {}
deliveries:
  - directory: rel
    store: missing
    files: [{name: "../x", remoteRef: {key: ""}}, {name: "..data", remoteRef: {key: k}}]
    mode: "0999"
    owner: no-such-user-here
    onChange: {command: [/bin/true], signal: HUP}
  - directory: /a
    store: v
    files: [{name: f, remoteRef: {key: k}}]
  - directory: /a/
    store: v
    files: [{name: f, remoteRef: {key: k}}]
    onChange: {signal: HUP}
`,
			want: []string{
				"kind: must be AgentConfig",
				"stores[0]: exactly one provider block (such as vault) must be set, found 0",
				`stores[1].name: store "v" is defined twice`,
				"deliveries[0].directory: must be an absolute path",
				`deliveries[0].store: no store named "missing" in stores`,
				"deliveries[0].files[0].name: must be a plain file name",
				"deliveries[0].files[0].remoteRef.key: required",
				"deliveries[0].files[1].name: must not start with ..",
				`deliveries[0].mode: must be an octal file mode`,
				`deliveries[0].owner: no user "no-such-user-here"`,
				"deliveries[0].onChange: set exactly one of command or signal",
				"deliveries[2].directory: already used by deliveries[1]",
				"deliveries[2].onChange: a signal needs exactly one of pidFile or process",
			},
		},
		{
			name: "nothing to deliver",
			yaml: "kind: AgentConfig\n",
			want: []string{"deliveries: at least one delivery (or kubernetes) is required"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("c.yaml", []byte(tc.yaml))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("want a *ConfigError, got %v", err)
			}
			if len(ce.Problems) != len(tc.want) {
				t.Errorf("got %d problems, want %d:\n%s", len(ce.Problems), len(tc.want), strings.Join(ce.Problems, "\n"))
			}
			for _, w := range tc.want {
				found := false
				for _, p := range ce.Problems {
					found = found || strings.Contains(p, w)
				}
				if !found {
					t.Errorf("no problem says %q; got:\n%s", w, strings.Join(ce.Problems, "\n"))
				}
			}
		})
	}
}

func TestParseConfigNeverQuotesStoreValues(t *testing.T) {
	const value = "hunter2-do-not-print"
	_, err := ParseConfig("c.yaml", []byte(`
kind: AgentConfig
stores:
  - name: f
    fake: {data: [{key: k, value: `+value+`, extra: 1}]}
deliveries:
  - {directory: /d, store: f, files: [{name: a, remoteRef: {key: k}}]}
`))
	if err == nil {
		t.Fatal("an unknown field was accepted")
	}
	if strings.Contains(err.Error(), value) {
		t.Fatalf("the error quotes a value: %v", err)
	}
}
