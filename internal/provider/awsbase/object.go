package awsbase

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/watchword-dev/watchword/internal/engine"
)

// FieldsText is the text a publication's fields are written as: a JSON
// object of string members, the shape engine.TextObject reads back.
func FieldsText(fields map[string][]byte) (string, error) {
	m := make(map[string]string, len(fields))
	for k, v := range fields {
		m[k] = string(v)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encoding the fields as JSON: %w", err)
	}
	return string(b), nil
}

// Tags is the tags of a publication with the owner's marker, sorted by key.
func Tags(owner engine.Owner, tags map[string]string) ([][2]string, error) {
	if _, clash := tags[OwnerTag]; clash {
		return nil, fmt.Errorf("%w: tag %q is Watchword's ownership marker and cannot be set by a publication", engine.ErrInvalidConfig, OwnerTag)
	}
	out := [][2]string{{OwnerTag, owner.ID}}
	for k, v := range tags {
		out = append(out, [2]string{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out, nil
}

// Ownership decides whether owner may write (or delete) a remote object
// whose owner tag is marker (found tells whether it has one): nil, or an
// error wrapping ErrNotOwned. adopt reports that the marker must be added.
func Ownership(what, marker string, found bool, owner engine.Owner) (adopt bool, err error) {
	switch {
	case found && marker == owner.ID:
		return false, nil
	case found:
		return false, fmt.Errorf("%s: it belongs to %q (tag %s), not to %q: %w", what, marker, OwnerTag, owner.ID, engine.ErrNotOwned)
	case owner.Adopt:
		return true, nil
	}
	return false, fmt.Errorf("%s: it exists and carries no %s tag, so Watchword did not create it; set adopt to take it over: %w", what, OwnerTag, engine.ErrNotOwned)
}
