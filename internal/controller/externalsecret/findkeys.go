package externalsecret

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

// keysRead lists, once each, the remote keys the ExternalSecret reads: the
// keys its spec names and, when it has finds, the keys they matched at its
// last successful sync (its status's versions), in that order.
func keysRead(es *v1alpha1.ExternalSecret) []string {
	var out []string
	for _, ref := range engine.Refs(&es.Spec) {
		if !slices.Contains(out, ref.Key) {
			out = append(out, ref.Key)
		}
	}
	if !hasFind(es) {
		return out
	}
	for _, v := range es.Status.Versions {
		if !slices.Contains(out, v.Key) {
			out = append(out, v.Key)
		}
	}
	return out
}

// readsKey tells whether the ExternalSecret reads key: a key of keysRead,
// or one a find of its spec would match by path and name (its tags are
// not known without reading the store, so a key of the path and name
// counts).
func readsKey(es *v1alpha1.ExternalSecret, key string) bool {
	if slices.Contains(keysRead(es), key) {
		return true
	}
	for _, d := range es.Spec.DataFrom {
		if f := d.Find; f != nil && strings.HasPrefix(key, f.Path) && (f.Name == nil || matches(f.Name.RegExp, key)) {
			return true
		}
	}
	return false
}

func hasFind(es *v1alpha1.ExternalSecret) bool {
	return slices.ContainsFunc(es.Spec.DataFrom, func(d v1alpha1.ExternalSecretDataFrom) bool { return d.Find != nil })
}

// matches tells whether the regular expression matches key; one that does
// not compile (the API refuses it) matches nothing.
func matches(expr, key string) bool {
	re, err := regexp.Compile(expr)
	return err == nil && re.MatchString(key)
}

// changeFindMatches is the reason of the Normal event that tells how many
// objects each find whose count changed now matches (never which).
const changeFindMatches = "FindMatchesChanged"

// findChanges describes the finds whose match counts differ from the last
// sync's, such as "dataFrom[0].find matched 3 remote objects (was 2)"; ""
// when none did, or on a first sync (before is nil).
func findChanges(before, after []v1alpha1.FoundCount) string {
	if before == nil {
		return ""
	}
	was := map[int32]int32{}
	for _, f := range before {
		was[f.DataFrom] = f.Matched
	}
	var out []string
	for _, f := range after {
		if n, ok := was[f.DataFrom]; !ok || n != f.Matched {
			msg := fmt.Sprintf("dataFrom[%d].find matched %d remote objects", f.DataFrom, f.Matched)
			if ok {
				msg += fmt.Sprintf(" (was %d)", n)
			}
			out = append(out, msg)
		}
	}
	return strings.Join(out, "; ")
}
