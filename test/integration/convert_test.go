package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/cli"
)

// TestConvertedCorpusIsAccepted converts every External Secrets Operator
// manifest of the convert corpus (internal/cli/testdata/convert) and
// applies each Watchword object of the result to the API server with a
// server-side dry run and strict field validation: the schema and the
// CEL rules of our CRDs accept what convert writes. Namespaced objects go
// to a namespace of the test; objects passed through unchanged (other
// kinds) are not applied.
func TestConvertedCorpusIsAccepted(t *testing.T) {
	parallel(t)
	dir := "../../internal/cli/testdata/convert"
	files, err := filepath.Glob(filepath.Join(dir, "[0-9]*.yaml"))
	must(t, err)
	ns := newNamespace(t, nil)
	applied := 0
	for _, f := range files {
		base := filepath.Base(f)
		if strings.Contains(base, ".out.") || strings.Contains(base, ".samples.") || strings.Contains(base, ".expect.") {
			continue
		}
		t.Run(base, func(t *testing.T) {
			b, err := os.ReadFile(f)
			must(t, err)
			res, err := cli.Convert([]cli.ConvertInput{{Name: base, Data: b}})
			must(t, err)
			objs, err := docObjects(string(res.Output))
			must(t, err)
			for _, u := range objs {
				if u.GroupVersionKind().GroupVersion() != v1alpha1.GroupVersion {
					continue
				}
				if u.GetNamespace() != "" {
					u.SetNamespace(ns)
				}
				if err := dryRunCreate(u); err != nil {
					t.Errorf("%s %q was refused: %v", u.GetKind(), u.GetName(), err)
				}
				applied++
			}
		})
	}
	if applied == 0 {
		t.Fatal("nothing was applied")
	}
	t.Logf("%d converted objects accepted", applied)
}
