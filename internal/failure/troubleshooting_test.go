package failure

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestEveryReasonHasATroubleshootingSection: docs/troubleshooting.md has a
// section (a heading "### `Reason`") for every reason this package
// declares and for every reason of the ChangesWatched condition in
// internal/conditions, and no section for a reason that does
// not exist. The reasons are read from the source, so a new one fails
// this test until it is documented.
func TestEveryReasonHasATroubleshootingSection(t *testing.T) {
	var reasons []string
	failureFiles, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range failureFiles {
		if !strings.HasSuffix(f, "_test.go") {
			reasons = append(reasons, constants(t, f, func(_ string, typ ast.Expr) bool {
				id, ok := typ.(*ast.Ident)
				return ok && id.Name == "Reason"
			})...)
		}
	}
	// The reasons of ChangesWatched are the Watch* constants.
	reasons = append(reasons, constants(t, filepath.Join("..", "conditions", "conditions.go"),
		func(name string, _ ast.Expr) bool { return strings.HasPrefix(name, "Watch") })...)
	if len(reasons) < 30 {
		t.Fatalf("found only %d reasons (%v): the test reads the wrong source", len(reasons), reasons)
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	var sections []string
	for _, m := range regexp.MustCompile("(?m)^### `([A-Za-z]+)`$").FindAllStringSubmatch(string(raw), -1) {
		sections = append(sections, m[1])
	}
	for _, r := range reasons {
		if !slices.Contains(sections, r) {
			t.Errorf("docs/troubleshooting.md has no section \"### `%s`\"", r)
		}
	}
	for _, s := range sections {
		if !slices.Contains(reasons, s) {
			t.Errorf("docs/troubleshooting.md has a section for %q, which is no reason the code reports", s)
		}
	}
	t.Logf("%d reasons, %d sections", len(reasons), len(sections))
}

// constants returns the string values of the constants of a file that
// keep(name, declared type) selects.
func constants(t *testing.T, file string, keep func(string, ast.Expr) bool) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) || !keep(name.Name, vs.Type) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, v)
			}
		}
	}
	return out
}
