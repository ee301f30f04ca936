// Package docs checks the documentation against the code, without a
// control plane.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// cited is a test or fuzz target named in backquotes in a document.
var cited = regexp.MustCompile("`((?:Test|Fuzz)[A-Z][A-Za-z0-9_]*)`")

// TestThreatModelCitesOnlyTestsThatExist reads the tests and fuzz targets
// named in docs/threat-model.md and docs/reliability.md and fails for one
// that no _test.go file of the module declares: a control whose test was
// renamed or removed must not go on claiming it is covered.
func TestThreatModelCitesOnlyTestsThatExist(t *testing.T) {
	root := filepath.Join("..", "..")
	declared := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil {
				declared[fn.Name.Name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !declared["TestThreatModelCitesOnlyTestsThatExist"] {
		t.Fatal("the walk did not find this very test: it looks in the wrong place")
	}
	for _, doc := range []string{"threat-model.md", "reliability.md"} {
		raw, err := os.ReadFile(filepath.Join(root, "docs", doc))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range cited.FindAllStringSubmatch(string(raw), -1) {
			n++
			if !declared[m[1]] {
				t.Errorf("docs/%s cites %s, which no _test.go file declares", doc, m[1])
			}
		}
		if n == 0 {
			t.Errorf("docs/%s cites no test", doc)
		}
		t.Logf("docs/%s cites %d tests", doc, n)
	}
}

// TestEveryFuzzTargetRunsInMakeTest fails for a fuzz target that the
// Makefile's FUZZ_TARGETS does not list: make fuzz-smoke (in make test)
// would never run it.
func TestEveryFuzzTargetRunsInMakeTest(t *testing.T) {
	root := filepath.Join("..", "..")
	raw, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(\./[\w/.-]+):(Fuzz\w+)`).FindAllStringSubmatch(string(raw), -1) {
		listed[filepath.Clean(m[1])+":"+m[2]] = true
	}
	fset := token.NewFileSet()
	n := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Fuzz") {
				n++
				if !listed[rel+":"+fn.Name.Name] {
					t.Errorf("%s in %s is not in the Makefile's FUZZ_TARGETS", fn.Name.Name, rel)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("found no fuzz target: the walk looks in the wrong place")
	}
	t.Logf("%d fuzz targets, all in FUZZ_TARGETS", n)
}
