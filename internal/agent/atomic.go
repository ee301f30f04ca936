package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The atomic writer lays a directory out as the kubelet lays out a
// projected volume:
//
//	dir/..2026_11_26_06_30_00.123456789/  the files of one version
//	dir/..data -> ..2026_11_26_06_30_00.123456789
//	dir/NAME   -> ..data/NAME             one link per visible file
//
// An update writes a new timestamped directory (files written, mode and
// owner applied, everything fsynced), then swaps ..data by a rename of a
// new link over it, which is atomic, then adds or removes visible links,
// then removes the versions older than the one it replaced. A reader that
// opens dir/NAME gets a whole file of one version, never a half-written
// one. A reader that wants a whole set of one version resolves ..data once
// and reads every file under that directory, checking that ..data still
// names it afterwards.
//
// The version just replaced is kept until the next write, unlike the
// kubelet's writer, which removes it at once: a reader that resolved
// dir/NAME through the old ..data a moment before the swap would
// otherwise find the file gone (ENOENT) between the swap and its open.
// Keeping one previous version costs one more copy of the files on disk
// and closes that window for every reader slower than one rotation.
//
// It is written here rather than imported: the kubelet's AtomicWriter lives
// in k8s.io/kubernetes, which is not meant to be imported as a library (it
// pulls the whole kubelet's dependency tree), and the libraries for atomic
// files (renameio and the like) replace one file, not a set of files.

const (
	dataLink    = "..data"
	dataLinkTmp = "..data_tmp"
	tsPrefix    = ".."
	tsLayout    = "2006_01_02_15_04_05."
)

// Target is what a directory should hold.
type Target struct {
	Files map[string][]byte
	Mode  os.FileMode
	// UID and GID to apply; -1 keeps the agent's own.
	UID, GID int
}

// AtomicWriter writes Targets into one directory.
type AtomicWriter struct {
	Dir string
	// now names the timestamped directories; tests may set it.
	now func() time.Time
}

// NewAtomicWriter returns a writer for dir.
func NewAtomicWriter(dir string) *AtomicWriter {
	return &AtomicWriter{Dir: dir, now: time.Now}
}

// Current reports whether dir already holds exactly t (same names,
// contents, mode and owner), reading what ..data points to.
func (w *AtomicWriter) Current(t Target) bool {
	ts, err := os.Readlink(filepath.Join(w.Dir, dataLink))
	if err != nil {
		return false
	}
	base := filepath.Join(w.Dir, ts)
	entries, err := os.ReadDir(base)
	if err != nil || len(entries) != len(t.Files) {
		return false
	}
	for _, e := range entries {
		want, ok := t.Files[e.Name()]
		if !ok || !e.Type().IsRegular() {
			return false
		}
		p := filepath.Join(base, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode().Perm() != t.Mode || !ownedBy(fi, t.UID, t.GID) {
			return false
		}
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			return false
		}
	}
	// Every visible name must be a link into ..data.
	for name := range t.Files {
		l, err := os.Readlink(filepath.Join(w.Dir, name))
		if err != nil || l != filepath.Join(dataLink, name) {
			return false
		}
	}
	return true
}

// Write makes dir hold t, atomically. It does nothing and returns false
// when dir already holds t. On an error before the swap, dir is left as it
// was (the new directory is removed).
func (w *AtomicWriter) Write(t Target) (bool, error) {
	// Names can come from the store (dataFrom): none may leave the
	// directory or take the place of the writer's own entries.
	for _, name := range slices.Sorted(maps.Keys(t.Files)) {
		if msg := fileNameProblem(name); msg != "" {
			return false, fmt.Errorf("file name %q: %s", name, msg)
		}
	}
	if w.Current(t) {
		return false, nil
	}
	if err := os.MkdirAll(w.Dir, 0o755); err != nil { //nolint:gosec // the consumer, which may run as another user, reads below it
		return false, fmt.Errorf("creating the directory: %w", pathless(err))
	}
	oldTS, _ := os.Readlink(filepath.Join(w.Dir, dataLink))
	ts, err := w.writeVersion(t)
	if err != nil {
		return false, err
	}
	if err = w.swap(ts); err != nil {
		_ = os.RemoveAll(filepath.Join(w.Dir, ts))
		return false, err
	}
	if err = w.links(t); err != nil {
		return true, err
	}
	w.removeOlder(ts, oldTS)
	return true, syncDir(w.Dir)
}

// writeVersion writes t into a new timestamped directory, fsynced, and
// returns its name.
func (w *AtomicWriter) writeVersion(t Target) (string, error) {
	tmp, err := os.MkdirTemp(w.Dir, tsPrefix+w.now().UTC().Format(tsLayout))
	if err != nil {
		return "", fmt.Errorf("creating a new version directory: %w", pathless(err))
	}
	ts := filepath.Base(tmp)
	fail := func(what string, err error) (string, error) {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("%s: %w", what, pathless(err))
	}
	// MkdirTemp makes it 0700; readers of the files need to pass.
	if err := os.Chmod(tmp, 0o755); err != nil { //nolint:gosec // readers of the files need to pass; the files keep their own modes
		return fail("setting the mode of the version directory", err)
	}
	for _, name := range slices.Sorted(maps.Keys(t.Files)) {
		if err := writeFile(filepath.Join(tmp, name), t.Files[name], t.Mode, t.UID, t.GID); err != nil {
			return fail(fmt.Sprintf("writing file %q", name), err)
		}
	}
	if err := syncDir(tmp); err != nil {
		return fail("syncing the version directory", err)
	}
	return ts, nil
}

func writeFile(path string, b []byte, mode os.FileMode, uid, gid int) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && (uid >= 0 || gid >= 0) {
		err = f.Chown(uid, gid)
	}
	if err == nil {
		// After Chown, which may clear set-id bits.
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// swap points ..data at ts by renaming a new link over it.
func (w *AtomicWriter) swap(ts string) error {
	tmp := filepath.Join(w.Dir, dataLinkTmp)
	_ = os.Remove(tmp)
	if err := os.Symlink(ts, tmp); err != nil {
		return fmt.Errorf("creating the ..data link: %w", pathless(err))
	}
	if err := os.Rename(tmp, filepath.Join(w.Dir, dataLink)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("swapping the ..data link: %w", pathless(err))
	}
	return syncDir(w.Dir)
}

// links makes every visible name a link to ..data/NAME and removes the
// links of names no longer delivered.
func (w *AtomicWriter) links(t Target) error {
	for name := range t.Files {
		p := filepath.Join(w.Dir, name)
		want := filepath.Join(dataLink, name)
		if l, err := os.Readlink(p); err == nil && l == want {
			continue
		}
		tmp := filepath.Join(w.Dir, dataLinkTmp+"_"+name)
		_ = os.Remove(tmp)
		if err := os.Symlink(want, tmp); err != nil {
			return fmt.Errorf("linking file %q: %w", name, pathless(err))
		}
		if err := os.Rename(tmp, p); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("linking file %q: %w", name, pathless(err))
		}
	}
	entries, err := os.ReadDir(w.Dir)
	if err != nil {
		return fmt.Errorf("listing the directory: %w", pathless(err))
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") || has(t.Files, name) || e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		// Only our own links (into ..data) are removed.
		if l, err := os.Readlink(filepath.Join(w.Dir, name)); err == nil && strings.HasPrefix(l, dataLink+"/") {
			_ = os.Remove(filepath.Join(w.Dir, name))
		}
	}
	return nil
}

// removeOlder removes the timestamped directories other than the current
// one and the one it replaced: older versions, and those left by an
// interrupted write.
func (w *AtomicWriter) removeOlder(current, previous string) {
	entries, err := os.ReadDir(w.Dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() && n != current && n != previous && strings.HasPrefix(n, tsPrefix) && len(n) > len(tsPrefix)+len(tsLayout) {
			if _, err := time.Parse(tsLayout, n[len(tsPrefix):len(tsPrefix)+len(tsLayout)]); err == nil {
				_ = os.RemoveAll(filepath.Join(w.Dir, n))
			}
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return pathless(err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing a directory: %w", pathless(err))
	}
	return nil
}

// pathless drops the path of an *fs.PathError or *os.LinkError: the
// caller names the directory, and a path could carry a file name the user
// did not choose to show twice.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return fmt.Errorf("%s: %w", le.Op, le.Err)
	}
	return err
}

func has(m map[string][]byte, k string) bool {
	_, ok := m[k]
	return ok
}
