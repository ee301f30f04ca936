package cli

import (
	"reflect"
	"slices"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// infisicalOtherAuth are the logins of ESO's infisical block other than
// Universal Auth, which Watchword's does not have.
var infisicalOtherAuth = []string{"awsAuthCredentials", "azureAuthCredentials", "gcpIamAuthCredentials", "gcpIdTokenAuthCredentials",
	"jwtAuthCredentials", "kubernetesAuthCredentials", "ldapAuthCredentials", "ociAuthCredentials", "tokenAuthCredentials"}

// infisical carries ESO's infisical block to Watchword's, which has the
// same name and fields for a Universal Auth login. A store that logs in
// otherwise is not converted (ESO's Kubernetes Auth sends the token of
// its own pod, Watchword's that of a named service account); expandSecretReferences: false is not
// carried (Watchword always expands, as ESO does by default).
func (c *converter) infisical(dst, b map[string]any, path string) bool {
	out := map[string]any{}
	set(out, "hostAPI", takeString(b, "hostAPI"))
	if ca, ok := take(b, "caBundle"); ok {
		out["caBundle"] = ca
	}
	if ca := takeMap(b, "caProvider"); ca != nil {
		out["caProvider"] = c.carry(ca, reflect.TypeFor[v1alpha1.CAProvider](), path+".caProvider")
	}
	scopePath := path + ".secretsScope"
	scope := takeMap(b, "secretsScope")
	sc := map[string]any{}
	for _, k := range []string{"projectSlug", "environmentSlug", "secretsPath"} {
		set(sc, k, takeString(scope, k))
	}
	if v, ok := take(scope, "recursive"); ok {
		if on, _ := v.(bool); on {
			sc["recursive"] = true
		}
	}
	if v, ok := take(scope, "expandSecretReferences"); ok {
		if on, isBool := v.(bool); isBool && !on {
			c.drop(scopePath+".expandSecretReferences", "Watchword always expands secret references (ESO's default): values that hold ${...} are read expanded")
		}
	}
	c.leftovers(scope, scopePath)
	auth := takeMap(b, "auth")
	ua := takeMap(auth, "universalAuthCredentials")
	var other []string
	for _, k := range infisicalOtherAuth {
		if _, ok := take(auth, k); ok {
			other = append(other, k)
		}
	}
	c.leftovers(auth, path+".auth")
	c.leftovers(b, path)
	if ua == nil {
		reason := "no universalAuthCredentials: the store is not converted"
		if len(other) > 0 {
			slices.Sort(other)
			reason = "the store logs in with " + other[0] + ": Watchword's infisical store logs in with Universal Auth, or with Kubernetes Auth as a named service account (kubernetesAuth: identityId and serviceAccountRef, which ESO's block does not hold: write it by hand); the store is not converted"
		}
		c.drop(path+".auth", reason)
		return false
	}
	if sc["projectSlug"] == nil || sc["environmentSlug"] == nil {
		c.drop(scopePath, "secretsScope needs projectSlug and environmentSlug (Watchword reads a project by its slug): the store is not converted")
		return false
	}
	creds := map[string]any{}
	for _, k := range []string{"clientId", "clientSecret"} {
		ref := takeMap(ua, k)
		refPath := path + ".auth.universalAuthCredentials." + k
		if name, _ := ref["name"].(string); name == "" {
			c.drop(refPath, "no Secret named for the "+k+": the store is not converted")
			return false
		}
		if key, _ := ref["key"].(string); !secretKeyName.MatchString(key) {
			c.drop(refPath+".key", "the Secret key of the "+k+" is not named (or not a key's name): Watchword reads one named key; the store is not converted")
			return false
		}
		creds[k] = c.carry(ref, reflect.TypeFor[v1alpha1.SecretKeySelector](), refPath)
	}
	c.leftovers(ua, path+".auth.universalAuthCredentials")
	out["auth"] = map[string]any{"universalAuthCredentials": creds}
	out["secretsScope"] = sc
	dst["infisical"] = out
	return true
}
