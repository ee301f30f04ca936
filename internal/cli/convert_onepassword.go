package cli

import (
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// onepassword carries ESO's onepassword block (1Password Connect) 1:1:
// connectHost, the vaults with their priorities, and the token's Secret
// key.
func (c *converter) onepassword(dst, b map[string]any, path string) bool {
	out := map[string]any{}
	host := takeString(b, "connectHost")
	u, err := url.Parse(host)
	if host == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		c.drop(path+".connectHost", "unset or not a bare http(s) address such as http://onepassword-connect:8080: the store is not converted")
		return false
	}
	out["connectHost"] = host

	vaults := takeMap(b, "vaults")
	if len(vaults) == 0 {
		c.drop(path+".vaults", "unset: Watchword needs at least one vault with its priority; the store is not converted")
		return false
	}
	vout := map[string]any{}
	seen := map[int64]string{}
	for _, name := range slices.Sorted(maps.Keys(vaults)) {
		prio, ok := wholeNumber(vaults[name])
		if !ok || prio < 1 {
			c.drop(pathJoin(path+".vaults", name), "not a priority of 1 or more: the store is not converted")
			return false
		}
		if other, dup := seen[prio]; dup {
			c.drop(pathJoin(path+".vaults", name), fmt.Sprintf("the same priority as vault %q, which Watchword refuses (give each vault its own priority): the store is not converted", other))
			return false
		}
		seen[prio] = name
		vout[name] = prio
	}
	out["vaults"] = vout

	apath := path + ".auth.secretRef"
	auth := takeMap(b, "auth")
	ref := takeMap(auth, "secretRef")
	tok := takeMap(ref, "connectTokenSecretRef")
	if tok == nil {
		c.drop(apath+".connectTokenSecretRef", "unset: the store is not converted")
		return false
	}
	out["auth"] = map[string]any{"secretRef": map[string]any{
		"connectTokenSecretRef": c.carry(tok, reflect.TypeFor[v1alpha1.SecretKeySelector](), apath+".connectTokenSecretRef"),
	}}
	c.leftovers(ref, apath)
	c.leftovers(auth, path+".auth")
	c.leftovers(b, path)
	dst["onepassword"] = out
	return true
}

// wholeNumber reads a YAML number that is a whole number.
func wholeNumber(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true
		}
	}
	return 0, false
}
