package notify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/watchword-dev/watchword/internal/refreshhook"
)

var at = time.Date(2026, 11, 27, 17, 0, 0, 0, time.UTC)

// restarted is a Restarted notification of Deployment demo/web for the
// rotation of key password of Secret app-credentials.
func restarted() Event {
	return Event{ID: "0123456789abcdef0123456789abcdef", Type: TypeRestarted, Time: at, Cluster: "prod-eu",
		Workload: Workload{Kind: "Deployment", Namespace: "demo", Name: "web"},
		Secrets: []Secret{{Kind: "Secret", Name: "app-credentials", RotatedAt: at.Add(-time.Minute), Keys: []string{"password"},
			ExternalSecrets: []Source{{Name: "creds", TargetResourceVersion: "4711", Versions: []Version{{Key: "db/app", Version: "7"}}}}}}}
}

func held() Event {
	ev := restarted()
	ev.Type, ev.Reason, ev.Message = TypeHeld, "MaintenanceWindow", "the restart waits for the maintenance window 0 2 * * *, which opens at 2026-11-28T02:00:00Z"
	ev.Secrets[0].Keys, ev.Secrets[0].AnyKey = nil, true
	return ev
}

// strict decodes data into v, refusing unknown fields and trailing data.
func strict(t *testing.T, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	if dec.More() {
		t.Fatalf("trailing data after %s", data)
	}
}

// TestWebhookBody: the generic webhook's body is the Event as documented,
// field by field.
func TestWebhookBody(t *testing.T) {
	data, err := body(KindWebhook, held())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	strict(t, data, &got)
	want := `{"id":"0123456789abcdef0123456789abcdef","type":"RestartHeld","time":"2026-11-27T17:00:00Z","cluster":"prod-eu",` +
		`"workload":{"kind":"Deployment","namespace":"demo","name":"web"},"reason":"MaintenanceWindow",` +
		`"message":"the restart waits for the maintenance window 0 2 * * *, which opens at 2026-11-28T02:00:00Z",` +
		`"secrets":[{"kind":"Secret","name":"app-credentials","rotatedAt":"2026-11-27T16:59:00Z","anyKey":true,` +
		`"externalSecrets":[{"name":"creds","targetResourceVersion":"4711","versions":[{"key":"db/app","version":"7"}]}]}]}`
	if string(data) != want {
		t.Errorf("body\n%s\nwant\n%s", data, want)
	}
	var back Event
	strict(t, data, &back)
	if back.Secrets[0].ExternalSecrets[0].Versions[0].Version != "7" || !back.Time.Equal(at) {
		t.Errorf("read back %+v", back)
	}
}

// slackReceiver is what a Slack incoming webhook accepts, for the blocks
// Watchword sends: Block Kit's header, section and context blocks.
type slackReceiver struct {
	Text   string `json:"text"`
	Blocks []struct {
		Type string `json:"type"`
		Text *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"elements"`
	} `json:"blocks"`
}

// checkSlack checks a body as Slack does: text set, known blocks whose
// texts are of the right type and within Block Kit's limits.
func checkSlack(t *testing.T, data []byte) slackReceiver {
	t.Helper()
	var m slackReceiver
	strict(t, data, &m)
	if m.Text == "" || len(m.Blocks) == 0 || len(m.Blocks) > 50 {
		t.Fatalf("Slack message without a text or with %d blocks: %s", len(m.Blocks), data)
	}
	for _, b := range m.Blocks {
		switch b.Type {
		case "header":
			if b.Text == nil || b.Text.Type != "plain_text" || b.Text.Text == "" || utf8.RuneCountInString(b.Text.Text) > 150 {
				t.Errorf("header block %+v: plain_text of 1 to 150 characters", b.Text)
			}
		case "section":
			if b.Text == nil || (b.Text.Type != "mrkdwn" && b.Text.Type != "plain_text") || b.Text.Text == "" || utf8.RuneCountInString(b.Text.Text) > 3000 {
				t.Errorf("section block %+v: a text of 1 to 3000 characters", b.Text)
			}
		case "context":
			if len(b.Elements) == 0 || len(b.Elements) > 10 {
				t.Errorf("context block with %d elements", len(b.Elements))
			}
		default:
			t.Errorf("block type %q", b.Type)
		}
	}
	return m
}

// TestSlackBody: a Slack message names the workload, the Secret, its keys
// and versions, the cluster and the ID, escapes what mrkdwn would read,
// and keeps to Block Kit's limits with many keys and a long name.
func TestSlackBody(t *testing.T) {
	data, err := body(KindSlack, restarted())
	if err != nil {
		t.Fatal(err)
	}
	m := checkSlack(t, data)
	all := string(data)
	for _, want := range []string{"Deployment demo/web restarted for a rotation", "Secret app-credentials: keys password", "db/app@7", "cluster prod-eu", "0123456789abcdef0123456789abcdef"} {
		if !strings.Contains(all, want) {
			t.Errorf("the Slack message lacks %q: %s", want, all)
		}
	}
	if m.Blocks[0].Text.Text != "Deployment demo/web restarted for a rotation" {
		t.Errorf("header %q", m.Blocks[0].Text.Text)
	}

	ev := held()
	ev.Message = "waits for <!channel> & <https://evil.example|a link>"
	ev.Workload.Name = strings.Repeat("w", 253)
	for i := range 40 {
		ev.Secrets[0].ExternalSecrets[0].Versions = append(ev.Secrets[0].ExternalSecrets[0].Versions, Version{Key: fmt.Sprint("k", i), Version: "1"})
	}
	data, err = body(KindSlack, ev)
	if err != nil {
		t.Fatal(err)
	}
	m = checkSlack(t, data)
	section := m.Blocks[1].Text.Text
	if strings.Contains(section, "<!channel>") || !strings.Contains(section, "&lt;!channel&gt; &amp; &lt;https://evil.example|a link&gt;") {
		t.Errorf("the message is not escaped for mrkdwn: %q", section)
	}
	if !strings.Contains(section, "and 31 more") {
		t.Errorf("41 versions are not cut to 10 and a count: %q", section)
	}
}

// teamsReceiver is what a Teams workflow webhook takes: a message with
// one Adaptive Card attachment.
type teamsReceiver struct {
	Type        string `json:"type"`
	Attachments []struct {
		ContentType string  `json:"contentType"`
		ContentURL  *string `json:"contentUrl"`
		Content     struct {
			Schema  string `json:"$schema"`
			Type    string `json:"type"`
			Version string `json:"version"`
			Body    []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				Weight   string `json:"weight"`
				Size     string `json:"size"`
				Wrap     bool   `json:"wrap"`
				IsSubtle bool   `json:"isSubtle"`
				Facts    []struct {
					Title string `json:"title"`
					Value string `json:"value"`
				} `json:"facts"`
			} `json:"body"`
		} `json:"content"`
	} `json:"attachments"`
}

func checkTeams(t *testing.T, data []byte) teamsReceiver {
	t.Helper()
	var m teamsReceiver
	strict(t, data, &m)
	if m.Type != "message" || len(m.Attachments) != 1 {
		t.Fatalf("not a message with one attachment: %s", data)
	}
	a := m.Attachments[0]
	if a.ContentType != "application/vnd.microsoft.card.adaptive" || a.Content.Type != "AdaptiveCard" || a.Content.Version != "1.4" ||
		a.Content.Schema != "http://adaptivecards.io/schemas/adaptive-card.json" {
		t.Errorf("attachment %s %s %s %s", a.ContentType, a.Content.Type, a.Content.Version, a.Content.Schema)
	}
	for _, e := range a.Content.Body {
		switch e.Type {
		case "TextBlock":
			if e.Text == "" {
				t.Error("an empty TextBlock")
			}
		case "FactSet":
			if len(e.Facts) == 0 {
				t.Error("an empty FactSet")
			}
		default:
			t.Errorf("card element %q", e.Type)
		}
	}
	return m
}

// TestTeamsBody: a Teams message is an Adaptive Card that names the
// workload, the hold's reason and message, the Secret and the versions.
func TestTeamsBody(t *testing.T) {
	data, err := body(KindTeams, held())
	if err != nil {
		t.Fatal(err)
	}
	m := checkTeams(t, data)
	card := m.Attachments[0].Content
	if card.Body[0].Text != "Restart of Deployment demo/web held (MaintenanceWindow)" || card.Body[0].Weight != "Bolder" {
		t.Errorf("title %+v", card.Body[0])
	}
	facts := card.Body[1].Facts
	if len(facts) != 2 || facts[0].Value != "Deployment demo/web" || facts[1].Value != "MaintenanceWindow" {
		t.Errorf("facts %+v", facts)
	}
	all := string(data)
	for _, want := range []string{"which opens at 2026-11-28T02:00:00Z", "Secret app-credentials: any key", "db/app@7", "cluster prod-eu"} {
		if !strings.Contains(all, want) {
			t.Errorf("the card lacks %q: %s", want, all)
		}
	}
}

// TestSignature: a signature verifies with its key, body and timestamp
// only, and within the window; it is the refresh endpoint's form, so
// that endpoint's check accepts it too.
func TestSignature(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	payload := []byte(`{"id":"1"}`)
	ts, sig := Sign(payload, key, at)
	if ts != "1795798800" || !strings.HasPrefix(sig, "sha256=") || len(sig) != len("sha256=")+64 {
		t.Fatalf("timestamp %q, signature %q", ts, sig)
	}
	if err := Verify(payload, ts, sig, key, at.Add(time.Minute), 5*time.Minute); err != nil {
		t.Errorf("a good signature: %v", err)
	}
	if err := refreshhook.Verify(payload, ts, sig, key); err != nil {
		t.Errorf("the refresh endpoint's check refuses the signature: %v", err)
	}
	for name, c := range map[string]struct {
		body      string
		ts, sig   string
		key       string
		now       time.Time
		wantError bool
	}{
		"another body":      {body: `{"id":"2"}`, ts: ts, sig: sig, key: string(key), now: at},
		"another timestamp": {body: string(payload), ts: "1795798801", sig: sig, key: string(key), now: at},
		"another key":       {body: string(payload), ts: ts, sig: sig, key: strings.Repeat("x", 32), now: at},
		"no prefix":         {body: string(payload), ts: ts, sig: strings.TrimPrefix(sig, "sha256="), key: string(key), now: at},
		"not hex":           {body: string(payload), ts: ts, sig: "sha256=zz", key: string(key), now: at},
		"stale":             {body: string(payload), ts: ts, sig: sig, key: string(key), now: at.Add(6 * time.Minute)},
		"from the future":   {body: string(payload), ts: ts, sig: sig, key: string(key), now: at.Add(-6 * time.Minute)},
		"signed timestamp":  {body: string(payload), ts: "+" + ts, sig: sig, key: string(key), now: at},
		"no key":            {body: string(payload), ts: ts, sig: sig, key: "", now: at},
	} {
		if err := Verify([]byte(c.body), c.ts, c.sig, []byte(c.key), c.now, 5*time.Minute); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestSignKnownAnswer: the signature is the HMAC-SHA256 of the timestamp,
// a dot and the body, as docs/notifications.md tells receivers to check
// it with openssl:
// printf '%s.' 1700000000 | cat - body.json | openssl dgst -sha256 -hmac Jefe
func TestSignKnownAnswer(t *testing.T) {
	body := `{"id":"fe4d0a52dc655ff10daa8c327c5e2ace","type":"Restarted"}`
	ts, sig := Sign([]byte(body), []byte("Jefe"), time.Unix(1_700_000_000, 0))
	if want := "sha256=0b52df18430095e2b7bd2f8ec57039cef70bcbee755e21e1a36b97fa9f6bdf6d"; ts != "1700000000" || sig != want {
		t.Fatalf("Sign = %s, %s; want 1700000000, %s", ts, sig, want)
	}
}
