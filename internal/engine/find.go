package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
)

// The bounds of a find: the objects one find may match, and the remote
// objects one ExternalSecret may read in all (as many as its data and
// dataFrom entries can name, and its status can record the versions of).
const (
	MaxFound   = 256
	MaxObjects = 320
)

// FindError is a dataFrom entry whose find or rewrite cannot make Secret
// keys: it names the entry, remote keys and Secret keys, never a value.
// A bad regular expression is the user's to fix (terminal); a collision or
// a key that is not a Secret key may go when the remote names change.
type FindError struct {
	// Entry is the index of the dataFrom entry; -1 for the spec as a
	// whole.
	Entry    int
	Problem  string
	terminal bool
}

func (e *FindError) Error() string {
	if e.Entry < 0 {
		return e.Problem
	}
	return fmt.Sprintf("dataFrom[%d]: %s", e.Entry, e.Problem)
}

// FailureClass classes a find error: retried as a property error, unless
// the spec itself is wrong.
func (e *FindError) FailureClass() failure.Class {
	return failure.Class{Reason: failure.PropertyError, Terminal: e.terminal}
}

// Found are the remote keys each find of a spec matched, by the index of
// its dataFrom entry, in key order.
type Found map[int][]string

// find lists the store for every dataFrom entry with a find, and returns
// the keys each matched. A store that cannot list says so (NotSupported).
func find(ctx context.Context, spec *v1alpha1.ExternalSecretSpec, c *Client) (Found, error) {
	found := Found{}
	for i, d := range spec.DataFrom {
		if d.Find == nil {
			continue
		}
		l, err := c.AsLister()
		if err != nil {
			return nil, fmt.Errorf("dataFrom[%d].find: %w", i, err)
		}
		var name *regexp.Regexp
		if d.Find.Name != nil {
			if name, err = regexp.Compile(d.Find.Name.RegExp); err != nil {
				return nil, &FindError{Entry: i, Problem: fmt.Sprintf("find.name.regexp is not a regular expression (%v)", err), terminal: true}
			}
		}
		items, err := ListAll(ctx, l, ListRequest{Prefix: d.Find.Path, Tags: d.Find.Tags}, name, MaxFound)
		var many *TooManyError
		switch {
		case errors.As(err, &many) && many.Pages:
			return nil, &FindError{Entry: i, Problem: fmt.Sprintf("listing the store for this find took more than %d pages; narrow its path", many.Max)}
		case errors.As(err, &many):
			return nil, &FindError{Entry: i, Problem: fmt.Sprintf("find matched more than %d remote objects; narrow its path, name or tags", MaxFound)}
		}
		if err != nil {
			return nil, fmt.Errorf("dataFrom[%d].find: %w", i, err)
		}
		keys := make([]string, 0, len(items))
		for _, it := range items {
			if len(it.Key) > MaxFoundKeyLength {
				// status.versions[].key holds at most this much: a longer
				// key would make every status write fail.
				return nil, &FindError{Entry: i, Problem: fmt.Sprintf("find matched a remote key of %d characters, more than the %d status can record; narrow the find", len(it.Key), MaxFoundKeyLength)}
			}
			keys = append(keys, it.Key)
		}
		slices.Sort(keys)
		found[i] = keys
	}
	return found, nil
}

// MaxFoundKeyLength is the longest remote key a find may match: that of
// status.versions[].key.
const MaxFoundKeyLength = 1024

// findKey is the Secret key of remote key: '/' becomes '_'.
func findKey(remote string) string { return strings.ReplaceAll(remote, "/", "_") }

// rewriteKeys renames the keys of entry i (remote keys of a find, or the
// fields of a remoteRef, named by from) by its rewrite rules in order,
// then by then (if any), and refuses two sources that end at one Secret
// key, and a Secret key that is not one.
func rewriteKeys(i int, rules []v1alpha1.ExternalSecretRewrite, data map[string][]byte, from map[string]string, then func(string) string) (map[string][]byte, error) {
	res := make([]*regexp.Regexp, len(rules))
	for j, r := range rules {
		if r.RegExp == nil {
			continue
		}
		re, err := regexp.Compile(r.RegExp.Source)
		if err != nil {
			return nil, &FindError{Entry: i, Problem: fmt.Sprintf("rewrite[%d].regexp.source is not a regular expression (%v)", j, err), terminal: true}
		}
		res[j] = re
	}
	out := make(map[string][]byte, len(data))
	by := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(data)) {
		nk := k
		for j, r := range rules {
			switch {
			case r.RegExp != nil:
				nk = res[j].ReplaceAllString(nk, r.RegExp.Target)
			case r.Transform != nil:
				// The template sees the key only, never a value.
				b, err := renderTemplate(fmt.Sprintf("dataFrom[%d].rewrite[%d].transform", i, j), r.Transform.Template, map[string]any{"value": nk})
				if err != nil {
					return nil, err
				}
				nk = string(b)
			}
		}
		if then != nil {
			nk = then(nk)
		}
		if !validSecretKey(nk) {
			return nil, &FindError{Entry: i, Problem: fmt.Sprintf("%s becomes Secret key %q, which is not one (letters, digits, '-', '_', '.'); add or change a rewrite", from[k], nk)}
		}
		if prev, dup := by[nk]; dup {
			return nil, &FindError{Entry: i, Problem: fmt.Sprintf("%s and %s both become Secret key %q; change the find or the rewrite so that each has its own", prev, from[k], nk)}
		}
		by[nk] = from[k]
		out[nk] = data[k]
	}
	return out, nil
}

// foundCounts is the status's count of each find.
func foundCounts(found Found) []v1alpha1.FoundCount {
	var out []v1alpha1.FoundCount
	for _, i := range slices.Sorted(maps.Keys(found)) {
		out = append(out, v1alpha1.FoundCount{DataFrom: int32(i), Matched: int32(len(found[i]))})
	}
	return out
}
