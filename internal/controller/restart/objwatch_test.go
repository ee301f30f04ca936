package restart

import (
	"context"
	"testing"

	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// One watch per object named, however many workloads name it; it stops
// when the last of them no longer does. (No API server: the watches
// only try and back off, and the bookkeeping is what is checked.)
func TestWatchedObjectsOneWatchPerNamedObject(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	meta, err := metadata.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	w := newWatchedObjects(ctx, meta, nil, nil, func([]Ref) {})
	a, b := Ref{"Deployment", "ns", "a"}, Ref{"Deployment", "ns", "b"}
	cm, sec := Object{KindConfigMap, "settings"}, Object{KindSecret, "token"}
	watching := func() map[watchKey]int {
		w.mu.Lock()
		defer w.mu.Unlock()
		out := map[watchKey]int{}
		for k, e := range w.objs {
			out[k] = len(e.users)
		}
		return out
	}
	w.track(a, []Object{cm, sec})
	w.track(b, []Object{cm})
	got := watching()
	if len(got) != 2 || got[watchKey{cm, "ns"}] != 2 || got[watchKey{sec, "ns"}] != 1 {
		t.Fatalf("watching %v, want settings for two workloads and token for one", got)
	}
	w.track(a, []Object{cm})
	if got = watching(); len(got) != 1 || got[watchKey{cm, "ns"}] != 2 {
		t.Fatalf("watching %v after a dropped token, want settings alone", got)
	}
	w.track(a, nil)
	w.track(b, nil)
	if got = watching(); len(got) != 0 {
		t.Fatalf("watching %v, want nothing once nobody names an object", got)
	}
	// The same name in another namespace is another object.
	w.track(Ref{"Deployment", "other", "a"}, []Object{cm})
	if got = watching(); len(got) != 1 || got[watchKey{cm, "other"}] != 1 {
		t.Fatalf("watching %v", got)
	}
}
