package cli

import (
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"regexp"
	"strings"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// The rules of the cloud providers whose ESO blocks differ most from
// Watchword's: Azure Key Vault, Google Cloud Secret Manager and Alibaba
// Cloud KMS Secrets Manager. ESO reads some identities from places a
// manifest does not hold (a Secret's value, a service account's
// annotation, its own pod); Watchword takes them in the store. Such a
// value is written as placeholder, so that the store is still accepted
// by the API server, and reported as dropped with what to write instead.

// placeholder stands for a value Watchword needs that the ESO manifest
// does not hold. It fits every pattern of the fields it is written to.
const placeholder = "replace-me"

// unknown reports a value that is written as placeholder; reason ends
// with what to write instead.
func (c *converter) unknown(path, reason string) string {
	c.drop(path, reason+" (written as "+placeholder+" until then)")
	return placeholder
}

// account carries an ESO service account selector. One without a name
// (or none at all) is written with placeholder as its name, and unset
// says what ESO did then.
func (c *converter) account(kind string, sa map[string]any, path, unset string) any {
	if name, _ := sa["name"].(string); name == "" {
		delete(sa, "name")
		acc := c.unknownAccount(kind, path, unset)
		maps.Copy(acc, sa)
		sa = acc
	}
	return c.carry(sa, reflect.TypeFor[v1alpha1.ServiceAccountSelector](), path)
}

// unknownAccount is a service account selector written as placeholder,
// with a placeholder namespace in a ClusterSecretStore, which must name
// one.
func (c *converter) unknownAccount(kind, path, reason string) map[string]any {
	sa := map[string]any{"name": c.unknown(path, reason)}
	if kind == "ClusterSecretStore" {
		sa["namespace"] = placeholder
	}
	return sa
}

// fits tells whether v is accepted by a field with pattern re and at
// most maxLen characters; if not, it reports the value, and then what
// follows.
func (c *converter) fits(path, v string, re *regexp.Regexp, maxLen int, what, then string) bool {
	if re.MatchString(v) && len(v) <= maxLen {
		return true
	}
	c.drop(path, fmt.Sprintf("not %s that Watchword's API takes (at most %d characters, %s): %s", what, maxLen, re, then))
	return false
}

const notConverted = "the store is not converted"

var (
	azureTenant   = regexp.MustCompile(`^[-a-zA-Z0-9.]+$`)
	gcpProject    = regexp.MustCompile(`^[a-z][-a-z0-9.:]*$`)
	gcpLocation   = regexp.MustCompile(`^[a-z0-9-]+$`)
	alibabaRegion = regexp.MustCompile(`^[a-z0-9-]+$`)
	alibabaSess   = regexp.MustCompile(`^[a-zA-Z0-9._@-]+$`)
)

// secretName names the Secret key an ESO selector points at, for a
// finding: names, never values.
func secretName(ref map[string]any) string {
	name, _ := ref["name"].(string)
	key, _ := ref["key"].(string)
	if ns, _ := ref["namespace"].(string); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("key %q of Secret %q", key, name)
}

// httpsHost tells whether u is an https address that Watchword's azurekv
// takes: a host, and a path only where anyPath allows one.
func httpsHost(u string, anyPath bool) bool {
	p, err := url.Parse(u)
	return err == nil && len(u) <= 2048 && p.Scheme == "https" && p.Host != "" &&
		(anyPath || p.Path == "" || p.Path == "/") && p.RawQuery == ""
}

// Microsoft Entra hosts of ESO's environment types.
var azureAuthorities = map[string]string{
	"USGovernmentCloud": "https://login.microsoftonline.us/",
	"ChinaCloud":        "https://login.chinacloudapi.cn/",
}

func (c *converter) azurekv(kind string, dst, b map[string]any, path string) bool {
	out := map[string]any{}
	vaultURL := takeString(b, "vaultUrl")
	if !httpsHost(vaultURL, false) {
		c.drop(path+".vaultUrl", "unset or not the vault's https address alone: Watchword needs it as vaultURL, such as https://myvault.vault.azure.net; the store is not converted")
		return false
	}
	out["vaultURL"] = vaultURL
	tenant := takeString(b, "tenantId")
	// A tenant Watchword's API refuses is reported where it is needed.
	badTenant := tenant != "" && (!azureTenant.MatchString(tenant) || len(tenant) > 64)
	if badTenant {
		tenant = ""
	}

	env := takeString(b, "environmentType")
	switch env {
	case "", "PublicCloud":
	case "USGovernmentCloud", "ChinaCloud":
		out["authorityHost"] = azureAuthorities[env]
	case "GermanCloud":
		c.drop(path+".environmentType", "Microsoft closed Azure Germany in 2021: not carried, the store signs in at the public cloud; set authorityHost if the vault is elsewhere")
	case "AzureStackCloud":
		if _, ok := b["customCloudConfig"]; !ok {
			c.drop(path+".environmentType", "AzureStackCloud without customCloudConfig: set authorityHost to the Microsoft Entra (or AD FS) host of the Azure Stack")
		}
	default:
		c.drop(path+".environmentType", fmt.Sprintf("environmentType %s is not known: not carried", env))
	}
	if cc := takeMap(b, "customCloudConfig"); cc != nil {
		cpath := path + ".customCloudConfig"
		if ad := takeString(cc, "activeDirectoryEndpoint"); httpsHost(ad, true) {
			out["authorityHost"] = ad
		} else {
			c.drop(cpath+".activeDirectoryEndpoint", "unset or not an https address: not carried; set authorityHost to the Microsoft Entra host")
		}
		for _, k := range []string{"keyVaultEndpoint", "keyVaultDNSSuffix"} {
			if _, ok := take(cc, k); ok {
				c.note(pathJoin(cpath, k), "not needed: Watchword reads the vault at vaultURL and takes the token's resource from the vault's own challenge")
			}
		}
		if _, ok := take(cc, "resourceManagerEndpoint"); ok {
			c.note(cpath+".resourceManagerEndpoint", "not needed: Watchword does not call Azure Resource Manager")
		}
		c.leftovers(cc, cpath)
	}
	if _, ok := take(b, "useAzureSDK"); ok {
		c.note(path+".useAzureSDK", "not needed: Watchword always uses Azure's SDK for Go (azidentity and azsecrets)")
	}

	authType := takeString(b, "authType")
	ref := takeMap(b, "authSecretRef")
	sa := takeMap(b, "serviceAccountRef")
	identity, hasIdentity := take(b, "identityId")
	auth := map[string]any{}
	// unused reports what ESO itself ignores with this auth type.
	unused := func(p string) {
		c.note(p, fmt.Sprintf("not used with authType %s (ESO ignores it too): not carried", authType))
	}
	// clientID is the client ID that ESO reads from a Secret (or, with
	// workload identity, from the service account's annotation).
	clientID := func(annotation bool) string {
		if r := takeMap(ref, "clientId"); r != nil {
			return c.unknown(path+".authSecretRef.clientId", fmt.Sprintf("ESO reads the client ID from %s; Watchword takes the client ID itself (it is not a secret): set clientID to it", secretName(r)))
		}
		if annotation {
			return c.unknown(path+".serviceAccountRef", "ESO reads the client ID from the service account's azure.workload.identity/client-id annotation (or its own AZURE_CLIENT_ID); Watchword takes it in the store: set workloadIdentity.clientID to it")
		}
		return c.unknown(path+".authSecretRef.clientId", "unset: set clientID to the application (client) ID")
	}
	// tenantID is the tenant when the store does not give it.
	tenantID := func(annotation bool) {
		if badTenant {
			tenant = c.unknown(path+".tenantId", "not a tenant ID Watchword takes (letters, digits, dots and dashes, at most 64): set tenantID to the directory (tenant) ID")
			return
		}
		if tenant != "" {
			if r := takeMap(ref, "tenantId"); r != nil {
				c.note(path+".authSecretRef.tenantId", "tenantId of the store is used, as ESO does: not carried")
			}
			return
		}
		if r := takeMap(ref, "tenantId"); r != nil {
			tenant = c.unknown(path+".authSecretRef.tenantId", fmt.Sprintf("ESO reads the tenant ID from %s; Watchword takes it in the store: set tenantID to it", secretName(r)))
			return
		}
		why := "unset: Watchword needs tenantID, the directory (tenant) ID of the app registration"
		if annotation {
			why = "unset: ESO then reads the tenant from the service account's azure.workload.identity/tenant-id annotation (or its own AZURE_TENANT_ID); Watchword needs tenantID in the store"
		}
		tenant = c.unknown(path+".tenantId", why)
	}

	switch authType {
	case "", "ServicePrincipal":
		authType = "ServicePrincipal"
		if ref == nil {
			c.drop(path+".authSecretRef", "unset: a service principal needs a client secret or a client certificate; the store is not converted")
			return false
		}
		secret := takeMap(ref, "clientSecret")
		cert := takeMap(ref, "clientCertificate")
		switch {
		case secret != nil:
			auth["clientSecret"] = map[string]any{
				"clientID":        clientID(false),
				"clientSecretRef": c.carry(secret, reflect.TypeFor[v1alpha1.SecretKeySelector](), path+".authSecretRef.clientSecret"),
			}
			if cert != nil {
				c.drop(path+".authSecretRef.clientCertificate", "Watchword takes one method: clientSecret is carried, the certificate is not")
			}
		case cert != nil:
			auth["clientCertificate"] = map[string]any{
				"clientID":       clientID(false),
				"certificateRef": c.carry(cert, reflect.TypeFor[v1alpha1.SecretKeySelector](), path+".authSecretRef.clientCertificate"),
			}
		default:
			c.drop(path+".authSecretRef", "neither clientSecret nor clientCertificate: the store is not converted")
			return false
		}
		tenantID(false)
		if sa != nil {
			unused(path + ".serviceAccountRef")
		}
		if hasIdentity {
			unused(path + ".identityId")
		}
	case "WorkloadIdentity":
		auth["workloadIdentity"] = map[string]any{
			"clientID":          clientID(true),
			"serviceAccountRef": c.account(kind, sa, path+".serviceAccountRef", "unset: ESO then signs in with its own pod's workload identity, which Watchword does not use; set workloadIdentity.serviceAccountRef to a service account that the app's federated credential trusts"),
		}
		tenantID(true)
		for _, k := range []string{"clientSecret", "clientCertificate"} {
			if _, ok := take(ref, k); ok {
				unused(path + ".authSecretRef." + k)
			}
		}
		if hasIdentity {
			unused(path + ".identityId")
		}
	case "ManagedIdentity":
		if kind != "ClusterSecretStore" {
			c.drop(path+".authType", "ManagedIdentity acts as the identity of the machine Watchword runs on, which every namespace would share, so Watchword allows it in a ClusterSecretStore only (a cluster administrator's choice): the store is not converted; use WorkloadIdentity, or a ClusterSecretStore limited to this namespace (spec.namespaces)")
			return false
		}
		mi := map[string]any{}
		switch id, _ := identity.(string); {
		case len(id) > 64:
			mi["clientID"] = c.unknown(path+".identityId", "longer than a client ID (a resource ID?): Watchword selects a user-assigned identity by its client ID: set managedIdentity.clientID to it")
		case id != "":
			mi["clientID"] = id
		}
		auth["managedIdentity"] = mi
		if badTenant {
			c.note(path+".tenantId", "not a tenant ID Watchword takes: not carried (managed identity does not need it)")
		}
		c.note(path+".authType", "ManagedIdentity is carried as managedIdentity because this is a ClusterSecretStore: Watchword uses the managed identity of the node (the instance metadata endpoint), not of ESO's pod (aad-pod-identity), and every namespace the store serves acts as it; limit them with spec.namespaces or spec.namespaceSelector")
		if sa != nil {
			unused(path + ".serviceAccountRef")
		}
		for _, k := range []string{"clientId", "tenantId", "clientSecret", "clientCertificate"} {
			if _, ok := take(ref, k); ok {
				unused(path + ".authSecretRef." + k)
			}
		}
	default:
		c.drop(path+".authType", fmt.Sprintf("authType %s is not known: the store is not converted", authType))
		return false
	}
	c.leftovers(ref, path+".authSecretRef")
	set(out, "tenantID", tenant)
	out["auth"] = auth
	c.leftovers(b, path)
	dst["azurekv"] = c.carry(out, reflect.TypeFor[v1alpha1.AzureKVProvider](), path)
	return true
}

// gkeAudience is the audience written for ESO's GKE workload identity,
// which has no pool provider of its own.
const gkeAudience = "//iam.googleapis.com/projects/" + placeholder + "/locations/global/workloadIdentityPools/" + placeholder + "/providers/" + placeholder

func (c *converter) gcpsm(kind string, dst, b map[string]any, path string) bool {
	out := map[string]any{}
	switch project := takeString(b, "projectID"); {
	case project == "":
		out["projectID"] = c.unknown(path+".projectID", "unset: ESO then takes the project of its credentials or of the cluster; Watchword needs projectID, the project that holds the secrets")
	case c.fits(path+".projectID", project, gcpProject, 30, "a Google Cloud project ID", notConverted):
		out["projectID"] = project
	default:
		return false
	}
	if loc := takeString(b, "location"); loc != "" {
		if !c.fits(path+".location", loc, gcpLocation, 64, "a Google Cloud location", notConverted) {
			return false
		}
		out["location"] = loc
	}
	switch p := takeString(b, "secretVersionSelectionPolicy"); p {
	case "", "LatestOrFail":
	case "LatestOrFetch":
		c.drop(path+".secretVersionSelectionPolicy", "Watchword reads the version a key names (latest when it names none) and reports a disabled or destroyed one; it does not fall back to an older enabled version: enable the latest version, or name one in remoteRef.version")
	default:
		c.drop(path+".secretVersionSelectionPolicy", fmt.Sprintf("secretVersionSelectionPolicy %s is not known: not carried", p))
	}

	apath := path + ".auth"
	auth := takeMap(b, "auth")
	secret := takeMap(auth, "secretRef")
	wif := takeMap(auth, "workloadIdentityFederation")
	gke := takeMap(auth, "workloadIdentity")
	var method map[string]any
	switch {
	case secret != nil:
		method = map[string]any{"secretRef": c.carry(secret, reflect.TypeFor[v1alpha1.GCPSMSecretRef](), apath+".secretRef")}
		if wif != nil {
			c.drop(apath+".workloadIdentityFederation", "Watchword takes one method: secretRef is carried")
		}
		if gke != nil {
			c.drop(apath+".workloadIdentity", "Watchword takes one method: secretRef is carried")
		}
	case wif != nil:
		m := c.gcpFederation(kind, wif, apath+".workloadIdentityFederation")
		if m == nil {
			return false
		}
		method = map[string]any{"workloadIdentityFederation": m}
		if gke != nil {
			c.drop(apath+".workloadIdentity", "Watchword takes one method: workloadIdentityFederation is carried")
		}
	case gke != nil:
		gpath := apath + ".workloadIdentity"
		sa := c.account(kind, takeMap(gke, "serviceAccountRef"), gpath+".serviceAccountRef", "unset: set workloadIdentityFederation.serviceAccountRef")
		for _, k := range []string{"clusterLocation", "clusterName", "clusterProjectID"} {
			take(gke, k)
		}
		c.leftovers(gke, gpath)
		c.drop(gpath, "GKE Workload Identity (the cluster's identity pool PROJECT.svc.id.goog, reached through the GKE metadata server) is not in Watchword's API: written as workloadIdentityFederation with the same service account and the audience "+gkeAudience+"; create a workload identity pool provider that trusts the cluster's OIDC issuer, set audience to its name, and set serviceAccountEmail to the Google service account of the service account's iam.gke.io/gcp-service-account annotation (the one ESO impersonated)")
		method = map[string]any{"workloadIdentityFederation": map[string]any{
			"audience":          gkeAudience,
			"serviceAccountRef": sa,
		}}
	default:
		c.drop(apath, "no auth: External Secrets Operator used the controller's own Google credentials (the metadata server or GOOGLE_APPLICATION_CREDENTIALS), which Watchword does not use; set auth.workloadIdentityFederation or auth.secretRef: the store is not converted")
		return false
	}
	c.leftovers(auth, apath)
	out["auth"] = method
	c.leftovers(b, path)
	dst["gcpsm"] = out
	return true
}

// gcpFederation carries ESO's workloadIdentityFederation, or returns nil
// when it exchanges anything but a Kubernetes service account's token.
func (c *converter) gcpFederation(kind string, w map[string]any, path string) map[string]any {
	sa := takeMap(w, "serviceAccountRef")
	cred := takeMap(w, "credConfig")
	if _, ok := take(w, "awsSecurityCredentials"); ok {
		c.drop(path+".awsSecurityCredentials", "AWS credentials as the federated identity are not supported: Watchword exchanges a Kubernetes service account's token")
	}
	if sa == nil {
		c.drop(path, "without serviceAccountRef: Watchword exchanges a token of a Kubernetes service account only (not a credential configuration's file or URL source, nor AWS credentials); the store is not converted")
		return nil
	}
	out := map[string]any{"serviceAccountRef": c.account(kind, sa, path+".serviceAccountRef", "without a name: set serviceAccountRef.name")}
	aud := takeString(w, "audience")
	switch {
	case strings.HasPrefix(aud, "//iam.googleapis.com/") && len(aud) <= 512:
		out["audience"] = aud
	case aud == "" && cred != nil:
		out["audience"] = "//iam.googleapis.com/" + placeholder
		c.drop(path+".audience", fmt.Sprintf("unset: ESO takes it from the credential configuration in key %v of ConfigMap %v; set audience to that audience (written as //iam.googleapis.com/%s until then)", cred["key"], cred["name"], placeholder))
	default:
		c.drop(path+".audience", "unset or not a pool provider's name (//iam.googleapis.com/projects/NUMBER/locations/global/workloadIdentityPools/POOL/providers/PROVIDER): the store is not converted")
		return nil
	}
	if cred != nil {
		c.drop(path+".credConfig", "the credential configuration is not read: Watchword uses the audience and service account given in the store; if it names service_account_impersonation_url, set serviceAccountEmail to that account")
	}
	if _, ok := take(w, "externalTokenEndpoint"); ok {
		c.note(path+".externalTokenEndpoint", "not needed: ESO only checks it against the credential configuration")
	}
	if email := takeString(w, "gcpServiceAccountEmail"); email != "" {
		out["serviceAccountEmail"] = email
	} else {
		c.note(path+".gcpServiceAccountEmail", "unset: ESO then impersonates the Google service account of the service account's iam.gke.io/gcp-service-account annotation, if it has one; Watchword reads no annotation: set serviceAccountEmail to it")
	}
	c.leftovers(w, path)
	return out
}

func (c *converter) alibaba(kind string, dst, b map[string]any, path string) bool {
	out := map[string]any{}
	region := takeString(b, "regionID")
	if region == "" {
		c.drop(path+".regionID", "unset: Watchword needs regionID; the store is not converted")
		return false
	}
	if !c.fits(path+".regionID", region, alibabaRegion, 64, "an Alibaba Cloud region", notConverted) {
		return false
	}
	out["regionID"] = region

	apath := path + ".auth"
	auth := takeMap(b, "auth")
	ref := takeMap(auth, "secretRef")
	rrsa := takeMap(auth, "rrsa")
	method := map[string]any{}
	switch {
	case ref != nil:
		rpath := apath + ".secretRef"
		sel := reflect.TypeFor[v1alpha1.SecretKeySelector]()
		keys := map[string]any{}
		for _, k := range [][2]string{{"accessKeyIDSecretRef", "accessKeyID"}, {"accessKeySecretSecretRef", "accessKeySecret"}} {
			r := takeMap(ref, k[0])
			if r == nil {
				c.drop(pathJoin(rpath, k[0]), "unset: the store is not converted")
				return false
			}
			keys[k[1]] = c.carry(r, sel, pathJoin(rpath, k[0]))
		}
		method["secretRef"] = keys
		c.leftovers(ref, rpath)
		if rrsa != nil {
			c.drop(apath+".rrsa", "Watchword takes one method: secretRef is carried")
		}
	case rrsa != nil:
		rpath := apath + ".rrsa"
		m := map[string]any{}
		for _, k := range [][2]string{{"roleArn", "roleARN"}, {"oidcProviderArn", "oidcProviderARN"}} {
			arn := takeString(rrsa, k[0])
			if !strings.HasPrefix(arn, "acs:ram::") || len(arn) > 1024 {
				c.drop(pathJoin(rpath, k[0]), "unset or not a RAM ARN (acs:ram::ACCOUNT:…): the store is not converted")
				return false
			}
			m[k[1]] = arn
		}
		if s := takeString(rrsa, "sessionName"); s != "" && c.fits(rpath+".sessionName", s, alibabaSess, 64, "a session name", "not carried, Watchword names the session watchword-NAMESPACE-STORE") {
			m["sessionName"] = s
		}
		take(rrsa, "oidcTokenFilePath")
		m["serviceAccountRef"] = c.unknownAccount(kind, rpath+".oidcTokenFilePath", "ESO reads the token of its own pod from a file; Watchword requests a token (audience sts.aliyuncs.com) for rrsa.serviceAccountRef: set it to a service account that the RAM role's trust policy names")
		c.leftovers(rrsa, rpath)
		method["rrsa"] = m
	default:
		c.drop(apath, "neither secretRef nor rrsa: the store is not converted")
		return false
	}
	c.leftovers(auth, apath)
	out["auth"] = method
	c.leftovers(b, path)
	dst["alibaba"] = out
	return true
}
