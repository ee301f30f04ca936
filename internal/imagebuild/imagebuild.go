// Package imagebuild builds small container images without a container
// engine: one static binary, a non-root user and CA certificates in a single
// layer, assembled with go-containerregistry. The same inputs always give
// the same image digest, so an image can be rebuilt from a commit and
// checked against a published one.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's user, matching the chart's runAsUser and runAsGroup.
const (
	UID      = 65532
	GID      = 65532
	UserName = "nonroot"
	Home     = "/home/nonroot"
)

// CACertsPath is where the CA bundle goes: the first file Go's crypto/x509
// (and most other TLS libraries) look for on Linux, so no SSL_CERT_FILE is
// needed.
const CACertsPath = "/etc/ssl/certs/ca-certificates.crt"

// OCI annotation keys used as image labels.
const (
	LabelTitle    = "org.opencontainers.image.title"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelSource   = "org.opencontainers.image.source"
)

// Options describe one image.
type Options struct {
	// Binary is the static executable, written at BinaryPath with mode 0755.
	Binary []byte
	// BinaryPath is the binary's absolute path in the image, such as
	// "/watchword".
	BinaryPath string
	// Entrypoint defaults to the binary alone.
	Entrypoint []string
	Cmd        []string
	// Created is every timestamp in the image: the config's, the history's
	// and each file's. The zero value means the Unix epoch.
	Created time.Time
	// Title, Version, Revision and Source become the OCI labels of the same
	// name when not empty.
	Title, Version, Revision, Source string
}

// Build returns a single-layer linux/amd64 image.
//
// The image uses Docker's media types, not OCI's: a docker-style tarball
// (tarball.Write) records no media types, and whoever reads it back (docker
// load, crane push, ctr import) rebuilds a Docker manifest; with Docker
// types from the start, the digest Build gives is the one those publish.
func Build(o Options) (v1.Image, error) {
	if len(o.Binary) == 0 {
		return nil, errors.New("imagebuild: empty binary")
	}
	if !path.IsAbs(o.BinaryPath) || path.Clean(o.BinaryPath) != o.BinaryPath || o.BinaryPath == "/" {
		return nil, fmt.Errorf("imagebuild: binary path %q is not a clean absolute file path", o.BinaryPath)
	}
	created := time.Unix(0, 0)
	if !o.Created.IsZero() {
		created = o.Created
	}
	// UTC and whole seconds: the host's time zone must not reach the config's
	// JSON, and whole seconds keep the tar headers in the plain ustar format.
	created = created.UTC().Truncate(time.Second)

	layer, err := buildLayer(o, created)
	if err != nil {
		return nil, err
	}
	entrypoint := o.Entrypoint
	if entrypoint == nil {
		entrypoint = []string{o.BinaryPath}
	}
	labels := map[string]string{}
	for k, v := range map[string]string{LabelTitle: o.Title, LabelVersion: o.Version, LabelRevision: o.Revision, LabelSource: o.Source} {
		if v != "" {
			labels[k] = v
		}
	}
	cfg := &v1.ConfigFile{
		Architecture: "amd64",
		OS:           "linux",
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			User:       strconv.Itoa(UID) + ":" + strconv.Itoa(GID),
			Entrypoint: entrypoint,
			Cmd:        o.Cmd,
			WorkingDir: Home,
			Labels:     labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "github.com/watchword-dev/watchword/internal/imagebuild",
			Comment:   o.BinaryPath + ", user " + UserName + ", CA certificates",
		},
	})
}

// file is one entry of the layer; a nil data with dir set is a directory.
type file struct {
	dir      bool
	mode     int64
	uid, gid int
	data     []byte
}

func buildLayer(o Options, created time.Time) (v1.Layer, error) {
	// Names are relative, as in the layers docker and other builders write.
	files := map[string]file{
		"etc/passwd": {mode: 0o644, data: fmt.Appendf(nil,
			"root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", UserName, UID, GID, UserName, Home)},
		"etc/group":     {mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\n%s:x:%d:\n", UserName, GID)},
		CACertsPath[1:]: {mode: 0o644, data: caBundle()},
		"tmp":           {dir: true, mode: 0o1777},
		Home[1:]:        {dir: true, mode: 0o755, uid: UID, gid: GID},
	}
	bin := o.BinaryPath[1:]
	if _, taken := files[bin]; taken {
		return nil, fmt.Errorf("imagebuild: binary path %q is taken by a file of the image", o.BinaryPath)
	}
	files[bin] = file{mode: 0o755, data: o.Binary}
	// Every parent directory gets an entry of its own, so that its mode and
	// owner are fixed here and not left to whichever runtime unpacks it.
	for name := range maps.Clone(files) {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			f, ok := files[d]
			if ok && !f.dir {
				return nil, fmt.Errorf("imagebuild: %q is both a file and a directory", "/"+d)
			}
			if !ok {
				files[d] = file{dir: true, mode: 0o755}
			}
		}
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// Sorted, so that the layer's bytes depend on nothing but the files.
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f := files[name]
		hdr := &tar.Header{Name: name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: created}
		if f.dir {
			hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
		} else {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	// Compressed once and kept: ggcr hashes the compressed layer when it is
	// created and reads it again when it is written.
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithCompressedCaching)
}

// caBundle returns the Mozilla (NSS) roots that golang.org/x/crypto/x509roots/
// fallback embeds, at the version go.mod pins, as PEM: from a module rather
// than the build host, so that the image's digest does not depend on the host.
// Roots that carry a constraint (a "distrust after" date NSS sets on a CA
// being retired) are left out: a PEM file cannot express the constraint, and
// a reader of the file would trust those roots without it.
func caBundle() []byte {
	var b bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		// Writing to a bytes.Buffer cannot fail.
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return b.Bytes()
}

// Operator is the definition of Watchword's image, which `make image`
// (hack/image) writes and the end-to-end tests run: the operator's static
// binary at /watchword, running `watchword controller` by default.
func Operator(binary []byte, version, revision, source string, created time.Time) Options {
	return Options{
		Binary:     binary,
		BinaryPath: "/watchword",
		Cmd:        []string{"controller"},
		Created:    created,
		Title:      "watchword",
		Version:    version,
		Revision:   revision,
		Source:     source,
	}
}
