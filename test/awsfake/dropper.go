package awsfake

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
)

// Dropper is an HTTP client for the SDKs that removes one item from the
// answers of one operation, as a store that answers without it: from every
// Target answer (X-Amz-Target, such as "AmazonSSM.GetParameters"), the
// entries of the list List whose Name is Drop.
type Dropper struct {
	Target, List, Drop string
}

// Do sends req, then edits a successful answer of Target.
func (d Dropper) Do(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil || req.Header.Get("X-Amz-Target") != d.Target || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	defer resp.Body.Close()
	var out map[string]any
	if err = json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	items, _ := out[d.List].([]any)
	out[d.List] = slices.DeleteFunc(items, func(v any) bool { return v.(map[string]any)["Name"] == d.Drop })
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	resp.Header.Del("Content-Length")
	return resp, nil
}
