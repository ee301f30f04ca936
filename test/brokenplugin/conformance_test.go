package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
	conformanceclient "github.com/watchword-dev/watchword/pkg/conformance"
)

// build compiles a package of the module into dir and returns the binary.
func build(t *testing.T, dir, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// start runs a plugin binary on a socket of dir until the test ends and
// returns its endpoint once the socket exists.
func start(t *testing.T, bin, dir string) string {
	t.Helper()
	sock := filepath.Join(dir, filepath.Base(bin)+".sock")
	cmd := exec.Command(bin, "-endpoint", "unix://"+sock)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		if err := <-exited; err != nil {
			t.Logf("the plugin exited after the interrupt: %v", err)
		}
	})
	for {
		if _, err := os.Stat(sock); err == nil {
			return "unix://" + sock
		}
		select {
		case err := <-exited:
			t.Fatalf("%s exited before it listened: %v\n%s", bin, err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// conformance runs `watchword plugin conformance` with args and returns
// its output and exit code.
func conformance(t *testing.T, watchword string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(watchword, append([]string{"plugin", "conformance"}, args...)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("running the conformance command: %v", err)
	return "", 0
}

// TestTheConformanceCommand runs the real command, built with go build,
// against the example memory plugin, which passes, and against this
// broken plugin, which it fails for each lie, naming the check the lie
// breaks and what the plugin did.
func TestTheConformanceCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three binaries")
	}
	bins := t.TempDir()
	sockets, err := os.MkdirTemp("", "wwc") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(sockets) })
	watchword := build(t, bins, "./cmd/watchword")
	memory := start(t, build(t, bins, "./examples/memoryplugin"), sockets)
	broken := start(t, build(t, bins, "./test/brokenplugin"), sockets)

	t.Run("the memory plugin passes", func(t *testing.T) {
		out, code := conformance(t, watchword, "--endpoint", memory, "--config", `{"partition":"conformance"}`, "--write-prefix", "cmd-", "--keeps-versions")
		if code != 0 || strings.Contains(out, "FAIL") || !strings.Contains(out, "PASS WriteRefusesOtherOwner") || !strings.Contains(out, " 0 failed") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		// The run leaves nothing under its prefix: neither what the
		// write checks wrote nor what the read checks seeded.
		ops, err := conformanceclient.DialPlugin(context.Background(), memory, map[string]string{"partition": "conformance"})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = ops.Closer.Close() }()
		for _, name := range []string{"read-current", "read-pinned", "read-missing-version", "read-property", "version-follows",
			"batch-a", "batch-b", "write-read", "write-unchanged", "owned-by-other", "adopt", "delete", "concurrent", "watch"} {
			if _, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "cmd-" + name}); !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("key %q after the run: %v, want it deleted (ErrNotFound)", "cmd-"+name, err)
			}
		}
	})

	for _, tc := range []struct {
		lie string
		// want are the lines the output must hold: the failed check,
		// and what it says the plugin did.
		want []string
	}{
		{wrongClass, []string{`FAIL ReadMissingKey: `, `"cmd-read-missing", which does not exist: expected an error wrapping ErrNotFound, the store returned an error of class ErrPermissionDenied`}},
		{overwrite, []string{`FAIL WriteRefusesOtherOwner: `, `owned by PushSecret/conformance/owner-a, as PushSecret/conformance/owner-b: expected an error wrapping ErrNotOwned, the store returned no error`}},
		{refuseWrites, []string{`FAIL WriteReadBack: `, `expected the write to succeed, the store returned: `, `this store takes no writes`}},
		{frozenVersions, []string{`FAIL WriteReadBack: `, `expected a new version after a write that changed its fields, PutSecret returned version "1" again`}},
	} {
		t.Run(tc.lie, func(t *testing.T) {
			out, code := conformance(t, watchword, "--endpoint", broken, "--config", `{"lie":"`+tc.lie+`"}`, "--write-prefix", "cmd-", "--keeps-versions")
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output does not say %q", w)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}

	t.Run("a config the plugin refuses", func(t *testing.T) {
		out, code := conformance(t, watchword, "--endpoint", broken, "--config", `{"lie":"none"}`)
		if code != 1 || !strings.Contains(out, "config.lie must be one of") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
}
