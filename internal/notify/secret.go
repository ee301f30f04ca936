package notify

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The keys of the receivers' Secret. Each URL is optional; at least one
// is set.
const (
	// KeyWebhookURL is the generic webhook's URL; KeyWebhookSigningKey,
	// which it needs, the key its requests are signed with.
	KeyWebhookURL        = "webhook-url"
	KeyWebhookSigningKey = "webhook-signing-key"
	// KeySlackURL is a Slack incoming webhook's URL.
	KeySlackURL = "slack-webhook-url"
	// KeyTeamsURL is a Microsoft Teams workflow webhook's URL.
	KeyTeamsURL = "teams-webhook-url"
)

// MinSigningKey is the shortest signing key accepted, in bytes.
const MinSigningKey = 32

// SecretLoader reads the receivers from a Secret (never cached: each
// read goes to the API server).
type SecretLoader struct {
	Reader client.Reader
	Secret types.NamespacedName
}

// Load reads the Secret and the receivers it configures.
func (l SecretLoader) Load(ctx context.Context) ([]Target, error) {
	var s corev1.Secret
	if err := l.Reader.Get(ctx, l.Secret, &s); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted (say, because a URL leaked): no receivers, at once,
			// rather than the last ones read.
			return nil, nil
		}
		return nil, fmt.Errorf("reading Secret %s: %w", l.Secret, err)
	}
	targets, err := Targets(s.Data)
	if err != nil {
		return nil, fmt.Errorf("Secret %s: %w", l.Secret, err)
	}
	return targets, nil
}

// Targets are the receivers the data of a receivers' Secret configures.
// The errors name keys, never what they hold.
func Targets(data map[string][]byte) ([]Target, error) {
	known := []string{KeyWebhookURL, KeyWebhookSigningKey, KeySlackURL, KeyTeamsURL}
	for _, k := range slices.Sorted(maps.Keys(data)) {
		if !slices.Contains(known, k) {
			return nil, fmt.Errorf("key %q is not one Watchword reads: use %s", k, strings.Join(known, ", "))
		}
	}
	var out []Target
	for _, r := range []struct{ kind, key string }{{KindWebhook, KeyWebhookURL}, {KindSlack, KeySlackURL}, {KindTeams, KeyTeamsURL}} {
		raw, ok := data[r.key]
		if !ok {
			continue
		}
		u := strings.TrimSpace(string(raw))
		if err := checkURL(u); err != nil {
			return nil, fmt.Errorf("key %q: %w", r.key, err)
		}
		t := Target{Kind: r.kind, URL: u}
		if r.kind == KindWebhook {
			t.Key = data[KeyWebhookSigningKey]
			if len(t.Key) < MinSigningKey {
				return nil, fmt.Errorf("key %q needs key %q, a signing key of at least %d bytes (such as the output of `openssl rand -hex 32`)", KeyWebhookURL, KeyWebhookSigningKey, MinSigningKey)
			}
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("it names no receiver: set %s, %s or %s", KeyWebhookURL, KeySlackURL, KeyTeamsURL)
	}
	if _, ok := data[KeyWebhookSigningKey]; ok && data[KeyWebhookURL] == nil {
		return nil, fmt.Errorf("key %q is set without key %q", KeyWebhookSigningKey, KeyWebhookURL)
	}
	return out, nil
}

// checkURL checks that u is an absolute http or https URL; its error
// says nothing of u.
func checkURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
		return fmt.Errorf("not an http or https URL: write the receiver's whole URL, such as https://hooks.example.com/watchword")
	}
	return nil
}
