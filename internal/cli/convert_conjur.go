package cli

import (
	"encoding/base64"
	"net/url"
	"reflect"
	"strings"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// conjur carries ESO's conjur block: url, caBundle or caProvider, and
// auth.apikey {account, userRef, apiKeyRef} or auth.jwt {account,
// serviceID, hostId, serviceAccountRef or secretRef}. ESO's caBundle is a
// string, base64 of the PEM or the PEM itself (ESO takes either):
// Watchword's is bytes, so PEM text is encoded. A jwt block with both a
// secretRef and a serviceAccountRef keeps the secretRef, the one ESO
// uses.
func (c *converter) conjur(dst, b map[string]any, path string) bool {
	out := map[string]any{}
	raw := takeString(b, "url")
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		c.drop(path+".url", "unset or not an http(s) address such as https://conjur.example.com: the store is not converted")
		return false
	}
	out["url"] = raw
	if ca := takeString(b, "caBundle"); ca != "" {
		if pemText := strings.TrimSpace(ca); strings.HasPrefix(pemText, "-----BEGIN") {
			out["caBundle"] = base64.StdEncoding.EncodeToString([]byte(ca))
			c.note(path+".caBundle", "PEM text, carried base64-encoded (Watchword's caBundle is bytes)")
		} else if _, derr := base64.StdEncoding.DecodeString(ca); derr != nil {
			c.drop(path+".caBundle", "neither base64 nor PEM text: the store is not converted")
			return false
		} else {
			out["caBundle"] = ca
		}
	}
	if ca := takeMap(b, "caProvider"); ca != nil {
		if out["caBundle"] != nil {
			c.drop(path+".caProvider", "caBundle is set too, and Watchword takes one of them: caBundle is carried")
		} else {
			out["caProvider"] = c.carry(ca, reflect.TypeFor[v1alpha1.CAProvider](), path+".caProvider")
		}
	}
	auth := takeMap(b, "auth")
	apath := path + ".auth"
	apikey, jwt := takeMap(auth, "apikey"), takeMap(auth, "jwt")
	switch {
	case apikey != nil && jwt != nil:
		c.drop(apath+".jwt", "apikey is set too, and Watchword takes one way of authenticating: apikey is carried")
		fallthrough
	case apikey != nil:
		kpath := apath + ".apikey"
		account := takeString(apikey, "account")
		user, key := takeMap(apikey, "userRef"), takeMap(apikey, "apiKeyRef")
		c.leftovers(apikey, kpath)
		if account == "" || !c.namedKey(user, kpath+".userRef") || !c.namedKey(key, kpath+".apiKeyRef") {
			if account == "" {
				c.drop(kpath+".account", "unset: the store is not converted")
			}
			return false
		}
		out["auth"] = map[string]any{"apikey": map[string]any{"account": account,
			"userRef":   c.carry(user, reflect.TypeFor[v1alpha1.SecretKeySelector](), kpath+".userRef"),
			"apiKeyRef": c.carry(key, reflect.TypeFor[v1alpha1.SecretKeySelector](), kpath+".apiKeyRef")}}
	case jwt != nil:
		jpath := apath + ".jwt"
		j := map[string]any{}
		for _, k := range []string{"account", "serviceID", "hostId"} {
			set(j, k, takeString(jwt, k))
		}
		if j["account"] == nil || j["serviceID"] == nil {
			c.drop(jpath, "account and serviceID are needed: the store is not converted")
			return false
		}
		sec, sa := takeMap(jwt, "secretRef"), takeMap(jwt, "serviceAccountRef")
		c.leftovers(jwt, jpath)
		switch {
		case sec != nil:
			if sa != nil {
				c.drop(jpath+".serviceAccountRef", "secretRef is set too, which ESO uses first: secretRef is carried")
			}
			if !c.namedKey(sec, jpath+".secretRef") {
				return false
			}
			j["secretRef"] = c.carry(sec, reflect.TypeFor[v1alpha1.SecretKeySelector](), jpath+".secretRef")
		case sa != nil:
			j["serviceAccountRef"] = c.carry(sa, reflect.TypeFor[v1alpha1.ServiceAccountSelector](), jpath+".serviceAccountRef")
		default:
			c.drop(jpath, "neither secretRef nor serviceAccountRef: the store is not converted")
			return false
		}
		out["auth"] = map[string]any{"jwt": j}
	default:
		c.drop(apath, "neither apikey nor jwt: the store is not converted")
		return false
	}
	c.leftovers(auth, apath)
	c.leftovers(b, path)
	dst["conjur"] = out
	return true
}

// namedKey tells whether a Secret key selector names a Secret and a key,
// and reports one that does not.
func (c *converter) namedKey(ref map[string]any, path string) bool {
	name, _ := ref["name"].(string)
	key, _ := ref["key"].(string)
	switch {
	case ref == nil || name == "":
		c.drop(path, "no Secret named: the store is not converted")
		return false
	case !secretKeyName.MatchString(key):
		c.drop(path+".key", "the Secret key is not named (or not a key's name): Watchword reads one named key; the store is not converted")
		return false
	}
	return true
}
