package cli

import (
	"reflect"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// gitlab carries ESO's gitlab block to Watchword's, which has the same
// name and fields; ESO's auth.SecretRef is spelt auth.secretRef, and a
// token whose Secret key is not named is not carried (Watchword reads one
// key of a Secret, named).
func (c *converter) gitlab(dst, b map[string]any, path string) bool {
	out := map[string]any{}
	for _, k := range []string{"url", "projectID", "environment"} {
		set(out, k, takeString(b, k))
	}
	if groups := takeList(b, "groupIDs"); len(groups) > 0 {
		out["groupIDs"] = groups
	}
	if v, ok := take(b, "inheritFromGroups"); ok {
		switch on, _ := v.(bool); {
		case on && out["projectID"] == nil:
			c.drop(path+".inheritFromGroups", "without projectID there are no groups of a project to inherit from: not carried")
		case on:
			out["inheritFromGroups"] = true
		}
	}
	if out["projectID"] == nil && out["groupIDs"] == nil {
		c.drop(path, "neither projectID nor groupIDs: the store reads nothing and is not converted")
		return false
	}
	if ca, ok := take(b, "caBundle"); ok {
		out["caBundle"] = ca
	}
	if ca := takeMap(b, "caProvider"); ca != nil {
		out["caProvider"] = c.carry(ca, reflect.TypeFor[v1alpha1.CAProvider](), path+".caProvider")
	}
	auth := takeMap(b, "auth")
	ref := takeMap(auth, "SecretRef")
	refPath := path + ".auth.SecretRef"
	if ref == nil {
		ref, refPath = takeMap(auth, "secretRef"), path+".auth.secretRef"
	}
	token := takeMap(ref, "accessToken")
	c.leftovers(ref, refPath)
	c.leftovers(auth, path+".auth")
	c.leftovers(b, path)
	if name, _ := token["name"].(string); name == "" {
		c.drop(refPath+".accessToken", "no Secret named for the access token: the store is not converted")
		return false
	}
	if key, _ := token["key"].(string); !secretKeyName.MatchString(key) {
		c.drop(refPath+".accessToken.key", "the Secret key of the access token is not named (or not a key's name): Watchword reads one named key; the store is not converted")
		return false
	}
	out["auth"] = map[string]any{"secretRef": map[string]any{
		"accessToken": c.carry(token, reflect.TypeFor[v1alpha1.SecretKeySelector](), refPath+".accessToken"),
	}}
	dst["gitlab"] = out
	return true
}
