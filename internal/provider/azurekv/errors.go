package azurekv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/watchword-dev/watchword/internal/engine"
)

// refusal picks, from Key Vault's text of an RBAC refusal, the caller and
// the action it names; the rest of the text is dropped.
var (
	refusedCaller = regexp.MustCompile(`Caller: (appid=[0-9a-zA-Z-]+)`)
	refusedAction = regexp.MustCompile(`Action: '(Microsoft\.KeyVault/[A-Za-z/]+)'`)
	aadsts        = regexp.MustCompile(`^AADSTS[0-9]{4,7}$`)
)

func isStatus(err error, status int) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == status
}

// classify maps an error of a Key Vault call, or of the sign-in the SDK
// made for it, to the engine's classes. what says what was asked. Key
// Vault's and Entra ID's own texts are never repeated beyond their error
// codes and, for a refusal, the caller and action Key Vault names.
func (c *Client) classify(what string, err error) error {
	var auth *azidentity.AuthenticationFailedError
	if errors.As(err, &auth) {
		return fmt.Errorf("%s: Microsoft Entra ID refused to sign in %s%s: %w", what, c.who, entraReason(auth.RawResponse), engine.ErrUnauthenticated)
	}
	if strings.Contains(err.Error(), "CredentialUnavailableError") {
		// azidentity has no exported type for it: a managed identity
		// that is not there, for example.
		return fmt.Errorf("%s: no token could be obtained for %s (is a managed identity assigned to the machine?): %w", what, c.who, engine.ErrPermissionDenied)
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		switch {
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			return fmt.Errorf("%s: Key Vault did not answer in time: %w", what, engine.ErrUnavailable)
		case errors.Is(err, engine.ErrPermissionDenied), errors.Is(err, engine.ErrUnavailable), errors.Is(err, engine.ErrInvalidConfig):
			// An error of Watchword's own, such as a failed TokenRequest.
			return fmt.Errorf("%s: %w", what, err)
		}
		var ne net.Error
		if errors.As(err, &ne) {
			return fmt.Errorf("%s: Key Vault at %s could not be reached: %w", what, c.vault, engine.ErrUnavailable)
		}
		return fmt.Errorf("%s: the call to Key Vault failed: %w", what, engine.ErrUnavailable)
	}
	body := peek(re.RawResponse)
	code, inner := kvCodes(re, body)
	label := fmt.Sprintf("HTTP %d", re.StatusCode)
	if code != "" {
		label += " " + code
	}
	if inner != "" {
		label += "/" + inner
	}
	switch {
	case re.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%s: Key Vault answered %s: %w", what, label, engine.ErrNotFound)
	case re.StatusCode == http.StatusForbidden && inner == "SecretDisabled":
		return fmt.Errorf("%s: the version is disabled in Key Vault (%s): enable it, or pin another version: %w", what, label, engine.ErrPermissionDenied)
	case re.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%s: Key Vault does not let %s%s (%s): grant it a role such as Key Vault Secrets User (reads) or Key Vault Secrets Officer (writes), or an access policy: %w",
			what, c.who, refused(body), label, engine.ErrPermissionDenied)
	case re.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%s: Key Vault refused the token of %s (%s): check the tenant and that the vault is in it: %w", what, c.who, label, engine.ErrUnauthenticated)
	case re.StatusCode == http.StatusTooManyRequests:
		if d, ok := retryAfter(re.RawResponse); ok {
			// The vault's hint holds the store (the gate) that long.
			return engine.ThrottledFor(d, fmt.Sprintf("%s: Key Vault throttled the calls (%s) and asked to wait %s", what, label, d))
		}
		return fmt.Errorf("%s: Key Vault throttled the calls (%s) after the SDK's retries: %w", what, label, engine.ErrThrottled)
	case re.StatusCode == http.StatusConflict && inner == "ObjectIsDeletedButRecoverable":
		// An answer about this name (a publisher that unpublished it
		// and publishes it again, say), not an outage: of no class, so
		// retried, and the store's gate holds no other caller for it.
		return fmt.Errorf("%s: the secret was deleted and Key Vault keeps its name until it is purged or recovered (%s): recover or purge it", what, label)
	case re.StatusCode == http.StatusBadRequest:
		return fmt.Errorf("%s: Key Vault refused the request as invalid (%s): check the name and version: %w", what, label, engine.ErrInvalidConfig)
	}
	return fmt.Errorf("%s: Key Vault answered %s: %w", what, label, engine.ErrUnavailable)
}

// kvCodes reads the error code and inner code of Key Vault's error body.
func kvCodes(re *azcore.ResponseError, body []byte) (code, inner string) {
	code = re.ErrorCode
	var e struct {
		Error struct {
			Code       string `json:"code"`
			InnerError *struct {
				Code string `json:"code"`
			} `json:"innererror"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		if code == "" {
			code = e.Error.Code
		}
		if e.Error.InnerError != nil {
			inner = e.Error.InnerError.Code
		}
	}
	return safeCode(code), safeCode(inner)
}

// refused names the caller and action of an RBAC refusal, when Key Vault
// gave them.
func refused(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	out := ""
	if m := refusedCaller.FindStringSubmatch(e.Error.Message); m != nil {
		out += " (Key Vault names the caller " + m[1] + ")"
	}
	if m := refusedAction.FindStringSubmatch(e.Error.Message); m != nil {
		return out + " perform " + m[1]
	}
	return out + " do it"
}

// entraReason is the error and AADSTS codes of Entra ID's answer.
func entraReason(resp *http.Response) string {
	var e struct {
		Error  string `json:"error"`
		Codes  []any  `json:"error_codes"`
		Detail string `json:"error_description"`
	}
	if json.Unmarshal(peek(resp), &e) != nil || e.Error == "" {
		return ""
	}
	out := " (" + safeCode(e.Error)
	if code, _, ok := strings.Cut(e.Detail, ":"); ok && aadsts.MatchString(code) {
		out += " " + code
	}
	out += ")"
	switch {
	case strings.HasPrefix(e.Detail, "AADSTS7000215"):
		out += ": the client secret is wrong or expired"
	case strings.HasPrefix(e.Detail, "AADSTS700016"):
		out += ": no such application in the tenant; check clientID and tenantID"
	case strings.HasPrefix(e.Detail, "AADSTS700027"):
		out += ": the certificate is not registered on the app registration, or its client assertion was refused; upload the certificate's public part to the app and check clientID"
	case strings.HasPrefix(e.Detail, "AADSTS700024"):
		out += ": the client assertion is outside its valid time range; check the clock of the machine Watchword runs on"
	case strings.HasPrefix(e.Detail, "AADSTS70021"):
		out += ": the app has no federated credential matching the service account's token (issuer, subject system:serviceaccount:<namespace>:<name>, audience " + AssertionAudience + ")"
	}
	return out
}

// peek reads a response body the SDK has already buffered.
func peek(resp *http.Response) []byte {
	if resp == nil || resp.Body == nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return b
}

var codeShape = regexp.MustCompile(`^[A-Za-z0-9_.]{1,64}$`)

// safeCode keeps a code only when it has the shape of one.
func safeCode(s string) string {
	if codeShape.MatchString(s) {
		return s
	}
	return ""
}

// retryAfter reads the wait a throttled answer asks for: Retry-After in
// seconds or as an HTTP date, or the milliseconds headers Azure services
// also send. azcore reads them in an internal package it does not
// export, so the provider reads them itself.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	for _, h := range []string{"Retry-After-Ms", "X-Ms-Retry-After-Ms"} {
		if ms, err := strconv.Atoi(resp.Header.Get(h)); err == nil && ms > 0 {
			return time.Duration(ms) * time.Millisecond, true
		}
	}
	v := resp.Header.Get("Retry-After")
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(s) * time.Second, s > 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d, true
		}
	}
	return 0, false
}
