package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/logging"
	"github.com/watchword-dev/watchword/internal/operator"
)

// TestStoreOutageWritesNoErrorLines: an operator of its own, logging as
// the binary does, serves 20 ExternalSecrets that refresh every second
// from a store that goes down for 10 s and comes back, then stops
// cleanly. Its log holds no error-level line and no stack trace: each
// failed sync is an info line with its reason, and the lease it gives up
// at stop is not reported as lost.
func TestStoreOutageWritesNoErrorLines(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	const class = "logs-outage"
	store := fakeStore(t, ns, "store", fakeEntry{key: "db", value: `{"password":"` + sentinel + `"}`})
	updateStore(t, ns, store.Name, func(s *v1alpha1.SecretStore) { s.Spec.Controller = class })
	const n = 20
	for i := range n {
		newES(t, ns, fmt.Sprintf("es-%02d", i), "store", withData("password", "db", "password"), withRefresh(time.Second))
	}

	var log syncBuffer
	opts := operator.DefaultOptions()
	opts.Registry = registry()
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	opts.ControllerClass = class
	opts.SkipNameValidation = true
	opts.LeaderElection, opts.LeaderElectionNamespace = true, ns
	opts.Logger = logging.New(logging.Options{Level: zapcore.InfoLevel, Out: &log})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	op, err := operator.New(ctx, restCfg, opts)
	must(t, err)
	stopped := make(chan error, 1)
	go func() { stopped <- op.Start(ctx) }()

	for i := range n {
		waitReady(t, ns, fmt.Sprintf("es-%02d", i))
	}
	updateStore(t, ns, store.Name, func(s *v1alpha1.SecretStore) {
		s.Spec.Fake.Error = &v1alpha1.FakeProviderError{Reason: "Unavailable", Message: "backend is down for maintenance"}
	})
	for i := range n {
		waitCondition(t, ns, fmt.Sprintf("es-%02d", i), "StoreUnavailable")
	}
	time.Sleep(10 * time.Second)
	updateStore(t, ns, store.Name, func(s *v1alpha1.SecretStore) { s.Spec.Fake.Error = nil })
	for i := range n {
		waitReady(t, ns, fmt.Sprintf("es-%02d", i))
	}
	cancel()
	select {
	case err = <-stopped:
		must(t, err)
	case <-time.After(wait):
		t.Fatal("the operator did not stop")
	}

	var errorLines, failed int
	for l := range strings.Lines(log.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a log line that is not JSON: %q", l)
		}
		if m["level"] == "error" {
			errorLines++
			t.Errorf("an error-level line: %s", l)
		}
		if _, ok := m["stacktrace"]; ok {
			t.Errorf("a line with a stack trace: %.300s", l)
		}
		if m["reason"] == "StoreUnavailable" && m["level"] == "info" {
			failed++
		}
		if strings.Contains(l, "leader election lost") {
			t.Errorf("the clean stop was logged as a lost election: %s", l)
		}
	}
	// Each ExternalSecret failed at least once, and said so in one line.
	if failed < n {
		t.Errorf("%d info lines of failed syncs with reason StoreUnavailable, want at least %d", failed, n)
	}
	t.Logf("%d error-level lines, %d info lines of failed syncs during the outage", errorLines, failed)
}
