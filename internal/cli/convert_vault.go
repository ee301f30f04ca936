package cli

import (
	"reflect"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// vault carries ESO's Vault block. Its auth methods mostly keep their
// shape; those whose fields Watchword names otherwise are rewritten here.
func (c *converter) vault(kind string, dst map[string]any, b map[string]any, path string) bool {
	if _, ok := b["version"]; !ok {
		b["version"] = "v2" // ESO's default; Watchword's is to detect it.
	}
	if _, ok := b["path"]; !ok {
		c.drop(path+".path", "unset: ESO then reads the mount from the first segment of each key, Watchword from path (default secret): set path to the mount and remove it from the keys")
	}
	if auth := takeMap(b, "auth"); auth != nil {
		apath := path + ".auth"
		if k := takeMap(auth, "kubernetes"); k != nil {
			if _, ok := take(k, "secretRef"); ok {
				c.drop(apath+".kubernetes.secretRef", "a service account token kept in a Secret is not supported: Watchword requests one for serviceAccountRef")
			}
			if _, ok := k["serviceAccountRef"]; !ok {
				c.drop(apath+".kubernetes.serviceAccountRef", "unset: ESO then uses its own service account; Watchword needs serviceAccountRef")
			}
			auth["kubernetes"] = k
		}
		if j := takeMap(auth, "jwt"); j != nil {
			c.vaultJWT(j, apath+".jwt")
			auth["jwt"] = j
		}
		for _, m := range []string{"userPass", "ldap"} {
			if p := takeMap(auth, m); p != nil {
				if p["secretRef"] == nil || p["username"] == nil {
					c.drop(pathJoin(apath, m), "without username and secretRef (the password): Watchword reads the password from a Secret")
				} else {
					auth[m] = p
				}
			}
		}
		if cert := takeMap(auth, "cert"); cert != nil {
			// ESO's secretRef is the certificate's private key.
			set(cert, "clientKey", takeMap(cert, "secretRef"))
			if cert["clientCert"] == nil || cert["clientKey"] == nil {
				c.drop(apath+".cert", "without both clientCert and secretRef (the key): Watchword's cert auth reads the certificate and its key from Secrets")
			} else {
				auth["cert"] = cert
				if _, ok := take(b, "tls"); ok {
					c.drop(path+".tls", "Watchword's cert auth presents its own certificate (auth.cert.clientCert) on every connection, so vault.tls is not carried with it")
				}
			}
		}
		if iam := takeMap(auth, "iam"); iam != nil {
			auth["iam"] = c.vaultIAM(kind, iam, apath+".iam")
		}
		if g := takeMap(auth, "gcp"); g != nil {
			if gcp := c.vaultGCP(g, apath+".gcp"); gcp != nil {
				auth["gcp"] = gcp
			}
		}
		b["auth"] = auth
	}
	return c.provider(dst, "vault", b, path, reflect.TypeFor[v1alpha1.VaultProvider]())
}

func (c *converter) vaultJWT(j map[string]any, path string) {
	if _, ok := take(j, "secretRef"); ok {
		c.drop(path+".secretRef", "a JWT kept in a Secret is not supported: Watchword requests a service account token")
	}
	sat := takeMap(j, "kubernetesServiceAccountToken")
	if sat == nil {
		c.drop(path, "without kubernetesServiceAccountToken: Watchword's jwt auth uses a service account token")
		return
	}
	ref := takeMap(sat, "serviceAccountRef")
	if aud := takeList(sat, "audiences"); len(aud) > 0 && ref != nil {
		if _, has := ref["audiences"]; !has {
			ref["audiences"] = aud
		}
	}
	if _, ok := take(sat, "expirationSeconds"); ok {
		c.drop(path+".kubernetesServiceAccountToken.expirationSeconds", "Watchword requests tokens of its own lifetime")
	}
	c.leftovers(sat, path+".kubernetesServiceAccountToken")
	set(j, "serviceAccountRef", ref)
}

// vaultIAM rewrites ESO's iam block: the AWS credentials move under auth
// with the awssm block's names.
func (c *converter) vaultIAM(kind string, iam map[string]any, path string) map[string]any {
	if id, ok := take(iam, "vaultAwsIamServerID"); ok {
		iam["iamServerID"] = id
	}
	creds := map[string]any{}
	if ref := takeMap(iam, "secretRef"); ref != nil {
		out := map[string]any{}
		set(out, "accessKeyID", takeMap(ref, "accessKeyIDSecretRef"))
		set(out, "secretAccessKey", takeMap(ref, "secretAccessKeySecretRef"))
		set(out, "sessionToken", takeMap(ref, "sessionTokenSecretRef"))
		c.leftovers(ref, path+".secretRef")
		creds["secretRef"] = out
	}
	jwt := takeMap(iam, "jwt")
	switch {
	case jwt != nil:
		c.drop(path+".jwt", "ESO takes the role from the service account's eks.amazonaws.com/role-arn annotation, Watchword from auth.jwt.roleARN: write auth.jwt with serviceAccountRef and roleARN by hand")
	case creds["secretRef"] != nil:
	case kind == v1alpha1.ClusterSecretStoreKind:
		creds["controllerCredentials"] = true
		c.note(path, "no secretRef or jwt: ESO used the controller's own AWS identity; written as auth.controllerCredentials: true, which only a ClusterSecretStore may set")
	default:
		c.drop(path, "no secretRef or jwt: ESO used the controller's own AWS identity, which Watchword lends only through a ClusterSecretStore (auth.controllerCredentials): set auth.secretRef or auth.jwt")
	}
	iam["auth"] = creds
	return iam
}

// vaultGCP carries ESO's gcp block when it logs in with a key file from a
// Secret, the one way Watchword's gcp login has; nil when it cannot.
func (c *converter) vaultGCP(g map[string]any, path string) map[string]any {
	for _, k := range []string{"projectID", "location"} {
		if _, ok := take(g, k); ok {
			c.note(pathJoin(path, k), "not needed: Vault's gcp login is made as the key file's service account")
		}
	}
	identity := false
	for _, k := range []string{"workloadIdentity", "serviceAccountRef"} {
		if _, ok := take(g, k); ok {
			identity = true
			c.drop(pathJoin(path, k), "Watchword's gcp login signs with a key file from a Secret (secretRef); a pod's or workload identity is not supported: use kubernetes or jwt auth")
		}
	}
	if g["secretRef"] == nil {
		if !identity {
			c.drop(path, "without secretRef: ESO then used the controller's own Google identity, which Watchword's gcp login does not support: set secretRef to a key file, or use kubernetes or jwt auth")
		}
		return nil
	}
	return g
}
