package engine

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []string
		wantErr bool
	}{
		{name: "single", in: "password", want: []string{"password"}},
		{name: "nested", in: "db.primary.password", want: []string{"db", "primary", "password"}},
		{name: "escaped dot", in: `tls\.crt`, want: []string{"tls.crt"}},
		{name: "escaped dot in path", in: `certs.tls\.crt`, want: []string{"certs", "tls.crt"}},
		{name: "escaped backslash", in: `a\\b`, want: []string{`a\b`}},
		{name: "empty segment", in: "a..b", wantErr: true},
		{name: "trailing dot", in: "a.", wantErr: true},
		{name: "dangling backslash", in: `a\`, wantErr: true},
		{name: "bad escape", in: `a\x`, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePath(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParsePath(%q) = %v, want an error", tc.in, got)
				}
				return
			}
			if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("ParsePath(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestExtract(t *testing.T) {
	blob := Object{Value: []byte(`{"user":"app","db":{"primary":{"password":"pw1","port":5432}},"hosts":["a","b"],"tls.crt":"CERT"}`)}
	fields := Object{Fields: map[string][]byte{
		"username": []byte("admin"),
		"config":   []byte(`{"region":"eu","nested":{"k":"v"}}`),
		"tls.key":  []byte("KEY"),
		"plain":    []byte("not json"),
	}}
	cases := []struct {
		name     string
		obj      Object
		property string
		want     string
		wantErr  string
	}{
		{name: "whole blob", obj: blob, property: "", want: string(blob.Value)},
		{name: "top field", obj: blob, property: "user", want: "app"},
		{name: "nested path", obj: blob, property: "db.primary.password", want: "pw1"},
		{name: "number renders as JSON", obj: blob, property: "db.primary.port", want: "5432"},
		{name: "object renders as JSON", obj: blob, property: "db.primary", want: `{"password":"pw1","port":5432}`},
		{name: "array index", obj: blob, property: "hosts.1", want: "b"},
		{name: "name with dot, unescaped", obj: blob, property: "tls.crt", want: "CERT"},
		{name: "field of structured object", obj: fields, property: "username", want: "admin"},
		{name: "field name with dot", obj: fields, property: "tls.key", want: "KEY"},
		{name: "path into JSON field", obj: fields, property: "config.nested.k", want: "v"},
		{name: "missing field", obj: blob, property: "nope", wantErr: `no field "nope" at the top level`},
		{name: "missing nested", obj: blob, property: "db.secondary.password", wantErr: `no field "secondary" at "db"`},
		{name: "not json", obj: fields, property: "plain.x", wantErr: "not JSON"},
		{name: "index out of range", obj: blob, property: "hosts.7", wantErr: "a list of 2"},
		{name: "blob not json", obj: Object{Value: []byte("s3cr3t-value")}, property: "x", wantErr: "not JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Extract("some/key", tc.obj, tc.property)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %q, %v; want error containing %q", got, err, tc.wantErr)
				}
				var pe *PropertyError
				if !errors.As(err, &pe) {
					t.Fatalf("error %T is not a *PropertyError", err)
				}
				if !strings.Contains(err.Error(), `"some/key"`) {
					t.Fatalf("error %q does not name the remote key", err)
				}
				for _, secret := range []string{"pw1", "s3cr3t-value", "admin", "not json"} {
					if strings.Contains(err.Error(), secret) {
						t.Fatalf("error %q leaks a value", err)
					}
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestExtractAll(t *testing.T) {
	obj := Object{Value: []byte(`{"a":"1","b":{"c":2},"n":3}`)}
	got, err := ExtractAll("k", obj, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "1", "b": `{"c":2}`, "n": "3"}
	if len(got) != len(want) {
		t.Fatalf("got %d keys, want %d", len(got), len(want))
	}
	for k, v := range want {
		if string(got[k]) != v {
			t.Errorf("key %s = %q, want %q", k, got[k], v)
		}
	}
	sub, err := ExtractAll("k", obj, "b")
	if err != nil || string(sub["c"]) != "2" || len(sub) != 1 {
		t.Fatalf("ExtractAll(b) = %v, %v", sub, err)
	}
	if _, err = ExtractAll("k", Object{Value: []byte(`"just a string"`)}, ""); err == nil {
		t.Fatal("expanding a string must fail")
	}
	if _, err = ExtractAll("k", Object{Value: []byte(`{"bad key!":"x"}`)}, ""); err == nil || !strings.Contains(err.Error(), "bad key!") {
		t.Fatalf("invalid key name must be reported by name, got %v", err)
	}
	fields := Object{Fields: map[string][]byte{"x": []byte("1"), "y": []byte("2")}}
	all, err := ExtractAll("k", fields, "")
	if err != nil || string(all["x"]) != "1" || string(all["y"]) != "2" {
		t.Fatalf("fields: %v, %v", all, err)
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"a", "a.b", `a\.b`, `a\\.b`, "..", `\`, "a.0.b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs, err := ParsePath(s)
		if err != nil {
			return
		}
		// Re-escaping the segments must give back an equivalent path.
		var parts []string
		for _, seg := range segs {
			if seg == "" {
				t.Fatalf("empty segment from %q", s)
			}
			parts = append(parts, strings.NewReplacer(`\`, `\\`, ".", `\.`).Replace(seg))
		}
		again, err := ParsePath(strings.Join(parts, "."))
		if err != nil || strings.Join(again, "\x00") != strings.Join(segs, "\x00") {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
	})
}

// TestTooDeepJSONIsNamedSo: a value nested deeper than encoding/json reads
// is reported as too deep, not as "not JSON", for a property and for
// dataFrom; brackets inside strings do not count, and a value just within
// the limit still reads.
func TestTooDeepJSONIsNamedSo(t *testing.T) {
	deep := strings.Repeat(`{"a":`, maxJSONDepth+1) + `"x"` + strings.Repeat("}", maxJSONDepth+1)
	obj := Object{Fields: map[string][]byte{"doc": []byte(deep), "text": []byte("plain")}}
	_, err := Extract("k", obj, "doc.a.a")
	if err == nil || !strings.Contains(err.Error(), "nested more than 10000 levels deep") {
		t.Errorf("a property of too deep JSON: %v", err)
	}
	_, err = ExtractAll("k", Object{Value: []byte(deep)}, "")
	if err == nil || !strings.Contains(err.Error(), "nested more than 10000 levels deep") {
		t.Errorf("dataFrom of too deep JSON: %v", err)
	}
	_, err = Extract("k", obj, "text.a")
	if err == nil || !strings.Contains(err.Error(), "is not JSON") {
		t.Errorf("a property of plain text: %v", err)
	}
	if d := jsonDepth([]byte(`{"a":"[[[{\"]]]","b":[1,[2]]}`)); d != 3 {
		t.Errorf("depth of a value with brackets in strings: %d, want 3", d)
	}
	within := strings.Repeat(`{"a":`, maxJSONDepth-1) + `"x"` + strings.Repeat("}", maxJSONDepth-1)
	if _, err := Extract("k", Object{Fields: map[string][]byte{"doc": []byte(within)}}, "doc.a.a"); err != nil {
		t.Errorf("JSON within the limit: %v", err)
	}
}
