package externalsecret

import (
	"fmt"
	"slices"
	"strings"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// What a sync that changed its target was, as its Normal event says. Only a
// rotation, new data arriving from the store while nothing else changed,
// counts as one: it is what consumers restart for.
const (
	// changeCreated: the first sync of the ExternalSecret.
	changeCreated = "Created"
	// changeUpdated: the spec, the store or a template changed.
	changeUpdated = "Updated"
	// changeRotated: the store holds new data (a new version, or a new
	// value where the store has no versions).
	changeRotated = "Rotated"
	// changeDriftRepaired: someone changed the target; the store's data
	// did not change, and the target got it back.
	changeDriftRepaired = "DriftRepaired"
)

// classifyChange tells what a sync that changed the target was, from the
// status before it (what was delivered last), the plan, whether the target
// had been changed by someone else, and the versions just read.
//
// The order matters: a first sync is never a rotation; a change of the
// ExternalSecret's spec is reported as such even when new data came with
// it; a new remote version is a rotation even if the store's spec or a
// template changed too (a store that keeps its data in its spec, like
// fake, rotates that way) or the target was edited; other changes of the
// store or templates are updates; a target edited while the store kept its
// versions is a drift repair; and changed data with none of these is a
// store without versions delivering a new value.
func classifyChange(before *v1alpha1.ExternalSecretStatus, plan schedule, drifted bool, read []v1alpha1.RemoteVersion) string {
	switch {
	case before.RefreshTime == nil:
		return changeCreated
	case plan.generationChanged:
		return changeUpdated
	case len(changedVersions(before.Versions, read)) > 0:
		return changeRotated
	case plan.inputsChanged:
		return changeUpdated
	case drifted:
		return changeDriftRepaired
	default:
		return changeRotated
	}
}

// changedVersions lists the remote objects whose version differs from the
// last delivered one, or that were not read before, with their new
// version. Objects without versions never appear.
func changedVersions(before, read []v1alpha1.RemoteVersion) []v1alpha1.RemoteVersion {
	old := make(map[string]string, len(before))
	for _, v := range before {
		old[v.Key] = v.Version
	}
	var out []v1alpha1.RemoteVersion
	for _, v := range read {
		if v.Version == "" {
			continue
		}
		if prev, ok := old[v.Key]; !ok || prev != v.Version {
			out = append(out, v)
		}
	}
	return out
}

// maxRotatedKeys is the bound of status.lastRotatedKeys.
const maxRotatedKeys = 1024

// rotatedKeys is status.lastRotatedKeys for a rotation that changed keys:
// the keys, or none when there are more than the status holds, which
// means any key.
func rotatedKeys(changed []string) []string {
	if len(changed) > maxRotatedKeys {
		return nil
	}
	return slices.Clone(changed)
}

// maxListed bounds the keys and versions an event names.
const maxListed = 10

// versionList names remote objects and their versions for an event:
// `db@4, api@7`, at most maxListed of them.
func versionList(vs []v1alpha1.RemoteVersion) string {
	if len(vs) == 0 {
		return "none (the store keeps no versions)"
	}
	parts := make([]string, 0, min(len(vs), maxListed))
	for i, v := range vs {
		if i == maxListed {
			break
		}
		parts = append(parts, v.Key+"@"+v.Version)
	}
	s := strings.Join(parts, ", ")
	if len(vs) > maxListed {
		s += fmt.Sprintf(" and %d more", len(vs)-maxListed)
	}
	return s
}

// changeMessage is the Normal event of a sync that changed the target
// (described as `Secret "name"` or `ConfigMap "name"`). It names keys and
// versions, never a value.
func changeMessage(kind, target string, keys []string, versions []v1alpha1.RemoteVersion) string {
	switch kind {
	case changeCreated:
		return fmt.Sprintf("%s created; keys: %s", target, keyList(keys))
	case changeRotated:
		return fmt.Sprintf("%s rotated; keys changed: %s; new versions: %s", target, keyList(keys), versionList(versions))
	case changeDriftRepaired:
		return fmt.Sprintf("%s was changed outside Watchword and is restored; keys restored: %s", target, keyList(keys))
	default:
		return fmt.Sprintf("%s updated for a change of the spec, the store or a template; keys changed: %s", target, keyList(keys))
	}
}

// keyList names keys for an event, at most maxListed of them.
func keyList(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	if len(keys) <= maxListed {
		return strings.Join(keys, ", ")
	}
	return strings.Join(keys[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(keys)-maxListed)
}
