package cli

import (
	"fmt"
	"maps"
	"slices"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// pushSecret converts a PushSecret. ESO names a remote secret in each
// data entry (match.remoteRef.remoteKey) and a field of it in property;
// Watchword's PushSecret publishes one Secret to destinations that each
// name the remote secret, with data mapping Secret keys to fields. So an
// ESO PushSecret that writes to one remote secret becomes one PushSecret,
// and one that writes to several becomes one PushSecret for each,
// named NAME-1, NAME-2, … in the order of their first entry.
func (c *converter) pushSecret(m map[string]any) []map[string]any {
	meta, spec := c.open(m)
	base := map[string]any{}

	set(base, "refreshInterval", spec["refreshInterval"])
	delete(spec, "refreshInterval")
	// ESO's default is None: the remote secret stays when the PushSecret
	// goes. Watchword's default is Delete.
	switch p := takeString(spec, "deletionPolicy"); p {
	case "", "None":
		base["deletionPolicy"] = "Retain"
	case "Delete":
		base["deletionPolicy"] = "Delete"
	default:
		c.drop("spec.deletionPolicy", fmt.Sprintf("deletionPolicy %s is not known", p))
	}
	switch p := takeString(spec, "updatePolicy"); p {
	case "", "Replace":
		c.note("spec.updatePolicy", "Watchword writes over a remote secret only when it carries Watchword's ownership marker; to take over one that exists, set adopt: true on its destination")
	case "IfNotExists":
		// The same policy: a remote secret that exists is left as it is.
		base["updatePolicy"] = "IfNotExists"
	default:
		c.drop("spec.updatePolicy", fmt.Sprintf("updatePolicy %s is not known", p))
	}

	sel := takeMap(spec, "selector")
	if _, ok := take(sel, "generatorRef"); ok {
		c.drop("spec.selector.generatorRef", "publishing generated values is not supported: the PushSecret is not converted")
		return nil
	}
	secret := takeMap(sel, "secret")
	labels := takeMap(secret, "selector")
	name := takeString(secret, "name")
	c.leftovers(secret, "spec.selector.secret")
	c.leftovers(sel, "spec.selector")
	switch {
	case name != "" && labels != nil:
		c.drop("spec.selector.secret.selector", "both a Secret name and a label selector: the named Secret is published, the selector is not carried")
		labels = nil
		base["secretName"] = name
	case name != "":
		base["secretName"] = name
	case labels != nil:
		base["secretSelector"] = labels
	default:
		c.drop("spec.selector.secret.name", "no Secret named: the PushSecret is not converted")
		return nil
	}

	var stores []any
	for i, e := range takeList(spec, "secretStoreRefs") {
		r, _ := e.(map[string]any)
		p := pathIndex("spec.secretStoreRefs", i)
		if _, ok := take(r, "labelSelector"); ok {
			c.drop(p+".labelSelector", "selecting stores by label is not supported: name each store")
		}
		ref := map[string]any{}
		set(ref, "name", takeString(r, "name"))
		set(ref, "kind", takeString(r, "kind"))
		c.leftovers(r, p)
		if ref["name"] == nil {
			continue
		}
		if ref["kind"] == "ClusterSecretStore" {
			c.drop(p, "Watchword refuses ClusterSecretStore destinations for now (docs/publishing.md): carried, but it will report so until you name a SecretStore")
		}
		stores = append(stores, ref)
	}
	if len(stores) == 0 {
		c.drop("spec.secretStoreRefs", "no store named: the PushSecret is not converted")
		return nil
	}

	if t := takeMap(spec, "template"); t != nil {
		set(base, "template", c.template(t, "spec.template", true))
	}
	dataTo := takeList(spec, "dataTo")

	// Group the data entries by remote secret, in order. A remote secret
	// that gets every key of the Secret (whole) is published with no
	// data: Watchword's PushSecret then publishes every key under its
	// own name.
	var remotes []string
	fields := map[string][]any{}
	whole := map[string]bool{}
	for i, e := range takeList(spec, "data") {
		d, _ := e.(map[string]any)
		p := pathIndex("spec.data", i)
		if _, ok := take(d, "metadata"); ok {
			c.drop(p+".metadata", "provider-specific metadata is not carried: set labels, annotations or tags on the destination")
		}
		if s := takeString(d, "conversionStrategy"); s != "" && s != "None" {
			c.drop(p+".conversionStrategy", fmt.Sprintf("conversionStrategy %s is not supported", s))
		}
		match := takeMap(d, "match")
		key := takeString(match, "secretKey")
		ref := takeMap(match, "remoteRef")
		remote := takeString(ref, "remoteKey")
		property := takeString(ref, "property")
		c.leftovers(ref, p+".match.remoteRef")
		c.leftovers(match, p+".match")
		c.leftovers(d, p)
		switch {
		case remote == "":
			c.drop(p, "no remoteKey: the entry is not carried")
			continue
		case key == "" && property == "":
			// ESO pushes every key as it is into the remote secret.
			if _, ok := fields[remote]; !ok {
				remotes = append(remotes, remote)
				fields[remote] = nil
			}
			whole[remote] = true
			continue
		case key == "":
			c.drop(p, "no secretKey with a property (ESO then pushes the whole Secret as one JSON value): not supported, the entry is not carried")
			continue
		case property == "":
			c.drop(p, "no property (ESO then writes the key's value as the whole remote secret): Watchword writes named fields, so the entry is carried with the field named after the key")
			property = key
		}
		if _, ok := fields[remote]; !ok {
			remotes = append(remotes, remote)
		}
		entry := map[string]any{"secretKey": key}
		if property != key {
			entry["remoteKey"] = property
		}
		fields[remote] = append(fields[remote], entry)
	}
	only := c.pushDataTo(dataTo, stores, fields, whole, &remotes)
	c.leftovers(spec, "spec")
	if len(remotes) == 0 {
		c.drop("spec.data", "no entry to publish: Watchword would publish every key of the Secret, so the PushSecret is not converted")
		return nil
	}
	if len(remotes) > 1 {
		c.note("spec.data", fmt.Sprintf("writes to %d remote secrets: converted to %d PushSecrets named %s-1 to %s-%d", len(remotes), len(remotes), meta["name"], meta["name"], len(remotes)))
	}

	var out []map[string]any
	for i, remote := range remotes {
		ps := maps.Clone(base)
		if whole[remote] {
			if len(fields[remote]) > 0 {
				c.drop("spec.data", fmt.Sprintf("every key of the Secret is pushed to %q: the entries naming single keys for it are not carried", remote))
			}
		} else {
			ps["data"] = fields[remote]
		}
		var dests []any
		targets := stores
		if ref, ok := only[remote]; ok {
			targets = []any{ref}
		}
		dest := remote
		if labels != nil {
			// ESO writes every matching Secret to the same remote secret,
			// the last write winning; Watchword gives each its own.
			dest = remote + "-" + v1alpha1.SecretNamePlaceholder
			c.note("spec.selector.secret.selector", fmt.Sprintf("ESO writes every matching Secret to remote secret %q, each overwriting the last; Watchword publishes each Secret to a remote secret of its own, %q (the Secret's name in place of {{ .secretName }}): point the readers of %q there, or rename the destination", remote, dest, remote))
		}
		for _, s := range targets {
			ref := s.(map[string]any)
			d := map[string]any{"name": dest, "configRef": maps.Clone(ref)}
			dests = append(dests, d)
		}
		ps["destinations"] = dests
		md := maps.Clone(meta)
		if len(remotes) > 1 {
			md["name"] = fmt.Sprintf("%v-%d", meta["name"], i+1)
		}
		o := newObject("PushSecret", md)
		o["spec"] = ps
		out = append(out, o)
	}
	return out
}

// pushDataTo converts ESO's dataTo entries that push every key of the
// Secret into one remote secret (remoteKey set, no match, no rewrite)
// to a PushSecret of their own, publishing every key to that remote
// secret in the entry's store only (the returned map). The others, which
// push a subset or each key as its own remote secret, are dropped.
func (c *converter) pushDataTo(entries []any, stores []any, fields map[string][]any, whole map[string]bool, remotes *[]string) map[string]any {
	only := map[string]any{}
	for i, e := range entries {
		d, _ := e.(map[string]any)
		p := pathIndex("spec.dataTo", i)
		ref := takeMap(d, "storeRef")
		remote := takeString(d, "remoteKey")
		match := takeMap(d, "match")
		regexp := takeString(match, "regexp")
		_, rewrite := take(d, "rewrite")
		_, metadata := take(d, "metadata")
		conv := takeString(d, "conversionStrategy")
		c.leftovers(match, p+".match")
		switch {
		case remote == "":
			c.drop(p, "dataTo without remoteKey pushes each key as a remote secret of its own: not supported, list a destination per key")
			continue
		case regexp != "":
			c.drop(p, "dataTo with match.regexp pushes a subset of the keys: not supported, list the keys in data")
			continue
		case rewrite:
			c.drop(p, "dataTo with rewrite renames keys: not supported, list the keys in data with their remoteKey")
			continue
		case conv != "" && conv != "None":
			c.drop(p, fmt.Sprintf("conversionStrategy %s is not supported", conv))
			continue
		}
		if metadata {
			c.drop(p+".metadata", "provider-specific metadata is not carried: set labels, annotations or tags on the destination")
		}
		target := map[string]any{}
		set(target, "name", takeString(ref, "name"))
		set(target, "kind", takeString(ref, "kind"))
		if _, ok := take(ref, "labelSelector"); ok || target["name"] == nil {
			c.drop(p+".storeRef", "dataTo must name its store: the entry is not carried")
			continue
		}
		c.leftovers(ref, p+".storeRef")
		c.leftovers(d, p)
		if _, taken := fields[remote]; taken {
			c.drop(p, fmt.Sprintf("remote secret %q is also written by spec.data: the entry is not carried", remote))
			continue
		}
		if !slices.ContainsFunc(stores, func(s any) bool { return maps.Equal(s.(map[string]any), target) }) {
			c.note(p+".storeRef", "its store is not among spec.secretStoreRefs: published there all the same")
		}
		*remotes = append(*remotes, remote)
		fields[remote] = nil
		whole[remote] = true
		only[remote] = target
	}
	return only
}
