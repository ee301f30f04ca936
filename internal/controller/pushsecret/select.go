package pushsecret

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/publishing"
)

// selectData picks the fields to publish from the source Secret's data:
// every key under its own name when spec.data is empty, otherwise the
// selected keys under their remote names. It returns the remote names,
// sorted, for events; a missing key is named, never a value.
func selectData(ps *v1alpha1.PushSecret, name string, data map[string][]byte) (map[string][]byte, []string, error) {
	out := map[string][]byte{}
	if len(ps.Spec.Data) == 0 {
		maps.Copy(out, data)
		return out, slices.Sorted(maps.Keys(out)), nil
	}
	var missing []string
	for _, d := range ps.Spec.Data {
		v, ok := data[d.SecretKey]
		if !ok {
			missing = append(missing, d.SecretKey)
			continue
		}
		remote := d.RemoteKey
		if remote == "" {
			remote = d.SecretKey
		}
		out[remote] = v
	}
	if len(missing) > 0 {
		return nil, nil, failure.Terminalf(failure.SourceKeyMissing,
			"Secret %q has no key %s (spec.data selects it; the Secret has keys %s); nothing published was changed",
			name, strings.Join(quoteAll(missing), ", "), publishing.KeyList(slices.Sorted(maps.Keys(data))))
	}
	return out, slices.Sorted(maps.Keys(out)), nil
}

func quoteAll(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%q", k)
	}
	return out
}
