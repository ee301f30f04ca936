package agent

import (
	"fmt"
	"io/fs"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// lookupUser resolves a user name or number to a uid.
func lookupUser(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return n, nil
	}
	u, err := user.Lookup(s)
	if err != nil {
		return -1, fmt.Errorf("no user %q on this host", s)
	}
	return strconv.Atoi(u.Uid)
}

// lookupGroup resolves a group name or number to a gid.
func lookupGroup(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return n, nil
	}
	g, err := user.LookupGroup(s)
	if err != nil {
		return -1, fmt.Errorf("no group %q on this host", s)
	}
	return strconv.Atoi(g.Gid)
}

// ids resolves owner and group; "" is -1 (keep the agent's own).
func ids(owner, group string) (uid, gid int, err error) {
	uid, gid = -1, -1
	if owner != "" {
		if uid, err = lookupUser(owner); err != nil {
			return 0, 0, err
		}
	}
	if group != "" {
		if gid, err = lookupGroup(group); err != nil {
			return 0, 0, err
		}
	}
	return uid, gid, nil
}

// ownedBy reports whether fi has the uid and gid asked for (-1: any).
func ownedBy(fi fs.FileInfo, uid, gid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return uid < 0 && gid < 0
	}
	return (uid < 0 || int(st.Uid) == uid) && (gid < 0 || int(st.Gid) == gid)
}

// parseSignal reads a signal name (HUP, SIGHUP) or number.
func parseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	if sig, ok := signals[name]; ok {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q (use a name such as HUP, USR1, TERM, or a number)", s)
}

var signals = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "TERM": syscall.SIGTERM,
	"USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "KILL": syscall.SIGKILL, "WINCH": syscall.SIGWINCH,
}
