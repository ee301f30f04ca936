package engine

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzDecodeValue feeds remote values (a single value or named fields) and
// property paths to the decoding that data[] and dataFrom use. Properties:
// no panic; an error is a PropertyError naming the remote key; dataFrom
// never yields a key Kubernetes would refuse; a leaf string value never
// reaches an error message.
func FuzzDecodeValue(f *testing.F) {
	const leaf = "LEAF-CANARY-7f3a"
	for _, s := range []struct{ value, property string }{
		{`{"user":"app","password":"` + leaf + `"}`, ""},
		{`{"a":{"b":"` + leaf + `"}}`, "a.b"},
		{`{"a":[1,2,{"c":"` + leaf + `"}]}`, "a.2.c"},
		{`{"../x":"` + leaf + `"}`, ""},
		{`[[[[[["` + leaf + `"]]]]]]`, "0.0"},
		{`"` + leaf + `"`, "x"},
		{`{"a":1e999}`, "a"},
		{"---\na: " + leaf + "\n", "a"},
		{leaf, ""},
	} {
		f.Add([]byte(s.value), s.property, false)
		f.Add([]byte(s.value), s.property, true)
	}
	f.Fuzz(func(t *testing.T, value []byte, property string, asFields bool) {
		obj := Object{Value: value}
		if asFields {
			obj = Object{Fields: map[string][]byte{"f": value, "other": []byte(leaf)}}
		}
		check := func(err error) {
			if err == nil {
				return
			}
			var pe *PropertyError
			if !errors.As(err, &pe) {
				t.Fatalf("error of type %T, want a PropertyError: %v", err, err)
			}
			if !strings.Contains(err.Error(), `"remote/key"`) {
				t.Fatalf("the error does not name the key: %v", err)
			}
			if strings.Contains(err.Error(), leaf) && !strings.Contains(property, leaf) && !fieldNameHolds(value, leaf) {
				t.Fatalf("a value reached the error: %v", err)
			}
		}
		one, err := Extract("remote/key", obj, property)
		check(err)
		again, err2 := Extract("remote/key", obj, property)
		if (err == nil) != (err2 == nil) || !bytes.Equal(one, again) {
			t.Fatal("two extractions of the same input differ")
		}
		all, err := ExtractAll("remote/key", obj, property)
		check(err)
		for k := range all {
			if !validSecretKey(k) {
				t.Fatalf("dataFrom yielded the key %q, which Kubernetes refuses", k)
			}
		}
	})
}

// fieldNameHolds tells whether s appears in value as something other than
// a JSON string value: a field name, which errors may name.
func fieldNameHolds(value []byte, s string) bool {
	i := bytes.Index(value, []byte(s))
	for i >= 0 {
		rest := bytes.TrimLeft(value[i+len(s):], " \t\r\n\"")
		if len(rest) > 0 && rest[0] == ':' {
			return true
		}
		j := bytes.Index(value[i+1:], []byte(s))
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}
