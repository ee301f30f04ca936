package notify

import (
	"strings"
	"testing"
)

// TestTargets: the receivers' Secret configures each receiver whose URL
// key is set; a mistake is refused with the key and what to write, never
// with what the key holds.
func TestTargets(t *testing.T) {
	key := strings.Repeat("k", 32)
	got, err := Targets(map[string][]byte{
		KeyWebhookURL: []byte("https://hooks.example.com/watchword\n"), KeyWebhookSigningKey: []byte(key),
		KeySlackURL: []byte("https://hooks.slack.com/services/T0/B0/SECRET"), KeyTeamsURL: []byte("https://prod.example.logic.azure.com/workflows/1?sig=SECRET"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Kind != KindWebhook || got[0].URL != "https://hooks.example.com/watchword" || string(got[0].Key) != key ||
		got[1].Kind != KindSlack || got[2].Kind != KindTeams || got[1].Key != nil {
		t.Errorf("targets %+v", got)
	}
	if got, err := Targets(map[string][]byte{KeySlackURL: []byte("https://hooks.slack.com/services/T0/B0/SECRET")}); err != nil || len(got) != 1 {
		t.Errorf("Slack alone: %+v, %v", got, err)
	}

	for name, c := range map[string]struct {
		data map[string][]byte
		want string
	}{
		"empty":               {map[string][]byte{}, "it names no receiver: set webhook-url, slack-webhook-url or teams-webhook-url"},
		"unknown key":         {map[string][]byte{"slack-url": []byte("https://x/SECRET")}, `key "slack-url" is not one Watchword reads`},
		"not a URL":           {map[string][]byte{KeySlackURL: []byte("hooks.slack.com/SECRET")}, `key "slack-webhook-url": not an http or https URL`},
		"another scheme":      {map[string][]byte{KeyTeamsURL: []byte("ftp://x/SECRET")}, `key "teams-webhook-url": not an http or https URL`},
		"webhook without key": {map[string][]byte{KeyWebhookURL: []byte("https://x/SECRET")}, `key "webhook-url" needs key "webhook-signing-key", a signing key of at least 32 bytes`},
		"webhook short key":   {map[string][]byte{KeyWebhookURL: []byte("https://x/SECRET"), KeyWebhookSigningKey: []byte("SECRET")}, "at least 32 bytes"},
		"key without webhook": {map[string][]byte{KeySlackURL: []byte("https://x/a"), KeyWebhookSigningKey: []byte(key)}, `key "webhook-signing-key" is set without key "webhook-url"`},
	} {
		_, err := Targets(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), key) {
			t.Errorf("%s: the error holds what the Secret holds: %v", name, err)
		}
	}
}

// TestQueue: push never blocks, keeps the newest when full, and pop
// hands out in order.
func TestQueue(t *testing.T) {
	q := newQueue(2)
	for i, id := range []string{"a", "b", "c"} {
		if dropped := q.push(Event{ID: id}); dropped != (i == 2) {
			t.Errorf("push %s: dropped %v", id, dropped)
		}
	}
	for _, want := range []string{"b", "c"} {
		if ev, ok := q.pop(t.Context()); !ok || ev.ID != want {
			t.Errorf("pop %q, want %q", ev.ID, want)
		}
	}
	if q.len() != 0 {
		t.Errorf("%d left", q.len())
	}
}
