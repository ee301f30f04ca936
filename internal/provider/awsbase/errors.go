package awsbase

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// refusal is the shape of an IAM refusal's message: who was refused which
// action on which resource. Only those three parts are kept from AWS's
// text (they are ARNs and action names); the rest is dropped, as it could
// echo a request.
var refusal = regexp.MustCompile(`(?:User|Principal): (arn:[^\s]+) is not authorized to perform: ([A-Za-z0-9-]+:[A-Za-z0-9]+)(?: on resource: (arn:[^\s]+|[^\s]+))?`)

// Classify maps an error of an AWS call to the engine's classes. what says
// what was asked, such as `reading secret "db"`; who is the session's
// identity, named in a refusal when AWS does not name it. AWS's own error
// text is never repeated beyond its code and, for a refusal, the caller,
// action and resource it names.
func (s *Session) Classify(what string, err error) error {
	if err == nil {
		return nil
	}
	var op *smithy.OperationError
	action := ""
	if errors.As(err, &op) {
		action = op.Service() + ":" + op.Operation()
	}
	attempts := ""
	var maxErr *retry.MaxAttemptsError
	if errors.As(err, &maxErr) {
		attempts = fmt.Sprintf(" after %d attempts", maxErr.Attempt)
	}
	var api smithy.APIError
	if !errors.As(err, &api) {
		switch {
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			return fmt.Errorf("%s: AWS did not answer in time%s%s: %w", what, at(err), attempts, engine.ErrUnavailable)
		}
		var ne net.Error
		var oe *net.OpError
		if errors.As(err, &ne) || errors.As(err, &oe) {
			return fmt.Errorf("%s: AWS could not be reached%s%s (%s): %w", what, at(err), attempts, netText(err), engine.ErrUnavailable)
		}
		if errors.Is(err, engine.ErrPermissionDenied) || errors.Is(err, engine.ErrUnavailable) || errors.Is(err, engine.ErrInvalidConfig) {
			// An error of Watchword's own, such as a failed TokenRequest.
			return fmt.Errorf("%s: %w", what, err)
		}
		var invalid *smithy.InvalidParamsError
		if errors.As(err, &invalid) {
			// The SDK refused the request before sending it: the input
			// of the object that asked (its key or version), never an
			// outage of the store.
			return failure.Terminalf(failure.RemoteNameInvalid, "%s: the AWS SDK refused the request as invalid before sending it: check the key and version", what)
		}
		return fmt.Errorf("%s: the AWS call failed%s: %w", what, attempts, engine.ErrUnavailable)
	}
	code := api.ErrorCode()
	switch code {
	case "ResourceNotFoundException", "ParameterNotFound", "InvalidResourceId", "ParameterVersionNotFound", "ParameterVersionLabelNotFound":
		return fmt.Errorf("%s: AWS answered %s: %w", what, code, engine.ErrNotFound)
	case "AccessDeniedException", "AccessDenied", "UnauthorizedOperation", "AuthorizationError":
		return fmt.Errorf("%s: %s: %w", what, s.refused(api, action), engine.ErrPermissionDenied)
	case "UnrecognizedClientException", "InvalidClientTokenId", "InvalidSignatureException", "SignatureDoesNotMatch",
		"ExpiredTokenException", "ExpiredToken", "InvalidIdentityToken", "IDPRejectedClaim", "IncompleteSignature", "MissingAuthenticationToken":
		return fmt.Errorf("%s: AWS rejected the credentials of %s (%s): %w", what, s.Who, code, engine.ErrUnauthenticated)
	case "ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded", "ThrottledException":
		return fmt.Errorf("%s: AWS throttled the calls%s (%s): %w", what, attempts, code, engine.ErrThrottled)
	case "DecryptionFailure", "KMSAccessDeniedException", "KMSDisabledException", "KMSInvalidStateException", "KMSNotFoundException":
		return fmt.Errorf("%s: AWS could not decrypt it with its KMS key (%s): check the key and that the caller may use it: %w", what, code, engine.ErrPermissionDenied)
	case "InvalidParameterException", "ValidationException", "InvalidRequestException", "ParameterPatternMismatchException", "InvalidKeyId":
		return fmt.Errorf("%s: AWS refused the request as invalid (%s): check the key and version: %w", what, code, engine.ErrInvalidConfig)
	case "ResourceExistsException", "ParameterAlreadyExists":
		return fmt.Errorf("%s: another writer created it at the same time (%s): %w", what, code, engine.ErrUnavailable)
	case "InternalServiceError", "InternalServerError", "InternalFailure", "ServiceUnavailable":
		return fmt.Errorf("%s: AWS failed%s (%s): %w", what, attempts, code, engine.ErrUnavailable)
	}
	return fmt.Errorf("%s: AWS answered %s: %w", what, code, engine.ErrUnavailable)
}

// refused names who was refused what: the principal, action and resource
// of AWS's message where it names them, otherwise the session's identity
// and the operation.
func (s *Session) refused(api smithy.APIError, action string) string {
	if m := refusal.FindStringSubmatch(api.ErrorMessage()); m != nil {
		out := fmt.Sprintf("AWS IAM does not let %s (%s) perform %s", m[1], s.Who, m[2])
		if m[3] != "" {
			out += " on " + m[3]
		}
		return out
	}
	if action == "" {
		action = "the call"
	}
	return fmt.Sprintf("AWS refused %s to %s (%s)", action, s.Who, api.ErrorCode())
}

// at names the host a request that failed was sent to (" at host"), or
// "": the host of an endpoint, which the configuration or the SDK chose,
// never more of the URL.
func at(err error) string {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return ""
	}
	u, perr := url.Parse(ue.URL)
	if perr != nil || u.Host == "" {
		return ""
	}
	return " at " + u.Host
}

// netText is the kind of a network failure, without addresses of the
// request's content.
func netText(err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Op + " " + oe.Net
	}
	return "network error"
}
