package node

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A node whose owner still runs is never undone: New refuses, and leaves
// the other node's folder as it was.
func TestReclaimRefusesWhileTheOwnerRuns(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := os.MkdirTemp("", "wwnode-")
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{dir: dir, netnsBefore: []string{"x"}}
	if err = n.writeOwner([]byte("0\n")); err != nil {
		t.Fatal(err)
	}
	err = reclaim(Binaries{})
	if err == nil || !strings.Contains(err.Error(), "another node is running") {
		t.Fatalf("reclaim with a live owner: %v, want a refusal", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, ownerFile)); serr != nil {
		t.Errorf("the live node's folder was touched: %v", serr)
	}
}

func TestProcessStartTellsAReusedPID(t *testing.T) {
	self := processStart(os.Getpid())
	if self == "" {
		t.Fatal("no start time for this process")
	}
	parent, perr := strconv.ParseUint(processStart(os.Getppid()), 10, 64)
	mine, merr := strconv.ParseUint(self, 10, 64)
	if perr != nil || merr != nil || parent > mine {
		t.Errorf("the parent's start %d is not at or before this process's %d (%v, %v)", parent, mine, perr, merr)
	}
	if got := processStart(1 << 30); got != "" {
		t.Errorf("a process that does not exist has start %q", got)
	}
}
