package failure

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestMessagesNeverFormatAnOutsideError enforces the rule the redaction
// stands on: an Error's message is ours, so the walk of Redact stops at it.
// A call of Terminalf or Retryf must therefore not format an error (its
// text may repeat a value the API server or a store refused); the error
// goes in as text only through Redact. The check reads the source of the
// whole module: an argument that is a variable named like an error, or a
// call of its Error method, is refused.
func TestMessagesNeverFormatAnOutsideError(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isMessageCall(call.Fun) || len(call.Args) < 2 {
				return true
			}
			checked++
			if lit, ok := call.Args[1].(*ast.BasicLit); ok && strings.Contains(lit.Value, "%w") {
				t.Errorf("%s: a message cannot wrap an error with %%w; set Error.Err", fset.Position(call.Pos()))
			}
			for _, arg := range call.Args[2:] {
				if formatsError(arg) {
					t.Errorf("%s: a message formats an error; pass it through Redact or set Error.Err", fset.Position(arg.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("found no call of Terminalf or Retryf: the check looks in the wrong place")
	}
}

func isMessageCall(fun ast.Expr) bool {
	switch f := fun.(type) {
	case *ast.Ident:
		return f.Name == "Terminalf" || f.Name == "Retryf"
	case *ast.SelectorExpr:
		return f.Sel.Name == "Terminalf" || f.Sel.Name == "Retryf"
	}
	return false
}

// formatsError tells whether an argument is, by its name, an error: a
// variable err, fooErr or errFoo, or a call of an Error method.
func formatsError(arg ast.Expr) bool {
	switch a := arg.(type) {
	case *ast.Ident:
		n := a.Name
		return n == "err" || n == "e" || strings.HasSuffix(n, "Err") || (strings.HasPrefix(n, "err") && len(n) > 3 && n[3] >= 'A' && n[3] <= 'Z')
	case *ast.CallExpr:
		if sel, ok := a.Fun.(*ast.SelectorExpr); ok {
			return sel.Sel.Name == "Error" && len(a.Args) == 0
		}
	}
	return false
}
