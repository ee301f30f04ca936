package integration

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// parallel lets the test run beside the suite's other parallel tests, once
// the serial ones have finished (Go runs a package's serial tests first).
// A test may run in parallel when everything it creates is its own
// (namespaces from newNamespace, cluster-scoped objects and remote paths
// named after them) and what it asserts holds whatever else the shared
// operator is doing: no global metric values, no operator-wide settings,
// no control plane restarts, no timing measured against the operator's
// whole load. Everything else stays serial, with the reason written in its
// doc comment on a line that starts with "Serial:"; TestEveryTestSaysHowItRuns
// checks that each test says one or the other.
func parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
}

// serialMark starts the line of a serial test's doc comment that says why
// it cannot share the operator with other tests.
const serialMark = "Serial:"

// TestEveryTestSaysHowItRuns reads the suite's source: every test either
// calls parallel(t) as its first statement or gives the reason it runs
// alone in a "Serial:" line of its doc comment, so that a new test is
// placed deliberately and a reader sees why a slow one is not parallel.
func TestEveryTestSaysHowItRuns(t *testing.T) {
	parallel(t)
	files, err := filepath.Glob("*_test.go")
	must(t, err)
	fset := token.NewFileSet()
	var nParallel, nSerial int
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		must(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			calls := callsParallelFirst(fn)
			says := saysSerial(fn.Doc)
			switch {
			case calls && says:
				t.Errorf("%s (%s) calls parallel(t) and says why it is serial: which is it?", fn.Name.Name, name)
			case calls:
				nParallel++
			case says:
				nSerial++
			default:
				t.Errorf("%s (%s) neither calls parallel(t) as its first statement nor says in a %q line of its doc comment why it runs alone", fn.Name.Name, name, serialMark)
			}
		}
	}
	t.Logf("%d tests run in parallel, %d alone", nParallel, nSerial)
}

func callsParallelFirst(fn *ast.FuncDecl) bool {
	if fn.Body == nil || len(fn.Body.List) == 0 {
		return false
	}
	stmt, ok := fn.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := stmt.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	id, ok := call.Fun.(*ast.Ident)
	return ok && id.Name == "parallel"
}

func saysSerial(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for _, line := range strings.Split(doc.Text(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), serialMark) {
			rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), serialMark))
			return rest != ""
		}
	}
	return false
}
