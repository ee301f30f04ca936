package metrics

import (
	"context"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/watchword-dev/watchword/internal/engine"
)

type batching struct{ readOnly }

func (batching) GetSecrets(_ context.Context, refs []engine.Ref) ([]engine.BatchItem, error) {
	return make([]engine.BatchItem, len(refs)), nil
}

func TestInstrumentCountsABatchReadAsOneCall(t *testing.T) {
	b := batching{}
	c, _ := engine.NewClient("batched", engine.Ops{Reader: b, Batch: b})
	w := Instrument(c, "SecretStore")
	if w.Capabilities() != c.Capabilities() {
		t.Fatalf("instrumented client claims %s, the provider has %s", w.Capabilities(), c.Capabilities())
	}
	br, err := w.AsBatchReader()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := br.GetSecrets(context.Background(), []engine.Ref{{Key: "a"}, {Key: "b"}, {Key: "c"}}); err != nil {
		t.Fatal(err)
	}
	var m dto.Metric
	if err := ProviderCalls.WithLabelValues("batched", "SecretStore", "batchGet", "ok").Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetCounter().GetValue(); n != 1 {
		t.Errorf("a batch read of 3 refs counted %v calls, want 1", n)
	}
}
