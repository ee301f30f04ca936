package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// actionTimeout bounds a command run on a change.
const actionTimeout = 2 * time.Minute

// Run performs the action once. Errors name the command or the process,
// never the output of the command (which could print a value).
func (a *Action) Run(ctx context.Context) error {
	if len(a.Command) > 0 {
		cctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		cmd := exec.CommandContext(cctx, a.Command[0], a.Command[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("onChange command %q: %w", a.Command[0], err)
		}
		return nil
	}
	sig, err := parseSignal(a.Signal)
	if err != nil {
		return err
	}
	pids, err := a.targets()
	if err != nil {
		return err
	}
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			errs = append(errs, fmt.Errorf("sending %s to pid %d: %w", a.Signal, pid, err))
		}
	}
	return errors.Join(errs...)
}

// targets are the pids the signal goes to.
func (a *Action) targets() ([]int, error) {
	if a.PidFile != "" {
		b, err := os.ReadFile(a.PidFile)
		if err != nil {
			return nil, fmt.Errorf("onChange pidFile: %w", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("onChange pidFile %s holds no process id", a.PidFile)
		}
		return []int{pid}, nil
	}
	pids := processesNamed(a.Process)
	if len(pids) == 0 {
		return nil, fmt.Errorf("onChange: no process named %q is running", a.Process)
	}
	return pids, nil
}

// processesNamed lists the processes whose command name (/proc/PID/comm,
// as pgrep matches by default) is name. It reads /proc itself: the
// process libraries (gopsutil, go-ps) bring far more than this one lookup
// needs. Linux only, as the agent is.
func processesNamed(name string) []int {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil {
			continue
		}
		if string(bytes.TrimSpace(comm)) == name {
			out = append(out, pid)
		}
	}
	return out
}
