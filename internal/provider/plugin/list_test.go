package plugin

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/watchword-dev/watchword/api/plugin/v1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/pluginwire"
	sdk "github.com/watchword-dev/watchword/pkg/plugin"
)

// announcing is a plugin, written against the protocol by hand, that
// chooses a version and announces read and list, whether or not it has a
// List call (it has none: the generated server answers UNIMPLEMENTED): a
// fake, for plugins built before List.
type announcing struct {
	pluginv1.UnimplementedSecretStoreServer
	version string
}

func (a announcing) Handshake(context.Context, *pluginv1.HandshakeRequest) (*pluginv1.HandshakeResponse, error) {
	return &pluginv1.HandshakeResponse{ProtocolVersion: a.version, PluginName: "old",
		Capabilities: []pluginv1.Capability{pluginv1.Capability_CAPABILITY_READ, pluginv1.Capability_CAPABILITY_LIST}}, nil
}

func serveRaw(t *testing.T, srv pluginv1.SecretStoreServer) string {
	t.Helper()
	endpoint := "unix://" + filepath.Join(t.TempDir(), "p.sock")
	lis, err := sdk.Listen(endpoint)
	must(t, err)
	s := grpc.NewServer()
	pluginv1.RegisterSecretStoreServer(s, srv)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return endpoint
}

// TestAV1PluginCannotListWhateverItAnnounced: a plugin that chose v1
// has no List call; its client has no lister, and says the store cannot
// list, with the standard capability error.
func TestAV1PluginCannotListWhateverItAnnounced(t *testing.T) {
	ops, err := Dial(context.Background(), serveRaw(t, announcing{version: pluginwire.ProtocolVersion}), nil)
	must(t, err)
	t.Cleanup(func() { _ = ops.Closer.Close() })
	if ops.Lister != nil || ops.Capabilities() != engine.CanRead {
		t.Fatalf("a v1 plugin that announced list: capabilities %s, want read", ops.Capabilities())
	}
	c, err := engine.NewClient("plugin", ops)
	must(t, err)
	if _, err = c.AsLister(); !errors.Is(err, engine.ErrNotSupported) {
		t.Fatalf("AsLister of a v1 plugin: %v, want ErrNotSupported", err)
	}
}

// TestAListThePluginLacksIsNotSupported: a v1.1 plugin that announced
// list but answers UNIMPLEMENTED fails a listing with ErrNotSupported.
func TestAListThePluginLacksIsNotSupported(t *testing.T) {
	ops, err := Dial(context.Background(), serveRaw(t, announcing{version: pluginwire.ProtocolVersionList}), nil)
	must(t, err)
	t.Cleanup(func() { _ = ops.Closer.Close() })
	if ops.Lister == nil {
		t.Fatalf("a v1.1 plugin that announced list: capabilities %s, want list", ops.Capabilities())
	}
	if _, err = ops.Lister.List(context.Background(), engine.ListRequest{}); !errors.Is(err, engine.ErrNotSupported) {
		t.Fatalf("a listing the plugin lacks: %v, want ErrNotSupported", err)
	}
}

// keys is an SDK store that lists a fixed set of keys.
type keys []string

func (keys) Get(context.Context, sdk.Config, sdk.Ref) (sdk.Secret, error) {
	return sdk.Secret{}, sdk.ErrNotFound
}

func (k keys) List(_ context.Context, _ sdk.Config, req sdk.ListRequest) (sdk.ListPage, error) {
	var out sdk.ListPage
	for _, key := range k {
		out.Items = append(out.Items, sdk.ListItem{Key: key, Version: "1", Tags: map[string]string{"team": "a"}})
	}
	if req.Limit > 0 && len(out.Items) > req.Limit {
		out.Items = out.Items[:req.Limit]
		out.NextPageToken = "more"
	}
	return out, nil
}

// TestTheSDKSpeaksV1ToAnOldWatchword: a plugin built with the SDK chooses
// v1.1 when Watchword offers it, and v1 without list when Watchword offers
// only v1 (a Watchword built before List).
func TestTheSDKSpeaksV1ToAnOldWatchword(t *testing.T) {
	endpoint := serve(t, sdk.Store{Name: "lister", Reader: keys{"a"}, Lister: keys{"a"}})
	conn, err := grpc.NewClient("unix:"+endpoint[len("unix://"):], grpc.WithTransportCredentials(insecure.NewCredentials()))
	must(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	rpc := pluginv1.NewSecretStoreClient(conn)
	for _, tc := range []struct {
		offered  []string
		want     string
		wantList bool
	}{
		{[]string{"v1"}, "v1", false},
		{[]string{"v1.1", "v1"}, "v1.1", true},
		{[]string{"v1", "v1.1"}, "v1.1", true},
	} {
		resp, err := rpc.Handshake(context.Background(), &pluginv1.HandshakeRequest{ProtocolVersions: tc.offered})
		must(t, err)
		hasList := slices.Contains(resp.GetCapabilities(), pluginv1.Capability_CAPABILITY_LIST)
		if resp.GetProtocolVersion() != tc.want || hasList != tc.wantList {
			t.Errorf("offered %v: chose %q with capabilities %v; want %q, list %v", tc.offered, resp.GetProtocolVersion(), resp.GetCapabilities(), tc.want, tc.wantList)
		}
	}
}

// TestListingThroughTheSDK: the client lists through an SDK plugin with
// keys, versions and tags, and the SDK refuses a page over the largest.
func TestListingThroughTheSDK(t *testing.T) {
	endpoint := serve(t, sdk.Store{Name: "lister", Reader: keys{"a", "b", "c"}, Lister: keys{"a", "b", "c"}})
	ops, err := Dial(context.Background(), endpoint, nil)
	must(t, err)
	t.Cleanup(func() { _ = ops.Closer.Close() })
	page, err := ops.Lister.List(context.Background(), engine.ListRequest{Limit: 2})
	must(t, err)
	if len(page.Items) != 2 || page.Items[1].Key != "b" || page.Items[1].Version != "1" || page.Items[1].Tags["team"] != "a" || page.NextPageToken != "more" {
		t.Fatalf("a page of two: %+v", page)
	}
	conn, err := grpc.NewClient("unix:"+endpoint[len("unix://"):], grpc.WithTransportCredentials(insecure.NewCredentials()))
	must(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = pluginv1.NewSecretStoreClient(conn).List(context.Background(), &pluginv1.ListRequest{Limit: pluginwire.MaxListLimit + 1})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a page over %d: %v, want INVALID_ARGUMENT", pluginwire.MaxListLimit, err)
	}
}
