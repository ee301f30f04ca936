// Command image builds Watchword's container image from a static Linux
// binary, without a container engine (internal/imagebuild), and writes it as
// a docker-style tarball and, optionally, an OCI image layout. It prints the
// image's digest, which the same binary, revision and created time always
// reproduce. `make image` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/watchword-dev/watchword/internal/imagebuild"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run() error {
	binary := flag.String("binary", "bin/linux/watchword", "the static linux/amd64 binary (make image-binary builds it)")
	out := flag.String("tarball", "bin/image/watchword.tar", "the docker-style tarball to write (docker load, crane push, ctr images import)")
	ociDir := flag.String("oci-layout", "", "also write an OCI image layout into this directory")
	version := flag.String("version", "dev", "the version, for the label and the default tag")
	tag := flag.String("tag", "", "the image reference recorded in the tarball (default watchword:VERSION, what the chart asks for when its appVersion is VERSION)")
	revision := flag.String("revision", "", "the source revision (git commit), for the label")
	source := flag.String("source", "https://github.com/watchword-dev/watchword", "the source repository's URL, for the label")
	created := flag.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "the image's time as Unix seconds, such as the commit's time (default $SOURCE_DATE_EPOCH, else 0)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}

	var createdAt time.Time
	if *created != "" {
		secs, err := strconv.ParseInt(*created, 10, 64)
		if err != nil {
			return fmt.Errorf("-created: %w", err)
		}
		createdAt = time.Unix(secs, 0)
	}
	if *tag == "" {
		*tag = "watchword:" + *version
	}
	// The tarball records the reference as written: "watchword:dev" stays
	// short, and docker and containerd read it as docker.io/library/watchword,
	// as the kubelet does the chart's default image.
	ref, err := name.NewTag(*tag)
	if err != nil {
		return fmt.Errorf("-tag: %w", err)
	}
	bin, err := os.ReadFile(*binary)
	if err != nil {
		return err
	}

	img, err := imagebuild.Build(imagebuild.Operator(bin, *version, *revision, *source, createdAt))
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}

	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	if err := tarball.WriteToFile(*out, ref, img); err != nil {
		return err
	}
	fmt.Printf("wrote %s (%s)\n", *out, ref)
	if *ociDir != "" {
		// layout.Write starts a fresh index.json; blobs of an earlier image
		// in the directory stay but are no longer listed.
		p, err := layout.Write(*ociDir, empty.Index)
		if err != nil {
			return err
		}
		err = p.AppendImage(img,
			layout.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}),
			layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.String()}))
		if err != nil {
			return err
		}
		fmt.Printf("wrote %s\n", *ociDir)
	}
	fmt.Println(digest)
	return nil
}
