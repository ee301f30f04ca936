package metrics

import (
	"context"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/watchword-dev/watchword/internal/engine"
)

type readOnly struct{}

func (readOnly) GetSecret(context.Context, engine.Ref) (engine.Object, error) {
	return engine.Object{}, nil
}

type full struct{ readOnly }

func (full) CurrentVersion(context.Context, string) (string, error) { return "1", nil }
func (full) PutSecret(context.Context, string, engine.Publication, engine.Owner) (string, error) {
	return "1", nil
}
func (full) DeleteSecret(context.Context, string, engine.Owner) error { return nil }
func (full) Check(context.Context) error                              { return nil }
func (full) List(context.Context, engine.ListRequest) (engine.ListPage, error) {
	return engine.ListPage{}, nil
}

func TestInstrumentClaimsExactlyTheProvidersCapabilities(t *testing.T) {
	f := full{}
	for _, tc := range []struct {
		name string
		ops  engine.Ops
	}{
		{"read only", engine.Ops{Reader: readOnly{}}},
		{"versions", engine.Ops{Reader: f, Versions: f}},
		{"list", engine.Ops{Reader: f, Lister: f}},
		{"everything", engine.Ops{Reader: f, Versions: f, Lister: f, Writer: f, Checker: f}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := engine.NewClient("p-"+tc.name, tc.ops)
			if err != nil {
				t.Fatal(err)
			}
			w := Instrument(c, "SecretStore")
			if w.Capabilities() != c.Capabilities() {
				t.Fatalf("instrumented client claims %s, the provider has %s", w.Capabilities(), c.Capabilities())
			}
			if _, err := w.AsWriter(); (err == nil) != c.Capabilities().Has(engine.CanWrite) {
				t.Fatalf("AsWriter: %v, capabilities %s", err, c.Capabilities())
			}
		})
	}
}

func TestInstrumentCountsCalls(t *testing.T) {
	f := full{}
	c, _ := engine.NewClient("counted", engine.Ops{Reader: f, Versions: f, Lister: f, Writer: f})
	w := Instrument(c, "ClusterSecretStore")
	ctx := context.Background()
	_, _ = w.GetSecret(ctx, engine.Ref{Key: "k"})
	vr, _ := w.AsVersionReader()
	_, _ = vr.CurrentVersion(ctx, "k")
	wr, _ := w.AsWriter()
	_, _ = wr.PutSecret(ctx, "k", engine.Publication{}, engine.Owner{})
	l, _ := w.AsLister()
	_, _ = l.List(ctx, engine.ListRequest{})
	for _, op := range []string{"get", "version", "put", "list"} {
		var m dto.Metric
		if err := ProviderCalls.WithLabelValues("counted", "ClusterSecretStore", op, "ok").Write(&m); err != nil {
			t.Fatal(err)
		}
		if n := m.GetCounter().GetValue(); n != 1 {
			t.Errorf("%s: counted %v calls, want 1", op, n)
		}
	}
}
