package imagebuild_test

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/watchword-dev/watchword/internal/imagebuild"
)

// The binary is any small file: the builder copies bytes and does not run
// them, and a real build would make the test slow.
var testOptions = imagebuild.Options{
	Binary:     []byte("a static binary"),
	BinaryPath: "/watchword",
	Cmd:        []string{"controller"},
	Created:    time.Unix(1700000000, 0),
	Title:      "watchword",
	Version:    "v1.2.3",
	Revision:   "0123456789abcdef0123456789abcdef01234567",
	Source:     "https://example.com/watchword",
}

func build(t *testing.T, o imagebuild.Options) v1.Image {
	t.Helper()
	img, err := imagebuild.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// entry is a file of the layer as a tar reader sees it.
type entry struct {
	hdr  *tar.Header
	data []byte
}

func TestBuildThroughTarball(t *testing.T) {
	img := build(t, testOptions)
	path := filepath.Join(t.TempDir(), "image.tar")
	tag, err := name.NewTag("watchword:v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if err = tarball.WriteToFile(path, tag, img); err != nil {
		t.Fatal(err)
	}
	loaded, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	// What docker load or crane push publish from the tarball is the image
	// that was built, byte for byte.
	if got, want := digest(t, loaded), digest(t, img); got != want {
		t.Errorf("digest read back from the tarball = %s, built %s", got, want)
	}

	cfg, err := loaded.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	created := testOptions.Created.UTC()
	if cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("platform %s/%s, want linux/amd64", cfg.OS, cfg.Architecture)
	}
	if !cfg.Created.Equal(created) {
		t.Errorf("created %v, want %v", cfg.Created, created)
	}
	if len(cfg.History) != 1 || !cfg.History[0].Created.Equal(created) {
		t.Errorf("history %+v, want one entry created %v", cfg.History, created)
	}
	c := cfg.Config
	if c.User != "65532:65532" {
		t.Errorf("user %q", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/watchword"}) || !slices.Equal(c.Cmd, []string{"controller"}) {
		t.Errorf("entrypoint %q, cmd %q", c.Entrypoint, c.Cmd)
	}
	if c.WorkingDir != "/home/nonroot" {
		t.Errorf("working dir %q", c.WorkingDir)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.title":    "watchword",
		"org.opencontainers.image.version":  "v1.2.3",
		"org.opencontainers.image.revision": testOptions.Revision,
		"org.opencontainers.image.source":   "https://example.com/watchword",
	}
	if len(c.Labels) != len(wantLabels) {
		t.Errorf("labels %v, want %v", c.Labels, wantLabels)
	}
	for k, v := range wantLabels {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}

	layers, err := loaded.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	names, files := readLayer(t, layers[0])
	wantNames := []string{
		"etc/", "etc/group", "etc/passwd", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt",
		"home/", "home/nonroot/", "tmp/", "watchword",
	}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("files (in layer order)\n%q\nwant\n%q", names, wantNames)
	}

	for _, n := range names {
		h := files[n].hdr
		if !h.ModTime.Equal(created) {
			t.Errorf("%s: mtime %v, want %v", n, h.ModTime, created)
		}
		wantUID := 0
		if n == "home/nonroot/" {
			wantUID = 65532
		}
		if h.Uid != wantUID || h.Gid != wantUID {
			t.Errorf("%s: owner %d:%d, want %d:%d", n, h.Uid, h.Gid, wantUID, wantUID)
		}
		switch h.Typeflag {
		case tar.TypeDir, tar.TypeReg:
		default:
			t.Errorf("%s: type %q: only files and directories belong in the image", n, h.Typeflag)
		}
		// No shell nor any other program: the binary is the only
		// executable file.
		if h.Typeflag == tar.TypeReg && h.Mode&0o111 != 0 && n != "watchword" {
			t.Errorf("%s: executable (mode %o)", n, h.Mode)
		}
	}
	if m := files["tmp/"].hdr.Mode; m != 0o1777 {
		t.Errorf("/tmp mode %o, want 1777", m)
	}
	if m := files["watchword"].hdr.Mode; m != 0o755 {
		t.Errorf("/watchword mode %o, want 755", m)
	}
	if !bytes.Equal(files["watchword"].data, testOptions.Binary) {
		t.Errorf("/watchword holds %q", files["watchword"].data)
	}
	if p := string(files["etc/passwd"].data); !strings.Contains(p, "\nnonroot:x:65532:65532:nonroot:/home/nonroot:") {
		t.Errorf("/etc/passwd lacks the nonroot user:\n%s", p)
	}
	if g := string(files["etc/group"].data); !strings.Contains(g, "\nnonroot:x:65532:") {
		t.Errorf("/etc/group lacks the nonroot group:\n%s", g)
	}

	pemData := files["etc/ssl/certs/ca-certificates.crt"].data
	if !x509.NewCertPool().AppendCertsFromPEM(pemData) {
		t.Fatal("the CA bundle holds no certificate")
	}
	n := 0
	for rest := pemData; ; n++ {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			if len(bytes.TrimSpace(rest)) != 0 {
				t.Errorf("the CA bundle has %d bytes that are not PEM after %d certificates", len(rest), n)
			}
			break
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			t.Errorf("CA bundle certificate %d: %v", n, err)
		}
	}
	if n <= 50 {
		t.Errorf("the CA bundle holds %d certificates, want more than 50", n)
	}
}

func readLayer(t *testing.T, l v1.Layer) ([]string, map[string]entry) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	var names []string
	files := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		files[h.Name] = entry{hdr: h, data: data}
	}
}

func TestBuildIsReproducible(t *testing.T) {
	first := digest(t, build(t, testOptions))
	if again := digest(t, build(t, testOptions)); again != first {
		t.Errorf("the same inputs gave %s, then %s", first, again)
	}
	// The same instant in another time zone is the same image.
	local := testOptions
	local.Created = testOptions.Created.In(time.FixedZone("elsewhere", 5*3600))
	if d := digest(t, build(t, local)); d != first {
		t.Errorf("a time zone changed the digest: %s, want %s", d, first)
	}
	later := testOptions
	later.Created = testOptions.Created.Add(time.Second)
	if d := digest(t, build(t, later)); d == first {
		t.Error("another created time gave the same digest")
	}
}

func TestBuildOtherImages(t *testing.T) {
	o := imagebuild.Options{Binary: []byte("pause"), BinaryPath: "/usr/local/bin/pause"}
	img := build(t, o)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/usr/local/bin/pause"}) || cfg.Config.Cmd != nil {
		t.Errorf("entrypoint %q, cmd %q", cfg.Config.Entrypoint, cfg.Config.Cmd)
	}
	if !cfg.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("created %v, want the Unix epoch", cfg.Created)
	}
	if len(cfg.Config.Labels) != 0 {
		t.Errorf("labels %v, want none", cfg.Config.Labels)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	names, files := readLayer(t, layers[0])
	for _, dir := range []string{"usr/", "usr/local/", "usr/local/bin/"} {
		if f, ok := files[dir]; !ok || f.hdr.Mode != 0o755 {
			t.Errorf("parent directory %s missing or not 0755 in %q", dir, names)
		}
	}

	for _, bad := range []string{"", "pause", "/", "/usr/../pause", "/etc/passwd", "/tmp", "/etc/passwd/pause"} {
		o.BinaryPath = bad
		if _, err := imagebuild.Build(o); err == nil {
			t.Errorf("binary path %q: no error", bad)
		}
	}
	if _, err := imagebuild.Build(imagebuild.Options{BinaryPath: "/pause"}); err == nil {
		t.Error("empty binary: no error")
	}
}
