package agent

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func readSet(t *testing.T, dir string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatalf("reading %s: %v", n, err)
		}
		out[n] = string(b)
	}
	return out
}

func inode(t *testing.T, path string) (uint64, int64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Ino, fi.ModTime().UnixNano()
}

func TestAtomicWriterLaysOutLikeAProjectedVolume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	w := NewAtomicWriter(dir)
	changed, err := w.Write(Target{Files: map[string][]byte{"a": []byte("1"), "b": []byte("2")}, Mode: 0o440, UID: -1, GID: -1})
	if err != nil || !changed {
		t.Fatalf("first write: changed=%v err=%v", changed, err)
	}
	ts, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil || !strings.HasPrefix(ts, "..") {
		t.Fatalf("..data is %q (%v), want a link to a timestamped directory", ts, err)
	}
	for _, n := range []string{"a", "b"} {
		l, lerr := os.Readlink(filepath.Join(dir, n))
		if lerr != nil || l != "..data/"+n {
			t.Errorf("%s links to %q (%v), want ..data/%s", n, l, lerr, n)
		}
		fi, serr := os.Stat(filepath.Join(dir, n))
		if serr != nil {
			t.Fatal(serr)
		}
		if fi.Mode().Perm() != 0o440 {
			t.Errorf("%s has mode %v, want 0440", n, fi.Mode().Perm())
		}
	}
	if got := readSet(t, dir, "a", "b"); got["a"] != "1" || got["b"] != "2" {
		t.Errorf("read %v", got)
	}

	// The same content again: nothing is written, not even a new ..data.
	ino, mtime := inode(t, filepath.Join(dir, "a"))
	changed, err = w.Write(Target{Files: map[string][]byte{"a": []byte("1"), "b": []byte("2")}, Mode: 0o440, UID: -1, GID: -1})
	if err != nil || changed {
		t.Fatalf("unchanged write: changed=%v err=%v", changed, err)
	}
	if ino2, mtime2 := inode(t, filepath.Join(dir, "a")); ino2 != ino || mtime2 != mtime {
		t.Errorf("an unchanged write touched the file: inode %d->%d mtime %d->%d", ino, ino2, mtime, mtime2)
	}
	if ts2, _ := os.Readlink(filepath.Join(dir, "..data")); ts2 != ts {
		t.Errorf("an unchanged write swapped ..data: %s -> %s", ts, ts2)
	}

	// A new set: b goes, c comes, the version replaced stays until the
	// next write, for readers that resolved the old ..data a moment ago.
	changed, err = w.Write(Target{Files: map[string][]byte{"a": []byte("10"), "c": []byte("30")}, Mode: 0o440, UID: -1, GID: -1})
	if err != nil || !changed {
		t.Fatalf("second write: changed=%v err=%v", changed, err)
	}
	if got := readSet(t, dir, "a", "c"); got["a"] != "10" || got["c"] != "30" {
		t.Errorf("read %v", got)
	}
	if _, serr := os.Lstat(filepath.Join(dir, "b")); !os.IsNotExist(serr) {
		t.Errorf("the link of a file no longer delivered stays: %v", serr)
	}
	if b, serr := os.ReadFile(filepath.Join(dir, ts, "a")); serr != nil || string(b) != "1" {
		t.Errorf("the version just replaced (%s) went at once: %q %v", ts, b, serr)
	}
	names := func() []string {
		entries, _ := os.ReadDir(dir)
		var n []string
		for _, e := range entries {
			n = append(n, e.Name())
		}
		return n
	}
	if n := names(); len(n) != 5 { // ..TS1, ..TS2, ..data, a, c
		t.Errorf("directory holds %v, want two version directories, ..data, a and c", n)
	}
	second, _ := os.Readlink(filepath.Join(dir, "..data"))

	// A mode change alone is a change; the first version goes now, the
	// second stays as the one replaced.
	if changed, err = w.Write(Target{Files: map[string][]byte{"a": []byte("10"), "c": []byte("30")}, Mode: 0o400, UID: -1, GID: -1}); err != nil || !changed {
		t.Errorf("a new mode was not written: changed=%v err=%v", changed, err)
	}
	if _, serr := os.Stat(filepath.Join(dir, ts)); !os.IsNotExist(serr) {
		t.Errorf("the version before the one replaced (%s) stays: %v", ts, serr)
	}
	if _, serr := os.Stat(filepath.Join(dir, second)); serr != nil {
		t.Errorf("the version just replaced (%s) went: %v", second, serr)
	}
	if n := names(); len(n) != 5 {
		t.Errorf("directory holds %v, want two version directories, ..data, a and c", n)
	}
}

func TestAtomicWriterLeavesForeignFilesAndFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "foreign"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := NewAtomicWriter(dir)
	if _, err := w.Write(Target{Files: map[string][]byte{"a": []byte("1")}, Mode: 0o600, UID: -1, GID: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(Target{Files: map[string][]byte{"b": []byte("2")}, Mode: 0o600, UID: -1, GID: -1}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "foreign")); err != nil || string(b) != "x" {
		t.Errorf("a file the agent did not write was touched: %q %v", b, err)
	}

	// A directory that cannot be created: an error, and nothing left.
	parent := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(parent, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := NewAtomicWriter(filepath.Join(parent, "sub")).Write(Target{Files: map[string][]byte{"a": []byte("1")}, Mode: 0o600, UID: -1, GID: -1})
	if err == nil || !strings.Contains(err.Error(), "creating the directory") {
		t.Errorf("want an error about creating the directory, got %v", err)
	}
}

func TestAtomicWriterRefusesNamesThatLeaveTheDirectory(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "out")
	for _, name := range []string{"../escape", "..data", "a/b", ""} {
		_, err := NewAtomicWriter(dir).Write(Target{Files: map[string][]byte{name: []byte("x")}, Mode: 0o600, UID: -1, GID: -1})
		if err == nil {
			t.Errorf("name %q was written", name)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "escape")); !os.IsNotExist(err) {
		t.Error("a file was written outside the directory")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Error("a refused write created the directory")
	}
}
