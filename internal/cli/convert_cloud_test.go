package cli

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestConvertCloudStores converts the cases of the azurekv, gcpsm and
// alibaba rules that the corpus (08-cloud-stores.yaml) does not show: for
// each, whether a store is written, which findings name which fields, and
// that what is written passes the CRD's schema and CEL rules.
func TestConvertCloudStores(t *testing.T) {
	crds := loadCRDs(t)
	type finding struct {
		sev  Severity
		path string
	}
	const p = "spec.provider."
	for _, tc := range []struct {
		name     string
		kind     string // SecretStore unless set
		provider string
		written  bool
		want     []finding
		// has are strings the written store holds.
		has []string
	}{
		{
			name:     "azure both credentials: the secret is carried",
			provider: "azurekv: {vaultUrl: 'https://v.vault.azure.net', tenantId: t1, authSecretRef: {clientId: {name: c, key: id}, clientSecret: {name: c, key: s}, clientCertificate: {name: c, key: pem}}}",
			written:  true,
			want:     []finding{{Dropped, p + "azurekv.authSecretRef.clientId"}, {Dropped, p + "azurekv.authSecretRef.clientCertificate"}},
			has:      []string{"clientSecretRef:", "tenantID: t1"},
		},
		{
			name:     "azure service principal ignores a service account and an identity",
			provider: "azurekv: {vaultUrl: 'https://v.vault.azure.net', tenantId: t1, identityId: i, serviceAccountRef: {name: a}, authSecretRef: {clientId: {name: c, key: id}, clientSecret: {name: c, key: s}}}",
			written:  true,
			want:     []finding{{Dropped, p + "azurekv.authSecretRef.clientId"}, {Note, p + "azurekv.serviceAccountRef"}, {Note, p + "azurekv.identityId"}},
		},
		{
			name:     "azure tenant in the store wins over the Secret",
			provider: "azurekv: {authType: WorkloadIdentity, vaultUrl: 'https://v.vault.azure.net', tenantId: t1, serviceAccountRef: {name: a}, authSecretRef: {clientId: {name: c, key: id}, tenantId: {name: c, key: t}, clientSecret: {name: c, key: s}}}",
			written:  true,
			want:     []finding{{Dropped, p + "azurekv.authSecretRef.clientId"}, {Note, p + "azurekv.authSecretRef.tenantId"}, {Note, p + "azurekv.authSecretRef.clientSecret"}},
			has:      []string{"tenantID: t1", "workloadIdentity:"},
		},
		{
			name:     "azure workload identity without a service account",
			kind:     "ClusterSecretStore",
			provider: "azurekv: {authType: WorkloadIdentity, vaultUrl: 'https://v.vault.azure.net', tenantId: t1}",
			written:  true,
			want:     []finding{{Dropped, p + "azurekv.serviceAccountRef"}, {Dropped, p + "azurekv.serviceAccountRef"}},
			has:      []string{"name: replace-me", "namespace: replace-me"},
		},
		{
			name:     "azure managed identity, system-assigned, in a ClusterSecretStore",
			kind:     "ClusterSecretStore",
			provider: "azurekv: {authType: ManagedIdentity, vaultUrl: 'https://v.vault.azure.net', serviceAccountRef: {name: a, namespace: n}, authSecretRef: {clientSecret: {name: c, key: s, namespace: n}}}",
			written:  true,
			want:     []finding{{Note, p + "azurekv.authType"}, {Note, p + "azurekv.serviceAccountRef"}, {Note, p + "azurekv.authSecretRef.clientSecret"}},
			has:      []string{"managedIdentity: {}"},
		},
		{
			name:     "azure managed identity named by a resource ID",
			kind:     "ClusterSecretStore",
			provider: "azurekv: {authType: ManagedIdentity, vaultUrl: 'https://v.vault.azure.net', identityId: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/reader}",
			written:  true,
			want:     []finding{{Note, p + "azurekv.authType"}, {Dropped, p + "azurekv.identityId"}},
			has:      []string{"clientID: replace-me"},
		},
		{
			name:     "azure tenant that Watchword refuses",
			provider: "azurekv: {vaultUrl: 'https://v.vault.azure.net', tenantId: 'contoso onmicrosoft', authSecretRef: {clientId: {name: c, key: id}, clientSecret: {name: c, key: s}}}",
			written:  true,
			want:     []finding{{Dropped, p + "azurekv.authSecretRef.clientId"}, {Dropped, p + "azurekv.tenantId"}},
			has:      []string{"tenantID: replace-me"},
		},
		{
			name:     "azure managed identity does not need a tenant Watchword refuses",
			kind:     "ClusterSecretStore",
			provider: "azurekv: {authType: ManagedIdentity, vaultUrl: 'https://v.vault.azure.net', tenantId: 'contoso onmicrosoft', identityId: id1}",
			written:  true,
			want:     []finding{{Note, p + "azurekv.authType"}, {Note, p + "azurekv.tenantId"}},
			has:      []string{"clientID: id1"},
		},
		{
			name:     "azure custom cloud without an https endpoint, unknown fields",
			provider: "azurekv: {vaultUrl: 'https://v.vault.azure.net', tenantId: t1, environmentType: AzureStackCloud, customCloudConfig: {activeDirectoryEndpoint: 'http://login', keyVaultEndpoint: 'https://kv'}, legacy: true, authSecretRef: {clientId: {name: c, key: id}, clientSecret: {name: c, key: s}}}",
			written:  true,
			want:     []finding{{Dropped, p + "azurekv.customCloudConfig.activeDirectoryEndpoint"}, {Note, p + "azurekv.customCloudConfig.keyVaultEndpoint"}, {Dropped, p + "azurekv.authSecretRef.clientId"}, {Dropped, p + "azurekv.legacy"}},
		},
		{
			name:     "azure Azure Stack without its endpoints",
			provider: "azurekv: {vaultUrl: 'https://v.vault.azure.net', tenantId: t1, environmentType: AzureStackCloud, authSecretRef: {clientId: {name: c, key: id}, clientSecret: {name: c, key: s}}}",
			written:  true,
			want:     []finding{{Dropped, p + "azurekv.environmentType"}, {Dropped, p + "azurekv.authSecretRef.clientId"}},
		},
		{
			name:     "azure vault URL with a path",
			provider: "azurekv: {vaultUrl: 'https://v.vault.azure.net/secrets/db', tenantId: t1, authSecretRef: {clientSecret: {name: c, key: s}}}",
			want:     []finding{{Dropped, p + "azurekv.vaultUrl"}},
		},
		{
			name:     "azure unknown auth type",
			provider: "azurekv: {authType: Password, vaultUrl: 'https://v.vault.azure.net'}",
			want:     []finding{{Dropped, p + "azurekv.authType"}},
		},
		{
			name:     "gcp two methods: the key is carried",
			provider: "gcpsm: {projectID: p, auth: {secretRef: {secretAccessKeySecretRef: {name: k, key: k}}, workloadIdentity: {serviceAccountRef: {name: a}}, workloadIdentityFederation: {audience: '//iam.googleapis.com/x', serviceAccountRef: {name: a}}}}",
			written:  true,
			want:     []finding{{Dropped, p + "gcpsm.auth.workloadIdentityFederation"}, {Dropped, p + "gcpsm.auth.workloadIdentity"}},
			has:      []string{"secretAccessKeySecretRef:"},
		},
		{
			name:     "gcp federation and GKE: federation is carried",
			provider: "gcpsm: {projectID: p, auth: {workloadIdentity: {serviceAccountRef: {name: a}}, workloadIdentityFederation: {audience: '//iam.googleapis.com/x', serviceAccountRef: {name: a}, externalTokenEndpoint: 'https://t', gcpServiceAccountEmail: r@p.iam.gserviceaccount.com}}}",
			written:  true,
			want:     []finding{{Note, p + "gcpsm.auth.workloadIdentityFederation.externalTokenEndpoint"}, {Dropped, p + "gcpsm.auth.workloadIdentity"}},
			has:      []string{"serviceAccountEmail: r@p.iam.gserviceaccount.com"},
		},
		{
			name:     "gcp federation with an audience that is not a pool provider",
			provider: "gcpsm: {projectID: p, auth: {workloadIdentityFederation: {audience: 'https://sts', serviceAccountRef: {name: a}}}}",
			want:     []finding{{Dropped, p + "gcpsm.auth.workloadIdentityFederation.audience"}},
		},
		{
			name:     "gcp federation from a credential configuration alone",
			provider: "gcpsm: {projectID: p, auth: {workloadIdentityFederation: {credConfig: {name: c, key: k}}}}",
			want:     []finding{{Dropped, p + "gcpsm.auth.workloadIdentityFederation"}},
		},
		{
			name:     "gcp GKE without a service account in a ClusterSecretStore",
			kind:     "ClusterSecretStore",
			provider: "gcpsm: {projectID: p, auth: {workloadIdentity: {}}}",
			written:  true,
			want:     []finding{{Dropped, p + "gcpsm.auth.workloadIdentity.serviceAccountRef"}, {Dropped, p + "gcpsm.auth.workloadIdentity"}},
			has:      []string{"namespace: replace-me"},
		},
		{
			name:     "gcp federation with a service account without a name",
			kind:     "ClusterSecretStore",
			provider: "gcpsm: {projectID: p, auth: {workloadIdentityFederation: {audience: '//iam.googleapis.com/x', serviceAccountRef: {namespace: platform}, gcpServiceAccountEmail: r@p.iam.gserviceaccount.com}}}",
			written:  true,
			want:     []finding{{Dropped, p + "gcpsm.auth.workloadIdentityFederation.serviceAccountRef"}},
			has:      []string{"name: replace-me", "namespace: platform"},
		},
		{
			name:     "gcp project Watchword refuses",
			provider: "gcpsm: {projectID: My_Project, auth: {secretRef: {secretAccessKeySecretRef: {name: k, key: k}}}}",
			want:     []finding{{Dropped, p + "gcpsm.projectID"}},
		},
		{
			name:     "gcp location Watchword refuses",
			provider: "gcpsm: {projectID: p, location: Europe/West, auth: {secretRef: {secretAccessKeySecretRef: {name: k, key: k}}}}",
			want:     []finding{{Dropped, p + "gcpsm.location"}},
		},
		{
			name:     "gcp unknown version policy",
			provider: "gcpsm: {projectID: p, secretVersionSelectionPolicy: Oldest, auth: {secretRef: {secretAccessKeySecretRef: {name: k, key: k}}}}",
			written:  true,
			want:     []finding{{Dropped, p + "gcpsm.secretVersionSelectionPolicy"}},
		},
		{
			name:     "alibaba two methods: the keys are carried",
			provider: "alibaba: {regionID: cn-hangzhou, auth: {secretRef: {accessKeyIDSecretRef: {name: a, key: i}, accessKeySecretSecretRef: {name: a, key: s}}, rrsa: {roleArn: 'acs:ram::1:role/r'}}}",
			written:  true,
			want:     []finding{{Dropped, p + "alibaba.auth.rrsa"}},
			has:      []string{"accessKeySecret:"},
		},
		{
			name:     "alibaba access key without its secret",
			provider: "alibaba: {regionID: cn-hangzhou, auth: {secretRef: {accessKeyIDSecretRef: {name: a, key: i}}}}",
			want:     []finding{{Dropped, p + "alibaba.auth.secretRef.accessKeySecretSecretRef"}},
		},
		{
			name:     "alibaba RRSA with a role that is not a RAM ARN",
			provider: "alibaba: {regionID: cn-hangzhou, auth: {rrsa: {roleArn: 'arn:aws:iam::1:role/r', oidcProviderArn: 'acs:ram::1:oidc-provider/p', oidcTokenFilePath: /t, sessionName: s}}}",
			want:     []finding{{Dropped, p + "alibaba.auth.rrsa.roleArn"}},
		},
		{
			name:     "alibaba RRSA with a session name Watchword refuses: the default is used",
			provider: "alibaba: {regionID: cn-hangzhou, auth: {rrsa: {roleArn: 'acs:ram::1:role/r', oidcProviderArn: 'acs:ram::1:oidc-provider/p', oidcTokenFilePath: /t, sessionName: 'eso session'}}}",
			written:  true,
			want:     []finding{{Dropped, p + "alibaba.auth.rrsa.sessionName"}, {Dropped, p + "alibaba.auth.rrsa.oidcTokenFilePath"}},
			has:      []string{"roleARN: acs:ram::1:role/r"},
		},
		{
			name:     "alibaba without a region",
			provider: "alibaba: {auth: {secretRef: {accessKeyIDSecretRef: {name: a, key: i}, accessKeySecretSecretRef: {name: a, key: s}}}}",
			want:     []finding{{Dropped, p + "alibaba.regionID"}},
		},
		{
			name:     "barbican, which convert does not carry",
			provider: "barbican: {}",
			want:     []finding{{Dropped, p + "barbican"}},
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
		})
	}
}
