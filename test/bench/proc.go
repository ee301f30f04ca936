package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// cpuSeconds is the user and system CPU time a process has used so far.
func cpuSeconds(pid int) float64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name may hold spaces; the fields after it are fixed.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ is 100 on Linux
}

// selfCPUSeconds is this process's own CPU time.
func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// childPID finds a child process of this one by its command name.
func childPID(name string) int {
	me := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		s := string(raw)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 || s[open+1:end] != name {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == me {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	return 0
}

// cpuSnapshot holds the CPU time of the processes the benchmark runs.
type cpuSnapshot map[string]float64

func (b *bench) cpu(ctrl *controller) cpuSnapshot {
	out := cpuSnapshot{"bench client": selfCPUSeconds()}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if pid := childPID(name); pid > 0 {
			out[name] = cpuSeconds(pid)
		}
	}
	if ctrl != nil {
		out["controller"] = cpuSeconds(ctrl.cmd.Process.Pid)
	}
	return out
}

// since is the CPU time each process used between two snapshots.
func (s cpuSnapshot) since(before cpuSnapshot) map[string]float64 {
	out := map[string]float64{}
	for k, v := range s {
		out[k] = v - before[k]
	}
	return out
}
