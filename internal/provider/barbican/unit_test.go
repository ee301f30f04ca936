package barbican

import (
	"errors"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/watchword-dev/watchword/internal/engine"
)

// TestClassify: each HTTP status becomes its class, and the server's body
// (which can echo a request, a payload included) never reaches the error.
func TestClassify(t *testing.T) {
	const echoed = "S3NTINEL-echoed-by-the-server"
	for status, class := range map[int]error{
		404: engine.ErrNotFound, 401: engine.ErrPermissionDenied, 403: engine.ErrPermissionDenied,
		429: engine.ErrThrottled, 500: engine.ErrUnavailable, 503: engine.ErrUnavailable, 400: engine.ErrInvalidConfig,
	} {
		err := classify("reading x", gophercloud.ErrUnexpectedResponseCode{Actual: status, Body: []byte(echoed)})
		if !errors.Is(err, class) {
			t.Errorf("HTTP %d: got %v, want class %v", status, err, class)
		}
		if strings.Contains(err.Error(), echoed) {
			t.Errorf("HTTP %d: the error repeats the server's body: %v", status, err)
		}
	}
	if err := classify("reading x", errors.New("dial tcp 127.0.0.1:1: connection refused")); !errors.Is(err, engine.ErrUnavailable) {
		t.Errorf("a refused connection: got %v", err)
	}
}

func TestObjectOf(t *testing.T) {
	for name, c := range map[string]struct {
		contentType, payload string
		fields               map[string]string
	}{
		"a JSON object in text":      {"text/plain", ` {"a":"x","n":1,"o":{"b":true}} `, map[string]string{"a": "x", "n": "1", "o": `{"b":true}`}},
		"text with a charset":        {"text/plain;charset=utf-8", `{"a":"x"}`, map[string]string{"a": "x"}},
		"plain text":                 {"text/plain", "just text", nil},
		"a JSON array":               {"text/plain", `["a"]`, nil},
		"two JSON objects":           {"text/plain", `{"a":"x"} {"b":"y"}`, nil},
		"a JSON object, binary type": {"application/octet-stream", `{"a":"x"}`, nil},
	} {
		obj := objectOf("v", c.contentType, []byte(c.payload))
		if string(obj.Value) != c.payload {
			t.Errorf("%s: the value is not the payload as stored", name)
		}
		if c.fields == nil {
			if obj.Fields != nil || string(obj.Value) != c.payload {
				t.Errorf("%s: expected the payload as a single value, got fields %v", name, obj.Fields)
			}
			continue
		}
		if len(obj.Fields) != len(c.fields) {
			t.Errorf("%s: fields %v, want %v", name, obj.Fields, c.fields)
		}
		for k, v := range c.fields {
			if string(obj.Fields[k]) != v {
				t.Errorf("%s: field %s = %q, want %q", name, k, obj.Fields[k], v)
			}
		}
	}
}

func TestRefID(t *testing.T) {
	const id = "0c3a9f5e-7d2b-4c1e-9a8f-6b5d4e3c2a1f"
	for key, want := range map[string]string{
		id: id, strings.ToUpper(id): id,
		"https://barbican.example.com:9311/v1/secrets/" + id:       id,
		"https://barbican.example.com:9311/v1/secrets/" + id + "/": id,
		"app/db": "", "db-" + id: "", id + "x": "", "https://example.com/other/" + id: "",
	} {
		if got := refID(key); got != want {
			t.Errorf("refID(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestOwnerValueFitsBarbican(t *testing.T) {
	short := engine.Owner{ID: "PushSecret/ns/name"}
	if ownerValue(short) != short.ID {
		t.Errorf("a short owner ID is kept as it is")
	}
	long := engine.Owner{ID: "PushSecret/" + strings.Repeat("n", 63) + "/" + strings.Repeat("x", 253)}
	v := ownerValue(long)
	if len(v) > 255 || v == ownerValue(engine.Owner{ID: long.ID + "y"}) {
		t.Errorf("a long owner ID must become a distinct value of at most 255 characters, got %d", len(v))
	}
}
