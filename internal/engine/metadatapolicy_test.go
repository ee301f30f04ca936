package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// taggedStore keeps one value and a set of tags per key, and counts reads
// of each.
type taggedStore struct {
	values, metadata atomic.Int64
	lastMetadataKey  atomic.Value
}

func (s *taggedStore) GetSecret(_ context.Context, ref Ref) (Object, error) {
	s.values.Add(1)
	if ref.Metadata {
		return Object{}, errors.New("a metadata ref reached the value read")
	}
	return Object{Version: "7", Value: []byte("value-of-" + ref.Key)}, nil
}

func (s *taggedStore) GetMetadata(_ context.Context, ref Ref) (Object, error) {
	s.metadata.Add(1)
	s.lastMetadataKey.Store(ref.Key)
	return Object{Fields: map[string][]byte{"team": []byte("payments"), "tier": []byte("gold")}}, nil
}

func metadataSpec() *v1alpha1.ExternalSecretSpec {
	fetch := v1alpha1.MetadataFetch
	return &v1alpha1.ExternalSecretSpec{
		Data: []v1alpha1.ExternalSecretData{
			{SecretKey: "value", RemoteRef: v1alpha1.RemoteReference{Key: "db"}},
			{SecretKey: "team", RemoteRef: v1alpha1.RemoteReference{Key: "db", Property: "team", MetadataPolicy: fetch}},
			{SecretKey: "all", RemoteRef: v1alpha1.RemoteReference{Key: "db", MetadataPolicy: fetch}},
		},
		DataFrom: []v1alpha1.ExternalSecretDataFrom{
			{RemoteRef: &v1alpha1.RemoteReference{Key: "db", MetadataPolicy: fetch}},
		},
	}
}

func TestMetadataFetchReadsMetadataApartFromTheValue(t *testing.T) {
	s := &taggedStore{}
	c, err := NewClient("tagged", Ops{Reader: s, Metadata: s})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Capabilities().Has(CanFetchMetadata) {
		t.Fatalf("capabilities %s lack fetchMetadata", c.Capabilities())
	}
	res, err := NewFetcher(nil, nil).Sync(context.Background(), Input{Spec: metadataSpec(), Store: "s", Reader: c})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"value": "value-of-db",
		"team":  "payments",
		"all":   `{"team":"payments","tier":"gold"}`,
		"tier":  "gold", // from dataFrom, as is "team"
	}
	for k, v := range want {
		if got := string(res.Data[k]); got != v {
			t.Errorf("Secret key %q = %q, want %q", k, got, v)
		}
	}
	if len(res.Data) != len(want) {
		t.Errorf("Secret keys %v, want those of %v", res.Data, want)
	}
	// One read of the value and one of the metadata: the cache tells
	// them apart, and shares each among the entries that want it.
	if s.values.Load() != 1 || s.metadata.Load() != 1 {
		t.Errorf("value reads %d, metadata reads %d; want 1 and 1", s.values.Load(), s.metadata.Load())
	}
	// The status versions are those of the values read.
	if len(res.Versions) != 1 || res.Versions[0].Key != "db" || res.Versions[0].Version != "7" {
		t.Errorf("versions %v, want db at 7 only", res.Versions)
	}
}

func TestMetadataFetchIsRefusedByAStoreWithoutMetadata(t *testing.T) {
	s := &taggedStore{}
	c := readOnly(s)
	_, err := NewFetcher(nil, nil).Sync(context.Background(), Input{Spec: metadataSpec(), Store: "s", Reader: c})
	if !errors.Is(err, ErrNotSupported) {
		t.Fatalf("error %v, want one wrapping ErrNotSupported", err)
	}
	for _, part := range []string{"metadataPolicy Fetch", `"db"`, "fetchMetadata", `"test"`} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not name %s", err, part)
		}
	}
	if s.values.Load() > 1 {
		t.Errorf("value reads %d; a metadata ref must not be read as a value", s.values.Load())
	}
}

func TestMetadataReadPassesThroughEveryWrapper(t *testing.T) {
	s := &taggedStore{}
	// A provider whose scopes are parent paths confines its reads with
	// PrefixKeys.
	c, err := NewClient("tagged", PrefixKeys(Ops{Reader: s, Metadata: s}, "team-a."))
	if err != nil {
		t.Fatal(err)
	}
	g := NewGate(GateLimits{MaxConcurrent: 1}, nil, nil)
	scoped := c.Wrap(g.Wrap)
	if !scoped.Capabilities().Has(CanFetchMetadata) {
		t.Fatalf("the gated, prefixed client has %s, without fetchMetadata", scoped.Capabilities())
	}
	// A client in a publisher's scope reads no metadata.
	p, err := scoped.InScope("team-b")
	if err != nil {
		t.Fatal(err)
	}
	if p.Capabilities().Has(CanFetchMetadata) {
		t.Errorf("a publisher's scoped client has %s; want no fetchMetadata", p.Capabilities())
	}
	f := NewFetcher(nil, nil)
	got, err := f.Get(context.Background(), "s", scoped, Ref{Key: "db", Metadata: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Object.Fields["team"]) != "payments" {
		t.Errorf("fields %v, want the tags", got.Object.Fields)
	}
	if k := s.lastMetadataKey.Load(); k != "team-a.db" {
		t.Errorf("the store was asked for %v, want the scoped key team-a.db", k)
	}
}
