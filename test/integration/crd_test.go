package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// loadSeed reads a seed example and gives it a name and a namespace (the
// seed's metadata is a placeholder). Its fields are used unchanged; only
// the tabs that indent three comment lines of the ExternalSecret example
// become spaces, since YAML forbids tabs there and no YAML parser (kubectl's
// included) would read the file otherwise.
func loadSeed(t *testing.T, file, ns string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(file)
	must(t, err)
	raw = regexp.MustCompile(`(?m)^\t+#`).ReplaceAll(raw, []byte("  #"))
	u := &unstructured.Unstructured{}
	must(t, yaml.Unmarshal(raw, &u.Object))
	u.Object["metadata"] = map[string]any{"name": "seed-example", "namespace": ns}
	return u
}

// dryRunCreate asks the API server to create u without storing it, with
// strict field validation: an unknown or duplicated field is an error too.
func dryRunCreate(u *unstructured.Unstructured) error {
	return k8s.Create(context.Background(), u, client.DryRunAll, client.FieldValidation("Strict"))
}

func TestCRDSeedExamplesAreAccepted(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	for _, f := range []string{"testdata/seed-externalsecret.yaml", "testdata/seed-secretstore.yaml"} {
		t.Run(f, func(t *testing.T) {
			if err := dryRunCreate(loadSeed(t, f, ns)); err != nil {
				t.Fatalf("server-side dry run rejected the seed example: %v", err)
			}
		})
	}
}

// TestCRDSchemaRejectsBadInput covers refusals that come from the schema
// itself (enums), not from a CEL rule; TestCRDRules covers the rules.
func TestCRDSchemaRejectsBadInput(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	cases := []struct {
		name   string
		file   string
		change func(u *unstructured.Unstructured)
		want   string
	}{
		{name: "unknown creation policy", file: "testdata/seed-externalsecret.yaml",
			change: func(u *unstructured.Unstructured) {
				must(t, unstructured.SetNestedField(u.Object, "Orphan", "spec", "target", "creationPolicy"))
			}, want: `Unsupported value: "Orphan"`},
		{name: "bad store kind", file: "testdata/seed-externalsecret.yaml",
			change: func(u *unstructured.Unstructured) {
				must(t, unstructured.SetNestedField(u.Object, "VaultStore", "spec", "secretStoreRef", "kind"))
			}, want: `Unsupported value: "VaultStore"`},
		{name: "a workload kind that cannot be restarted", file: "testdata/seed-externalsecret.yaml",
			change: func(u *unstructured.Unstructured) {
				must(t, unstructured.SetNestedSlice(u.Object, []any{map[string]any{"kind": "CronJob", "name": "nightly"}}, "spec", "target", "restartWorkloads"))
			}, want: `Unsupported value: "CronJob"`},
		{name: "a workload listed twice", file: "testdata/seed-externalsecret.yaml",
			change: func(u *unstructured.Unstructured) {
				w := map[string]any{"kind": "Deployment", "name": "api"}
				must(t, unstructured.SetNestedSlice(u.Object, []any{w, w}, "spec", "target", "restartWorkloads"))
			}, want: "Duplicate value"},
		{name: "controller class that is not a DNS label", file: "testdata/seed-secretstore.yaml",
			change: func(u *unstructured.Unstructured) {
				must(t, unstructured.SetNestedField(u.Object, "Team_A", "spec", "controller"))
			}, want: "spec.controller"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := loadSeed(t, tc.file, ns)
			tc.change(u)
			err := k8s.Create(context.Background(), u, client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

const (
	kindES  = "ExternalSecret"
	kindSS  = "SecretStore"
	kindCSS = "ClusterSecretStore"
	kindPS  = "PushSecret"
)

var storeKinds = []string{kindSS, kindCSS}

// ruleCase tests one CEL rule (x-kubernetes-validations) of the CRDs: each
// spec is written in YAML and applied, as the spec of an object of each of
// kinds, with a server-side dry run. valid must be accepted; every entry of
// invalid must be refused with an error that carries rule, a part of the
// rule's message.
type ruleCase struct {
	rule    string
	kinds   []string
	valid   string
	invalid []string
}

// ruleCases holds a case for every rule of the CRDs but the target.name
// and target.kind transition rules, which need an update and have
// TestCRDTargetNameRule and TestCRDTargetKindRule.
// TestCRDEveryRuleHasACase keeps it complete.
var ruleCases = []ruleCase{
	// Stores.
	{rule: "limits.burst needs limits.callsPerMinute", kinds: storeKinds,
		valid:   `{fake: {}, limits: {callsPerMinute: 60, burst: 10, maxConcurrentCalls: 4}}`,
		invalid: []string{`{fake: {}, limits: {burst: 10}}`}},
	{rule: "retryAfter must be a duration", kinds: storeKinds,
		valid:   `{fake: {error: {reason: Throttled, retryAfter: 5s}}}`,
		invalid: []string{`{fake: {error: {reason: Throttled, retryAfter: soon}}}`}},
	{rule: "set exactly one provider block", kinds: storeKinds,
		valid: `{controller: "", fake: {}}`,
		invalid: []string{`{fake: {}, vault: {server: "https://v:8200", auth: {tokenSecretRef: {name: t, key: token}}}}`, `{controller: ""}`,
			`{fake: {}, alibaba: {regionID: cn-hangzhou, auth: {secretRef: {accessKeyID: {name: a, key: id}, accessKeySecret: {name: a, key: secret}}}}}`,
			`{fake: {}, infisical: {auth: {universalAuthCredentials: {clientId: {name: inf, key: id}, clientSecret: {name: inf, key: secret}}}, secretsScope: {projectSlug: shop, environmentSlug: prod}}}`}},
	{rule: "refreshHook.secretRef of a ClusterSecretStore must give the namespace", kinds: []string{kindCSS},
		valid:   `{fake: {}, refreshHook: {secretRef: {name: hook, key: secret, namespace: ops}}}`,
		invalid: []string{`{fake: {}, refreshHook: {secretRef: {name: hook, key: secret}}}`, `{fake: {}, refreshHook: {secretRef: {name: hook, key: secret, namespace: ""}}}`}},
	{rule: "latency must be a duration", kinds: storeKinds,
		valid:   `{fake: {latency: 5ms}}`,
		invalid: []string{`{fake: {latency: fast}}`}},
	{rule: "fake data entry: set value or valueMap, not both", kinds: storeKinds,
		valid:   `{fake: {data: [{key: a, value: v}, {key: b, valueMap: {user: u}}]}}`,
		invalid: []string{`{fake: {data: [{key: a, value: v, valueMap: {user: u}}]}}`}},
	{rule: "auth must set exactly one of token, cert or serviceAccount", kinds: storeKinds,
		valid: `{kubernetes: {remoteNamespace: r, auth: {token: {bearerToken: {name: t, key: token}}}}}`,
		invalid: []string{
			`{kubernetes: {remoteNamespace: r, auth: {token: {bearerToken: {name: t, key: token}}, serviceAccount: {name: sa}}}}`,
			`{kubernetes: {remoteNamespace: r, auth: {}}}`}},
	{rule: "server.url must start with https://", kinds: storeKinds,
		valid:   `{kubernetes: {remoteNamespace: r, server: {url: "https://10.0.0.1:6443"}, auth: {token: {bearerToken: {name: t, key: token}}}}}`,
		invalid: []string{`{kubernetes: {remoteNamespace: r, server: {url: "10.0.0.1:6443"}, auth: {token: {bearerToken: {name: t, key: token}}}}}`}},
	{rule: "server: set caBundle or caSecretRef, not both", kinds: storeKinds,
		valid:   `{kubernetes: {remoteNamespace: r, server: {url: "https://k:6443", caSecretRef: {name: ca, key: ca.crt}}, auth: {token: {bearerToken: {name: t, key: token}}}}}`,
		invalid: []string{`{kubernetes: {remoteNamespace: r, server: {url: "https://k:6443", caBundle: TFMwdA==, caSecretRef: {name: ca, key: ca.crt}}, auth: {token: {bearerToken: {name: t, key: token}}}}}`}},
	{rule: "kubernetes.auth.serviceAccount works only for this cluster", kinds: storeKinds,
		valid:   `{kubernetes: {remoteNamespace: r, server: {caBundle: TFMwdA==}, auth: {serviceAccount: {name: sa}}}}`,
		invalid: []string{`{kubernetes: {remoteNamespace: r, server: {url: "https://k:6443"}, auth: {serviceAccount: {name: sa}}}}`}},
	{rule: "externalID needs role", kinds: storeKinds,
		valid:   `{awssm: {region: eu-central-1, role: "arn:aws:iam::111122223333:role/reader", externalID: ext-1, auth: {secretRef: {accessKeyID: {name: aws, key: id}, secretAccessKey: {name: aws, key: secret}}}}}`,
		invalid: []string{`{awssm: {region: eu-central-1, externalID: ext-1, auth: {secretRef: {accessKeyID: {name: aws, key: id}, secretAccessKey: {name: aws, key: secret}}}}}`}},
	{rule: "sessionTags need role", kinds: storeKinds,
		valid:   `{awsps: {region: eu-central-1, role: "arn:aws:iam::111122223333:role/reader", sessionTags: [{key: team, value: a}], auth: {jwt: {roleARN: "arn:aws:iam::111122223333:role/web", serviceAccountRef: {name: app}}}}}`,
		invalid: []string{`{awsps: {region: eu-central-1, sessionTags: [{key: team, value: a}], auth: {jwt: {roleARN: "arn:aws:iam::111122223333:role/web", serviceAccountRef: {name: app}}}}}`}},
	{rule: "set at most one of auth.secretRef, auth.jwt and auth.controllerCredentials", kinds: storeKinds,
		valid: `{awssm: {region: eu-central-1, auth: {jwt: {roleARN: "arn:aws:iam::111122223333:role/web", serviceAccountRef: {name: app}}}}}`,
		invalid: []string{
			`{awssm: {region: eu-central-1, auth: {secretRef: {accessKeyID: {name: aws, key: id}, secretAccessKey: {name: aws, key: secret}}, jwt: {roleARN: "arn:aws:iam::111122223333:role/web", serviceAccountRef: {name: app}}}}}`,
			`{awsps: {region: eu-central-1, auth: {controllerCredentials: true, jwt: {roleARN: "arn:aws:iam::111122223333:role/web", serviceAccountRef: {name: app}}}}}`}},
	{rule: "webhook: set caBundle or caProvider, not both", kinds: storeKinds,
		valid:   `{webhook: {url: "https://api.example.com/s/{{ .remoteRef.key }}", caProvider: {type: ConfigMap, name: ca, key: ca.crt, namespace: ops}}}`,
		invalid: []string{`{webhook: {url: "https://api.example.com/s/{{ .remoteRef.key }}", caBundle: TFMwdA==, caProvider: {type: Secret, name: ca, key: ca.crt, namespace: ops}}}`}},
	{rule: "webhook.body needs method POST", kinds: storeKinds,
		valid:   `{webhook: {url: "https://api.example.com/s/{{ .remoteRef.key }}", method: POST, body: "{{ .remoteRef.key }}"}}`,
		invalid: []string{`{webhook: {url: "https://api.example.com/s/{{ .remoteRef.key }}", body: "{{ .remoteRef.key }}"}}`, `{webhook: {url: "https://api.example.com/s/{{ .remoteRef.key }}", method: GET, body: "x"}}`}},
	{rule: "webhook.result: set versionJSONPath or versionHeader, not both", kinds: storeKinds,
		valid:   `{webhook: {url: "https://api.example.com/s/{{ .remoteRef.key }}", result: {jsonPath: $.data, versionHeader: ETag}}}`,
		invalid: []string{`{webhook: {url: "https://api.example.com/s/{{ .remoteRef.key }}", result: {versionJSONPath: $.v, versionHeader: ETag}}}`}},
	{rule: "timeout must be a duration such as 10s", kinds: storeKinds,
		valid:   `{webhook: {url: "https://api.example.com/s/{{ .remoteRef.key }}", timeout: 10s}}`,
		invalid: []string{`{webhook: {url: "https://api.example.com/s/{{ .remoteRef.key }}", timeout: ten}}`, `{webhook: {url: "https://api.example.com/s/{{ .remoteRef.key }}", timeout: 1h}}`}},
	{rule: "gitlab: set projectID, groupIDs or both", kinds: storeKinds,
		valid:   `{gitlab: {groupIDs: ["12"], auth: {secretRef: {accessToken: {name: gl, key: token}}}}}`,
		invalid: []string{`{gitlab: {auth: {secretRef: {accessToken: {name: gl, key: token}}}}}`, `{gitlab: {groupIDs: [], auth: {secretRef: {accessToken: {name: gl, key: token}}}}}`}},
	{rule: "gitlab.inheritFromGroups needs projectID", kinds: storeKinds,
		valid:   `{gitlab: {projectID: "1", inheritFromGroups: true, auth: {secretRef: {accessToken: {name: gl, key: token}}}}}`,
		invalid: []string{`{gitlab: {groupIDs: ["12"], inheritFromGroups: true, auth: {secretRef: {accessToken: {name: gl, key: token}}}}}`}},
	{rule: "infisical.auth: set exactly one of universalAuthCredentials and kubernetesAuth", kinds: storeKinds,
		valid: `{infisical: {auth: {kubernetesAuth: {identityId: 6f0c1a52-5b8e, serviceAccountRef: {name: reader, namespace: shop}}}, secretsScope: {projectSlug: shop, environmentSlug: prod}}}`,
		invalid: []string{`{infisical: {auth: {}, secretsScope: {projectSlug: shop, environmentSlug: prod}}}`,
			`{infisical: {auth: {kubernetesAuth: {identityId: 6f0c1a52-5b8e, serviceAccountRef: {name: reader, namespace: shop}}, universalAuthCredentials: {clientId: {name: inf, key: id}, clientSecret: {name: inf, key: secret}}}, secretsScope: {projectSlug: shop, environmentSlug: prod}}}`}},
	{rule: "infisical: set caBundle or caProvider, not both", kinds: storeKinds,
		valid:   `{infisical: {caProvider: {type: ConfigMap, name: ca, key: ca.crt, namespace: ops}, auth: {universalAuthCredentials: {clientId: {name: inf, key: id}, clientSecret: {name: inf, key: secret}}}, secretsScope: {projectSlug: shop, environmentSlug: prod}}}`,
		invalid: []string{`{infisical: {caBundle: TFMwdA==, caProvider: {type: Secret, name: ca, key: ca.crt, namespace: ops}, auth: {universalAuthCredentials: {clientId: {name: inf, key: id}, clientSecret: {name: inf, key: secret}}}, secretsScope: {projectSlug: shop, environmentSlug: prod}}}`}},
	{rule: "gitlab: set caBundle or caProvider, not both", kinds: storeKinds,
		valid:   `{gitlab: {projectID: "1", caProvider: {type: ConfigMap, name: ca, key: ca.crt, namespace: ops}, auth: {secretRef: {accessToken: {name: gl, key: token}}}}}`,
		invalid: []string{`{gitlab: {projectID: "1", caBundle: TFMwdA==, caProvider: {type: Secret, name: ca, key: ca.crt, namespace: ops}, auth: {secretRef: {accessToken: {name: gl, key: token}}}}}`}},
	{rule: "barbican.authURL is required", kinds: storeKinds,
		valid:   `{barbican: {authURL: "https://keystone:5000/v3", auth: {applicationCredential: {id: a, secretRef: {name: os, key: secret}}}}}`,
		invalid: []string{`{barbican: {auth: {applicationCredential: {id: a, secretRef: {name: os, key: secret}}}}}`}},
	{rule: "barbican: set caBundle or caProvider, not both", kinds: storeKinds,
		valid:   `{barbican: {endpoint: "https://barbican:9311", caProvider: {type: ConfigMap, name: ca, key: ca.crt, namespace: ops}, auth: {noAuth: {projectID: p}}}}`,
		invalid: []string{`{barbican: {endpoint: "https://barbican:9311", caBundle: TFMwdA==, caProvider: {type: Secret, name: ca, key: ca.crt, namespace: ops}, auth: {noAuth: {projectID: p}}}}`}},
	{rule: "barbican.endpoint is required with auth.noAuth", kinds: storeKinds,
		valid:   `{barbican: {endpoint: "http://barbican:9311", auth: {noAuth: {projectID: p}}}}`,
		invalid: []string{`{barbican: {auth: {noAuth: {projectID: p}}}}`, `{barbican: {authURL: "https://keystone:5000/v3", auth: {noAuth: {projectID: p}}}}`}},
	{rule: "barbican.auth must set exactly one of applicationCredential, password or noAuth", kinds: storeKinds,
		valid: `{barbican: {authURL: "https://keystone:5000/v3", auth: {password: {username: u, passwordSecretRef: {name: os, key: pw}, projectName: p}}}}`,
		invalid: []string{
			`{barbican: {authURL: "https://keystone:5000/v3", endpoint: "http://b:9311", auth: {noAuth: {projectID: p}, applicationCredential: {id: a, secretRef: {name: os, key: secret}}}}}`,
			`{barbican: {authURL: "https://keystone:5000/v3", auth: {}}}`}},
	{rule: "barbican.auth.password must set exactly one of userID or username", kinds: storeKinds,
		valid:   `{barbican: {authURL: "https://keystone:5000/v3", auth: {password: {userID: i, passwordSecretRef: {name: os, key: pw}, projectID: p}}}}`,
		invalid: []string{`{barbican: {authURL: "https://keystone:5000/v3", auth: {password: {userID: i, username: u, passwordSecretRef: {name: os, key: pw}, projectID: p}}}}`}},
	{rule: "barbican.auth.password must set exactly one of projectID or projectName", kinds: storeKinds,
		valid:   `{barbican: {authURL: "https://keystone:5000/v3", auth: {password: {username: u, passwordSecretRef: {name: os, key: pw}, projectID: p}}}}`,
		invalid: []string{`{barbican: {authURL: "https://keystone:5000/v3", auth: {password: {username: u, passwordSecretRef: {name: os, key: pw}}}}}`}},
	{rule: "azurekv.vaultURL must start with https://", kinds: storeKinds,
		valid:   `{azurekv: {vaultURL: "https://v.vault.azure.net", tenantID: t, auth: {clientSecret: {clientID: c, clientSecretRef: {name: s, key: k}}}}}`,
		invalid: []string{`{azurekv: {vaultURL: "http://v.vault.azure.net", tenantID: t, auth: {clientSecret: {clientID: c, clientSecretRef: {name: s, key: k}}}}}`}},
	{rule: "azurekv.authorityHost must start with https://", kinds: storeKinds,
		valid:   `{azurekv: {vaultURL: "https://v.vault.usgovcloudapi.net", authorityHost: "https://login.microsoftonline.us/", auth: {managedIdentity: {}}}}`,
		invalid: []string{`{azurekv: {vaultURL: "https://v.vault.azure.net", authorityHost: "login.microsoftonline.us", auth: {managedIdentity: {}}}}`}},
	{rule: "azurekv.auth must set exactly one of workloadIdentity, managedIdentity, clientSecret or clientCertificate", kinds: storeKinds,
		valid: `{azurekv: {vaultURL: "https://v.vault.azure.net", tenantID: t, auth: {workloadIdentity: {clientID: c, serviceAccountRef: {name: sa}}}}}`,
		invalid: []string{
			`{azurekv: {vaultURL: "https://v.vault.azure.net", tenantID: t, auth: {managedIdentity: {}, workloadIdentity: {clientID: c, serviceAccountRef: {name: sa}}}}}`,
			`{azurekv: {vaultURL: "https://v.vault.azure.net", tenantID: t, auth: {clientSecret: {clientID: c, clientSecretRef: {name: s, key: k}}, clientCertificate: {clientID: c, certificateRef: {name: s, key: pem}}}}}`,
			`{azurekv: {vaultURL: "https://v.vault.azure.net", auth: {}}}`}},
	{rule: "azurekv.auth must set exactly one of workloadIdentity, managedIdentity, clientSecret or clientCertificate", kinds: storeKinds,
		valid:   `{azurekv: {vaultURL: "https://v.vault.azure.net", tenantID: t, auth: {clientCertificate: {clientID: c, certificateRef: {name: s, key: pfx}, passwordRef: {name: s, key: pw}}}}}`,
		invalid: []string{`{azurekv: {vaultURL: "https://v.vault.azure.net", tenantID: t, auth: {managedIdentity: {}, clientCertificate: {clientID: c, certificateRef: {name: s, key: pem}}}}}`}},
	{rule: "alibaba.auth must set exactly one of secretRef or rrsa", kinds: storeKinds,
		valid: `{alibaba: {regionID: cn-hangzhou, auth: {secretRef: {accessKeyID: {name: a, key: id}, accessKeySecret: {name: a, key: secret}}}}}`,
		invalid: []string{
			`{alibaba: {regionID: cn-hangzhou, auth: {secretRef: {accessKeyID: {name: a, key: id}, accessKeySecret: {name: a, key: secret}}, rrsa: {serviceAccountRef: {name: sa}, roleARN: "acs:ram::1:role/r", oidcProviderARN: "acs:ram::1:oidc-provider/p"}}}}`,
			`{alibaba: {regionID: cn-hangzhou, auth: {}}}`}},
	{rule: "rrsa.roleARN must be a RAM role ARN", kinds: storeKinds,
		valid:   `{alibaba: {regionID: cn-hangzhou, stsEndpoint: "https://sts-vpc.cn-hangzhou.aliyuncs.com", auth: {rrsa: {serviceAccountRef: {name: sa}, roleARN: "acs:ram::1:role/r", oidcProviderARN: "acs:ram::1:oidc-provider/p"}}}}`,
		invalid: []string{`{alibaba: {regionID: cn-hangzhou, auth: {rrsa: {serviceAccountRef: {name: sa}, roleARN: "arn:aws:iam::1:role/r", oidcProviderARN: "acs:ram::1:oidc-provider/p"}}}}`}},
	{rule: "rrsa.oidcProviderARN must be a RAM OIDC provider ARN", kinds: storeKinds,
		valid:   `{alibaba: {regionID: cn-hangzhou, auth: {rrsa: {serviceAccountRef: {name: sa}, roleARN: "acs:ram::1:role/r", oidcProviderARN: "acs:ram::1:oidc-provider/p", sessionName: watchword}}}}`,
		invalid: []string{`{alibaba: {regionID: cn-hangzhou, auth: {rrsa: {serviceAccountRef: {name: sa}, roleARN: "acs:ram::1:role/r", oidcProviderARN: "ack-rrsa-p"}}}}`}},
	{rule: "gcpsm.auth must set exactly one of secretRef or workloadIdentityFederation", kinds: storeKinds,
		valid: `{gcpsm: {projectID: p, auth: {secretRef: {secretAccessKeySecretRef: {name: s, key: k}}}}}`,
		invalid: []string{
			`{gcpsm: {projectID: p, auth: {secretRef: {secretAccessKeySecretRef: {name: s, key: k}}, workloadIdentityFederation: {audience: "//iam.googleapis.com/x", serviceAccountRef: {name: sa}}}}}`,
			`{gcpsm: {projectID: p, auth: {}}}`}},
	{rule: "workloadIdentityFederation.audience must be the pool provider's name", kinds: storeKinds,
		valid:   `{gcpsm: {projectID: p, location: europe-west1, auth: {workloadIdentityFederation: {audience: "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/k", serviceAccountRef: {name: sa}}}}}`,
		invalid: []string{`{gcpsm: {projectID: p, auth: {workloadIdentityFederation: {audience: "https://iam.googleapis.com/x", serviceAccountRef: {name: sa}}}}}`}},
	{rule: "vault.server must be a URL", kinds: storeKinds,
		valid:   `{vault: {server: "https://vault:8200", auth: {tokenSecretRef: {name: t, key: token}}}}`,
		invalid: []string{`{vault: {server: "vault:8200", auth: {tokenSecretRef: {name: t, key: token}}}}`}},
	{rule: "vault.auth must set exactly one of tokenSecretRef, appRole, kubernetes, jwt, userPass, ldap, cert, iam or gcp", kinds: storeKinds,
		valid: `{vault: {server: "https://vault:8200", auth: {jwt: {role: app, serviceAccountRef: {name: app}}}}}`,
		invalid: []string{
			`{vault: {server: "https://vault:8200", auth: {tokenSecretRef: {name: t, key: token}, kubernetes: {role: app, serviceAccountRef: {name: app}}}}}`,
			`{vault: {server: "https://vault:8200", auth: {userPass: {username: u, secretRef: {name: p, key: pw}}, ldap: {username: u, secretRef: {name: p, key: pw}}}}}`,
			`{vault: {server: "https://vault:8200", auth: {gcp: {role: r, secretRef: {secretAccessKeySecretRef: {name: k, key: key.json}}}, appRole: {roleId: r, secretRef: {name: a, key: secret-id}}}}}`,
			`{vault: {server: "https://vault:8200", auth: {}}}`}},
	{rule: "username may not contain a slash", kinds: storeKinds,
		valid:   `{vault: {server: "https://vault:8200", auth: {userPass: {username: app.reader, secretRef: {name: p, key: pw}}}}}`,
		invalid: []string{`{vault: {server: "https://vault:8200", auth: {ldap: {username: ../x, secretRef: {name: p, key: pw}}}}}`}},
	{rule: "vault: auth.cert presents its own client certificate on every connection: drop vault.tls", kinds: storeKinds,
		valid:   `{vault: {server: "https://vault:8200", auth: {cert: {name: web, clientCert: {name: c, key: tls.crt}, clientKey: {name: c, key: tls.key}}}}}`,
		invalid: []string{`{vault: {server: "https://vault:8200", tls: {certSecretRef: {name: c, key: tls.crt}, keySecretRef: {name: c, key: tls.key}}, auth: {cert: {clientCert: {name: c, key: tls.crt}, clientKey: {name: c, key: tls.key}}}}}`}},
	{rule: "vault: auth.cert needs an https:// server", kinds: storeKinds,
		valid:   `{vault: {server: "https://vault:8200", auth: {cert: {clientCert: {name: c, key: tls.crt}, clientKey: {name: c, key: tls.key}}}}}`,
		invalid: []string{`{vault: {server: "http://vault:8200", auth: {cert: {clientCert: {name: c, key: tls.crt}, clientKey: {name: c, key: tls.key}}}}}`}},
	{rule: "iam.externalID needs iam.role", kinds: storeKinds,
		valid:   `{vault: {server: "https://vault:8200", auth: {iam: {vaultRole: r, role: "arn:aws:iam::111122223333:role/vault", externalID: x1, auth: {secretRef: {accessKeyID: {name: a, key: id}, secretAccessKey: {name: a, key: s}}}}}}}`,
		invalid: []string{`{vault: {server: "https://vault:8200", auth: {iam: {vaultRole: r, externalID: x1, auth: {secretRef: {accessKeyID: {name: a, key: id}, secretAccessKey: {name: a, key: s}}}}}}}`}},
	{rule: "appRole must set exactly one of roleId or roleRef", kinds: storeKinds,
		valid: `{vault: {server: "https://vault:8200", auth: {appRole: {roleId: r, secretRef: {name: a, key: secret-id}}}}}`,
		invalid: []string{
			`{vault: {server: "https://vault:8200", auth: {appRole: {roleId: r, roleRef: {name: a, key: role-id}, secretRef: {name: a, key: secret-id}}}}}`,
			`{vault: {server: "https://vault:8200", auth: {appRole: {secretRef: {name: a, key: secret-id}}}}}`}},
	{rule: "vault: set caBundle or caProvider, not both", kinds: storeKinds,
		valid:   `{vault: {server: "https://vault:8200", caProvider: {type: ConfigMap, name: ca, key: ca.crt}, auth: {tokenSecretRef: {name: t, key: token}}}}`,
		invalid: []string{`{vault: {server: "https://vault:8200", caBundle: TFMwdA==, caProvider: {type: Secret, name: ca, key: ca.crt}, auth: {tokenSecretRef: {name: t, key: token}}}}`}},
	{rule: "namespaceSelector may hold at most 64 matchLabels", kinds: []string{kindCSS},
		valid: `{fake: {}, namespaceSelector: {matchLabels: {team: a}, matchExpressions: [{key: env, operator: In, values: [dev, prod]}]}}`,
		invalid: []string{
			`{fake: {}, namespaceSelector: {matchLabels: {` + numbered("l%d: v", 65) + `}}}`,
			`{fake: {}, namespaceSelector: {matchExpressions: [` + numbered("{key: k%d, operator: Exists}", 17) + `]}}`,
			`{fake: {}, namespaceSelector: {matchExpressions: [{key: k, operator: In, values: [` + numbered("v%d", 65) + `]}]}}`}},

	// ExternalSecrets.
	{rule: "refreshInterval must be a Go duration", kinds: []string{kindES},
		valid: `{secretStoreRef: {name: s}, refreshInterval: 1h30m, data: [{secretKey: k, remoteRef: {key: k}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, refreshInterval: every hour, data: [{secretKey: k, remoteRef: {key: k}}]}`,
			// Stored, it could not be decoded: the whole kind could not be listed.
			`{secretStoreRef: {name: s}, refreshInterval: 9999999999h, data: [{secretKey: k, remoteRef: {key: k}}]}`}},
	{rule: "template.type kubernetes.io/service-account-token or bootstrap.kubernetes.io/token is not allowed", kinds: []string{kindES},
		valid: `{secretStoreRef: {name: s}, target: {template: {type: kubernetes.io/tls}}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
		invalid: []string{
			`{secretStoreRef: {name: s}, target: {template: {type: kubernetes.io/service-account-token}}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
			`{secretStoreRef: {name: s}, target: {template: {type: bootstrap.kubernetes.io/token}}, data: [{secretKey: k, remoteRef: {key: k}}]}`}},
	{rule: "metadata.type kubernetes.io/service-account-token or bootstrap.kubernetes.io/token is not allowed", kinds: []string{kindES},
		valid: `{secretStoreRef: {name: s}, publishConnectionDetailsTo: {name: d, metadata: {type: kubernetes.io/tls}}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
		invalid: []string{
			`{secretStoreRef: {name: s}, publishConnectionDetailsTo: {name: d, metadata: {type: kubernetes.io/service-account-token}}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
			`{secretStoreRef: {name: s}, publishConnectionDetailsTo: {name: d, metadata: {type: bootstrap.kubernetes.io/token}}, data: [{secretKey: k, remoteRef: {key: k}}]}`}},
	{rule: "set at least one entry in data or dataFrom", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, dataFrom: [{remoteRef: {key: k}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}}`, `{secretStoreRef: {name: s}, data: [], dataFrom: []}`}},
	{rule: "set exactly one of remoteRef, find, vaultDynamic or registryToken in a dataFrom entry", kinds: []string{kindES},
		valid: `{secretStoreRef: {name: s}, dataFrom: [{find: {path: app/}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, dataFrom: [{remoteRef: {key: k}, find: {path: app/}}]}`,
			`{secretStoreRef: {name: s}, dataFrom: [{rewrite: [{regexp: {source: a, target: b}}]}]}`,
			`{secretStoreRef: {name: s}, dataFrom: [{remoteRef: {key: k}, vaultDynamic: {path: database/creds/app}}]}`,
			`{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: ECR}, remoteRef: {key: k}}]}`}},
	{rule: "a dataFrom entry with vaultDynamic must be the only source", kinds: []string{kindES},
		valid: `{secretStoreRef: {name: s}, dataFrom: [{vaultDynamic: {path: database/creds/app}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, dataFrom: [{vaultDynamic: {path: database/creds/app}}, {remoteRef: {key: k}}]}`,
			`{secretStoreRef: {name: s}, data: [{secretKey: a, remoteRef: {key: k}}], dataFrom: [{vaultDynamic: {path: database/creds/app}}]}`}},
	{rule: "a dataFrom entry with registryToken must be the only source", kinds: []string{kindES},
		valid: `{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: ECR}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: ECR}}, {remoteRef: {key: k}}]}`,
			`{secretStoreRef: {name: s}, data: [{secretKey: a, remoteRef: {key: k}}], dataFrom: [{registryToken: {registry: ECR}}]}`}},
	{rule: "a registryToken writes a kubernetes.io/dockerconfigjson Secret", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, target: {template: {type: kubernetes.io/dockerconfigjson}}, dataFrom: [{registryToken: {registry: ECR}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, target: {template: {type: Opaque}}, dataFrom: [{registryToken: {registry: ECR}}]}`}},
	{rule: "a registryToken is a secret and is written to a Secret", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, target: {kind: Secret}, dataFrom: [{registryToken: {registry: ECR}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, target: {kind: ConfigMap}, dataFrom: [{registryToken: {registry: ECR}}]}`}},
	{rule: "registryToken.renewBefore must be a Go duration from 1m to 11h", kinds: []string{kindES},
		valid: `{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: ECR, registryID: "111122223333", renewBefore: 2h}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: ECR, renewBefore: 12h}}]}`,
			`{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: ECR, renewBefore: 30s}}]}`,
			`{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: ECR, renewBefore: "an hour"}}]}`}},
	{rule: "registryToken.host is required for GAR", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: GAR, host: europe-docker.pkg.dev}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: GAR}}]}`}},
	{rule: "registryToken.registryID is for ECR", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: ECR, registryID: "111122223333"}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: GAR, host: gcr.io, registryID: "111122223333"}}]}`}},
	{rule: "registryToken.host is for GAR", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: GAR, host: us-docker.pkg.dev}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: ECR, host: us-docker.pkg.dev}}]}`}},
	{rule: "registryToken.renewBefore must be at most 50m for GAR", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: GAR, host: gcr.io, renewBefore: 50m}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, dataFrom: [{registryToken: {registry: GAR, host: gcr.io, renewBefore: 1h}}]}`}},
	{rule: "vaultDynamic.renewBefore must be a Go duration", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, dataFrom: [{vaultDynamic: {path: pki/issue/web, method: POST, renewBefore: 720h}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, dataFrom: [{vaultDynamic: {path: pki/issue/web, renewBefore: "a month"}}]}`}},
	{rule: "vaultDynamic.path is a Vault path", kinds: []string{kindES},
		valid: `{secretStoreRef: {name: s}, dataFrom: [{vaultDynamic: {path: aws/creds/deploy, method: POST, parameters: {ttl: 15m}}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, dataFrom: [{vaultDynamic: {path: /database/creds/app}}]}`,
			`{secretStoreRef: {name: s}, dataFrom: [{vaultDynamic: {path: database/../sys/seal}}]}`,
			`{secretStoreRef: {name: s}, dataFrom: [{vaultDynamic: {path: "database/creds/app?x=1"}}]}`}},
	{rule: "a find needs a path, a name or tags", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, dataFrom: [{find: {tags: {team: a}}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, dataFrom: [{find: {}}]}`}},
	{rule: "name.regexp must be a valid regular expression", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, dataFrom: [{find: {name: {regexp: "^db-(user|password)$"}}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, dataFrom: [{find: {name: {regexp: "db-(user"}}}]}`, `{secretStoreRef: {name: s}, dataFrom: [{find: {name: {regexp: "a**"}}}]}`}},
	{rule: "rewrite.regexp.source must be a valid regular expression", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, dataFrom: [{find: {path: app/}, rewrite: [{regexp: {source: "^app_(.*)$", target: "$1"}}]}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, dataFrom: [{find: {path: app/}, rewrite: [{regexp: {source: "[unclosed", target: x}}]}]}`}},
	{rule: "template.type sets the type of a Secret, and a ConfigMap target has none", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, target: {kind: ConfigMap, template: {data: {a: b}}}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, target: {kind: ConfigMap, template: {type: Opaque}}, data: [{secretKey: k, remoteRef: {key: k}}]}`}},
	{rule: "creationPolicy Merge is not supported for a ConfigMap target", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, target: {kind: ConfigMap, creationPolicy: None}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, target: {kind: ConfigMap, creationPolicy: Merge}, data: [{secretKey: k, remoteRef: {key: k}}]}`}},
	{rule: "restartWorkloads follows Secret targets only", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, target: {kind: Secret, restartWorkloads: [{kind: Deployment, name: api}]}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, target: {kind: ConfigMap, restartWorkloads: [{kind: Deployment, name: api}]}, data: [{secretKey: k, remoteRef: {key: k}}]}`}},
	{rule: "the ConfigMap kube-root-ca.crt is the cluster's CA bundle", kinds: []string{kindES},
		valid:   `{secretStoreRef: {name: s}, target: {name: kube-root-ca.crt}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, target: {kind: ConfigMap, name: kube-root-ca.crt, allowSecretValues: true}, data: [{secretKey: k, remoteRef: {key: k}}]}`}},
	{rule: "allowSecretValues is only for kind: ConfigMap", kinds: []string{kindES},
		valid: `{secretStoreRef: {name: s}, target: {kind: ConfigMap, allowSecretValues: true}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
		invalid: []string{`{secretStoreRef: {name: s}, target: {allowSecretValues: true}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
			`{secretStoreRef: {name: s}, target: {kind: Secret, allowSecretValues: true}, data: [{secretKey: k, remoteRef: {key: k}}]}`}},
	{rule: "adopt: true works only with creationPolicy Owner", kinds: []string{kindES},
		valid: `{secretStoreRef: {name: s}, target: {adopt: true}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
		invalid: []string{
			`{secretStoreRef: {name: s}, target: {creationPolicy: Merge, adopt: true}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
			`{secretStoreRef: {name: s}, target: {creationPolicy: None, adopt: true}, data: [{secretKey: k, remoteRef: {key: k}}]}`}},

	// PushSecrets.
	{rule: "refreshInterval must be a Go duration", kinds: []string{kindPS},
		valid:   `{secretName: s, refreshInterval: "0", destinations: [{name: d}]}`,
		invalid: []string{`{secretName: s, refreshInterval: daily, destinations: [{name: d}]}`, `{secretName: s, refreshInterval: 9999999999h, destinations: [{name: d}]}`}},
	{rule: "metadata.type kubernetes.io/service-account-token or bootstrap.kubernetes.io/token is not allowed", kinds: []string{kindPS},
		valid: `{secretName: s, destinations: [{name: d, metadata: {type: kubernetes.io/tls}}]}`,
		invalid: []string{
			`{secretName: s, destinations: [{name: d, metadata: {type: kubernetes.io/service-account-token}}]}`,
			`{secretName: s, destinations: [{name: d, metadata: {type: bootstrap.kubernetes.io/token}}]}`}},
	{rule: "destinations must be unique", kinds: []string{kindPS},
		valid: `{secretName: s, destinations: [{name: d}, {name: d, configRef: {name: other}}, {name: e, configRef: {name: default}}]}`,
		invalid: []string{
			`{secretName: s, destinations: [{name: d}, {name: d, configRef: {name: default}}]}`,
			`{secretName: s, destinations: [{name: d, configRef: {name: v}}, {name: d, configRef: {name: v, kind: SecretStore}}]}`}},
	{rule: "set exactly one of secretName (one Secret) and secretSelector", kinds: []string{kindPS},
		valid: `{secretSelector: {matchLabels: {publish: "yes"}}, destinations: [{name: "copy-{{ .secretName }}"}]}`,
		invalid: []string{
			`{destinations: [{name: d}]}`,
			`{secretName: s, secretSelector: {matchLabels: {publish: "yes"}}, destinations: [{name: "copy-{{ .secretName }}"}]}`}},
	{rule: "with secretSelector every destination name must hold {{ .secretName }}", kinds: []string{kindPS},
		valid: `{secretSelector: {matchExpressions: [{key: tier, operator: In, values: [db]}]}, destinations: [{name: "apps/{{.secretName}}"}, {name: "{{ .secretName }}-copy", configRef: {name: other}}]}`,
		invalid: []string{
			`{secretSelector: {matchLabels: {publish: "yes"}}, destinations: [{name: "copy-{{ .secretName }}"}, {name: fixed, configRef: {name: other}}]}`,
			`{secretSelector: {matchLabels: {publish: "yes"}}, destinations: [{name: "{{ .name }}"}]}`}},
	{rule: "{{ .secretName }} in a destination name needs secretSelector", kinds: []string{kindPS},
		valid:   `{secretName: s, destinations: [{name: "apps/s"}]}`,
		invalid: []string{`{secretName: s, destinations: [{name: "copy-{{ .secretName }}"}]}`}},
	{rule: "secretSelector must have matchLabels or matchExpressions", kinds: []string{kindPS},
		valid: `{secretSelector: {matchLabels: {publish: "yes"}}, destinations: [{name: "{{ .secretName }}"}]}`,
		invalid: []string{
			`{secretSelector: {}, destinations: [{name: "{{ .secretName }}"}]}`,
			`{secretSelector: {matchLabels: {}, matchExpressions: []}, destinations: [{name: "{{ .secretName }}"}]}`}},
	{rule: "conjur: set caBundle or caProvider, not both", kinds: storeKinds,
		valid:   `{conjur: {url: "https://conjur.example.com", caProvider: {type: ConfigMap, name: ca, key: ca.crt, namespace: ops}, auth: {apikey: {account: myorg, userRef: {name: c, key: login}, apiKeyRef: {name: c, key: apikey}}}}}`,
		invalid: []string{`{conjur: {url: "https://conjur.example.com", caBundle: TFMwdA==, caProvider: {type: Secret, name: ca, key: ca.crt, namespace: ops}, auth: {apikey: {account: myorg, userRef: {name: c, key: login}, apiKeyRef: {name: c, key: apikey}}}}}`}},
	{rule: "conjur.auth: set exactly one of apikey and jwt", kinds: storeKinds,
		valid: `{conjur: {url: "https://conjur.example.com", auth: {jwt: {account: myorg, serviceID: k8s, serviceAccountRef: {name: app, namespace: ops}}}}}`,
		invalid: []string{`{conjur: {url: "https://conjur.example.com", auth: {}}}`,
			`{conjur: {url: "https://conjur.example.com", auth: {apikey: {account: myorg, userRef: {name: c, key: login}, apiKeyRef: {name: c, key: apikey}}, jwt: {account: myorg, serviceID: k8s, serviceAccountRef: {name: app, namespace: ops}}}}}`}},
	{rule: "conjur.auth.jwt: set exactly one of serviceAccountRef and secretRef", kinds: storeKinds,
		valid: `{conjur: {url: "https://conjur.example.com", auth: {jwt: {account: myorg, serviceID: k8s, secretRef: {name: jwt, key: token, namespace: ops}}}}}`,
		invalid: []string{`{conjur: {url: "https://conjur.example.com", auth: {jwt: {account: myorg, serviceID: k8s}}}}`,
			`{conjur: {url: "https://conjur.example.com", auth: {jwt: {account: myorg, serviceID: k8s, secretRef: {name: jwt, key: token, namespace: ops}, serviceAccountRef: {name: app, namespace: ops}}}}}`}},
	{rule: "onepassword.vaults: each priority is 1 or more", kinds: storeKinds,
		valid:   `{onepassword: {connectHost: "http://onepassword-connect:8080", vaults: {prod: 1, shared: 2}, auth: {secretRef: {connectTokenSecretRef: {name: op, key: token}}}}}`,
		invalid: []string{`{onepassword: {connectHost: "http://onepassword-connect:8080", vaults: {prod: 0}, auth: {secretRef: {connectTokenSecretRef: {name: op, key: token}}}}}`}},
	{rule: "onepassword.vaults: two vaults cannot share a priority", kinds: storeKinds,
		valid:   `{onepassword: {connectHost: "http://onepassword-connect:8080", vaults: {prod: 1, shared: 2}, auth: {secretRef: {connectTokenSecretRef: {name: op, key: token}}}}}`,
		invalid: []string{`{onepassword: {connectHost: "http://onepassword-connect:8080", vaults: {prod: 1, shared: 1}, auth: {secretRef: {connectTokenSecretRef: {name: op, key: token}}}}}`}},
}

// targetNameRule is the message of the transition rule on target.name.
const targetNameRule = "spec.target.name is immutable"

// targetKindRule is the message of the transition rule on target.kind.
const targetKindRule = "spec.target.kind is immutable"

// numbered joins n items made by format from 0..n-1 with ", ".
func numbered(format string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(format, i)
	}
	return strings.Join(parts, ", ")
}

// objectWithSpec builds an object of kind whose spec is the YAML spec.
func objectWithSpec(t *testing.T, kind, ns, spec string) *unstructured.Unstructured {
	t.Helper()
	var s map[string]any
	if err := yaml.Unmarshal([]byte(spec), &s); err != nil {
		t.Fatalf("spec %s: %v", spec, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": s}}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind(kind)
	u.SetName("rule-case")
	if kind != kindCSS && embeds[kind] == "" {
		u.SetNamespace(ns)
	}
	return u
}

func TestCRDRules(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	for _, tc := range ruleCases {
		for _, kind := range tc.kinds {
			t.Run(kind+"/"+tc.rule, func(t *testing.T) {
				if err := dryRunCreate(objectWithSpec(t, kind, ns, tc.valid)); err != nil {
					t.Errorf("valid spec %s was refused: %v", tc.valid, err)
				}
				for _, spec := range tc.invalid {
					err := dryRunCreate(objectWithSpec(t, kind, ns, spec))
					if err == nil || !strings.Contains(err.Error(), tc.rule) {
						t.Errorf("spec %s: got %v, want an error containing %q", spec, err, tc.rule)
					}
				}
			})
		}
	}
}

// TestCRDEveryRuleHasACase reads every CEL rule of the generated CRDs and
// fails for one that no case of ruleCases (or TestCRDTargetNameRule) tests
// on that kind, so that a new rule cannot go untested.
func TestCRDEveryRuleHasACase(t *testing.T) {
	parallel(t)
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	must(t, err)
	if len(files) == 0 {
		t.Fatal("no CRD manifests found")
	}
	total := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		must(t, err)
		var crd map[string]any
		must(t, yaml.Unmarshal(raw, &crd))
		kind, _, _ := unstructured.NestedString(crd, "spec", "names", "kind")
		for _, msg := range ruleMessages(crd) {
			total++
			if kind == kindES && (strings.Contains(msg, targetNameRule) || strings.Contains(msg, targetKindRule)) || kind == "ClusterExternalSecret" && strings.Contains(msg, stampedTargetRule) {
				continue
			}
			if !hasRuleCase(kind, msg) && !hasRuleCase(embeds[kind], msg) {
				t.Errorf("%s: the rule with message %q has no case in ruleCases", kind, msg)
			}
		}
	}
	t.Logf("%d rules in %d CRDs", total, len(files))
}

func hasRuleCase(kind, msg string) bool {
	for _, tc := range ruleCases {
		for _, k := range tc.kinds {
			if k == kind && strings.Contains(msg, tc.rule) {
				return true
			}
		}
	}
	return false
}

// ruleMessages lists the messages of every x-kubernetes-validations rule
// anywhere in the CRD.
func ruleMessages(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		if rules, ok := v["x-kubernetes-validations"].([]any); ok {
			for _, r := range rules {
				m, _ := r.(map[string]any)
				msg, _ := m["message"].(string)
				out = append(out, msg)
			}
		}
		for _, c := range v {
			out = append(out, ruleMessages(c)...)
		}
	case []any:
		for _, c := range v {
			out = append(out, ruleMessages(c)...)
		}
	}
	return out
}

// TestCRDTargetNameRule checks the transition rule on spec.target.name:
// writing the name already in effect (the ExternalSecret's own name while
// it is unset) is no change, and only a real change is refused. The
// patches carry no resourceVersion, so the operator's own writes to the
// object cannot make them conflict.
func TestCRDTargetNameRule(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	create := func(name, spec string) {
		t.Helper()
		u := objectWithSpec(t, kindES, ns, spec)
		u.SetName(name)
		must(t, k8s.Create(context.Background(), u))
	}
	create("app", `{secretStoreRef: {name: s}, data: [{secretKey: k, remoteRef: {key: k}}]}`)
	create("custom", `{secretStoreRef: {name: s}, target: {name: other-secret}, data: [{secretKey: k, remoteRef: {key: k}}]}`)
	steps := []struct {
		name    string
		es      string
		target  string // a JSON value for spec.target.name; null unsets it
		allowed bool
	}{
		{name: "unset to the own name", es: "app", target: `"app"`, allowed: true},
		{name: "the own name again", es: "app", target: `"app"`, allowed: true},
		{name: "own name to unset", es: "app", target: `null`, allowed: true},
		{name: "unset to another name", es: "app", target: `"app-v2"`},
		{name: "unset to the own name, again", es: "app", target: `"app"`, allowed: true},
		{name: "own name, then another", es: "app", target: `"elsewhere"`},
		{name: "custom name kept", es: "custom", target: `"other-secret"`, allowed: true},
		{name: "custom name to unset", es: "custom", target: `null`},
		{name: "custom name to the own name", es: "custom", target: `"custom"`},
		{name: "custom name to another name", es: "custom", target: `"third-secret"`},
	}
	for _, st := range steps {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(v1alpha1.GroupVersion.String())
		u.SetKind(kindES)
		u.SetNamespace(ns)
		u.SetName(st.es)
		patch := []byte(`{"spec":{"target":{"name":` + st.target + `}}}`)
		err := k8s.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch))
		switch {
		case st.allowed && err != nil:
			t.Errorf("%s: refused: %v", st.name, err)
		case !st.allowed && (err == nil || !strings.Contains(err.Error(), targetNameRule)):
			t.Errorf("%s: got %v, want an error containing %q", st.name, err, targetNameRule)
		}
	}
}

// TestCRDTargetKindRule checks the transition rule on spec.target.kind:
// stating the default (Secret) where it was unset is no change; a change
// between Secret and ConfigMap is refused.
func TestCRDTargetKindRule(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	for name, spec := range map[string]string{
		"secret": `{secretStoreRef: {name: s}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
		"config": `{secretStoreRef: {name: s}, target: {kind: ConfigMap}, data: [{secretKey: k, remoteRef: {key: k}}]}`,
	} {
		u := objectWithSpec(t, kindES, ns, spec)
		u.SetName(name)
		must(t, k8s.Create(context.Background(), u))
	}
	steps := []struct {
		name, es, kind string // kind: a JSON value for spec.target.kind
		allowed        bool
	}{
		{name: "the default stated", es: "secret", kind: `"Secret"`, allowed: true},
		{name: "Secret to ConfigMap", es: "secret", kind: `"ConfigMap"`},
		{name: "ConfigMap kept", es: "config", kind: `"ConfigMap"`, allowed: true},
		{name: "ConfigMap to Secret", es: "config", kind: `"Secret"`},
		{name: "ConfigMap unset (the default, Secret)", es: "config", kind: `null`},
	}
	for _, st := range steps {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(v1alpha1.GroupVersion.String())
		u.SetKind(kindES)
		u.SetNamespace(ns)
		u.SetName(st.es)
		patch := []byte(`{"spec":{"target":{"kind":` + st.kind + `}}}`)
		err := k8s.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch))
		switch {
		case st.allowed && err != nil:
			t.Errorf("%s: refused: %v", st.name, err)
		case !st.allowed && (err == nil || !strings.Contains(err.Error(), targetKindRule)):
			t.Errorf("%s: got %v, want an error containing %q", st.name, err, targetKindRule)
		}
	}
}
