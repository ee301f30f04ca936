package engine

import "testing"

// TestJSONTextIsKeptWhole: a JSON secret read without a property is its
// text as stored (nested objects, numbers and member order kept), while
// properties and dataFrom see its members.
func TestJSONTextIsKeptWhole(t *testing.T) {
	text := `{"b":{"x":1},"a":"s","n":1.50}`
	obj := TextObject("v1", []byte(text))
	if got, err := Extract("k", obj, ""); err != nil || string(got) != text {
		t.Errorf("whole read = %q, %v; want the stored text", got, err)
	}
	if got, err := Extract("k", obj, "b.x"); err != nil || string(got) != "1" {
		t.Errorf("property b.x = %q, %v", got, err)
	}
	all, err := ExtractAll("k", obj, "")
	if err != nil || string(all["a"]) != "s" || string(all["n"]) != "1.50" || string(all["b"]) != `{"x":1}` {
		t.Errorf("dataFrom = %q, %v", all, err)
	}
}

// TestTextObjectOfOtherValues: a value that is not one JSON object has no
// fields, and is still read whole.
func TestTextObjectOfOtherValues(t *testing.T) {
	for _, v := range []string{"plain", `["a"]`, `{"a":1} {"b":2}`, `{"a":`, "\x00\xff", ""} {
		obj := TextObject("v", []byte(v))
		if obj.Fields != nil {
			t.Errorf("%q has fields %q", v, obj.Fields)
		}
		if got, err := Extract("k", obj, ""); err != nil || string(got) != v {
			t.Errorf("whole read of %q = %q, %v", v, got, err)
		}
	}
}
