package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/client-go/util/jsonpath"

	"github.com/watchword-dev/watchword/internal/engine"
)

// object picks the value and the version of key out of an answer.
//
// Without result.jsonPath the value is the whole body; with it, the one
// JSON value it selects. A string is the value as it is; an object is its
// JSON text and, member by member, the fields (a string member as it is,
// any other as JSON text, null as empty); any other JSON value is its
// JSON text. A body without jsonPath that is a JSON object has fields too.
func (cfg *config) object(key string, ans *answer) (engine.Object, error) {
	var doc any
	parsed := false
	if cfg.valuePath != nil || cfg.versionPath != nil || cfg.ownerPath != nil {
		if err := decode(ans.body, &doc); err != nil {
			return engine.Object{}, fmt.Errorf("key %q: the answer is not JSON, which webhook.result's JSONPaths need: %w", key, engine.ErrInvalidConfig)
		}
		parsed = true
	}
	var obj engine.Object
	switch {
	case cfg.valuePath != nil:
		v, err := selectOne(cfg.valuePath, doc)
		if err != nil {
			return engine.Object{}, fmt.Errorf("key %q: webhook.result.jsonPath %s: %w", key, err, engine.ErrNotFound)
		}
		if obj, err = objectOf(v); err != nil {
			return engine.Object{}, fmt.Errorf("key %q: the value at webhook.result.jsonPath: %w", key, err)
		}
	default:
		obj.Value = ans.body
		if !parsed && bytes.HasPrefix(bytes.TrimSpace(ans.body), []byte("{")) {
			parsed = decode(ans.body, &doc) == nil
		}
		if m, ok := doc.(map[string]any); ok && parsed {
			f, err := fieldsOf(m)
			if err != nil {
				return engine.Object{}, fmt.Errorf("key %q: the answer: %w", key, err)
			}
			obj.Fields = f
		}
	}
	v, err := cfg.version(ans, doc)
	if err != nil {
		return engine.Object{}, fmt.Errorf("key %q: %w", key, err)
	}
	obj.Version = v
	return obj, nil
}

// version is the version an answer tells: its versionHeader, or the value
// at versionJSONPath (doc is the parsed body); "" when none is set.
func (cfg *config) version(ans *answer, doc any) (string, error) {
	switch {
	case cfg.versionHeader != "":
		v := ans.header.Get(cfg.versionHeader)
		if v == "" {
			return "", fmt.Errorf("the answer has no %s header (webhook.result.versionHeader): %w", cfg.versionHeader, engine.ErrInvalidConfig)
		}
		return v, nil
	case cfg.versionPath != nil:
		v, err := selectOne(cfg.versionPath, doc)
		if err != nil {
			return "", fmt.Errorf("webhook.result.versionJSONPath %s: %w", err, engine.ErrInvalidConfig)
		}
		s, ok := scalar(v)
		if !ok || s == "" {
			return "", fmt.Errorf("webhook.result.versionJSONPath selects no string or number: %w", engine.ErrInvalidConfig)
		}
		return s, nil
	}
	return "", nil
}

// owner is the ownership marker in an answer, "" when it has none or the
// store keeps none.
func (cfg *config) owner(ans *answer) (string, error) {
	if cfg.ownerPath == nil {
		return "", nil
	}
	var doc any
	if err := decode(ans.body, &doc); err != nil {
		return "", fmt.Errorf("the answer is not JSON, which webhook.push.ownerJSONPath needs: %w", engine.ErrInvalidConfig)
	}
	v, err := selectOne(cfg.ownerPath, doc)
	if err != nil {
		return "", nil //nolint:nilerr // no marker where it is kept: unmarked
	}
	s, _ := scalar(v)
	return s, nil
}

// decode parses JSON, keeping numbers as they are written.
func decode(body []byte, doc *any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(doc); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}

// selectOne is the one value p selects in doc. Its errors say how many
// were found, never what.
func selectOne(p *jsonpath.JSONPath, doc any) (any, error) {
	res, err := p.FindResults(doc)
	if err != nil {
		return nil, fmt.Errorf("does not apply to the answer")
	}
	var found []reflect.Value
	for _, r := range res {
		found = append(found, r...)
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("selects nothing in the answer")
	case 1:
		if !found[0].IsValid() {
			return nil, nil
		}
		return found[0].Interface(), nil
	default:
		return nil, fmt.Errorf("selects %d values in the answer; it must select one", len(found))
	}
}

// objectOf is the object of one selected JSON value.
func objectOf(v any) (engine.Object, error) {
	switch v := v.(type) {
	case string:
		return engine.Object{Value: []byte(v)}, nil
	case map[string]any:
		raw, err := json.Marshal(v)
		if err != nil {
			return engine.Object{}, err
		}
		f, err := fieldsOf(v)
		if err != nil {
			return engine.Object{}, err
		}
		return engine.Object{Value: raw, Fields: f}, nil
	case nil:
		return engine.Object{Value: []byte{}}, nil
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return engine.Object{}, err
		}
		return engine.Object{Value: raw}, nil
	}
}

func fieldsOf(m map[string]any) (map[string][]byte, error) {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = []byte(s)
			continue
		}
		if v == nil {
			out[k] = []byte{}
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("field %q is not JSON", k)
		}
		out[k] = raw
	}
	return out, nil
}

// scalar is a string or a number as text.
func scalar(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return fmt.Sprint(v), true
	}
	return "", false
}
