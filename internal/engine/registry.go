package engine

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// DockerConfigJSON is the .dockerconfigjson of one registry: the kubelet's
// image pull credentials, with auth as docker writes it (base64 of
// user:password).
func DockerConfigJSON(host, user, pass string) ([]byte, error) {
	type entry struct {
		Username string `json:"username"`
		Password string `json:"password"`
		Auth     string `json:"auth"`
	}
	//nolint:gosec // G117: the password is the point of a .dockerconfigjson, written only to the target Secret.
	b, err := json.Marshal(map[string]map[string]entry{"auths": {host: {Username: user, Password: pass,
		Auth: base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))}}})
	if err != nil {
		return nil, fmt.Errorf("encoding the .dockerconfigjson: %w", err)
	}
	return b, nil
}
