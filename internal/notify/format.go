package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The bodies of Slack's and Teams' messages are written here: each is a
// small JSON document of a documented shape, and neither vendor ships a Go
// SDK for its incoming webhooks (a community Slack library would bring a
// large dependency for one POST, and hide the status and Retry-After that
// the delivery needs).

// The kinds of receiver; they are the sink label of the metrics.
const (
	KindWebhook = "webhook"
	KindSlack   = "slack"
	KindTeams   = "teams"
)

// Kinds are the receiver kinds.
var Kinds = []string{KindWebhook, KindSlack, KindTeams}

// body is the request body for a receiver of kind.
func body(kind string, ev Event) ([]byte, error) {
	switch kind {
	case KindWebhook:
		return json.Marshal(ev)
	case KindSlack:
		return json.Marshal(slackMessage(ev))
	case KindTeams:
		return json.Marshal(teamsMessage(ev))
	}
	return nil, fmt.Errorf("no receiver kind %q", kind)
}

// maxChatKeys bounds the keys and versions a chat message lists per Secret
// (the generic webhook carries them all).
const maxChatKeys = 10

// title is a chat message's one line.
func title(ev Event) string {
	if ev.Type == TypeHeld {
		return "Restart of " + ev.Workload.String() + " held (" + ev.Reason + ")"
	}
	for _, s := range ev.Secrets {
		if len(s.ExternalSecrets) == 0 {
			// A reload: an object no ExternalSecret writes changed.
			return ev.Workload.String() + " restarted for a change"
		}
	}
	return ev.Workload.String() + " restarted for a rotation"
}

// secretLines are a chat message's lines about the Secrets: the keys, and
// the versions of the remote objects.
func secretLines(ev Event) []string {
	var out []string
	for _, s := range ev.Secrets {
		keys := "any key"
		if !s.AnyKey {
			keys = "keys " + list(s.Keys)
		}
		kind := s.Kind
		if kind == "" {
			kind = "Secret"
		}
		line := fmt.Sprintf("%s %s: %s, changed at %s", kind, s.Name, keys, s.RotatedAt.UTC().Format(time.RFC3339))
		var versions []string
		for _, src := range s.ExternalSecrets {
			for _, v := range src.Versions {
				if v.Version != "" {
					versions = append(versions, v.Key+"@"+v.Version)
				}
			}
		}
		if len(versions) > 0 {
			line += "; versions " + list(versions)
		}
		out = append(out, line)
	}
	return out
}

// list joins up to maxChatKeys items, and says how many more there are.
func list(items []string) string {
	if len(items) <= maxChatKeys {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:maxChatKeys], ", ") + fmt.Sprintf(" and %d more", len(items)-maxChatKeys)
}

// footer names the cluster, the time and the notification ID.
func footer(ev Event) string {
	parts := []string{}
	if ev.Cluster != "" {
		parts = append(parts, "cluster "+ev.Cluster)
	}
	parts = append(parts, ev.Time.UTC().Format(time.RFC3339), "id "+ev.ID)
	return strings.Join(parts, " · ")
}

// Slack's limits (Block Kit reference): a header's text 150 characters, a
// section's 3,000, a message's fallback text 40,000.
const (
	slackHeaderMax  = 150
	slackSectionMax = 3000
)

// SlackMessage is the body of a Slack incoming webhook: a fallback text
// for notifications, and Block Kit blocks.
type SlackMessage struct {
	Text   string       `json:"text"`
	Blocks []SlackBlock `json:"blocks"`
}

// SlackBlock is a header, section or context block.
type SlackBlock struct {
	Type     string      `json:"type"`
	Text     *SlackText  `json:"text,omitempty"`
	Elements []SlackText `json:"elements,omitempty"`
}

// SlackText is a text object: plain_text or mrkdwn.
type SlackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func slackMessage(ev Event) SlackMessage {
	var b strings.Builder
	if ev.Message != "" {
		b.WriteString(slackEscape(ev.Message) + "\n")
	}
	for _, l := range secretLines(ev) {
		b.WriteString("• " + slackEscape(l) + "\n")
	}
	return SlackMessage{Text: slackEscape(title(ev)), Blocks: []SlackBlock{
		{Type: "header", Text: &SlackText{Type: "plain_text", Text: truncate(title(ev), slackHeaderMax)}},
		{Type: "section", Text: &SlackText{Type: "mrkdwn", Text: truncate(strings.TrimSuffix(b.String(), "\n"), slackSectionMax)}},
		{Type: "context", Elements: []SlackText{{Type: "mrkdwn", Text: slackEscape(footer(ev))}}},
	}}
}

// slackEscape escapes the three characters Slack's mrkdwn gives a meaning
// to, so that a name cannot make a link or a mention.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// truncate cuts s to at most n characters, ending with an ellipsis.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// TeamsMessage is the body of a Microsoft Teams workflow webhook ("Post
// to a channel when a webhook request is received"): a message with one
// Adaptive Card attachment.
type TeamsMessage struct {
	Type        string            `json:"type"`
	Attachments []TeamsAttachment `json:"attachments"`
}

// TeamsAttachment holds the card.
type TeamsAttachment struct {
	ContentType string       `json:"contentType"`
	ContentURL  *string      `json:"contentUrl"`
	Content     AdaptiveCard `json:"content"`
}

// AdaptiveCard is an Adaptive Card of version 1.4, which Teams renders.
type AdaptiveCard struct {
	Schema  string        `json:"$schema"`
	Type    string        `json:"type"`
	Version string        `json:"version"`
	Body    []CardElement `json:"body"`
}

// CardElement is a TextBlock or a FactSet.
type CardElement struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Weight   string `json:"weight,omitempty"`
	Size     string `json:"size,omitempty"`
	Wrap     bool   `json:"wrap,omitempty"`
	IsSubtle bool   `json:"isSubtle,omitempty"`
	Facts    []Fact `json:"facts,omitempty"`
}

// Fact is a title and a value of a FactSet.
type Fact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

// The attachment's content type and the card's schema and version.
const (
	AdaptiveCardContentType = "application/vnd.microsoft.card.adaptive"
	AdaptiveCardSchema      = "http://adaptivecards.io/schemas/adaptive-card.json"
	AdaptiveCardVersion     = "1.4"
)

func teamsMessage(ev Event) TeamsMessage {
	facts := []Fact{{Title: "Workload", Value: ev.Workload.String()}}
	if ev.Type == TypeHeld {
		facts = append(facts, Fact{Title: "Held", Value: ev.Reason})
	}
	body := []CardElement{
		{Type: "TextBlock", Text: title(ev), Weight: "Bolder", Size: "Medium", Wrap: true},
		{Type: "FactSet", Facts: facts},
	}
	if ev.Message != "" {
		body = append(body, CardElement{Type: "TextBlock", Text: ev.Message, Wrap: true})
	}
	for _, l := range secretLines(ev) {
		body = append(body, CardElement{Type: "TextBlock", Text: l, Wrap: true})
	}
	body = append(body, CardElement{Type: "TextBlock", Text: footer(ev), Wrap: true, IsSubtle: true, Size: "Small"})
	return TeamsMessage{Type: "message", Attachments: []TeamsAttachment{{ContentType: AdaptiveCardContentType,
		Content: AdaptiveCard{Schema: AdaptiveCardSchema, Type: "AdaptiveCard", Version: AdaptiveCardVersion, Body: body}}}}
}
