package engine

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// decodeValue decodes one fetched value by strategy. Base64 and Base64URL
// take padded input (RFC 4648 sections 4 and 5), as External Secrets
// Operator's do; Auto tries both, in that order, and keeps a value that
// neither decodes. The error names the remote key and what to change,
// never the value.
func decodeValue(strategy v1alpha1.DecodingStrategy, key, what string, v []byte) ([]byte, error) {
	switch strategy {
	case "", v1alpha1.DecodeNone:
		return v, nil
	case v1alpha1.DecodeBase64, v1alpha1.DecodeBase64URL:
		enc := base64.StdEncoding
		if strategy == v1alpha1.DecodeBase64URL {
			enc = base64.URLEncoding
		}
		out, err := decodeWith(enc, v)
		if err != nil {
			return nil, &PropertyError{Key: key, Problem: fmt.Sprintf("%s is not %s (decodingStrategy %s): use Auto to keep values that are not encoded, or None", what, encodingName(strategy), strategy)}
		}
		return out, nil
	case v1alpha1.DecodeAuto:
		if out, err := decodeWith(base64.StdEncoding, v); err == nil {
			return out, nil
		}
		if out, err := decodeWith(base64.URLEncoding, v); err == nil {
			return out, nil
		}
		return v, nil
	default:
		return nil, &PropertyError{Key: key, Problem: fmt.Sprintf("decodingStrategy %q is not one of None, Base64, Base64URL, Auto", strategy)}
	}
}

func encodingName(s v1alpha1.DecodingStrategy) string {
	if s == v1alpha1.DecodeBase64URL {
		return "URL-safe base64 (RFC 4648 section 5, padded)"
	}
	return "base64 (RFC 4648 section 4, padded)"
}

func decodeWith(enc *base64.Encoding, v []byte) ([]byte, error) {
	out := make([]byte, enc.DecodedLen(len(v)))
	n, err := enc.Decode(out, v)
	if err != nil {
		return nil, err
	}
	return out[:n], nil
}

// decodeFields decodes every value of fields in place, in key order so
// that the first failure named is always the same.
func decodeFields(strategy v1alpha1.DecodingStrategy, key string, fields map[string][]byte, whatOf func(string) string) error {
	if strategy == "" || strategy == v1alpha1.DecodeNone {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		b, err := decodeValue(strategy, key, whatOf(k), fields[k])
		if err != nil {
			return err
		}
		fields[k] = b
	}
	return nil
}
