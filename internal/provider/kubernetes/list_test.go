package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/watchword-dev/watchword/internal/engine"
)

// The listing itself is checked against the real API server by the
// conformance suite and test/integration; these inject what a real one
// would not answer on demand.

func TestListByTagsThatAreNotLabelsIsInvalidConfig(t *testing.T) {
	mc := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	l := newLister(mc, "shared", &identity{known: "the test"}, nil)
	_, err := l.List(context.Background(), engine.ListRequest{Tags: map[string]string{"team": "a b c", "bad key!": "x"}})
	if !errors.Is(err, engine.ErrInvalidConfig) {
		t.Fatalf("error %v, want ErrInvalidConfig", err)
	}
	msg := err.Error()
	for _, want := range []string{`tag "bad key!": the key is not a label key`, `tag "team": the value is not a label value`} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "a b c") {
		t.Errorf("message %q repeats a tag's value", msg)
	}
}

func TestListWithoutListRightsIsPermissionDenied(t *testing.T) {
	mc := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	mc.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New(sentinel))
	})
	l := newLister(mc, "shared", &identity{known: `service account "team/reader"`}, nil)
	_, err := l.List(context.Background(), engine.ListRequest{})
	if !errors.Is(err, engine.ErrPermissionDenied) {
		t.Fatalf("error %v, want ErrPermissionDenied", err)
	}
	if msg := err.Error(); strings.Contains(msg, sentinel) || !strings.Contains(msg, `service account "team/reader"`) || !strings.Contains(msg, `verb "list"`) {
		t.Fatalf("message %q: want the identity and the verb needed, and none of the server's text", msg)
	}
}

func TestListWithAnExpiredTokenSaysSo(t *testing.T) {
	mc := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	mc.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewResourceExpired(sentinel)
	})
	l := newLister(mc, "shared", &identity{known: "the test"}, nil)
	_, err := l.List(context.Background(), engine.ListRequest{PageToken: "old"})
	if !errors.Is(err, engine.ErrUnavailable) || !strings.Contains(err.Error(), "page token expired") || strings.Contains(err.Error(), sentinel) {
		t.Fatalf("error %v, want ErrUnavailable saying the token expired, without the server's text", err)
	}
}
