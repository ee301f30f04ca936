package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// watchwordBinary builds the watchword command once per run of the suite,
// as a user builds it.
func watchwordBinary(t *testing.T) string {
	t.Helper()
	watchwordBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "watchword-bin-")
		if err != nil {
			watchwordBinErr = err
			return
		}
		watchwordBin = filepath.Join(dir, "watchword")
		out, err := exec.Command("go", "build", "-o", watchwordBin, "../../cmd/watchword").CombinedOutput()
		if err != nil {
			watchwordBinErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	must(t, watchwordBinErr)
	return watchwordBin
}

// TestConformanceCommandAgainstAClusterStore: `watchword conformance
// --store` runs the suite against a SecretStore of the cluster, built as
// the controller builds it from its spec and credentials: a kubernetes
// store whose identity may write passes every check it can run, and
// one whose identity may only read fails the write checks, naming them.
func TestConformanceCommandAgainstAClusterStore(t *testing.T) {
	parallel(t)
	bin := watchwordBinary(t)
	kc, err := cluster.Kubeconfig()
	must(t, err)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, os.WriteFile(kubeconfig, kc, 0o600))

	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	createSecret(t, ns, "writer-token", map[string]string{"token": publisherToken(t, remote)})
	allowWatch(t, remote, "publisher")
	kubeStore(t, ns, "writable", remote, "writer-token")
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"conformance", "--kubeconfig", kubeconfig}, args...)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			must(t, err)
		}
		return string(out), code
	}

	out, code := run("--store", "writable", "-n", ns, "--write-prefix", "conf-")
	if code != 0 || strings.Contains(out, "FAIL ") || !strings.Contains(out, "PASS WriteReadBack") || !strings.Contains(out, "PASS ReadCurrent") {
		t.Fatalf("a kubernetes store that may write: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, `SecretStore "`+ns+`/writable" (kubernetes)`) {
		t.Errorf("the report does not name the store and its provider:\n%s", out)
	}

	createSecret(t, ns, "reader-token", map[string]string{"token": readerToken(t, remote)})
	kubeStore(t, ns, "readonly", remote, "reader-token")
	out, code = run("--store", "readonly", "-n", ns, "--write-prefix", "conf-")
	if code != 1 || !strings.Contains(out, "FAIL WriteReadBack") {
		t.Fatalf("a kubernetes store whose identity may only read: exit %d, want 1 and WriteReadBack failing\n%s", code, out)
	}

	if out, code = run("--store", "absent", "-n", ns); code == 0 || !strings.Contains(out, `SecretStore "absent" not found`) {
		t.Errorf("a store that does not exist: exit %d\n%s", code, out)
	}
	if out, code = run("--store", "writable", "--endpoint", "unix:///x.sock"); code != 2 {
		t.Errorf("--store with --endpoint: exit %d, want 2\n%s", code, out)
	}
}
