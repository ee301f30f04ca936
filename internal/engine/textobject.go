package engine

import (
	"bytes"
	"encoding/json"
)

// TextObject is the object of a store whose secrets are one text or byte
// value each (AWS, Azure Key Vault, Google Secret Manager, Barbican): the
// value itself, which a data[] entry without a property gets byte for byte,
// and, when the value is a JSON object, its members as fields too (a
// string member as its text, any other member as its JSON), so that
// property and dataFrom work on it as on a structured store. Any other
// value has no fields.
func TextObject(version string, value []byte) Object {
	obj := Object{Version: version, Value: value}
	trimmed := bytes.TrimSpace(value)
	if !bytes.HasPrefix(trimmed, []byte("{")) {
		return obj
	}
	var members map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if dec.Decode(&members) != nil || dec.More() || members == nil {
		return obj
	}
	obj.Fields = make(map[string][]byte, len(members))
	for k, raw := range members {
		var s string
		if bytes.HasPrefix(raw, []byte(`"`)) && json.Unmarshal(raw, &s) == nil {
			obj.Fields[k] = []byte(s)
		} else {
			obj.Fields[k] = []byte(raw)
		}
	}
	return obj
}
