package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// testingImporters are the packages of the operator's dependencies allowed
// to import the testing package, each for a reason outside our control:
// the Alibaba Cloud SDK's core (tea, up to its newest release) keeps assert
// helpers in a non-test file of its utils package. Linking testing does no
// harm by itself (its flags are registered only when a test binary starts),
// unlike envtest below.
var testingImporters = []string{"github.com/alibabacloud-go/tea/utils"}

// The operator's binary is what the image carries: it links no test code of
// ours or of controller-runtime. envtest, for one, creates a folder under
// /tmp in an init function, which crashes a pod whose root file system is
// read-only (the chart's default).
func TestOperatorBinaryLinksNoTestCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg := fields[0]
		if strings.Contains(pkg, "/envtest") || strings.Contains(pkg, "controller-runtime/pkg/internal/testing") ||
			strings.HasSuffix(pkg, "/internal/localcluster") || strings.HasSuffix(pkg, "/internal/dev") ||
			strings.Contains(pkg, "/providertest") {
			t.Errorf("./cmd/watchword links %s", pkg)
		}
		if slices.Contains(fields[1:], "testing") && !slices.Contains(testingImporters, pkg) {
			t.Errorf("./cmd/watchword links the testing package through %s", pkg)
		}
	}
}
