package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// sleeper starts a sleep process under a name of its own, so that the
// signal by name can reach no other process of the machine.
func sleeper(t *testing.T, name string) *exec.Cmd {
	t.Helper()
	src, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func signalledBy(t *testing.T, cmd *exec.Cmd, want syscall.Signal) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("the process ended without a signal: %v", err)
		}
		if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != want {
			t.Fatalf("the process ended with %v, want signal %v", ws, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the process did not receive the signal")
	}
}

func TestActionSignalsByPidFileAndByName(t *testing.T) {
	cmd := sleeper(t, fmt.Sprintf("wwa%d", os.Getpid()%100000))
	pidFile := filepath.Join(t.TempDir(), "app.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (&Action{Signal: "USR1", PidFile: pidFile}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	signalledBy(t, cmd, syscall.SIGUSR1)

	name := fmt.Sprintf("wwb%d", os.Getpid()%100000)
	cmd = sleeper(t, name)
	// /proc/PID/comm holds the name once the process has exec'd.
	for deadline := time.Now().Add(30 * time.Second); len(processesNamed(name)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the process never showed its name")
		}
	}
	if err := (&Action{Signal: "SIGTERM", Process: name}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	signalledBy(t, cmd, syscall.SIGTERM)

	if err := (&Action{Signal: "HUP", Process: "wwc-no-such-process"}).Run(context.Background()); err == nil {
		t.Error("a signal to no process succeeded")
	}
}

func TestActionCommandFailureNamesTheCommand(t *testing.T) {
	err := (&Action{Command: []string{"/bin/sh", "-c", "exit 3"}}).Run(context.Background())
	if err == nil || err.Error() != `onChange command "/bin/sh": exit status 3` {
		t.Errorf("got %v", err)
	}
}
