package providertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/watchword-dev/watchword/internal/engine"
)

// CapabilitiesAreDocumented fails t unless the capability table at the top
// of docs/providers.md has a row for the provider named block that lists
// exactly the capabilities ops declare, by their names (read, batchRead,
// versionCheck, write, delete, ...), in any order.
func CapabilitiesAreDocumented(t testing.TB, block string, ops engine.Ops) {
	t.Helper()
	doc := filepath.Join(moduleRoot(t), "docs", "providers.md")
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, c := range strings.Split(ops.Capabilities().String(), ",") {
		want[c] = true
	}
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 4 || strings.TrimSpace(cells[1]) != "`"+block+"`" {
			continue
		}
		got := map[string]bool{}
		for _, c := range strings.Split(cells[2], ",") {
			got[strings.TrimSpace(c)] = true
		}
		for c := range want {
			if !got[c] {
				t.Errorf("docs/providers.md: the row of %s does not list %s, which it has (it lists %q)", block, c, strings.TrimSpace(cells[2]))
			}
		}
		for c := range got {
			if !want[c] {
				t.Errorf("docs/providers.md: the row of %s lists %s, which it does not have (it has %s)", block, c, ops.Capabilities())
			}
		}
		return
	}
	t.Errorf("docs/providers.md: the capability table has no row for %s (it has %s)", block, ops.Capabilities())
}

// moduleRoot is the directory of go.mod above the test's own.
func moduleRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
