package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/cli"
	"github.com/watchword-dev/watchword/internal/operator"
)

// syncBuffer is a buffer one goroutine writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStatusWatchPrintsWhatChanges: `watchword status --watch` prints the
// table once, then one line for an ExternalSecret that appears and becomes
// Ready, one when it starts failing (with the reason), and one when it is
// deleted; refreshes that change nothing the table shows print nothing.
// When it stops it returns the rows as they are.
func TestStatusWatchPrintsWhatChanges(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "db", value: `{"password":"` + sentinel + `"}`})
	newES(t, ns, "first", "store", withData("password", "db", "password"))
	waitReady(t, ns, "first")

	wc, err := client.NewWithWatch(restCfg, client.Options{Scheme: operator.Scheme()})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	type result struct {
		rows []cli.StatusRow
		err  error
	}
	done := make(chan result, 1)
	go func() {
		rows, err := cli.WatchStatus(ctx, wc, ns, time.Now, &out)
		done <- result{rows, err}
	}()
	waitOutput := func(what string, match func(line string) bool) {
		t.Helper()
		eventually(t, wait, func() (bool, string) {
			for _, l := range strings.Split(out.String(), "\n") {
				if match(l) {
					return true, ""
				}
			}
			return false, fmt.Sprintf("no line with %s in:\n%s", what, out.String())
		})
	}
	waitOutput("the table's header", func(l string) bool { return strings.HasPrefix(l, "NAMESPACE") })
	header := strings.Count(out.String(), "NAMESPACE")

	newES(t, ns, "second", "store", withRefresh(time.Second), withData("password", "db", "password"))
	waitOutput("second Ready", func(l string) bool {
		return strings.Contains(l, "ExternalSecret "+ns+"/second") && strings.Contains(l, "Ready=True")
	})
	updateES(t, ns, "second", func(es *v1alpha1.ExternalSecret) { es.Spec.Data[0].RemoteRef.Property = "user" })
	waitOutput("second failing with PropertyError", func(l string) bool {
		return strings.Contains(l, "ExternalSecret "+ns+"/second") && strings.Contains(l, "Ready=False") && strings.Contains(l, "PropertyError")
	})
	// Retries of the same failure, and refreshes of the first, change
	// nothing the table shows: no line.
	lines := strings.Count(out.String(), "\n")
	time.Sleep(3 * time.Second)
	if got := strings.Count(out.String(), "\n"); got != lines {
		t.Errorf("%d lines printed while nothing changed:\n%s", got-lines, out.String())
	}
	must(t, k8s.Delete(context.Background(), getES(t, ns, "second")))
	waitOutput("second deleted", func(l string) bool { return strings.Contains(l, "ExternalSecret "+ns+"/second  deleted") })

	cancel()
	r := <-done
	must(t, r.err)
	if len(r.rows) != 1 || r.rows[0].Name != "first" || r.rows[0].Failing() {
		t.Errorf("rows at the end: %+v, want first, Ready", r.rows)
	}
	if n := strings.Count(out.String(), "NAMESPACE"); n != header || header != 1 {
		t.Errorf("the table was printed %d times, want once:\n%s", n, out.String())
	}
	if strings.Contains(out.String(), sentinel) {
		t.Error("a value was printed")
	}
}
