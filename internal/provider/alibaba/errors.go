package alibaba

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/alibabacloud-go/tea/tea"

	"github.com/watchword-dev/watchword/internal/engine"
)

// classify maps an error of a call to the engine's classes. It names the
// error code KMS answered and never its message text, which may echo the
// request.
func (c *Client) classify(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: KMS at %s did not answer in time: %w", what, c.host, engine.ErrUnavailable)
	}
	var exchange *stsError
	if errors.As(err, &exchange) {
		return fmt.Errorf("%s: %w", what, exchange.err)
	}
	var sdk *tea.SDKError
	if !errors.As(err, &sdk) || sdk.Code == nil || tea.IntValue(sdk.StatusCode) == 0 {
		// The SDK raises its timeouts and connection failures as errors
		// without an HTTP status.
		return fmt.Errorf("%s: the call to KMS at %s failed: %w", what, c.host, engine.ErrUnavailable)
	}
	code := tea.StringValue(sdk.Code)
	status := tea.IntValue(sdk.StatusCode)
	switch {
	case code == "Forbidden.ResourceNotFound" || code == "EntityNotExist.Secret" || code == "Forbidden.SecretVersionNotFound" || status == 404 && strings.Contains(code, "NotFound") && !strings.HasPrefix(code, "InvalidAccessKeyId"):
		return fmt.Errorf("%s: KMS answered %s (no such secret, version or stage): %w", what, code, engine.ErrNotFound)
	case strings.HasPrefix(code, "InvalidAccessKeyId") || code == "SignatureDoesNotMatch" || code == "IncompleteSignature" ||
		code == "InvalidSecurityToken.Expired" || code == "InvalidSecurityToken.Malformed" || code == "InvalidTimeStamp.Expired" || code == "SignatureNonceUsed":
		return fmt.Errorf("%s: Alibaba Cloud did not accept the credentials of %s (%s): check the AccessKey pair and that it is enabled: %w", what, c.who, code, engine.ErrUnauthenticated)
	case strings.HasPrefix(code, "Forbidden") || status == 403:
		return fmt.Errorf("%s: KMS does not let %s do it (%s): grant it the call's kms: action on the secret (reads: kms:GetSecretValue and kms:ListSecretVersionIds; listing: kms:ListSecrets; publishing also kms:DescribeSecret, kms:CreateSecret, kms:PutSecretValue, kms:TagResource and kms:DeleteSecret): %w", what, c.who, code, engine.ErrPermissionDenied)
	case strings.HasPrefix(code, "Throttling") || code == "Rejected.Throttling" || status == 429:
		return fmt.Errorf("%s: KMS throttled the call (%s): %w", what, code, engine.ErrThrottled)
	case code == "Rejected.ResourceExist" || code == "Rejected.ResourceInUse":
		return fmt.Errorf("%s: another writer changed it at the same time (%s): %w", what, code, engine.ErrUnavailable)
	case strings.HasPrefix(code, "Rejected.Disabled") || code == "Rejected.Unavailable":
		return fmt.Errorf("%s: KMS refused the call (%s): %w", what, code, engine.ErrPermissionDenied)
	case status >= 400 && status < 500:
		return fmt.Errorf("%s: KMS refused the request as invalid (%s): check the secret name and version: %w", what, code, engine.ErrInvalidConfig)
	}
	return fmt.Errorf("%s: KMS answered %s (HTTP %d): %w", what, code, status, engine.ErrUnavailable)
}
