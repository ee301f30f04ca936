package cli

import (
	"fmt"
)

// External Secrets Operator makes ECR pull tokens with a generator: an
// ECRAuthorizationToken object (region, role, auth) that an ExternalSecret
// names in dataFrom[].sourceRef.generatorRef. Watchword asks for them with
// dataFrom[].registryToken against an AWS store's credentials, so convert
// writes the generator as a SecretStore of the same name (awssm, with the
// generator's region, role and auth) and the entry as a registryToken
// entry of that store. The token's keys that ESO templates use
// (username, password, proxy_endpoint, expires_at) are the same.

const (
	generatorGroup = "generators." + esoGroup
	ecrGenerator   = "ECRAuthorizationToken"
)

// ecrAuthorizationToken converts an ECRAuthorizationToken generator into
// the SecretStore that asks for its tokens.
func (c *converter) ecrAuthorizationToken(m map[string]any) []map[string]any {
	meta, spec := c.open(m)
	block := map[string]any{"service": "SecretsManager"}
	for _, k := range []string{"region", "role", "auth"} {
		if v, ok := take(spec, k); ok {
			block[k] = v
		}
	}
	if scope := takeString(spec, "scope"); scope == "public" {
		c.drop("spec.scope", "ECR Public (scope: public) is not supported: only private registries' tokens are; the generator is not converted")
		return nil
	}
	c.leftovers(spec, "spec")
	dst := map[string]any{}
	if !c.aws(dst, block, "spec") {
		return nil
	}
	c.note("", fmt.Sprintf("written as SecretStore %q (awssm, the generator's region, role and auth), which the converted ExternalSecrets that named the generator use for dataFrom registryToken", meta["name"]))
	out := newObject("SecretStore", meta)
	out["spec"] = dst
	return []map[string]any{out}
}

// ecrGeneratorRef is the name of the ECRAuthorizationToken generator a
// dataFrom entry names, or "".
func ecrGeneratorRef(e any) string {
	d, _ := e.(map[string]any)
	src, _ := d["sourceRef"].(map[string]any)
	g, _ := src["generatorRef"].(map[string]any)
	if g == nil || g["kind"] != ecrGenerator {
		return ""
	}
	if api, _ := g["apiVersion"].(string); api != "" && api != generatorGroup+"/v1alpha1" {
		return ""
	}
	name, _ := g["name"].(string)
	return name
}

// registryTokenEntry is the registryToken entry of an ESO dataFrom entry
// that names an ECRAuthorizationToken generator.
func (c *converter) registryTokenEntry(d map[string]any, path string) map[string]any {
	delete(d, "sourceRef")
	if rw := takeList(d, "rewrite"); len(rw) > 0 {
		c.drop(path+".rewrite", "a rewrite of the generator's keys is not carried: use a template")
	}
	c.leftovers(d, path)
	return map[string]any{"registryToken": map[string]any{"registry": "ECR"}}
}
