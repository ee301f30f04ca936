package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/fake"
)

// TestSharedObjectsAreReadOncePerRefresh: ten directories sharing three
// objects of a fake store cost three reads, and a second refresh with
// nothing new writes nothing and runs no action.
func TestSharedObjectsAreReadOncePerRefresh(t *testing.T) {
	root := t.TempDir()
	marker := filepath.Join(root, "ran")
	var b strings.Builder
	b.WriteString("kind: AgentConfig\nstores:\n  - name: f\n    fake:\n      data:\n")
	for _, k := range []string{"a", "b", "c"} {
		fmt.Fprintf(&b, "        - {key: %s, value: value-of-%s}\n", k, k)
	}
	b.WriteString("deliveries:\n")
	for i := range 10 {
		fmt.Fprintf(&b, "  - directory: %s/d%d\n    store: f\n    onChange: {command: [/bin/sh, -c, 'echo >> %s']}\n    files:\n", root, i, marker)
		for _, k := range []string{"a", "b", "c"} {
			fmt.Fprintf(&b, "      - {name: %s.txt, remoteRef: {key: %s}}\n", k, k)
		}
	}
	cfg, err := ParseConfig("c.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, Options{Registry: provider.Registry{"fake": fake.Factory{}}, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if err := a.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(a.metrics.reads.WithLabelValues("config/f")); got != 3 {
		t.Errorf("store reads = %v, want 3 (one per object)", got)
	}
	for i := range 10 {
		dir := fmt.Sprintf("%s/d%d", root, i)
		if got := readSet(t, dir, "a.txt", "c.txt"); got["a.txt"] != "value-of-a" || got["c.txt"] != "value-of-c" {
			t.Errorf("%s holds %v", dir, got)
		}
		if got := testutil.ToFloat64(a.metrics.changes.WithLabelValues(dir)); got != 1 {
			t.Errorf("%s changed %v times, want 1", dir, got)
		}
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("onChange ran for the first write into empty directories")
	}
	if !a.Ready() {
		t.Error("not ready after a refresh that delivered everything")
	}
}
