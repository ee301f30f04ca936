package events

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func es(ns, name string) *v1alpha1.ExternalSecret {
	return &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// drain returns the events the fake recorder holds.
func drain(f *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-f.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestBurstOfNormalEventsIsSummedUpAndWarningsPass: a burst of 1,000
// Normal events over two namespaces lets the burst through, and a flush
// sends one event per namespace and reason that counts the rest, on the
// last object, carrying its own message; 200 Warnings in the same burst
// all go through as they are.
func TestBurstOfNormalEventsIsSummedUpAndWarningsPass(t *testing.T) {
	f := record.NewFakeRecorder(2000)
	rec := NewLimiter(f, testScheme(t), 1, 10, time.Minute)
	l := rec.(*Limiter)
	for i := range 1000 {
		ns := []string{"team-a", "team-b"}[i%2]
		rec.Eventf(es(ns, fmt.Sprintf("es-%d", i)), corev1.EventTypeNormal, "Created", "created target Secret %q", fmt.Sprintf("es-%d", i))
		if i%5 == 0 {
			rec.Event(es(ns, fmt.Sprintf("es-%d", i)), corev1.EventTypeWarning, "NotFound", "key not found")
		}
	}
	sent := drain(f)
	normal, warnings := 0, 0
	for _, e := range sent {
		switch {
		case strings.HasPrefix(e, "Warning NotFound"):
			warnings++
		case strings.HasPrefix(e, "Normal Created"):
			normal++
		}
	}
	// The burst (10), and at most a token or two refilled meanwhile.
	if normal < 10 || normal > 12 || warnings != 200 {
		t.Fatalf("during the burst: %d Normal events sent (want the burst of 10), %d Warnings (want all 200)", normal, warnings)
	}
	l.Flush()
	summaries := drain(f)
	if len(summaries) != 2 {
		t.Fatalf("a flush sent %d events, want one per namespace: %q", len(summaries), summaries)
	}
	counted := 0
	for _, e := range summaries {
		var n int
		var last string
		if _, err := fmt.Sscanf(e[strings.Index(e, "with the Created events of ")+len("with the Created events of "):], "%d other ExternalSecrets", &n); err != nil {
			t.Fatalf("summary %q does not count the others: %v", e, err)
		}
		if _, err := fmt.Sscanf(e, "Normal Created created target Secret %q", &last); err != nil {
			t.Fatalf("summary %q does not carry its object's own message: %v", e, err)
		}
		counted += n + 1
	}
	if counted+normal != 1000 {
		t.Fatalf("%d sent and %d summed up, want all 1,000 accounted for", normal, counted)
	}
	l.Flush()
	if again := drain(f); len(again) != 0 {
		t.Fatalf("a second flush sent %q: nothing was held back since", again)
	}
}

// TestOneHeldEventIsSentAsItWas: a single event held back is sent late
// with its own message, not as a summary; a limit of 0 is no limit.
func TestOneHeldEventIsSentAsItWas(t *testing.T) {
	f := record.NewFakeRecorder(10)
	rec := NewLimiter(f, testScheme(t), 1, 1, time.Minute)
	rec.Event(es("ns", "a"), corev1.EventTypeNormal, "Rotated", "keys: password")
	rec.Event(es("ns", "b"), corev1.EventTypeNormal, "Rotated", "keys: token")
	if got := drain(f); len(got) != 1 || got[0] != "Normal Rotated keys: password" {
		t.Fatalf("sent %q, want the first event only", got)
	}
	rec.(*Limiter).Flush()
	if got := drain(f); len(got) != 1 || got[0] != "Normal Rotated keys: token" {
		t.Fatalf("the flush sent %q, want the held event as it was", got)
	}
	if NewLimiter(f, testScheme(t), 0, 1, time.Minute) != record.EventRecorder(f) {
		t.Fatal("a limit of 0 wraps the recorder")
	}
}
