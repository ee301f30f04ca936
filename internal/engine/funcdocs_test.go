package engine

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestFunctionListMatchesDocs keeps the function list of
// docs/templates.md (the first column of its table between the
// function-list markers) equal to FuncMap.
func TestFunctionListMatchesDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/templates.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "<!-- function-list:start -->")
	end := strings.Index(doc, "<!-- function-list:end -->")
	if start < 0 || end < start {
		t.Fatal("docs/templates.md has no function-list markers")
	}
	name := regexp.MustCompile("`([A-Za-z0-9_]+)`")
	documented := map[string]bool{}
	for _, line := range strings.Split(doc[start:end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			if documented[m[1]] {
				t.Errorf("%s is listed twice", m[1])
			}
			documented[m[1]] = true
		}
	}
	fm := FuncMap()
	for _, n := range slices.Sorted(maps.Keys(fm)) {
		if !documented[n] {
			t.Errorf("%s is a template function but docs/templates.md does not list it", n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(documented)) {
		if _, ok := fm[n]; !ok {
			t.Errorf("docs/templates.md lists %s, which is not a template function", n)
		}
	}
}
